"""`check` on a large catalog (issue 47, scale): every warning located in one pass over the text, a
screenful of them shown with the rest counted, `--all` and the machine format giving every one."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import generated_catalog, on_terminal


def _headers(path) -> list[int]:
    """The line of each `[[sources]]` header, read from the file independently of invmap."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [n for n, line in enumerate(lines, 1) if line.strip() == "[[sources]]"]


def _expected(path, warnings: list[str]) -> list[str]:
    """`warning: PATH:LINE:1: ...` for each warning, at the header of the source it names."""
    headers = _headers(path)
    out = []
    for w in warnings:
        n = int(w.split()[1])  # "source N (id): ..."
        out.append(f"warning: {path}:{headers[n - 1]}:1: {w}")
    return out


def test_check_shows_a_screenful_of_warnings_and_counts_the_rest(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a short name: each warning fits a line of the terminal
    generated_catalog(tmp_path / "big.toml", 3000)
    path = Path("big.toml")
    report = json.loads(cli("check", str(path), "--json").out)
    warnings = report["warnings"]
    assert report["valid"] and report["sources"] == 3000 and len(warnings) > 100  # long generated ids
    for rows in (24, 40):
        shown = [line for line in on_terminal(["check", str(path)], 120, rows=rows) if line]
        most = rows - 2
        assert shown[:most] == _expected(path, warnings[:most])
        assert shown[most] == f"{len(warnings) - most} more warnings; use --all, or a machine format (--json)"
        assert shown[most + 1 :] == [f"{path}: ok, 3000 sources"]
    every = cli("check", str(path), "--all")
    assert every.code == 0 and every.err.splitlines() == _expected(path, warnings)
    assert every.out == f"{path}: ok, 3000 sources\n"


def test_a_short_terminal_still_shows_ten_warnings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    generated_catalog(tmp_path / "big.toml", 3000)
    shown = [line for line in on_terminal(["check", "big.toml"], 200, rows=5) if line]
    assert [line.startswith("warning: ") for line in shown[:11]] == [True] * 10 + [False]
    assert shown[10].endswith(" more warnings; use --all, or a machine format (--json)")


def test_every_problem_of_a_large_invalid_catalog_is_located(cli, tmp_path):
    path = generated_catalog(tmp_path / "big.toml", 3000)
    text = path.read_text(encoding="utf-8")
    # Break every 100th source's year: each problem is at that source's `year` key.
    lines = text.splitlines(keepends=True)
    headers = _headers(path)
    broken = set(headers[::100])
    wanted = []
    n = 0
    for at, line in enumerate(lines, 1):
        if line.strip() == "[[sources]]":
            n += 1
            inside = at in broken
        if line.startswith("year = ") and inside:
            lines[at - 1] = 'year = "soon"\n'
            wanted.append((n, at))
    path.write_text("".join(lines), encoding="utf-8")
    report = json.loads(cli("check", str(path), "--json").out)
    assert not report["valid"] and len(report["details"]) == len(wanted) > 20
    assert [(d["line"], d["column"]) for d in report["details"]] == [(at, 1) for _, at in wanted]
    assert [d["problem"].split()[1] for d in report["details"]] == [str(n) for n, _ in wanted]
