"""`invmap mcp` as an agent's client uses it: the SDK's own client, in-process over its memory transport
(and once over stdio, against the installed program), every tool compared with its command's --json.

The tools, their inputs and the sample values all come from the declarations (`options.py`, `cli/mcp.py`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import misbehaving
import pytest
import typer

from conftest import installed_invmap
from invmap import location
from invmap import options as decl
from invmap.cli.build import typer_app

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[test,mcp]')")
anyio = pytest.importorskip("anyio")
server_module = pytest.importorskip("invmap.cli.mcp")
TOOLS = server_module.TOOLS

MEASURED = Path(__file__).parent / "fixtures" / "measurements"
SCRAPE = MEASURED / "sglang-dp-imbalance-1.prom"
BENCH = MEASURED / "vllm-max-num-seqs-queue-1.txt"
# A sample value for each kind of required argument (by what completes it).
SAMPLES = {"source": "gqa", "source_or_code": "gqa", "term": "ttft", None: "kv"}


def command_of(tool: str) -> decl.Command:
    return decl.find(TOOLS[tool])


def good_input(tool: str) -> tuple[dict, list[str]]:
    """Tool arguments and the same as a command line: each required argument's sample (a symptom for
    triage) and, for what a command always needs (`requires`), its first option's example."""
    command = command_of(tool)
    arguments: dict = {}
    words = command.path.split()
    for a in command.arguments:
        if a.required:
            arguments[a.dest] = [SAMPLES.get(a.complete, "kv")] if a.multiple else SAMPLES.get(a.complete, "kv")
    options = {o.dest: o for o in decl.options_of(command)}
    for need in command.requires:
        if not need.given:
            chosen = options[need.one_of[0]]
            arguments[chosen.dest] = chosen.example
            words += [chosen.flags[0], chosen.example]
    for a in command.arguments:
        if a.dest in arguments:
            words += arguments[a.dest] if a.multiple else [arguments[a.dest]]
    return arguments, words


def session(*calls, catalog: str | None = None):
    """Run `calls` (each `async fn(client)`) against a fresh server in one client session; their results."""
    from mcp import Client

    async def main():
        async with Client(server_module.server(location.locate(catalog)), mode="legacy") as client:
            return [await c(client) for c in calls]

    return unwrapped(main)


def unwrapped(main):
    """`anyio.run(main)`, an error raised in the session's task group raised as itself."""
    try:
        return anyio.run(main)
    except Exception as exc:
        while len(getattr(exc, "exceptions", ())) == 1:
            exc = exc.exceptions[0]
        raise exc from None


def tool(name: str, arguments: dict):
    return lambda client: client.call_tool(name, arguments)


def structured(cli_out: str):
    data = json.loads(cli_out)
    return {"result": data} if isinstance(data, list) else data


# --- listed ----------------------------------------------------------------------------------------------------


def test_every_query_command_is_a_tool_and_none_writes(cli):
    (listed,) = session(lambda c: c.list_tools())
    names = [t.name for t in listed.tools]
    assert names == list(TOOLS)
    assert {TOOLS[n] for n in names} >= {"list", "show", "questions", "search", "define", "layers", "triage"}
    assert set(decl.SUB["estimate"]) | set(decl.SUB["simulate"]) == {TOOLS[n].split()[1] for n in names if "_" in n}
    for t in listed.tools:
        command = command_of(t.name)
        assert t.annotations.read_only_hint is True
        assert t.description.startswith(command.summary)
        assert not set(t.input_schema["properties"]) & {"output_path", "force", "record", "fmt", "color"}


def test_resources_are_every_source_and_every_level(cli):
    listed, templates, one, level = session(
        lambda c: c.list_resources(),
        lambda c: c.list_resource_templates(),
        lambda c: c.read_resource("invmap://source/pagedattention"),
        lambda c: c.read_resource("invmap://level/L3"),
    )
    ids = [s["id"] for s in json.loads(cli("list", "--json").out)]
    codes = [lv["code"] for lv in json.loads(cli("layers", "--json").out) if lv["code"]]
    uris = [str(r.uri) for r in listed.resources]
    assert uris == [f"invmap://source/{i}" for i in ids] + [f"invmap://level/{c}" for c in codes]
    assert {t.uri_template for t in templates.resource_templates} == {"invmap://source/{id}", "invmap://level/{code}"}
    assert json.loads(one.contents[0].text) == json.loads(cli("show", "pagedattention", "--json").out)
    assert json.loads(level.contents[0].text) == json.loads(cli("layers", "L3", "--json").out)


