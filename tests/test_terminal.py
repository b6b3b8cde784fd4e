"""At the terminal: widths, pager, colour, hyperlinks, notices and help."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from conftest import bash, generated_catalog, installed_invmap, on_terminal, screen


@pytest.mark.parametrize("cols", [60, 80, 120])
@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["questions"],
        ["search", "kv cache"],
        ["related", "pagedattention"],
        ["layers"],
        ["map"],
        ["show", "gqa"],
    ],
)
def test_identifiers_are_never_split(cli, args, cols):
    records = json.loads(cli("list", "--json").out)
    lines = screen(args, cols)
    text = "\n".join(lines)
    for r in records:
        for value in (r["id"], r["name"]):
            fragments = [value[:k] for k in range(len(value) // 2, len(value))]
            if value in text:
                continue
            # not shown at all is fine (a dropped column); shown in pieces is not
            assert not any(
                re.search(rf"(^|\s){re.escape(f)}$", line) for f in fragments for line in lines if len(f) > 4
            ), value


def test_line_budgets_at_80_columns():
    assert len(on_terminal(["list"], 80)) <= 95  # ID, Year, Layer and mechanism all kept
    assert len(on_terminal(["questions"], 80)) <= 90  # a layer label on two lines gives the questions room
    assert len(on_terminal(["list", "--layer", "L3"], 80)) <= 25
    assert len(on_terminal(["map"], 80)) <= 45


def test_show_leaves_out_empty_fields_and_prints_links_whole():
    lines = on_terminal(["show", "gqa"], 60)
    assert not any(line.startswith("DOI") or line.startswith("Code") for line in lines)
    assert any(line.endswith("https://arxiv.org/abs/2305.13245") for line in lines)
    layer = on_terminal(["show", "mooncake"], 80)
    assert any(re.match(r"Layer\s+L3 and L5 \(L3, L5\)$", line) for line in layer)


def test_pager_used_only_on_a_terminal(tmp_path):
    stand_in = tmp_path / "pager.sh"
    marker = tmp_path / "paged"
    stand_in.write_text(f"#!/bin/sh\ncat > '{marker}'\n")
    stand_in.chmod(0o755)
    screen(["list"], 80, env={"INVMAP_PAGER": str(stand_in)}, rows=20)
    assert marker.exists() and "pagedattention" in marker.read_text()
    marker.unlink()
    screen(["list", "--no-pager"], 80, env={"INVMAP_PAGER": str(stand_in)}, rows=20)
    assert not marker.exists()
    screen(["--no-pager", "list"], 80, env={"INVMAP_PAGER": str(stand_in)}, rows=20)
    assert not marker.exists()
    program = installed_invmap()
    subprocess.run([program, "list"], capture_output=True, env={**os.environ, "INVMAP_PAGER": str(stand_in)})
    assert not marker.exists()


def test_hyperlinks_only_with_colour_on_a_terminal(cli):
    from invmap.environment import Environment

    def on_a_terminal(**env: str) -> str:
        return cli("list", "--layer", "L3", env=env, environment=Environment.terminal(120)).out

    on = on_a_terminal(TERM="xterm-256color")
    assert "\x1b]8;" in on and "https://arxiv.org/abs/2309.06180" in on
    assert "\x1b]8;" not in on_a_terminal(NO_COLOR="1")


def test_help_teaches(cli):
    """Every declared command's help ends with examples, and reads as people write usage."""
    from invmap import options as decl
    from invmap.cli import shortcuts

    root = cli("--help").out
    assert all(f"{group} commands:" in root for group in decl.GROUPS)
    assert all(len(line) <= 80 for line in root.splitlines())
    for command in decl.COMMANDS:
        text = cli(*command.path.split(), "--help").out
        assert "Examples:" in text and "<int range>" not in text and "x>=1" not in text, command.path
        assert not any(line.rstrip().endswith("..") and not line.rstrip().endswith("...") for line in text.splitlines())
        if shortcuts.ENABLED:  # `NAME...`, not Typer 0.29's `{NAME...}...` and `NAME <str>`
            assert "{" not in text.splitlines()[0] and "<str>" not in text and "<list" not in text, command.path
    if shortcuts.ENABLED:
        assert cli("show", "--help").out.startswith("Usage: invmap show [OPTIONS] NAME...\n")
        assert cli("record", "new", "--help").out.startswith("Usage: invmap record new [OPTIONS] NAME\n")


