"""Validating a parsed catalog: its sources a chunk at a time (a large file also parsed a chunk at a
time), every problem collected in the order one pass over the file reports them, then one
`CatalogError`; and the warnings `check` prints without failing (ids too long, one source twice,
one type spelled two ways).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from invmap.errors import CatalogError
from invmap.fields import MAX_ID, MAX_NAME
from invmap.problems import describe_error
from invmap.reading import parse_text

if TYPE_CHECKING:  # pydantic models are built on first validation, not when this module is imported
    from invmap.model import Catalog


VALIDATE_CHUNK = 10_000  # sources validated at a time in a large catalog


def validate(raw: dict[str, Any], path: str) -> Catalog:
    """Validate a parsed catalog, or raise one CatalogError listing every problem.

    A large catalog's sources are validated in chunks, each raw entry dropped from `raw` once its
    record exists, so the parsed table and the records are never both whole in memory. `raw` is
    consumed: callers parse it for this call alone.
    """
    stream = Validation(raw, path)
    for _ in stream.chunks():
        pass
    return stream.catalog()


class Validation:
    """A catalog validated a chunk of sources at a time (`index/fill.py` builds the index from each chunk
    while the next is validated). `chunks()` yields the records of each chunk while no problem has
    been found (and goes on checking the rest once one has, yielding nothing more); `catalog()` then
    returns the whole catalog or raises one CatalogError with every problem, in the order a single
    pass over the file reports them."""

    def __init__(self, raw: dict[str, Any], path: str, problems: list[str] | None = None) -> None:
        self.raw, self.path = raw, path
        self.problems = [*(problems or ()), *duplicate_id_problems(raw), *place_problems(raw)]
        self.source_problems: list[str] = []
        self.records: list[Any] | None = None
        sources = raw.get("sources")
        self.total = len(sources) if isinstance(sources, list) else 0

    def level_titles(self) -> dict[str, str]:
        """The levels' titles as the file gives them (checked with the rest by `catalog()`)."""
        layers = self.raw.get("layers")
        out = {}
        for code, value in layers.items() if isinstance(layers, dict) else ():
            title = value.get("title") if isinstance(value, dict) else value
            if isinstance(code, str) and isinstance(title, str):
                out[code] = title
        return out

    def chunks(self) -> Iterator[list[Any]]:
        sources = self.raw.get("sources")
        if not (isinstance(sources, list) and sources):
            return
        from pydantic import TypeAdapter, ValidationError

        from invmap.model import Source

        adapter = TypeAdapter(list[Source])
        self.records = []
        for start in range(0, len(sources), VALIDATE_CHUNK):
            part = sources[start : start + VALIDATE_CHUNK]
            chunk: list[Any] = []
            try:
                chunk = adapter.validate_python(part, strict=True)
            except ValidationError as exc:
                for err in exc.errors(include_url=False):
                    err["loc"] = ("sources", start + err["loc"][0], *err["loc"][1:])
                    self.source_problems.append(describe_error(err, self.raw))
            except RecursionError:
                self.source_problems.append(f"sources {start + 1} to {start + len(part)}: nested too deeply")
            del part
            for i in range(start, min(start + VALIDATE_CHUNK, len(sources))):
                sources[i] = None  # its record exists (or its problems are written): let the parsed entry go
            self.records.extend(chunk)
            if chunk and not self.source_problems and not self.problems:
                yield chunk

    def catalog(self) -> Catalog:
        from pydantic import ValidationError

        from invmap.model import Catalog

        raw = self.raw
        records = self.records
        head = raw if records is None else {**{k: v for k, v in raw.items() if k != "sources"}, "sources": records}
        problems = self.source_problems + self.problems
        catalog: Catalog | None = None
        try:
            catalog = Catalog.model_validate(head)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            if records is not None:  # source problems are already counted; the empty list is not one
                errors = [err for err in errors if not err["loc"] or err["loc"][0] != "sources"]
            problems = [describe_error(err, raw) for err in errors] + problems
        except RecursionError:
            problems.insert(0, "nested too deeply")
        if catalog is not None:
            problems += report_problems(catalog)
        if problems or catalog is None:
            raise CatalogError(self.path, problems)
        return catalog


