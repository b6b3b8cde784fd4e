"""Catalogs in other people's formats: the seed's Markdown document (both ways) and BibTeX.

`read_markdown` gives a raw table that `validation.validate` checks exactly as it checks TOML, so an
import is held to the same rules as `invmap check`.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from invmap.errors import CatalogError
from invmap.model import Catalog, Source
from invmap.sourcetext import derive
from invmap.vocabulary import SEED_COLUMNS

DEFAULT_TITLE = "Imported research map"
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")  # bullets or a numbered list
_CODE_HOST = re.compile(r"^https?://(?:www\.)?(?:github\.com|gitlab\.com|codeberg\.org)/[^/\s]+/[^/\s#?]+/?$", re.I)
_DELIMITER_CELL = re.compile(r"^:?-{3,}:?$")


def split_row(line: str) -> list[str]:
    """`| a | b \\| c |` -> ['a', 'b | c']: unescaped pipes separate cells."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells = re.split(r"(?<!\\)\|", body)
    return [cell.strip().replace("\\|", "|") for cell in cells]


_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]<&])")


def escape_cell(text: str) -> str:
    """A cell's text as Markdown that reads back as the same text: pipes and Markdown's own marks
    (links, emphasis, code, HTML, entities) backslash-escaped. (A cell cannot keep leading or trailing
    spaces: Markdown tables trim them.)"""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text).replace("|", "\\|").replace("\n", " ")


def read_markdown(text: str, path: str) -> dict[str, Any]:
    """A Markdown document with the seed's table -> a raw catalog table (not yet validated).

    Text before the table is the preface (a leading `# heading` is the title), bullets after it are
    the study procedure, other lines after it the afterword.
    """
    lines = text.splitlines()
    start = next(
        (i for i, line in enumerate(lines[:-1]) if line.lstrip().startswith("|") and _is_delimiter(lines[i + 1])),
        None,
    )
    if start is None:
        raise CatalogError(path, ["no Markdown table found (expected a header row and a |---| row)"])
    sources, end = _table_sources(lines, start, path)
    title, preface = _preface(lines[:start])
    procedure = [_BULLET.sub("", line).strip() for line in lines[end:] if _is_step(line)]
    afterword = [_unescaped(line.strip()) for line in lines[end:] if line.strip() and not _is_step(line)]
    return {
        "catalog": {
            "title": title,
            "preface": "\n".join(preface),
            "procedure": procedure,
            "afterword": "\n".join(afterword),
        },
        "sources": sources,
    }


def _table_sources(lines: list[str], start: int, path: str) -> tuple[list[dict[str, Any]], int]:
    """The sources of the table whose header row is `lines[start]`, and the index of the first line after it."""
    headers = [h for h, _ in SEED_COLUMNS]
    found = split_row(lines[start])
    missing = [h for h in headers if h not in found]
    if missing:
        raise CatalogError(
            path, [f"table has no column {', '.join(repr(m) for m in missing)} (expected: {', '.join(headers)})"]
        )
    column = {key: found.index(header) for header, key in SEED_COLUMNS}
    sources: list[dict[str, Any]] = []
    problems: list[str] = []
    end = start + 2
    while end < len(lines) and lines[end].lstrip().startswith("|"):
        cells = split_row(lines[end])
        if len(cells) != len(found):
            row_number = end - start - 1
            problems.append(f"table row {row_number} (line {end + 1}): {len(cells)} cells, expected {len(found)}")
        else:
            sources.append(_source_from_cells({key: cells[i] for key, i in column.items()}))
        end += 1
    if problems:
        raise CatalogError(path, problems)
    _make_ids_unique(sources)
    return sources, end


def _preface(lines: list[str]) -> tuple[str, list[str]]:
    """The title (a leading `# heading`, else the default) and the other lines before the table."""
    title = DEFAULT_TITLE
    preface: list[str] = []
    for line in lines:
        if line.startswith("# ") and title == DEFAULT_TITLE and not preface:
            title = line[2:].strip()
        elif line.strip():
            preface.append(line.strip())
    return title, preface


def _is_delimiter(line: str) -> bool:
    cells = split_row(line)
    return bool(cells) and all(_DELIMITER_CELL.match(c.replace(" ", "")) for c in cells)