def test_empty_result_says_so_on_a_terminal_only():
    lines = on_terminal(["list", "--type", "survey", "--layer", "L1"], 80)
    assert lines == ["no sources match --layer L1 --type survey"]
    nothing = on_terminal(["search", "zzqqxx"], 80)
    assert nothing == ["nothing matches 'zzqqxx'; try fewer words, or 'invmap define'"]
    narrowed = on_terminal(["search", "zzqqxx", "--in", "title"], 80)
    assert narrowed == ["nothing matches 'zzqqxx'; search looked at title; try --in all"]


def test_no_hyperlinks_in_a_pipe_even_with_colour_always(sh):
    out = sh("list", "--layer", "L3", "--color", "always", "--format", "table").out
    assert "\x1b[" in out and "\x1b]8;" not in out


@pytest.mark.parametrize("command", ["list", "questions"])
def test_tables_stop_at_200_rows_on_a_terminal_only(cli, tmp_path, command):
    """A table sent to a pipe or a file holds every row; on a terminal it stops at 200 and says so."""
    import re

    path = generated_catalog(tmp_path / "gen.toml", 250)
    args = ["--catalog", str(path), command, "--format", "table", "--fields", "id"]
    capped, everything = cli(*args), cli(*args, "--all")

    def rows(text: str) -> int:
        return len(re.findall(r"(?m)^[a-z-]+-\d+\s*$", text))

    assert (rows(capped.out), rows(everything.out)) == (250, 250)
    assert capped.err == everything.err == ""  # the notice is for a person at a terminal
    to_file = tmp_path / "t.txt"
    assert bash(f"'{installed_invmap()}' " + " ".join(f"'{a}'" for a in args) + f" > '{to_file}'").returncode == 0
    assert rows(to_file.read_text()) == 250
    shown = on_terminal(args, 80)
    assert rows("\n".join(shown)) == 200 and "50 more rows; use --all" in shown[-1]
    assert not any("more rows" in line for line in on_terminal([*args, "--all"], 80))


def test_every_help_page_fits_60_columns_and_breaks_only_at_spaces():
    """Help at 60 columns: no line wider, and every option name and example command whole on its line."""
    from concurrent.futures import ThreadPoolExecutor

    from invmap.options import COMMANDS

    paths = [[], *([*c.path.split(), "--help"] for c in COMMANDS)]
    paths[0] = ["--help"]
    # a real terminal: with the Typer shortcuts off, every command's help is built at import, at its width
    with ThreadPoolExecutor(4) as pool:
        pages = list(pool.map(lambda args: screen(args, 60), paths))
    for args, lines in zip(paths, pages):
        assert lines and all(len(line) <= 60 for line in lines), (args, [line for line in lines if len(line) > 60])
        at = next((i for i, line in enumerate(lines) if line.strip() == "Examples:"), None)
        if at is not None:
            for line in lines[at + 1 :]:
                if not line.strip():
                    break
                assert line.startswith("    ") and (line[4] != " " or line.startswith("        ")), (args, line)
            continued = [line for line in lines[at + 1 :] if line.endswith(" \\")]
            assert all(not line.endswith(("-", "'")) for line in continued)


def test_long_messages_wrap_at_spaces_on_a_terminal():
    lines = on_terminal(["list", "--fields", "nme"], 60)
    assert lines[0] == "Error: unknown field 'nme'; did you mean 'name'? (valid"
    assert all(len(line) <= 60 and line.startswith("  ") for line in lines[1:])
    assert " ".join(line.strip() for line in lines).endswith("question, availability, accessed)")


def test_list_keeps_year_and_layer_at_80_and_labels_whole_at_120():
    head80 = on_terminal(["list", "--no-pager"], 80)[0].split()
    assert head80 == ["ID", "Year", "Layer", "Central", "mechanism"]
    lines = on_terminal(["list", "--no-pager"], 120)
    assert lines[0].split()[:4] == ["ID", "Name", "Year", "Layer"]
    start = lines[0].index("Layer")
    labels = {line[start:].split("  ")[0] for line in lines[2:] if line[:1].strip()}
    assert {"L1 and machine model", "L2 and runtime lever", "Model and KV memory"} <= labels