def report_problems(catalog: Catalog) -> list[str]:
    """What no single report can know: an id or URL given twice, a source id the catalog lacks, a
    secondary level that repeats the primary."""
    known = {s.id for s in catalog.sources}
    ids: dict[str, int] = {}
    urls: dict[str, int] = {}
    out = []
    for n, r in enumerate(catalog.reports, start=1):
        where = f"report {n} ({r.id})"
        if r.id in ids:
            out.append(f"{where}: duplicate id '{r.id}' (first used by report {ids[r.id]})")
        ids.setdefault(r.id, n)
        url = r.url.rstrip("/")
        if url in urls:
            out.append(f"{where}: url is also report {urls[url]}'s")
        urls.setdefault(url, n)
        if r.secondary == r.primary:
            out.append(f"{where}: secondary repeats primary ({r.primary}); leave it out")
        out += [f"{where}: no source '{s}' in this catalog" for s in r.sources if s not in known]
    return out


STREAM_FROM = 4 * VALIDATE_CHUNK  # sources: a smaller file is parsed whole


class StreamedValidation(Validation):
    """A catalog parsed and validated a chunk of `[[sources]]` tables at a time. Only a file whose
    every header from the first `[[sources]]` on is a `[[sources]]` header, and which extends nothing,
    is read this way. The chunks are cut at header lines: a cut that fell inside a multi-line string
    would leave that chunk unparsable, and any problem at all (a parse error, an invalid field, a
    duplicate id) sends the whole file through `Validation`, whose messages are the ones reported."""

    def __init__(self, text: str, head: dict[str, Any], cuts: list[int], total: int, path: str) -> None:
        super().__init__(head, path)
        # The tables' text is kept apart from the head's: a slice is stored in the narrowest form its
        # characters allow, so one wide character in the head (a report's CJK title) no longer doubles
        # the memory of the tables' ASCII text, nor the time of every pass over it.
        first = cuts[0]
        self.head_text, self.text = text[:first], text[first:]
        self.cuts, self.total = [cut - first for cut in cuts], total
        self.fallback: Validation | None = None

    @classmethod
    def of(cls, text: str, path: str) -> StreamedValidation | None:
        if text.count("[[sources]]") < STREAM_FROM:
            return None
        from invmap.spans import plain_tables

        found = plain_tables(text, path)
        if found is None:
            return None
        head, sources = found
        cuts = [*sources[::VALIDATE_CHUNK], len(text)]
        return cls(text, head, cuts, len(sources), path)

    def chunks(self) -> Iterator[list[Any]]:
        from pydantic import TypeAdapter, ValidationError

        from invmap.model import Source

        adapter = TypeAdapter(list[Source])
        self.records = []
        seen: set[str] = set()
        for start, end in zip(self.cuts, self.cuts[1:]):
            try:
                part = parse_text(self.text[start:end], self.path).get("sources")
                if not isinstance(part, list):
                    raise CatalogError(self.path, ["not [[sources]] tables"])
                chunk = adapter.validate_python(part, strict=True)
            except (CatalogError, ValidationError, RecursionError, MemoryError):
                break
            ids = [s.id for s in chunk]
            if len(set(ids)) != len(ids) or seen.intersection(ids):
                break
            seen.update(ids)
            self.records.extend(chunk)
            yield chunk
        else:
            return
        self._fall_back()

    def _fall_back(self) -> None:
        """A problem somewhere: the whole file again, as one table, for every problem in its words."""
        self.records = None
        self.fallback = Validation(parse_text(self.head_text + self.text, self.path), self.path)
        for _ in self.fallback.chunks():
            pass

    def catalog(self) -> Catalog:
        if self.fallback is not None:
            return self.fallback.catalog()
        self.raw = {**self.raw, "sources": []}
        return super().catalog()


def warnings(catalog: Catalog) -> list[str]:
    """What `check` mentions without failing: ids and names too long to show or type comfortably."""
    out = []
    for position, s in enumerate(catalog.sources, start=1):
        if len(s.id) > MAX_ID:
            out.append(f"source {position} ({s.id}): id is {len(s.id)} characters; at most {MAX_ID} read well")
        if len(s.name) > MAX_NAME:
            out.append(f"source {position} ({s.id}): name is {len(s.name)} characters; at most {MAX_NAME} read well")
    return out + duplicate_warnings(catalog) + type_warnings(catalog)


# The identifiers two sources should not share (a code repository may serve several papers).
_UNIQUE_IDENTIFIERS = {"arxiv": "arXiv id", "doi": "DOI", "url": "link"}