def unlink(cell: str) -> tuple[str, list[str]]:
    """`[vLLM documentation](https://docs.vllm.ai/) and [public source](https://github.com/...)` ->
    ('vLLM documentation and public source', [the two links]). A Markdown parser (markdown-it-py, in
    linear time) reads the cell: backslash escapes and entities become their characters, a link its
    text, and any other markup stays as it was written."""
    tokens = _markdown().parseInline(cell)[0].children or []
    text: list[str] = []
    links: list[str] = []
    for token in tokens:
        if token.type == "link_open":
            links.append(str(token.attrGet("href") or ""))
        elif token.type == "code_inline":
            text.append(token.markup + token.content + token.markup)
        elif token.type in ("softbreak", "hardbreak"):
            text.append(" ")
        elif token.type in ("text", "html_inline"):
            text.append(token.content)
        elif token.type == "image":
            text.append(token.content)
        elif token.type != "link_close":
            text.append(token.markup)  # emphasis marks, kept as written
    return "".join(text), links


_PARSER: list[Any] = []


def _markdown() -> Any:
    if not _PARSER:
        from markdown_it import MarkdownIt

        parser = MarkdownIt("commonmark")
        # A link's destination as written (escapes and entities read, nothing percent-encoded): the
        # URL a catalog holds comes back as it was, `]` and `<` included.
        parser.normalizeLink = lambda url: url  # type: ignore[method-assign]
        _PARSER.append(parser)
    return _PARSER[0]


def _source_from_cells(cells: dict[str, str]) -> dict[str, Any]:
    from invmap.identifiers import arxiv_cited, arxiv_id, doi

    source_links: list[str] = []
    availability_links: list[str] = []
    for key in list(cells):
        cells[key], found = unlink(cells[key])
        if key == "source":
            source_links = found
        elif key == "availability":
            availability_links = found
    derived = derive(cells["source"])
    entry: dict[str, Any] = {"id": derived.id, "name": derived.name, "source": cells["source"]}
    for key in ("authors", "arxiv", "doi"):
        if value := getattr(derived, key):
            entry[key] = value
    if source_links:  # the first link is the source's own: an arXiv or DOI link fills those fields
        first = source_links[0]
        if (a := arxiv_cited(first)) is not None:  # the link's version pins the one the map cites
            if entry.get("arxiv") in (None, arxiv_id(a)):
                entry["arxiv"] = a
        elif first.lower().startswith(("https://doi.org/", "http://doi.org/", "https://dx.doi.org/")) and doi(first):
            entry.setdefault("doi", doi(first))
        else:
            entry["url"] = first
    code = next((link for link in [*source_links, *availability_links] if _CODE_HOST.match(link)), None)
    if code:
        entry["code"] = code
    entry["type"] = cells["type"]
    year = cells["year"]
    if year.lower() != "n.d.":
        entry["year"] = int(year) if year.isdigit() else year  # text stays text: validation names it
    for key in ("layer", "mechanism", "objective", "question", "availability"):
        entry[key] = cells[key]
    try:
        entry["accessed"] = dt.date.fromisoformat(cells["accessed"])
    except ValueError:
        entry["accessed"] = cells["accessed"]
    return entry


def _make_ids_unique(sources: list[dict[str, Any]]) -> None:
    """Ids derived from names are cut to at most 24 characters (`sourcetext.slug`); a clash takes
    `-2`, `-3`, ..."""
    from invmap.sourcetext import unique_slug

    taken: set[str] = set()
    for entry in sources:
        entry["id"] = unique_slug(entry["name"], taken)
        taken.add(entry["id"])


def seed_cell(source: Source, key: str) -> str:
    """A source's cell in the seed's table, as the seed writes it (`n.d.`, ISO dates)."""
    if key == "year":
        return source.year_text
    if key == "accessed":
        return source.accessed.isoformat()
    return str(getattr(source, key))


def _linked_cell(source: Source, key: str) -> str:
    """With `--links`: the Source cell links to the source's link, availability to its code."""
    cell = escape_cell(seed_cell(source, key))
    target = source.link if key == "source" else source.code if key == "availability" else None
    return f"[{cell}]({link_target(target)})" if target else cell


_ENTITY = re.compile(r"&(?:#\d+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")


def link_target(url: str) -> str:
    """A URL as a Markdown link's destination that reads back as the same URL: `<...>` around one
    with parentheses or angle brackets (`https://x.test/a)b`), a backslash before what Markdown
    would read otherwise (an entity, a backslash), and `|` escaped for the table."""
    text = url.replace("\\", "\\\\")
    if _ENTITY.search(text):
        text = text.replace("&", "\\&")
    if any(ch in url for ch in "()<> "):
        text = "<" + text.replace("<", "\\<").replace(">", "\\>") + ">"
    return text.replace("|", "\\|")


