"""A paper's metadata from arXiv (its API's Atom feed) or Crossref (`/works/DOI`, JSON): `add --from`
and `refresh`.

Base URLs come from `INVMAP_ARXIV_API` and `INVMAP_CROSSREF_API`, so tests and mirrors can stand in
for the services. Requests go through `invmap.net.fetch` (a User-Agent, a total deadline of TIMEOUT
seconds a request, answers capped at CAP decoded bytes); one run (`add --from`, a whole `refresh`)
stops after RUN_DEADLINE seconds however many requests it needs. arXiv ids are asked for together
(`id_list`), and at most one arXiv request is made every ARXIV_GAP seconds (across runs too, by a
time stamp in the cache folder). An id a service does not know is NotFoundError (exit 1); no
network, the deadline, the cap, a service error or a malformed answer is a NetworkError (exit 4).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from invmap import writers
from invmap.errors import FileAccessError, NetworkError, NotFoundError

ARXIV_VAR, ARXIV_DEFAULT = "INVMAP_ARXIV_API", "https://export.arxiv.org/api/query"
CROSSREF_VAR, CROSSREF_DEFAULT = "INVMAP_CROSSREF_API", "https://api.crossref.org"
ARXIV_GAP = 3.0  # seconds between two arXiv requests, as arXiv's terms of use ask
ARXIV_BATCH = 50  # ids in one arXiv request
TIMEOUT = 20.0  # seconds for one request, all of it (invmap.net.fetch)
RUN_DEADLINE = 300.0  # seconds for every request of one run together (add --from, refresh)
CAP = 4 * 2**20  # decoded bytes of one answer (an arXiv batch of 50 is about 150 KB)
_STAMP = "arxiv-last-request"
_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
# Crossref's work types -> BibTeX entry types.
ENTRY_TYPES = {
    "proceedings-article": "inproceedings",
    "journal-article": "article",
    "report": "techreport",
    "posted-content": "misc",
}


class ServiceError(NetworkError):
    """The service answered with an error or with something that is not what it documents: exit 4,
    nothing written."""


@dataclass
class Work:
    """What a service says about a paper; None where it says nothing."""

    title: str | None = None
    author_names: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    published_in: str | None = None
    entry_type: str | None = None
    arxiv: str | None = None
    doi: str | None = None
    service: str = "a service"  # who said so: "arXiv" or "Crossref"


def _one_line(text: str | None) -> str | None:
    """Titles arrive hard-wrapped: one line, single spaces."""
    return " ".join(text.split()) if text and text.split() else None


_RUN: list[float] = []  # when the current run's deadline ends (time.monotonic()), while one runs


@contextlib.contextmanager
def run() -> Iterator[None]:
    """One run's requests together get at most RUN_DEADLINE seconds (nested runs share the outer one)."""
    if _RUN:
        yield
        return
    _RUN.append(time.monotonic() + RUN_DEADLINE)
    try:
        yield
    finally:
        _RUN.clear()


def _get(url: str, params: dict[str, str] | None, service: str) -> Any:
    """The service's Answer (any status): one request, within TIMEOUT and what is left of the run."""
    from urllib.parse import urlencode

    from invmap import net

    deadline = TIMEOUT
    if _RUN:
        left = _RUN[0] - time.monotonic()
        if left <= 0:
            raise _run_over(service)
        deadline = min(TIMEOUT, left)
    full = f"{url}{'&' if '?' in url else '?'}{urlencode(params)}" if params else url
    try:
        return net.fetch(full, service=service, deadline=deadline, cap=CAP, headers={"Accept": "*/*"})
    except NetworkError as exc:
        if exc.kind == "timeout" and deadline < TIMEOUT:
            raise _run_over(service) from None
        raise


def _run_over(service: str) -> NetworkError:
    return NetworkError(
        f"{service} did not answer within {RUN_DEADLINE:g} s (the deadline of one run, every request together)",
        kind="timeout",
    )