def test_an_unknown_resource_is_an_error_naming_it():
    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError, match="no source matches 'nothing-here'"):
        session(lambda c: c.read_resource("invmap://source/nothing-here"))


# --- the schemas: the CLI's options, by the same declarations ---------------------------------------------------

from invmap.quantities import INPUTS  # noqa: E402

JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


@pytest.mark.parametrize("name", list(TOOLS))
def test_a_tools_inputs_are_its_commands_options(name):
    """Every parameter of the Typer command (less how it prints and what it writes) is a property of the
    tool with the same name, type, default and help; a new option reaches both or this fails."""
    command = command_of(name)
    params = [p for p in typer.main.get_command(typer_app(command.path)).params if p.name != "ctx"]
    expected = [p for p in params if p.name not in server_module.PRINTING | server_module.WRITING]
    schema = server_module.input_schema(command)
    assert list(schema["properties"]) == [p.name for p in expected]
    for p in expected:
        prop = schema["properties"][p.name]
        annotation = p.type_descriptor.annotation
        multiple = p.multiple or p.nargs == -1
        spelled = p.name in INPUTS and INPUTS[p.name].kind in ("tokens", "size")  # `128k`, `80GB` or a number
        if multiple:
            assert prop["type"] == "array", p.name
        else:
            assert prop["type"] == (["integer", "string"] if spelled else JSON_TYPES[annotation]), p.name
        if multiple:
            assert prop["items"]["type"] == "string"
        help_text = (
            server_module.TEXT_INPUTS[p.name] if name == "triage" and p.name in server_module.TEXT_INPUTS else p.help
        )
        assert prop["description"] == help_text, p.name
        default = p.default if p.default not in (None, ()) else None
        assert prop.get("default") == default, p.name
    required = [p.name for p in params if p.required]
    assert schema.get("required", []) == required


# --- every tool answers as its command does ---------------------------------------------------------------------


@pytest.mark.parametrize("name", list(TOOLS))
def test_every_tool_answers_as_its_command(cli, name):
    arguments, words = good_input(name)
    (result,) = session(tool(name, arguments))
    expected = cli(*words, "--json")
    assert expected.code == 0, expected.err
    assert not result.is_error, result.content[0].text
    assert result.structured_content == structured(expected.out)
    assert json.loads(result.content[1].text) == result.structured_content
    assert result.content[0].text.startswith(f"{name}: ")


def test_options_reach_the_command(cli):
    """Filters, flags, counts and repeated values go through as the CLI takes them."""
    cases = [
        ("list", {"layer": ["L3", "L5"], "has_code": True, "sort": "year", "reverse": True, "limit": 3}),
        ("questions", {"layer": ["L5"], "fields": "id,question"}),
        ("search", {"text": ["tail", "latency"], "limit": 2, "min_score": 10.5}),
        ("show", {"names": ["paged attention", "2407.00079"]}),
        ("settings", {"engine": ["sglang"]}),
        ("reports", {"engine": ["vllm"]}),
        ("simulate_kv", {"allocation": ["paged"], "total_blocks": 64.0}),  # JSON's 64.0 is an integer
    ]
    results = session(*(tool(n, a) for n, a in cases))
    argv = {
        "list": ["list", "--layer", "L3", "--layer", "L5", "--has-code", "--sort", "year", "-r", "-n", "3"],
        "questions": ["questions", "-l", "L5", "--fields", "id,question"],
        "search": ["search", "tail", "latency", "-n", "2", "--min-score", "10.5"],
        "show": ["show", "paged attention", "2407.00079"],
        "settings": ["settings", "--engine", "sglang"],
        "reports": ["reports", "--engine", "vllm"],
        "simulate_kv": ["simulate", "kv", "--allocation", "paged", "--total-blocks", "64"],
    }
    for (name, _), result in zip(cases, results):
        assert not result.is_error, (name, result.content[0].text)
        assert result.structured_content == structured(cli(*argv[name], "--json").out), name


