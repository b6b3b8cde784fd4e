"""Issue 39 (polish): help that renders, refusals said once, one vocabulary of flags, screens that fit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib

from conftest import REPO, on_terminal
from invmap import options as decl

GROUPS = sorted(decl.SUB)  # every command with subcommands, from the declarations


@pytest.mark.parametrize("group", GROUPS)
def test_a_group_without_a_subcommand_prints_its_help_as_bare_invmap_does(cli, group):
    piped = cli(group)
    assert piped.code == 0 and piped.err == ""
    assert "\\x0a" not in piped.out and piped.out.startswith(f"Usage: invmap {group} [OPTIONS] COMMAND")
    assert decl.TOP[group].summary in " ".join(piped.out.split())
    for name, sub in decl.SUB[group].items():
        assert re.search(rf"^  {re.escape(name)} +{re.escape(sub.summary[:20])}", piped.out, re.M), name
    assert cli(group, "--help").out == piped.out  # the same help as asked for
    shown = on_terminal([group], 80)
    assert shown[0].startswith(f"Usage: invmap {group}") and not any("\\x0a" in line for line in shown)
    assert max(len(line) for line in shown) <= 80


def test_a_group_without_a_subcommand_exits_0_as_a_process(sh):
    for group in GROUPS:
        done = sh(group)
        assert (done.code, done.err) == (0, ""), group
        assert "\n\nCommands:\n" in done.out


# --- rm of a source the catalog's reports cite ----------------------------------------------------


def _shipped_copy(tmp_path: Path) -> Path:
    own = tmp_path / "own.toml"
    own.write_text((REPO / "catalog.toml").read_text(encoding="utf-8"), encoding="utf-8")
    return own


def _citing(path: Path, ident: str) -> list[str]:
    reports = tomllib.loads(path.read_text(encoding="utf-8")).get("reports", [])
    return [r["id"] for r in reports if ident in r.get("sources", [])]


def test_rm_of_a_cited_source_says_once_what_blocks_it(cli, tmp_path):
    own = _shipped_copy(tmp_path)
    before = own.read_bytes()
    citing = _citing(own, "vllm")
    assert len(citing) > 3
    done = cli("-c", str(own), "rm", "vllm", "--yes")
    assert done.code == 2 and done.out == ""
    assert done.err.splitlines() == [
        f"Error: cannot remove 'vllm' from {own}: {len(citing)} of its reports cite it ({', '.join(citing[:3])}, ...)",
        f"Hint: --drop-citations removes the citation from the {len(citing)} reports (as an overlay's removal does)",
    ]
    assert own.read_bytes() == before


def test_rm_drop_citations_keeps_the_reports_and_their_other_sources(cli, tmp_path):
    own = _shipped_copy(tmp_path)
    reports = {r["id"]: r for r in tomllib.loads(own.read_text(encoding="utf-8"))["reports"]}
    citing = _citing(own, "pagedattention")
    done = cli("-c", str(own), "rm", "pagedattention", "--yes", "--drop-citations")
    assert done.code == 0, done.err
    assert done.out == f"Removed pagedattention from {own}; dropped the citation from {len(citing)} reports\n"
    after = {r["id"]: r for r in tomllib.loads(own.read_text(encoding="utf-8"))["reports"]}
    assert list(after) == list(reports)
    for ident, report in reports.items():
        kept = [s for s in report.get("sources", []) if s != "pagedattention"]
        assert after[ident].get("sources", []) == kept
        assert {k: v for k, v in after[ident].items() if k != "sources"} == {
            k: v for k, v in report.items() if k != "sources"
        }
    assert cli("-c", str(own), "check").code == 0
    assert cli("-c", str(own), "reports", "--source", "pagedattention").code != 0


# --- add: an identifier in the Source text ---------------------------------------------------------


def test_add_refuses_an_arxiv_id_in_the_source_text_as_it_refuses_the_option(cli, tmp_path):
    from conftest import add_args

    own = _shipped_copy(tmp_path)
    before = own.read_bytes()
    by_option = cli("-c", str(own), "add", *add_args("Dup", arxiv="2309.06180"))
    by_cell = cli("-c", str(own), "add", *add_args("Dup", source="Dup, arXiv:2309.06180"))
    assert by_option.code == by_cell.code == 2 and own.read_bytes() == before
    assert by_cell.err.splitlines() == [
        "Error: arXiv id 2309.06180 (in its Source text) is already in the map, as pagedattention: "
        "one source, added twice?",
        "Hint: pass --allow-duplicate to add it anyway",
    ]
    forced = cli("-c", str(own), "add", *add_args("Dup", source="Dup, arXiv:2309.06180"), "--allow-duplicate")
    assert forced.code == 0, forced.err
    checked = cli("-c", str(own), "check")
    assert checked.code == 0
    assert re.search(
        r"source \d+ \(dup\): arXiv id 2309\.06180 \(in its Source text\) is also source \d+'s \(pagedattention\)",
        checked.err,
    ), checked.err


def test_the_shipped_catalog_names_each_source_text_identifier_once(cli):
    assert "one source twice" not in cli("check").err


# --- record writers refuse a missing folder as every writer does -----------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["record", "new", "pagedattention"],
        ["estimate", "kv", "--record", "pagedattention"],
        ["simulate", "kv", "--record", "pagedattention"],
    ],
)
def test_a_record_writer_refuses_a_missing_folder(cli, tmp_path, args):
    target = tmp_path / "a" / "b" / "c.json"
    done = cli(*args, "-o", str(target))
    assert done.code == 2 and not (tmp_path / "a").exists()
    assert done.err.splitlines() == [
        f"Error: no such directory: {target.parent}",
        f"Hint: make it first: mkdir -p {target.parent}",
    ]
    target.parent.mkdir(parents=True)
    assert cli(*args, "-o", str(target)).code == 0 and target.is_file()


# --- wording and completion ---------------------------------------------------------------------


def test_one_of_a_unit_is_singular_in_estimates(cli):
    out = cli("estimate", "kv", "--tokens", "1", "--concurrency", "1", "--tensor-parallel", "1").out
    assert "tensor_parallel  1 GPU  from option" in out and "1 GPUs" not in out
    assert "1 sequence  from option" in out and "1 token  from option" in out
    assert not re.search(r"\b1 (GPUs|sequences|tokens|bytes)\b", out)
    two = cli("estimate", "kv", "--tokens", "2", "--concurrency", "2").out
    assert "2 sequences  from option" in two and "2 tokens  from option" in two


def test_usage_lines_name_a_repeated_argument_once(cli):
    for command in decl.COMMANDS:
        first = cli(*command.path.split(), "--help").out.splitlines()[0]
        assert "...]..." not in first and "}..." not in first, first
    assert cli("settings", "--help").out.startswith("Usage: invmap settings [OPTIONS] [SOURCE...]\n")


def _zsh_items(line: str) -> list[str]:
    """What a real zsh hands `_arguments` for the completion of `line`: the items of its `((...))`
    spec after zsh has read both quoting levels, each `VALUE:HELP`."""
    from conftest import installed_invmap

    program = (
        "_arguments() { local spec=${1#\\*: :\\(\\(}; spec=${spec%\\)\\)};"
        " for item in ${(z)spec}; do print -r -- ${(Q)item}; done }; "
        'eval $(env _TYPER_COMPLETE_ARGS="$LINE" _INVMAP_COMPLETE=complete_zsh "$PROGRAM")'
    )
    import subprocess

    done = subprocess.run(
        ["zsh", "-f", "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "LINE": line, "PROGRAM": installed_invmap()},
    )
    assert done.returncode == 0, done.stderr
    items = [re.split(r"(?<!\\):", line, maxsplit=1) for line in done.stdout.splitlines()]
    return [":".join(part.replace("\\:", ":") for part in item) for item in items]


needs_zsh = pytest.mark.skipif(__import__("shutil").which("zsh") is None, reason="zsh is not installed")


@needs_zsh
def test_zsh_completion_descriptions_keep_their_apostrophes():
    quoted = [c for c in decl.TOP.values() if "'" in c.summary]
    assert quoted  # `guide`: "the map's study procedure"
    for command in quoted:
        shown = [i.split(":", 1)[1] for i in _zsh_items(f"invmap {command.name}") if i.startswith(command.name + ":")]
        _same_summary(command, shown)


def _same_summary(command, shown: list[str]) -> None:
    """The command's summary as the completion shows it (click cuts a long one with `...`)."""
    assert len(shown) == 1, shown
    text = shown[0].removesuffix("...")
    assert command.summary.startswith(text) and len(text) > 20, (command.summary, shown)
    if "'" in command.summary[: len(text)]:
        assert "'" in text