def _text(answer: Any) -> str:
    return answer.body.decode("utf-8", "replace")


# --- arXiv ----------------------------------------------------------------------------------------


def _wait_for_arxiv() -> None:
    """Sleep until ARXIV_GAP seconds have passed since the last arXiv request (this run's or another's)."""
    from invmap.cache import cache_folder

    folder = cache_folder()
    stamp = os.path.join(folder, _STAMP) if folder else None
    last = _LAST_ARXIV[0]
    if stamp:
        with contextlib.suppress(OSError, ValueError):
            with open(stamp, encoding="ascii") as handle:
                last = max(last, float(handle.read().strip() or 0))
    wait = last + ARXIV_GAP - time.time()
    if 0 < wait <= ARXIV_GAP:
        time.sleep(wait)
    _arxiv_stamp()


def _arxiv_stamp() -> None:
    """Note now as the last arXiv request: before one is sent, and again once its answer is in (so a
    request that took long to send or answer still leaves the full gap before the next)."""
    from invmap.cache import cache_folder

    folder = cache_folder()
    stamp = os.path.join(folder, _STAMP) if folder else None
    _LAST_ARXIV[0] = time.time()
    if stamp:
        with contextlib.suppress(FileAccessError):
            writers.replace_own_file(stamp, f"{_LAST_ARXIV[0]:.3f}")


_LAST_ARXIV = [0.0]


def arxiv_works(ids: Sequence[str]) -> dict[str, Work]:
    """id -> Work for each id arXiv knows (ids it does not know are left out)."""
    base = os.environ.get(ARXIV_VAR) or ARXIV_DEFAULT
    out: dict[str, Work] = {}
    wanted = list(dict.fromkeys(ids))
    for start in range(0, len(wanted), ARXIV_BATCH):
        part = wanted[start : start + ARXIV_BATCH]
        _wait_for_arxiv()
        try:
            response = _get(base, {"id_list": ",".join(part), "max_results": str(len(part))}, "arXiv")
        finally:
            _arxiv_stamp()
        if response.status != 200:
            raise ServiceError(f"arXiv answered HTTP {response.status} ({base})")
        out.update(parse_atom(_text(response), base))
    return out


