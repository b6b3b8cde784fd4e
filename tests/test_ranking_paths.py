"""Search's two ways to the same ranking (issue 47, scale): a plain query whose `--limit` the weighed
rows fill is ranked from tiers counted in SQLite (`Ranking._counted`), every other one from each
word's rows read into Python. On a generated catalog, whole `search --json` answers must be the same
bytes either way, and the SQL way must be the one taken where it applies."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

SIZE = 2000  # enough sources that common words match more rows than are weighed (300)

# (query words, --limit, whether the SQL way applies)
QUERIES = [
    (["kv"], "10", True),
    (["kv", "cache"], "10", True),
    (["kv", "cache"], "300", True),
    (["virtual", "memory", "kv"], "5", True),
    (["tiered", "resources", "prefill", "decode"], "10", True),
    (["specualtive", "decodng"], "10", True),
    (["cache", "prefill", "decode", "batch", "memory", "kernel"], "10", False),  # six words: the sets
    (["kv -cache"], "10", False),  # an excluded word: the sets
    (['"kv cache" full'], "10", False),  # a required phrase: the sets
    (["kv", "cache"], "301", False),  # more than the weighed rows: the sets
]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import generated_catalog

    return generated_catalog(tmp_path_factory.mktemp("paths") / "generated.toml", SIZE, layers=True)


def _search(catalog: Path, words: list[str], limit: str) -> tuple[int, str]:
    from invmap.cli import app

    result = CliRunner().invoke(app, ["--catalog", str(catalog), "search", "--json", "--limit", limit, *words])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


@pytest.mark.parametrize(("words", "limit", "counted"), QUERIES, ids=[" ".join(q[0]) + f" /{q[1]}" for q in QUERIES])
def test_both_ways_give_the_same_answer(
    catalog: Path, monkeypatch: pytest.MonkeyPatch, words: list[str], limit: str, counted: bool
) -> None:
    from invmap.search import bm25f

    taken: list[bool] = []
    real = bm25f.Ranking._counted

    def spy(self, *args):  # type: ignore[no-untyped-def]
        taken.append(real(self, *args))
        return taken[-1]

    monkeypatch.setattr(bm25f.Ranking, "_counted", spy)
    code, fast = _search(catalog, words, limit)
    assert code == 0 and fast.startswith("[")
    assert any(taken) is counted, f"the SQL way {'was not' if counted else 'was'} taken"
    monkeypatch.setattr(bm25f.Ranking, "_counted", lambda self, *args: False)
    assert _search(catalog, words, limit) == (code, fast)
