"""Error messages a reporter quotes or pastes, matched against the shipped reports' titles as whole
phrases (issue 46 §2).

A quoted message ("...", '...', `...`, “...”) or a pasted error line (`RuntimeError: ...`,
`torch.OutOfMemoryError: ...`, `CUDA error: ...`, `AssertionError ...`) is read as one phrase:
case, runs of white space and the punctuation around it do not count. A report whose title holds the
phrase, or whose title (less its `[Bug]:` tags) or the title's error line the phrase holds (a paste
longer than the title), is the same failure: it votes for its level above any overlap of single
words, and the answer says which report's title holds it. Nothing is read from a symptom without a quote or an error line, so a
symptom in plain words ranks as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

SHORTEST = 12  # characters a phrase needs (after normalising) to say more than a word or two
FEWEST_WORDS = 2
# The quote marks of a quoted message; a single quote only where it cannot be an apostrophe.
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|`([^`]+)`|(?:^|(?<=[\s(\[:=]))'([^']+)'(?=$|[\s)\].,;:!?])")
# A pasted error line: an exception class (dotted names allowed) or a CUDA error, and what follows it.
_ERROR_LINE = re.compile(
    r"(?<![\w.])((?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception)\b:?.*|CUDA error\b:?.*)", re.IGNORECASE
)
_TAGS = re.compile(r"^\s*(?:\[[^\]]*\]\s*:?\s*)+")  # `[Bug]: `, `[Usage] [V1] `
_EDGES = " \t\r\n.,:;!?()[]{}<>'\"`“”"


def normal(text: str) -> str:
    """A phrase as compared: case folded, white space runs as one space, no punctuation around it."""
    return " ".join(text.casefold().split()).strip(_EDGES)


def untagged(title: str) -> str:
    """A report title as a phrase: normalised, less its tracker tags (`[Bug]:`, `[Usage] [V1]`)."""
    return normal(_TAGS.sub("", title))


def usable(phrase: str) -> bool:
    return len(phrase) >= SHORTEST and len(phrase.split()) >= FEWEST_WORDS


def phrases(text: str) -> list[str]:
    """The quoted messages and pasted error lines of a symptom, normalised, longest first, once each."""
    found = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(text)]
    unquoted = _QUOTED.sub(" ", text)
    found += [m.group(1) for m in _ERROR_LINE.finditer(unquoted)]
    out = dict.fromkeys(p for p in map(normal, found) if usable(p))
    return sorted(out, key=len, reverse=True)


def _held(title: str) -> list[str]:
    """What of a title a longer paste may hold: the title less its tracker tags (`[Bug]:`), and its
    error line (`CUDA error: ...`), each where it is long enough to be a phrase."""
    core = untagged(title)
    m = _ERROR_LINE.search(title)
    return [part for part in (core, normal(m.group(1)) if m else "") if usable(part)]


def matching(reports: Sequence[dict[str, Any]], quoted: Sequence[str]) -> dict[str, str]:
    """{report id: the words its title shares with a phrase} for the reports whose title holds a
    phrase, or whose title (less its tags) or title's error line a phrase holds."""
    out: dict[str, str] = {}
    for report in reports:
        title = normal(report["title"])
        parts = _held(report["title"])
        for phrase in quoted:
            shared = phrase if phrase in title else next((part for part in parts if part in phrase), None)
            if shared is not None:
                out[report["id"]] = shared
                break
    return out