def to_markdown(catalog: Catalog, links: bool = False) -> str:
    """The seed's document: title, preface, the nine-column table, the procedure, the afterword."""
    from invmap.model import CatalogInfo

    info = catalog.catalog or CatalogInfo(title=DEFAULT_TITLE)
    blocks = [f"# {info.title}"]
    if info.preface:
        blocks.append(info.preface)
    rows = [
        "| " + " | ".join(h for h, _ in SEED_COLUMNS) + " |",
        "|" + "---|" * len(SEED_COLUMNS),
    ]
    cell = _linked_cell if links else (lambda s, key: escape_cell(seed_cell(s, key)))
    rows += ["| " + " | ".join(cell(s, key) for _, key in SEED_COLUMNS) + " |" for s in catalog.sources]
    blocks.append("\n".join(rows))
    if info.procedure:
        blocks.append("\n".join(f"- {step}" for step in info.procedure))
    if info.afterword:
        blocks.append("\n".join(_escaped(line) for line in info.afterword.splitlines()))
    return "\n\n".join(blocks) + "\n"


def _is_step(line: str) -> bool:
    """A bullet (or numbered) line with text after its marker: a step of the procedure."""
    return bool(_BULLET.match(line)) and bool(_BULLET.sub("", line).strip())


_MARKER = re.compile(r"^(\s*\d*)(\\*[-*+.)]\s)")  # a list marker, maybe already escaped


def _escaped(line: str) -> str:
    """An afterword line that would read back as a step (or that starts with an escaped marker),
    one more backslash before its marker, as Markdown escapes one (`\\-`, `3\\.`): export then
    import keeps it in the afterword as written."""
    found = _MARKER.match(line)
    if found and (_is_step(line) or found.group(2).startswith("\\")):
        return found.group(1) + "\\" + line[found.end(1) :]
    return line


def _unescaped(line: str) -> str:
    """An afterword line as written: the backslash `_escaped` added before a leading marker taken off."""
    found = _MARKER.match(line)
    if found and found.group(2).startswith("\\"):
        return found.group(1) + line[found.end(1) + 1 :]
    return line


_BIB_SPECIALS = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "%": r"\%",
    "&": r"\&",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_BIB_SPECIAL_RE = re.compile("|".join(re.escape(k) for k in _BIB_SPECIALS))
_WEB_TYPES = {"official project", "navigational", "companion project"}
# Letters BibTeX knows by a command of their own, and accents by the combining mark they are made of:
# `Łukasz` is written `{\L}ukasz`, `Ré` is `R{\'e}`, so any BibTeX (8-bit or not) keeps the name.
_BIB_LETTERS = {
    "Ł": r"{\L}",
    "ł": r"{\l}",
    "Ø": r"{\O}",
    "ø": r"{\o}",
    "ß": r"{\ss}",
    "Æ": r"{\AE}",
    "æ": r"{\ae}",
    "Œ": r"{\OE}",
    "œ": r"{\oe}",
    "ı": r"{\i}",
    "Đ": r"{\DJ}",
    "đ": r"{\dj}",
}
_BIB_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u0308": '"',
    "\u030a": "r",
    "\u030b": "H",
    "\u030c": "v",
    "\u0327": "c",
    "\u0328": "k",
}


# BibTeX counts every brace, escaped or not: text whose braces do not balance would end its field
# early (and carry what follows into the file as BibTeX), so its braces are written as commands.
_UNBALANCED = {"{": r"\textbraceleft{}", "}": r"\textbraceright{}"}


def bib_escape(text: str) -> str:
    specials = _BIB_SPECIALS if _balanced(text) else {**_BIB_SPECIALS, **_UNBALANCED}
    return _BIB_SPECIAL_RE.sub(lambda m: specials[m.group(0)], text)


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        if ch in "{}":
            depth += 1 if ch == "{" else -1
            if depth < 0:
                return False
    return depth == 0


_URL_UNSAFE = {"{": "%7B", "}": "%7D", "\\": "%5C"}


def bib_url(url: str) -> str:
    """A URL as a .bib field holds it: braces and backslashes percent-encoded, the same URL to a
    browser, since in a .bib file they would end the field or carry TeX commands. (`check` refuses
    them in a catalog; this holds whatever the input.)"""
    return "".join(_URL_UNSAFE.get(ch, ch) for ch in url) if any(ch in url for ch in "{}\\") else url


