"""How common English finds a word: a search weighs a word less the more common it is (`than`,
`slow`, `high`), so that a report's ordinary words do not decide its results. (Whether a word is
English at all, for corrections, is `text.is_english`, from data/english.txt.)

data/english-frequencies.txt is derived at build time from a frequency list
(scripts/generate_english.py: wordfreq 3.1.1's English data, CC BY-SA 4.0, see NOTICE): `word<TAB>Zipf
frequency` for the a-z words English uses at least about once in 3 million. It is read only when a
search needs it, mapped into memory and looked up as bytes, never read, decoded or parsed whole
(~0.4 ms for the 600 KB file and a query's words; read as text it took ~1.3-1.8 ms). A word looked
up is a-z, so its bytes are its text.
"""

from __future__ import annotations

import mmap
from pathlib import Path

_LIST = Path(__file__).with_name("data") / "english-frequencies.txt"
_text: mmap.mmap | bytes | None = None


def zipf(word: str) -> float | None:
    """The Zipf frequency of `word` (any case) in English, or None for a word the list lacks."""
    global _text
    if _text is None:
        try:
            with _LIST.open("rb") as file:
                _text = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # a package installed without its data file (or an empty one):
            _text = b""  # every word weighs as rare
    folded = word.casefold()
    if not folded.isalpha() or not folded.isascii():
        return None
    line = b"%s\t" % folded.encode("ascii")
    if _text[: len(line)] == line:  # the first line
        start = len(line)
    elif (at := _text.find(b"\n" + line)) >= 0:
        start = at + 1 + len(line)
    else:
        return None
    end = _text.find(b"\n", start)
    try:
        return float(_text[start : end if end >= 0 else len(_text)])
    except ValueError:
        return None