def _identifier_keys(get: Callable[[str], Any]) -> dict[str, str]:
    """key -> how a message names it (`arXiv id 2309.06180`), for a source's arXiv id, DOI and own link."""
    from invmap.identifiers import canonical_link
    from invmap.sourcetext import derive

    keys = {}
    for name, label in _UNIQUE_IDENTIFIERS.items():
        value = get(name)
        if isinstance(value, str) and value:
            key = {"arxiv": value.split("v")[0], "doi": value.lower(), "url": canonical_link(value)}[name]
            keys[f"{name}:{key}"] = f"{label} {value}"
    cell = get("source")  # `Dup, arXiv:2309.06180`: the Source text names an identifier too
    if isinstance(cell, str):
        named = derive(cell)
        for name, value in (("arxiv", named.arxiv), ("doi", named.doi)):
            if value:
                key = f"{name}:{value.split('v')[0] if name == 'arxiv' else value.lower()}"
                keys.setdefault(key, f"{_UNIQUE_IDENTIFIERS[name]} {value} (in its Source text)")
    return keys


def identifier_clashes(entry: dict[str, Any], sources: Any) -> list[tuple[str, str]]:
    """(other source's id, what they share) for each arXiv id, DOI or own link of `entry` that a source
    of `sources` holds already."""
    wanted = _identifier_keys(entry.get)
    out = []
    for s in sources:
        for key in _identifier_keys(lambda name, s=s: getattr(s, name, None)).keys() & wanted.keys():
            out.append((s.id, wanted[key]))
    return out


def duplicate_warnings(catalog: Catalog) -> list[str]:
    """Two sources holding one arXiv id, DOI or own link: most likely one source added twice."""
    first: dict[str, tuple[int, str]] = {}
    out = []
    for position, s in enumerate(catalog.sources, start=1):
        for key, what in _identifier_keys(lambda name, s=s: getattr(s, name, None)).items():
            if key in first:
                n, other = first[key]
                out.append(f"source {position} ({s.id}): {what} is also source {n}'s ({other}): one source twice?")
            else:
                first[key] = (position, s.id)
    return out


def type_warnings(catalog: Catalog) -> list[str]:
    """Types that differ only by case or by one or two letters (`Curent` beside `Current`): most
    likely one type spelled two ways. The rarer spelling is named, with its sources' count."""
    from collections import Counter

    from rapidfuzz.distance import Levenshtein

    counts = Counter(s.type for s in catalog.sources)
    ordered = sorted(counts, key=lambda t: (-counts[t], t))
    out = []
    for n, rare in enumerate(ordered):
        for common in ordered[:n]:
            close = (
                rare.casefold() == common.casefold()
                or Levenshtein.distance(rare.casefold(), common.casefold(), score_cutoff=2) <= 2
            )
            if close and min(len(rare), len(common)) > 3:
                sources = "source" if counts[rare] == 1 else "sources"
                out.append(
                    f"type '{rare}' ({counts[rare]} {sources}) looks like '{common}' ({counts[common]}): one type?"
                )
                break
    return out


def duplicate_id_problems(raw: dict[str, Any]) -> list[str]:
    sources = raw.get("sources")
    if not isinstance(sources, list):
        return []
    seen: dict[str, int] = {}
    problems = []
    for position, entry in enumerate(sources, start=1):
        ident = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(ident, str):
            continue
        if ident in seen:
            problems.append(f"source {position} ({ident}): duplicate id '{ident}' (first used by source {seen[ident]})")
        else:
            seen[ident] = position
    return problems


def place_problems(raw: dict[str, Any]) -> list[str]:
    """A place needs a repository to be a permalink: its own `repo`, else the source's `code`."""
    from invmap.safe import escape

    sources = raw.get("sources")
    if not isinstance(sources, list):
        return []
    problems = []
    for position, entry in enumerate(sources, start=1):
        if not isinstance(entry, dict) or entry.get("code") or not isinstance(entry.get("places"), list):
            continue
        for n, item in enumerate(entry["places"]):
            if isinstance(item, dict) and not item.get("repo"):
                ident = entry.get("id")
                label = f"source {position} ({escape(ident)})" if isinstance(ident, str) else f"source {position}"
                problems.append(f"{label}: field 'places[{n}]': no repo, and the source has no code to default to")
    return problems