# --- triage from text --------------------------------------------------------------------------------------------


def test_triage_reads_scrapes_and_benchmarks_as_text(cli):
    scrape, bench = SCRAPE.read_text(), BENCH.read_text()
    one, window, from_bench, both = session(
        tool("triage", {"metrics": [scrape]}),
        tool("triage", {"metrics": [scrape, scrape], "interval": "30s"}),
        tool("triage", {"bench": [bench]}),
        tool("triage", {"symptom": ["queue", "grows"], "bench": [bench], "every": True}),
    )
    assert one.structured_content == structured(cli("triage", "--metrics", str(SCRAPE), "--json").out)
    two = cli("triage", "--metrics", str(SCRAPE), "--metrics", str(SCRAPE), "--interval", "30s", "--json")
    assert window.structured_content == structured(two.out)
    assert from_bench.structured_content == structured(cli("triage", "--bench", str(BENCH), "--json").out)
    expected = cli("triage", "queue", "grows", "--bench", str(BENCH), "--all", "--json")
    assert both.structured_content == structured(expected.out)
    said = [line.replace(str(BENCH), "bench") for line in expected.err.splitlines() if line.strip()]
    assert said and both.content[0].text.splitlines()[1:] == said  # stderr's lines, the text's name for the file


def test_triage_fetches_a_url_with_the_clis_deadline_and_cap(cli):
    body = SCRAPE.read_bytes()
    with misbehaving.Server(misbehaving.fixed(misbehaving.answer(body))) as good:
        with misbehaving.Server(misbehaving.huge_length()) as huge:
            fetched, capped = session(
                tool("triage", {"metrics": [good.url + "/metrics"]}), tool("triage", {"metrics": [huge.url]})
            )
            expected = cli("triage", "--metrics", good.url + "/metrics", "--json")
            refused = cli("triage", "--metrics", huge.url)
    assert fetched.structured_content == structured(expected.out)
    assert capped.is_error and refused.code == 4
    assert capped.structured_content["error"] == {
        "message": refused.err.strip(),
        "exit_code": 4,
        "class": "input/output",
    }


# --- bad input: each class of refusal, with the CLI's message and exit class --------------------------------------


@pytest.mark.parametrize("name", list(TOOLS))
def test_every_tool_refuses_an_unknown_or_mistyped_argument(name):
    arguments, _ = good_input(name)
    schema = server_module.input_schema(command_of(name))
    first = next(iter(schema["properties"]), None)
    cases = [{**arguments, "no_such_option": 1}]
    if first is not None:
        wrong = 1 if schema["properties"][first]["type"] in ("string", "array", "boolean") else "x"
        cases.append({**arguments, first: wrong})
    for result in session(*(tool(name, a) for a in cases)):
        assert result.is_error
        assert result.structured_content["error"]["exit_code"] == 2
        assert result.structured_content["error"]["class"] == "usage"


def refusals(tmp_path: Path) -> list[tuple[str, dict, list[str]]]:
    """One call of each exit class, beside the command line that fails the same way."""
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama"')  # cut short
    json_text = tmp_path / "metrics"  # named as the tool names a scrape given as text
    json_text.write_text('{"a": 1}\n')
    return [
        ("show", {"names": ["no-such-source-at-all"]}, ["show", "no-such-source-at-all"]),
        ("define", {"terms": ["no-such-term-anywhere"]}, ["define", "no-such-term-anywhere"]),
        ("list", {"layer": ["L9"]}, ["list", "--layer", "L9"]),
        ("triage", {}, ["triage"]),
        ("triage", {"metrics": [json_text.read_text()]}, ["triage", "--metrics", str(json_text)]),
        ("estimate_kv", {"model": str(config)}, ["estimate", "kv", "--model", str(config)]),
        ("triage", {"metrics": ["http://127.0.0.1:9/metrics"]}, ["triage", "--metrics", "http://127.0.0.1:9/metrics"]),
    ]