def parse_atom(text: str, where: str = "arXiv") -> dict[str, Work]:
    """The entries of an arXiv API feed; an `Error` entry (a malformed id) is no entry; a body that is
    not a feed (`Rate exceeded.`) is a ServiceError."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        first = " ".join(text.split())[:80]
        raise ServiceError(f"arXiv did not answer with a feed ({where}): {first or 'an empty answer'}") from None
    works: dict[str, Work] = {}
    for entry in root.findall(f"{_ATOM}entry"):
        ident = (entry.findtext(f"{_ATOM}id") or "").strip()
        title = _one_line(entry.findtext(f"{_ATOM}title"))
        match = re.search(r"arxiv\.org/abs/(.+?)(?:v\d+)?$", ident)
        if not match or title == "Error":
            continue
        arxiv = match.group(1)
        published = (entry.findtext(f"{_ATOM}published") or "")[:4]
        names = [_one_line(a.findtext(f"{_ATOM}name")) for a in entry.findall(f"{_ATOM}author")]
        doi = _one_line(entry.findtext(f"{_ARXIV}doi"))
        works[arxiv] = Work(
            title=title,
            author_names=[n for n in names if n],
            year=int(published) if published.isdigit() else None,
            venue="arXiv preprint",
            entry_type="misc",
            arxiv=arxiv,
            doi=doi,
            service="arXiv",
        )
    return works


# --- Crossref -------------------------------------------------------------------------------------


def crossref_work(doi: str) -> Work | None:
    """The work Crossref lists under `doi`, or None when it lists none."""
    from urllib.parse import quote

    base = (os.environ.get(CROSSREF_VAR) or CROSSREF_DEFAULT).rstrip("/")
    url = f"{base}/works/{quote(doi, safe='/()')}"
    response = _get(url, None, "Crossref")
    if response.status == 404:
        return None
    if response.status != 200:
        raise ServiceError(f"Crossref answered HTTP {response.status} ({url})")
    try:
        message = json.loads(response.body)["message"]
    except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: 100,000 nested `[`
        raise ServiceError(f"Crossref's answer is not a work record ({url})") from None
    if not isinstance(message, dict):
        raise ServiceError(f"Crossref's answer is not a work record ({url})")
    return parse_crossref(message)


def parse_crossref(message: dict[str, Any]) -> Work:
    """A Crossref work record (`message` of `/works/DOI`) as a Work."""
    year = _crossref_year(message)
    container = _first(message, "container-title")
    return Work(
        title=_first(message, "title"),
        author_names=_crossref_names(message),
        year=year,
        venue=_crossref_venue(message, container, year),
        published_in=container,
        entry_type=ENTRY_TYPES.get(str(message.get("type")), "misc"),
        doi=message.get("DOI") if isinstance(message.get("DOI"), str) else None,
        service="Crossref",
    )


def _first(message: dict[str, Any], key: str) -> str | None:
    value = message.get(key)
    return _one_line(value[0]) if isinstance(value, list) and value and isinstance(value[0], str) else None


def _crossref_names(message: dict[str, Any]) -> list[str]:
    """`given family` of each author (an organisation's `name`), in the record's order."""
    names = []
    authors = message.get("author")
    for author in authors if isinstance(authors, list) else []:
        if not isinstance(author, dict):
            continue
        name = " ".join(p for p in (author.get("given"), author.get("family")) if isinstance(p, str) and p)
        name = name or (author.get("name") if isinstance(author.get("name"), str) else "")
        if name.strip():
            names.append(_one_line(name) or "")
    return names


def _crossref_year(message: dict[str, Any]) -> int | None:
    for key in ("issued", "published", "published-print", "published-online"):
        dates = message.get(key)
        parts = dates.get("date-parts") if isinstance(dates, dict) else None
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            if isinstance(parts[0][0], int) and not isinstance(parts[0][0], bool):
                return parts[0][0]
    return None


def _crossref_venue(message: dict[str, Any], container: str | None, year: int | None) -> str | None:
    """`SOSP '23` (the event's acronym) -> `SOSP 2023`; else the short container title and the year."""
    event = message.get("event") if isinstance(message.get("event"), dict) else {}
    acronym = event.get("acronym") if isinstance(event.get("acronym"), str) else None
    if acronym and year:
        return re.sub(r"\s*'\d{2}$", "", acronym.strip()) + f" {year}"
    short = _first(message, "short-container-title") or container
    return f"{short} {year}" if short and year else None


# --- what `add --from` and `refresh` ask ------------------------------------------------------------


def lookup(identifier: str) -> Work:
    """The work an arXiv id or DOI names (in any form `show` accepts); NotFoundError when the service
    does not know it."""
    from invmap.identifiers import arxiv_id, doi

    if (a := arxiv_id(identifier)) is not None:
        work = arxiv_works([a]).get(a)
        if work is None:
            raise NotFoundError(f"arXiv has no paper {a}")
        return work
    if (d := doi(identifier)) is not None:
        found = crossref_work(d)
        if found is None:
            raise NotFoundError(f"Crossref has no work with DOI {d}")
        found.doi = found.doi or d
        return found
    from invmap.errors import UsageError

    raise UsageError(f"--from takes an arXiv id or a DOI (2407.00079, 10.1145/3600006.3613165), not '{identifier}'")


def name_from_title(title: str) -> str:
    """A short name: the part before a colon when it is short (`Mooncake: A KVCache-centric ...` ->
    `Mooncake`), else the title's first words, at most 32 characters."""
    head = title.split(":", 1)[0].strip()
    if ":" in title and 0 < len(head) <= 32:
        return head
    words: list[str] = []
    for word in title.split():
        if len(" ".join([*words, word])) > 32:
            break
        words.append(word)
    return " ".join(words) or title[:32]