@needs_zsh
def test_bash_and_zsh_complete_a_source_name_alike():
    from conftest import tab

    for word in ("Pag", "pag", "att", "vA", "llm"):
        bash = [w.replace("\\ ", " ") for w in tab(f"invmap show {word}").stdout.splitlines()]
        zsh = [item.split(":", 1)[0] for item in _zsh_items(f"invmap show {word}")]
        assert bash == zsh and bash, (word, bash, zsh)


def test_settings_engine_completes_the_engines_the_settings_name(cli):
    import json

    from conftest import tab

    named = {r["engine"] for r in json.loads(cli("settings", "--json").out)}
    offered = tab("invmap settings --engine ").stdout.split()
    assert sorted(offered, key=str.casefold) == offered and set(offered) == named
    assert tab("invmap settings --engine sg").stdout.split() == ["SGLang"]


@pytest.mark.skipif(__import__("shutil").which("fish") is None, reason="fish is not installed")
def test_fish_completion_descriptions_keep_their_apostrophes():
    import subprocess

    from conftest import installed_invmap

    script = REPO / "completions" / "invmap.fish"
    bin_dir = str(Path(installed_invmap()).parent)
    for command in (c for c in decl.TOP.values() if "'" in c.summary):
        done = subprocess.run(
            ["fish", "--no-config", "-c", f"source '{script}'; complete -C 'invmap {command.name}'"],
            capture_output=True,
            text=True,
            env={**__import__("os").environ, "PATH": f"{bin_dir}:{__import__('os').environ['PATH']}"},
        )
        lines = done.stdout.splitlines()
        _same_summary(command, [line.split("\t", 1)[1] for line in lines if line.startswith(command.name + "\t")])