def bib_letters(text: str) -> str:
    """Non-ASCII Latin letters as BibTeX commands; any other character as it is (UTF-8)."""
    import unicodedata

    out = []
    for ch in text:
        if ch.isascii():
            out.append(ch)
        elif ch in _BIB_LETTERS:
            out.append(_BIB_LETTERS[ch])
        else:
            parts = unicodedata.normalize("NFD", ch)
            accents = [_BIB_ACCENTS.get(m) for m in parts[1:]]
            if parts[0].isascii() and parts[0].isalpha() and len(accents) == 1 and accents[0]:
                sep = " " if accents[0].isalpha() else ""
                out.append("{\\" + accents[0] + sep + ("\\i" if parts[0] == "i" else parts[0]) + "}")
            else:
                out.append(ch)
    return "".join(out)


def bib_authors(authors: str) -> str:
    """`Williams, Waterman, and Patterson` -> `Williams and Waterman and Patterson`; `et al.` -> `and others`."""
    parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", authors)
    names = ["others" if p.strip().lower() in ("et al.", "et al") else p.strip() for p in parts if p.strip()]
    if names and names[0].lower().endswith(" et al."):
        names = [names[0][: -len(" et al.")], "others", *names[1:]]
    return " and ".join(bib_letters(bib_escape(n)) if n != "others" else n for n in names)


def bib_entry_type(source: Source) -> str:
    """The source's own `entry_type`, else `misc` (a preprint, a page, or a venue not yet verified)."""
    return source.entry_type or "misc"


# Where a published paper's `published_in` goes, by entry type.
_PUBLISHED_IN = {"inproceedings": "booktitle", "article": "journal", "techreport": "institution"}


def bib_fields(s: Source) -> list[tuple[str, str]]:
    """One source's BibTeX fields: what the `plain` style needs for its entry type, then identifiers."""
    kind = bib_entry_type(s)
    fields: list[tuple[str, str]] = [("title", "{" + bib_letters(bib_escape(s.title or s.name)) + "}")]
    if s.author_names:
        fields.append(("author", " and ".join(bib_letters(bib_escape(n)) for n in s.author_names)))
    elif s.authors:
        fields.append(("author", bib_authors(s.authors)))
    if kind in _PUBLISHED_IN and (s.published_in or s.venue):
        fields.append((_PUBLISHED_IN[kind], bib_letters(bib_escape(s.published_in or s.venue or ""))))
    if kind == "techreport" and s.report_number:
        fields.append(("number", bib_escape(s.report_number)))
    year = bib_year(s)
    if year is not None:
        fields.append(("year", year))
    if s.arxiv:
        fields += [("eprint", s.arxiv), ("archiveprefix", "arXiv")]
        if kind == "misc":
            fields.append(("howpublished", f"arXiv preprint arXiv:{s.arxiv}"))
    if s.doi:
        fields.append(("doi", bib_escape(s.doi)))
    if s.link:  # once: a page's @misc in howpublished (every style prints it), else in url
        if kind == "misc" and not s.arxiv:
            fields.append(("howpublished", "\\url{" + bib_url(s.link) + "}"))
        else:
            fields.append(("url", bib_url(s.link)))
    fields += [
        ("urldate", s.accessed.isoformat()),
        ("keywords", bib_letters(bib_escape(", ".join((*s.layers, s.type, *(s.keywords or ())))))),
    ]
    return fields


_VENUE_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")


def bib_year(s: Source) -> str | None:
    """The year a citation gives: the venue's when the venue names one (`OSDI 2025` for a paper the map
    dates 2024 by its preprint), else the source's year; the map's own year cell is never changed."""
    found = _VENUE_YEAR.search(s.venue or "")
    if found:
        return found.group(1)
    return None if s.year is None else str(s.year)


def to_bibtex(catalog: Catalog) -> str:
    """One entry per source, keyed by id: `@inproceedings` with `booktitle`, `@article` with `journal`,
    `@techreport` with `institution` and `number`, else `@misc` (with `eprint` for a preprint and
    `howpublished` for a page); arXiv ids as eprint, DOIs as doi, titles' case kept."""
    entries = []
    for s in catalog.sources:
        body = ",\n".join(f"  {key} = {{{value}}}" for key, value in bib_fields(s))
        entries.append(f"@{bib_entry_type(s)}{{{s.id},\n{body}\n}}\n")
    return "\n".join(entries)


# --- export's catalog view (formats.FORMATS) -------------------------------------------------------


def markdown_document(result: Any, context: Any) -> Any:
    """`export --format markdown`: the seed's document."""
    yield to_markdown(result.catalog(), links=context.cell_links)


def bibtex_document(result: Any, context: Any) -> Any:
    """`export --format bibtex`."""
    yield to_bibtex(result.catalog())


def toml_document(result: Any, context: Any) -> Any:
    """`export --format toml`: the canonical catalog."""
    from invmap.canonical import dumps

    yield dumps(result.catalog())
