"""A damaged index always heals: every page of a built index zeroed in turn (by the index's own
PRAGMA page_size), and search, triage, related and show answer exactly as with the index intact (the
index is rebuilt on a fresh connection, temporary tables made again); zeroed quarter pages, which
SQLite may read without noticing, never give a traceback."""

from __future__ import annotations

import sqlite3

import pytest

COMMANDS = (["search", "kv cache eviction"], ["triage", "p99 latency spikes"], ["related", "vllm"], ["show", "vllm"])
COMMANDS += (["search", "flashatention"],)  # a typo: the correction vocabulary and fts5vocab tables


def _index(isolated):
    found = sorted((isolated / "invmap").glob("index-*.sqlite3"))
    assert len(found) == 1, found
    return found[0]


def _zeroed(path, intact: bytes, start: int, size: int) -> None:
    damaged = bytearray(intact)
    damaged[start : start + size] = bytes(size)
    path.write_bytes(bytes(damaged))


def test_every_zeroed_page_is_rebuilt_and_answers_as_before(cli, isolated):
    path = _index(isolated)
    intact = path.read_bytes()
    with sqlite3.connect(path) as con:
        page = con.execute("PRAGMA page_size").fetchone()[0]
    expected = {tuple(args): cli(*args) for args in COMMANDS}
    assert all(r.code == 0 for r in expected.values())
    for start in range(0, len(intact), page):
        for args in COMMANDS:
            _zeroed(path, intact, start, page)
            result = cli(*args)
            assert (result.code, result.out) == (0, expected[tuple(args)].out), (start // page, args, result.err)


@pytest.mark.parametrize("quarter", range(4))
def test_zeroed_quarter_pages_never_give_a_traceback(cli, isolated, quarter):
    path = _index(isolated)
    intact = path.read_bytes()
    with sqlite3.connect(path) as con:
        page = con.execute("PRAGMA page_size").fetchone()[0]
    piece = page // 4
    for start in range(quarter * piece, len(intact), page):
        for args in COMMANDS:
            _zeroed(path, intact, start, piece)
            result = cli(*args)  # an exception would be raised here (CliRunner re-raises it)
            assert result.code in (0, 1), (start // piece, args, result.err)