# --- places: a field of `show`, never presented as a command -----------------------------------------


def _documented_commands() -> list[tuple[str, str]]:
    """(page, word) for each `invmap WORD` the README and docs/ pages show: inline code, and lines of
    their code blocks."""
    out = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        blocks = "\n".join(re.findall(r"```(?:sh|text|console)?\n(.*?)```", text, re.S))
        words = re.findall(r"`invmap ([a-z][a-z-]*)", text) + re.findall(
            r"^(?:\$ )?invmap ([a-z][a-z-]*)", blocks, re.M
        )
        out += [(page.name, w) for w in words]
    return out


def test_every_documented_command_is_a_command_and_places_is_a_field_of_show(cli):
    documented = _documented_commands()
    assert len(documented) > 50
    assert [(page, w) for page, w in documented if w not in decl.TOP] == []
    assert "places" not in decl.TOP
    refused = cli("places")
    assert refused.code == 2 and "No such command 'places'" in refused.err
    page = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    assert "- **Places** (the `places` field of `show`; no command of its own)" in page
    import json

    shown = json.loads(cli("show", "lmcache", "--json").out)
    assert shown["places"] and all(p["url"].startswith(p["repo"]) for p in shown["places"])


# --- one vocabulary of flags: old spellings, suggestions ------------------------------------------


def _long_flags(command) -> list[tuple[str, str]]:
    return [(f, o.flags[0]) for o in decl.options_of(command) for f in o.flags if f.startswith("--")]