def test_refusals_carry_the_clis_message_and_exit_class(cli, tmp_path):
    cases = refusals(tmp_path)
    results = session(*(tool(name, a) for name, a, _ in cases))
    seen = set()
    for (name, _, words), result in zip(cases, results):
        assert result.is_error, name
        error = result.structured_content["error"]
        seen.add(error["exit_code"])
        assert error["class"] == server_module.EXIT_CLASSES[error["exit_code"]]
        assert "Traceback" not in result.content[0].text
        expected = cli(*words)
        message = expected.err.strip().replace(str(tmp_path / "metrics"), "metrics")
        assert (error["exit_code"], error["message"]) == (expected.code, message), name
    assert seen == {1, 2, 3, 4}


def test_the_catalog_option_chooses_what_the_server_reads(cli, mine):
    (result,) = session(tool("list", {}), catalog=str(mine))
    assert result.structured_content == structured(cli("--catalog", str(mine), "list", "--json").out)
    assert len(result.structured_content["result"]) == 2


def test_a_call_never_writes(tmp_path, mine):
    before = mine.read_bytes()
    calls = [tool(n, good_input(n)[0]) for n in TOOLS]
    session(*calls, catalog=str(mine))
    assert mine.read_bytes() == before
    assert not any(p for p in tmp_path.iterdir() if p != mine)


# --- the page ------------------------------------------------------------------------------------------------------

PAGE = Path(__file__).parent.parent / "docs" / "agents.md"


def test_the_page_lists_every_tool_with_its_command():
    rows = re.findall(r"^\| `(\w+)` \| `invmap ([a-z ]+)`", PAGE.read_text(encoding="utf-8"), re.M)
    assert rows == list(TOOLS.items())


def test_the_pages_example_calls_answer(cli):
    """Each `→ tool {arguments}` line of the page, called; its scrape URL served by a local engine."""
    calls = re.findall(r"^→ (\w+) (\{.*\})$", PAGE.read_text(encoding="utf-8"), re.M)
    assert len(calls) >= 4
    with misbehaving.Server(misbehaving.fixed(misbehaving.answer(SCRAPE.read_bytes()))) as engine:
        local = [(name, text.replace("http://localhost:8000", engine.url)) for name, text in calls]
        results = session(*(tool(name, json.loads(text)) for name, text in local))
    for (name, text), result in zip(calls, results):
        assert not result.is_error, (name, text, result.content[0].text)
    first = results[0].structured_content["result"][0]
    assert first["code"] == "L2" and "sarathi-serve" in [s["id"] for s in first["sources"]]


# --- the program itself --------------------------------------------------------------------------------------------


def test_without_the_extra_it_says_how_to_install(sh, tmp_path):
    (tmp_path / "mcp.py").write_text("raise ImportError('the extra is not installed')\n")  # shadows the SDK
    result = sh("mcp", env={"PYTHONPATH": str(tmp_path)})
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "Error: invmap mcp needs the Model Context Protocol SDK, which is not installed\n"
        "Hint: pip install 'invmap[mcp]'\n"
    )


def test_no_other_command_imports_the_sdk():
    program = installed_invmap()
    for args in (["list", "--json"], ["triage", "kv", "cache", "full", "--json"], ["--help"]):
        done = subprocess.run([sys.executable, "-X", "importtime", program, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "import time:" in line}
        assert "invmap.cli" in imported and not {n for n in imported if n == "mcp" or n.startswith("mcp.")}, args


def test_a_catalog_on_stdin_is_refused(sh):
    result = sh("--catalog", "-", "mcp", input="")
    assert result.code == 2
    assert "give the catalog as a file" in result.err


def test_the_installed_program_over_stdio():
    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "XDG_CACHE_HOME", "LANG")}
    params = StdioServerParameters(command=installed_invmap(), args=["mcp"], env=env)

    async def main():
        async with Client(params, mode="legacy") as client:
            triaged = await client.call_tool("triage", {"symptom": ["requests", "preempted", "KV", "cache", "full"]})
            shown = await client.call_tool("show", {"names": ["sarathi-serve"]})
            return triaged, shown

    triaged, shown = unwrapped(main)
    assert triaged.structured_content["result"][0]["code"] == "L3"
    assert shown.structured_content["id"] == "sarathi-serve"
    assert shown.structured_content["name"] == "Sarathi-Serve"
