"""Write the engine table and rule table of docs/measurements.md (moved there from the README) from the declarations they describe:
`python scripts/generate_readme_tables.py` (after a change to src/invmap/data/metrics.toml or
rules.toml; tests/test_measure_declarations.py fails until it is run).

Each table sits between two comment lines in docs/measurements.md, `<!-- NAME: generated ... -->` and
`<!-- end NAME -->`; everything between them is replaced.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "measurements.md"


def _code(items: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{i}`" for i in items)


def engine_table() -> str:
    from invmap.measure import names

    rows = [
        "| engine | kind | recognised by | models told apart by | ranks told apart by |",
        "| --- | --- | --- | --- | --- |",
    ]
    for e in names.ENGINES:
        model = f"`{e.model_label}`" if e.model_label else "— (one model a process)"
        rank = f"`{e.rank_label}`" if e.rank_label else "—"
        rows.append(f"| {e.title} | {e.kind} | {_code(e.prefixes)} | {model} | {rank} |")
    return "\n".join(rows)


def _levels(levels: tuple[str, ...]) -> str:
    return levels[0] if len(levels) == 1 else ", ".join(levels[:-1]) + " and " + levels[-1]


def _reads(rule) -> str:  # noqa: ANN001 - a measure.rules.Rule
    if rule.kind == "bench":
        return "a benchmark"
    if rule.kind == "compare":
        return "two benchmark runs"
    return {"engine": "an engine's scrape", "router": "a router's scrape", "both": "an engine's or a router's scrape"}[
        rule.applies
    ]


def rule_table() -> str:
    from invmap.measure import rules

    rows = ["| rule | level | reads | fires when |", "| --- | --- | --- | --- |"]
    for kind in ("metrics", "bench", "compare"):  # a scrape's rules first, then a benchmark's, then two runs'
        for r in rules.RULES:
            if r.kind == kind:
                rows.append(f"| `{r.id}` | {_levels(r.levels)} | {_reads(r)} | {r.fires} |")
    return "\n".join(rows)


TABLES = {"engines": engine_table, "rules": rule_table}


def updated(text: str) -> str:
    """The page's text with every generated table written anew."""
    for name, build in TABLES.items():
        pattern = re.compile(rf"(<!-- {name}: generated [^\n]*-->\n)(.*?)(<!-- end {name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(
                f"docs/measurements.md has no '<!-- {name}: generated ... -->' ... '<!-- end {name} -->' block"
            )
        text = pattern.sub(lambda m: m.group(1) + build() + "\n" + m.group(3), text)
    return text


def main() -> None:
    sys.path.insert(0, str(REPO / "src"))
    text = PAGE.read_text(encoding="utf-8")
    new = updated(text)
    if new != text:
        PAGE.write_text(new, encoding="utf-8")
        print("docs/measurements.md: tables written")
    else:
        print("docs/measurements.md: tables already up to date")


if __name__ == "__main__":
    main()