@pytest.mark.parametrize("path", [c.path for c in decl.COMMANDS if c.path not in decl.SUB])
def test_an_unknown_option_suggests_the_closest_option_of_that_command(cli, path):
    command = decl.find(path)
    for flag, first in _long_flags(command):
        typo = flag[:-1] if len(flag) > 4 else flag + "x"  # one letter off
        done = cli(*path.split(), typo)
        assert done.code == 2, (path, typo)
        said = re.search(r"Error: No such option: (\S+)\. Did you mean (\S+)\?$", done.err.strip())
        assert said and said.group(1) == typo, (path, typo, done.err)
        real = {o.flags[0] for o in decl.options_of(command)} | {"--help"}
        assert said.group(2) in real, (path, typo, said.group(2))
        if not any(other != first and other.startswith(typo) for _, other in _long_flags(command)):
            assert said.group(2) == first, (path, typo, said.group(2))


@pytest.mark.parametrize("path", [c.path for c in decl.COMMANDS if any(o.aliases for o in decl.options_of(c))])
def test_a_declared_alias_suggests_its_option_and_an_old_spelling_is_still_read(cli, path):
    command = decl.find(path)
    for o in decl.options_of(command):
        flags = {f for other in decl.options_of(command) for f in other.flags}
        for alias in o.aliases:
            if alias.startswith("-") or f"--{alias}" in flags:
                continue
            done = cli(*path.split(), f"--{alias}", "1")
            assert done.code == 2 and done.err.strip().endswith(f"Did you mean {o.flags[0]}?"), (path, alias, done.err)
        for old in o.old_flags:
            helped = " ".join(cli(*path.split(), "--help").out.split())
            assert f"{old}: the old spelling, still read." in helped


def test_reports_layer_and_its_old_spelling_level(cli):
    import json

    new = cli("reports", "--layer", "L3", "--json")
    old = cli("reports", "--level", "L3", "--json")
    assert new.code == old.code == 0 and new.out == old.out and new.err == ""
    assert old.err == "warning: --level is the old spelling of --layer; use --layer\n"
    assert cli("reports", "-l", "L3", "--json").out == new.out
    rows = json.loads(new.out)
    kinds = ["primary" if r["primary"] == "L3" else "secondary" for r in rows]
    assert kinds == sorted(kinds, key=["primary", "secondary"].index) and set(kinds) == {"primary", "secondary"}
    assert all(r["secondary"] == "L3" for r, k in zip(rows, kinds) if k == "secondary")
    plain = cli("reports", "--layer", "L3").out.splitlines()
    for line, r in zip(plain, rows):
        level = line.split("\t")[2]
        assert level == (f"{r['primary']} ({r['secondary']})" if r["secondary"] else r["primary"])
    assert (
        "No such option" in cli("list", "--level", "L3").err
        and "Did you mean --layer?" in cli("list", "--level", "L3").err
    )


def test_all_has_one_meaning_every_row_or_level(cli):
    meanings = {c.path: o.help for c in decl.COMMANDS for o in decl.options_of(c) if "--all" in o.flags}
    assert set(meanings) >= {"list", "triage"}
    assert all(re.match(r"(Every|Tables on a terminal: show every)", h) for h in meanings.values()), meanings
    done = cli("check", "--all", "--update-redirects")
    assert (done.code, done.err) == (2, "Error: --update-redirects goes with --links\n")


def test_reports_refuse_an_unknown_engine_and_an_empty_source(cli):
    import json

    engines = sorted({r["engine"] for r in json.loads(cli("reports", "--json").out)}, key=str.casefold)
    done = cli("reports", "--engine", "nosuch")
    assert done.code == 1 and done.out == ""
    assert done.err == f"Error: no report from engine 'nosuch' (engines the reports name: {', '.join(engines)})\n"
    for flag in ("--source", "--engine", "--layer"):
        empty = cli("reports", flag, "")
        assert (empty.code, empty.out) == (2, "") and f"{flag} needs a value" in empty.err
    assert cli("reports", "--engine", "SGLANG").code == 0


# --- adversarial: a missing base, invisible arguments ------------------------------------------------


