"""The ranking pin (issue 47, scale): the top results of a fixed set of searches and triage symptoms on
a generated catalog of PIN_SIZE sources (benchmarks/generate.py, with the shipped levels and reports),
ids and scores, as tests/assets/ranking-pin.json holds them. Speed work changes no ranking; a change
made to the ranking on purpose rewrites the pin (`python tests/test_ranking_pin.py --write`) and says
so in its commit.

The queries are declared in the pin file itself (`searches`, `triages`): this file only runs them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

PIN = Path(__file__).parent / "assets" / "ranking-pin.json"
PIN_SIZE = 2000
TOP = 10


def _invoke(args: list[str]) -> tuple[int, str]:
    from invmap.cli import app

    result = CliRunner().invoke(app, args, prog_name="invmap")
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


def _search(catalog: Path, args: list[str]) -> dict:
    code, out = _invoke(["--catalog", str(catalog), "search", "--json", "--limit", str(TOP), *args])
    rows = json.loads(out) if code == 0 else []
    return {"exit": code, "top": [[r["id"], r["score"]] for r in rows]}


def _triage(catalog: Path, args: list[str]) -> dict:
    code, out = _invoke(["--catalog", str(catalog), "triage", "--json", "--", *args])
    levels = json.loads(out) if code == 0 else []
    return {
        "exit": code,
        "levels": [[lv["code"], lv["score"], [s["id"] for s in lv["sources"][:TOP]]] for lv in levels],
    }


def rankings(catalog: Path, declared: dict) -> dict:
    """What the current code answers for every declared search and triage."""
    return {
        "searches": {" ".join(a): _search(catalog, a) for a in declared["searches"]},
        "triages": {" ".join(a): _triage(catalog, a) for a in declared["triages"]},
    }


def _catalog(folder: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import generated_catalog

    return generated_catalog(folder / "pinned.toml", PIN_SIZE, layers=True)


def test_rankings_match_the_pin(tmp_path: Path) -> None:
    pinned = json.loads(PIN.read_text(encoding="utf-8"))
    assert pinned["size"] == PIN_SIZE
    assert len(pinned["searches"]) >= 10 and len(pinned["triages"]) >= 4  # the pin holds what it claims
    got = rankings(_catalog(tmp_path), pinned)
    for kind in ("searches", "triages"):
        for query, want in pinned["results"][kind].items():
            assert got[kind][query] == want, f"{kind[:-1]} {query!r} ranks differently from the pin"
    assert set(got["searches"]) == set(pinned["results"]["searches"])
    assert set(got["triages"]) == set(pinned["results"]["triages"])
    # Each search pinned finds something, bar the one declared to find nothing.
    assert sum(1 for r in got["searches"].values() if r["top"]) >= len(got["searches"]) - 1


def _write() -> None:
    import os
    import tempfile

    pinned = json.loads(PIN.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as folder:
        os.environ["XDG_CACHE_HOME"] = folder
        os.environ.pop("INVMAP_CATALOG", None)
        pinned["results"] = rankings(_catalog(Path(folder)), pinned)
    PIN.write_text(json.dumps(pinned, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_ranking_pin.py --write  (rewrites tests/assets/ranking-pin.json)")
    _write()