def test_a_table_without_colour_is_rich_s_text_drawn_faster():
    """`plain_table` (no colour: pipes, files, NO_COLOR) is the very text rich draws, for the shipped
    records and for random texts (long words, wide characters, many spaces), at the widths where the
    layout changes: of the widths 60, 71, ... 192, the narrowest at which each set of columns fits
    (where wrapping is tightest), and 200. The one-block-a-source text (`plain_stacked`) likewise,
    narrow and wide. (Drawing every one of those widths found nothing more, at 3x the time.)"""
    import random
    import string

    from invmap.fields import SOURCE_FIELDS
    from invmap.index import open_catalog
    from invmap.location import locate
    from invmap.render.blocks import plain_stacked, stacked
    from invmap.render.layout import layout
    from invmap.render.plain import plain_table
    from invmap.render.tables import records_table, to_terminal_text

    rows = list(open_catalog(locate(None)).records(columns=SOURCE_FIELDS))
    rng = random.Random(7)

    def word() -> str:
        return "".join(rng.choice(string.ascii_letters + "-/.,()éü中文") for _ in range(rng.choice([1, 3, 8, 30, 45])))

    synthetic = [
        {
            **rows[n % len(rows)],
            "mechanism": " ".join(word() for _ in range(rng.randint(1, 25))),
            "question": "  ".join(word() for _ in range(rng.randint(1, 12))),
            "keywords": [word() for _ in range(4)],
        }
        for n in range(12)
    ]
    views = [
        ["id", "name", "year", "layer", "mechanism"],
        ["id", "layer", "question"],
        ["id", "keywords", "author_names", "title"],
        ["score", "id", "layer", "question"],
    ]
    for data in (rows, synthetic):
        for fields in views:
            narrowest: dict[tuple[str, ...], int] = {}
            for width in range(60, 201, 11):  # layout only: no drawing
                fitted = layout(data, fields, width)
                if fitted:
                    narrowest.setdefault(tuple(fitted[0]), width)
            for width in sorted({*narrowest.values(), 200}):
                fitted = layout(data, fields, width)
                if fitted:
                    drawn = to_terminal_text(records_table(data, fields, width, False, fitted=fitted), width, False)
                    assert plain_table(data, *fitted) == drawn, (fields, width)
            for width in (60, 137):
                for lead in (False, True):  # one block a source, where the table does not fit
                    drawn = to_terminal_text(stacked(data, fields, width, False, lead=lead), width, False)
                    assert plain_stacked(data, fields, width, lead=lead) == drawn, (fields, width, lead)


def test_the_environment_carries_the_colour_decision_and_the_pager():
    """What a run knows of its terminal is one object: a test builds it, nothing reads sys for it."""
    from invmap.environment import Environment

    on = Environment.terminal(80, variables={"TERM": "xterm-256color"})
    assert (on.use_color("auto"), on.use_color("never"), on.use_color("always")) == (True, False, True)
    assert not Environment.terminal(80, variables={"NO_COLOR": "1"}).use_color("auto")
    assert not Environment.terminal(80, variables={"TERM": "dumb"}).use_color("auto")
    piped = Environment(variables={})
    assert (piped.use_color("auto"), piped.use_color("always")) == (False, True)
    assert piped.pager_command == "less" and piped.pager_variables() == {"LESS": "FRX"}
    chosen = Environment(variables={"INVMAP_PAGER": "", "PAGER": "more", "LESS": "R"})
    assert chosen.pager_command == "" and chosen.pager_variables()["LESS"] == "R"
    assert Environment(variables={"PAGER": "more"}).pager_command == "more"


def test_a_test_s_environment_sets_the_width_and_the_terminal(cli):
    from invmap.environment import Environment

    narrow = cli("--color", "never", "list", environment=Environment.terminal(60)).out
    wide = cli("--color", "never", "list", environment=Environment.terminal(120)).out
    assert max(map(len, narrow.splitlines())) <= 60 < max(map(len, wide.splitlines())) <= 120
    assert "\t" in cli("list", environment=Environment(columns=60)).out  # not a terminal: plain lines