def test_check_of_an_overlay_whose_base_is_missing_names_the_base(cli, tmp_path):
    overlay = tmp_path / "ov.toml"
    overlay.write_text('[catalog]\nextends = "nosuch-base.toml"\n', encoding="utf-8")
    done = cli("-c", str(overlay), "check")
    base = tmp_path / "nosuch-base.toml"
    assert done.code == 3 and done.out == ""
    assert done.err == f"Error: {overlay}: the base catalog {base} ([catalog] extends): no such file\n"
    assert str(base) in cli("-c", str(overlay), "list").err


@pytest.mark.parametrize("invisible", ["\u200d", "\u200c", "\u00ad", "\u2061"])
def test_invisible_format_characters_are_escaped_on_stderr(cli, sh, invisible):
    code = f"\\u{ord(invisible):04x}"
    for run in (cli, sh):
        done = run("settings", invisible * 2)
        assert done.code == 1 and invisible not in done.err and f"'{code}{code}'" in done.err
        unknown = run("list", f"--x{invisible}")
        assert unknown.code == 2 and invisible not in unknown.err and f"--x{code}" in unknown.err


def test_triage_says_when_a_list_filter_left_sources_out(cli):
    import json

    from invmap.filters import FILTERS

    for o in FILTERS:
        if o.dest == "layer":
            continue  # triage chooses the level itself
        given = [o.flags[0]] if o.kind == "flag" else [o.flags[0], o.example]
        shown = on_terminal(["triage", "kv", "cache", "full", "-n", "1", *given], 80)
        level = shown[0].split()[0]
        every = {r["id"] for r in json.loads(cli("list", "--layer", level, "--json").out)}
        kept = {r["id"] for r in json.loads(cli("list", "--layer", level, *given, "--json").out)}
        said = [line for line in shown if line.startswith("  kept ")]
        if kept == every:
            assert said == [], (o.flags[0], said)
        else:
            described = " ".join(given)
            assert said == [
                f"  kept {len(kept)} of its {len(every)} sources ({described} left out {len(every) - len(kept)})"
            ]
    assert not any(line.startswith("  kept ") for line in on_terminal(["triage", "kv", "cache", "full"], 80))


# --- screens -----------------------------------------------------------------------------------------


def test_gpus_shows_each_figure_column_in_one_unit(cli):
    import json
    from decimal import Decimal

    from invmap.estimate.gpus import BY_KEY

    gpus = {g["name"]: g for g in json.loads(cli("gpus", "--json").out)}
    header = ["name", "memory", "type", "bandwidth", "bf16_dense", "fp8_dense"]
    rows = [dict(zip(header, line.split("\t"))) for line in cli("gpus").out.splitlines()]
    assert [r["name"] for r in rows] == list(gpus)
    seen = 0
    for key in ("bandwidth", "bf16_dense", "fp8_dense"):
        first, scale = next(iter(BY_KEY[key].units.items()))
        for r in rows:
            base = gpus[r["name"]][key]["base"]
            if base is None:
                assert r[key] == ""
                continue
            number, unit = r[key].split(" ")
            assert unit == first and Decimal(number.replace(",", "")) == Decimal(str(base)) / Decimal(str(scale))
            seen += 1
    assert seen > 20
    assert "1,555 GB/s" in cli("gpus", "a100-sxm-40gb").out  # one GPU's figures as its source gives them


ESTIMATES = [c for c in decl.COMMANDS if c.parent == "estimate" and c.view == decl.ESTIMATE_VIEW]  # fit: a sweep table


@pytest.mark.parametrize("cols", [60, 80, 120])
@pytest.mark.parametrize("path", [c.path for c in ESTIMATES])
def test_estimate_screens_are_wrapped_to_the_width_with_no_word_folded(cli, path, cols):
    command = decl.find(path)
    runs = [e.split()[1:] for e in command.examples if "|" not in e and "--record" not in e and "./" not in e]
    assert runs
    for args in runs:
        shown = on_terminal(args, cols)
        assert shown, args
        for line in shown:  # wider than the width only when a single word is (a config's URL)
            assert len(line) <= cols or (" " not in line and line.startswith("https://")), (args, cols, line)
        whole = cli(*args).out  # a pipe: whole lines
        assert " ".join(shown).split() == whole.split(), (args, cols)
        if cols == 60:
            assert any(len(line) > 60 for line in whole.splitlines())  # there was something to wrap


def test_models_hides_a_column_at_80_rather_than_turning_to_blocks(cli):
    names = [line.split("\t")[0] for line in cli("models").out.splitlines()]
    wide = on_terminal(["models"], 120)
    assert wide[0].split()[:2] == ["Name", "Attention"] and "Dtype" in wide[0]
    shown = on_terminal(["models"], 80)
    assert shown[0].split() == ["Name", "Attention", "Cache", "shape", "Bytes", "per", "token"]
    assert max(len(line) for line in shown) <= 80
    assert [line.split()[0] for line in shown[2 : 2 + len(names)]] == names  # one row a model
    assert shown[-1] == "Dtype hidden at 80 columns; --fields to choose"


def test_define_at_80_columns_has_no_mostly_empty_expansion_column(cli):
    import json

    terms = json.loads(cli("define", "--json").out)
    assert sum(1 for t in terms if t["expansion"]) < len(terms) / 2  # the column would be mostly empty
    shown = on_terminal(["define"], 80)
    assert shown[0].split() == ["Term", "Definition"] and max(len(line) for line in shown) <= 80
    text = " ".join(" ".join(shown).split())
    for t in terms:
        lead = f"{t['expansion']}: " if t["expansion"] else ""
        assert f"{t['term']} {lead}{' '.join(t['definition'].split()[:3])}" in text, t["term"]
    piped = cli("define").out.splitlines()
    assert [line.split("\t") for line in piped] == [[t["term"], t["expansion"] or "", t["definition"]] for t in terms]


# --- show: permalinks and commands stay under their field ---------------------------------------


def _joined_words(lines: list[str]) -> list[str]:
    """The words of a screen, a URL or path broken after a `/` joined again with the piece on the next
    line, and a command's ` \\` line continuation dropped (as a shell reads it)."""
    words: list[str] = []
    carry = ""
    for line in lines:
        tokens = line.split()
        if tokens and tokens[-1] == "\\":
            tokens = tokens[:-1]
        if carry and tokens:
            tokens[0], carry = carry + tokens[0], ""
        if tokens and tokens[-1].endswith("/") and "/" in tokens[-1][:-1]:
            carry = tokens.pop()
        words += tokens
    return words + ([carry] if carry else [])


@pytest.mark.parametrize("cols", [60, 80, 120])
def test_show_keeps_every_line_under_its_field_with_no_word_folded(cli, cols):
    """Every shipped source's `show`: no line wider than the terminal (the terminal would fold it back
    to column 0), every line inside a field block starts with its label or the value column's indent,
    and the words read as on a screen wide enough for every line (a permalink or a long path broken
    only after a slash, a long command only at a space)."""
    import json

    from invmap.fields import HEADERS
    from invmap.render.blocks import UNDER, short_header

    labels = {short_header(f) for f in HEADERS} | {label for _, label in UNDER.values()}
    ids = [r["id"] for r in json.loads(cli("list", "--json").out)]
    lines = on_terminal(["show", *ids], cols)
    wide = on_terminal(["show", *ids], 2000)
    assert [line for line in lines if len(line) > cols] == []
    assert any(len(line) > cols for line in wide)  # the test has permalinks to break
    assert _joined_words(lines) == _joined_words(wide)
    blocks = "\n".join(lines).split("\n\n")
    assert len(blocks) == len(ids)
    for block in blocks:
        rows = block.split("\n")
        column = re.match(r"ID +", rows[0]).end()
        for row in rows:
            label = row[:column]
            assert len(row) > column and row[column] != " " or row[: column + 1].isspace(), row
            assert label.isspace() or label.strip() in labels and label.endswith("  "), row


# --- questions at 80 columns ---------------------------------------------------------------------


@pytest.mark.parametrize("cols", [60, 80, 120])
def test_questions_fit_90_lines_at_80_columns_with_every_word_whole(cli, cols):
    """Every source's question, id and layer label on the screen, each word whole on its line (a layer
    label may take two lines to give the questions room): at most 90 lines at 80 columns."""
    import json

    records = json.loads(cli("questions", "--json").out)
    lines = on_terminal(["questions"], cols)
    words = {w for r in records for f in ("id", "name", "layer", "question") for w in (r[f] or "").split()}
    body = [line for line in lines[2:] if not line.endswith("--fields to choose")]
    assert [w for line in body for w in line.split() if w not in words] == []
    assert all(len(line) <= cols for line in lines)
    assert all(any(line.startswith(r["id"] + " ") or line == r["id"] for line in body) for r in records)
    from collections import Counter

    asked = Counter(w for r in records for w in r["question"].split())
    shown = Counter(w for line in body for w in line.split())
    assert all(shown[w] >= n for w, n in asked.items())  # every question whole, none cut short
    if cols == 80:
        assert len(lines) <= 90


# --- settings: a table grouped by source and engine ----------------------------------------------

SETTINGS_PIPED = REPO / "tests" / "assets" / "settings"


@pytest.mark.parametrize("cols", [60, 80, 120])
def test_settings_is_a_table_grouped_by_source_and_engine(cli, cols):
    """Each source a heading, each of its engines a line under it, each flag whole at the start of a
    line under its engine, what changed (Deprecated, Replaced by) wrapped in the note: no line wider
    than the terminal, no word folded, and a few lines a flag where the blocks took seven."""
    import json

    rows = json.loads(cli("settings", "--json").out)
    lines = on_terminal(["settings"], cols)
    assert [line for line in lines if len(line) > cols] == []
    assert len(lines) <= {60: 6, 80: 5, 120: 3.5}[cols] * len(rows)
    groups = list(dict.fromkeys((r["id"], r["engine"]) for r in rows))
    headings = [line for line in lines if line and not line.startswith(" ")]
    sources = {r["id"]: r["name"] for r in rows}
    assert headings == [i if name == i else f"{i} ({name})" for i, name in sources.items()]
    assert len([line for line in lines if re.match(r"  \S", line)]) == len(groups)
    flags = [line.split()[0] for line in lines if re.match(r"    \S", line)]
    assert flags == [r["flag"] for r in rows]
    said = " ".join(" ".join(line.split()) for line in lines)
    for r in rows:
        for part in ("note", "deprecated", "replaced_by"):
            assert r[part] is None or r[part] in said, (r["flag"], part)
    words = {w.strip("();,") for r in rows for v in r.values() if isinstance(v, str) for w in v.split()}
    assert {w.strip("();,") for w in said.split()} - words <= {"deprecated", "use", ""}


def test_settings_blocks_only_where_the_table_cannot_fit(cli):
    """Narrower than 60 columns a flag column and a readable note cannot share a line: one block a
    setting (its empty fields left out), no line wider than the terminal."""
    lines = on_terminal(["settings"], 56)
    assert lines[0].split() == ["ID", "flashattention"] and all(len(line) <= 56 for line in lines)
    assert on_terminal(["settings"], 60)[0] == "flashattention (FlashAttention)"
    assert not any(line.startswith(("Deprecated", "Replaced by")) and not line.split()[1:] for line in lines)


@pytest.mark.parametrize(
    "args, golden",
    [
        (["settings", "--json"], "settings.json"),
        (["settings"], "settings.plain"),
        (["settings", "--format", "plain"], "settings.plain"),
        (["settings", "--format", "csv"], "settings.csv"),
        (["settings", "orca"], "orca.plain"),
        (["settings", "--json", "--engine", "vLLM"], "vllm.json"),
    ],
)
def test_settings_machine_formats_are_byte_for_byte_as_before_the_table(cli, args, golden):
    """The table is the terminal's: JSON, plain lines and CSV are the bytes written before it (the
    golden files were written by the blocks' version)."""
    assert cli(*args).out == (SETTINGS_PIPED / golden).read_text(encoding="utf-8")
