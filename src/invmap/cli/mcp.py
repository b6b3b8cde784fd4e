"""`invmap mcp`: the map's query commands as Model Context Protocol tools, served on stdio.

Each tool is one declared command (`TOOLS`): its input schema is derived from the command's declared
options and arguments (`options.py`) less the ones that only shape a screen (`PRINTING`) or write a
file (`WRITING`); a call runs the command's own implementation, in-process, with `--json` and the
run's streams captured, so a tool answers exactly as the command does and fails with the command's
message and exit class. `triage` is the exception in how it reads: an agent holds a scrape or a
benchmark's output as text, so the tool calls the core (`diagnose.measure_texts`) with the text.

The SDK (`pip install 'invmap[mcp]'`) is imported only here, and only when `invmap mcp` runs.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import typer

from invmap import options as decl
from invmap.cli.build import Args, implements, option_help
from invmap.cli.shared import State, running, state
from invmap.environment import Environment
from invmap.errors import InvmapError, NotFoundError, UsageError
from invmap.safe import escape

INSTALL = "pip install 'invmap[mcp]'"
NAME = "invmap"

# The tools: the read-only query commands (`add`, `edit`, `rm`, `fmt`, `record new` stay CLI-only),
# every `estimate` and `simulate` subcommand among them.
QUERIES = ("list", "show", "questions", "search", "define", "layers", "triage", "reports", "settings")
TOOLS: dict[str, str] = {
    **{name: name for name in QUERIES},
    **{f"{group}_{sub}": f"{group} {sub}" for group in ("estimate", "simulate") for sub in decl.SUB[group]},
}
# Options a tool does not take: how a screen looks (the tool always answers in JSON) ...
PRINTING = frozenset({"fmt", "json_flag", "color", "no_pager", "show_all"})
# ... and what writes a file (an estimate's or a simulation's --record, -o and --force).
WRITING = frozenset(o.dest for o in (*decl.RECORD_OPTS, *decl.SIM_RECORD))
# Where a tool's input differs from its command's: triage takes the measurements as text.
TEXT_INPUTS = {
    "metrics": "Up to two Prometheus scrapes of an engine's /metrics, each its text or an http(s) URL "
    "to fetch (two: a window; one URL with interval: scraped twice).",
    "bench": "A benchmark's results, as the text of its JSON or CSV output (or its printed summary); two to compare.",
}
# Completion names whose values are a fixed list the command accepts: a tool's `enum`.
ENUMS = frozenset({"strategy", "allocation", "sort", "kv_cache_dtype", "scenario"})
EXIT_CLASSES = {1: "not found", 2: "usage", 3: "invalid input", 4: "input/output"}


def escaped(text: str) -> str:
    """`text` with every control character escaped, line by line (its line breaks kept)."""
    return "\n".join(escape(line) for line in text.split("\n"))


class ToolError(Exception):
    """A call the command refused: its message (as the CLI prints it) and exit status."""

    def __init__(self, text: str, exit_code: int) -> None:
        super().__init__(text)
        self.text = text
        self.exit_code = exit_code

    @property
    def kind(self) -> str:
        return EXIT_CLASSES.get(self.exit_code, "error")


# --- the input schemas, from the declarations ----------------------------------------------------------------


def inputs(command: decl.Command) -> list[decl.Opt | decl.Arg]:
    """The arguments and options a tool takes: the command's, less those that print or write."""
    options = [o for o in decl.options_of(command) if o.dest not in PRINTING | WRITING]
    return [*command.arguments, *options]


def _choices(complete: str | None) -> tuple[str, ...]:
    if complete not in ENUMS:
        return ()
    from invmap.complete import choice_values

    return choice_values(complete)[0]


# The estimate inputs a user may spell with a suffix take a number or the text (see quantities.read_count).
SPELLED = {"tokens": ["integer", "string"], "size": ["integer", "string"]}


def _quantity(item: decl.Opt | decl.Arg) -> Any:
    from invmap.quantities import INPUTS

    return INPUTS.get(item.dest) if isinstance(item, decl.Opt) else None


def _property(command: decl.Command, item: decl.Opt | decl.Arg) -> dict[str, Any]:
    kind = getattr(item, "kind", "text")
    one: dict[str, Any] = {
        "type": {"flag": "boolean", "int": "integer", "count": "integer", "float": "number"}.get(kind, "string")
    }
    if kind == "count":
        one["minimum"] = 1
    quantity = _quantity(item)
    if quantity is not None and quantity.kind in SPELLED:
        one["type"] = SPELLED[quantity.kind]  # a count or a size as typed (`128k`, `80GB`), or its number
    choices = _choices(item.complete)
    if choices:
        one["enum"] = list(choices)
    prop = {"type": "array", "items": one} if item.multiple else dict(one)
    described = option_help(command, item) if isinstance(item, decl.Opt) else item.help
    prop["description"] = TEXT_INPUTS.get(item.dest, described) if command.path == "triage" else described
    default = getattr(item, "default", None)
    if default is not None:
        prop["default"] = default
    return prop


def input_schema(command: decl.Command) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments: one property per declared input, by its `dest`."""
    items = inputs(command)
    required = [a.dest for a in command.arguments if a.required and not a.unless]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {item.dest: _property(command, item) for item in items},
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def tool_list() -> list[Any]:
    from mcp.types import Tool, ToolAnnotations

    tools = []
    for name, path in TOOLS.items():
        command = decl.find(path)
        assert command is not None, path
        tools.append(
            Tool(
                name=name,
                description=f"{command.summary} (invmap {path} --json)",
                input_schema=input_schema(command),
                annotations=ToolAnnotations(read_only_hint=True, open_world_hint=command.network),
            )
        )
    return tools


# --- one call --------------------------------------------------------------------------------------------------


def checked(command: decl.Command, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments, validated against the tool's schema (a mismatch is a usage error, exit 2)."""
    import jsonschema

    try:
        jsonschema.validate(arguments, input_schema(command))
    except jsonschema.ValidationError as exc:
        where = ".".join(str(p) for p in exc.absolute_path)
        raise ToolError(f"Error: {escape(where + ': ' if where else '')}{escape(exc.message)}", 2) from None
    return arguments


def _word(item: decl.Opt | decl.Arg, value: Any) -> str:
    if isinstance(value, float) and getattr(item, "kind", "") in ("int", "count") and value.is_integer():
        value = int(value)  # JSON's 2.0 is an integer
    return value if isinstance(value, str) else repr(value)


def command_words(command: decl.Command, arguments: dict[str, Any]) -> list[str]:
    """The command line the arguments stand for, its flags from the declarations (`--layer=L3`), then
    `--json`, then `--` and the positional arguments."""
    words: list[str] = []
    positional: list[str] = []
    for item in inputs(command):
        if item.dest not in arguments or arguments[item.dest] is None:
            continue
        value = arguments[item.dest]
        values = value if item.multiple else [value]
        if isinstance(item, decl.Arg):
            positional += [_word(item, v) for v in values]
        elif item.kind == "flag":
            words += [item.flags[0]] if value else []
        else:
            words += [f"{item.flags[0]}={_word(item, v)}" for v in values]
    return [*words, "--json", *(["--", *positional] if positional else [])]


_COMMANDS: dict[str, Any] = {}


def _click_command(path: str) -> Any:
    if path not in _COMMANDS:
        from invmap.cli.build import typer_app

        _COMMANDS[path] = typer.main.get_command(typer_app(path))
    return _COMMANDS[path]


def _environment() -> tuple[Environment, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    empty = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")  # the protocol owns the real stdin
    return Environment(stdout_stream=out, stderr_stream=err, stdin_stream=empty), out, err


def _refusal(exc: InvmapError) -> ToolError:
    lines = [f"Error: {exc.message}"]
    if isinstance(exc, NotFoundError) and exc.candidates:
        lines += [f"{(exc.hint or 'candidates').capitalize()}:", *(f"  {c}" for c in exc.candidates)]
    elif exc.hint:
        lines.append(f"Hint: {exc.hint}")
    return ToolError(escaped("\n".join(lines)), exc.exit_code)


def run_command(location: Any, path: str, words: list[str]) -> tuple[Any, list[str]]:
    """`invmap PATH WORDS` in-process: its parsed JSON and its stderr lines; a refusal is a ToolError."""
    import click

    env, out, err = _environment()
    with running(env):
        try:
            code = _click_command(path).main(
                words, prog_name=f"invmap {path}", standalone_mode=False, obj=State(location, "never", False, env)
            )
        except InvmapError as exc:
            raise _refusal(exc) from None
        except click.ClickException as exc:
            raise ToolError(escaped(f"Error: {exc.format_message()}"), exc.exit_code) from None
    notes = [escape(line) for line in err.getvalue().splitlines() if line.strip()]
    if isinstance(code, int) and code != 0:
        raise ToolError("\n".join(notes) or f"Error: invmap {path} failed", code)
    return json.loads(out.getvalue() or "null"), notes


def run_triage(location: Any, arguments: dict[str, Any]) -> tuple[Any, list[str]]:
    """triage through the core, its measurements given as text (`diagnose.measure_texts`)."""
    from invmap import diagnose
    from invmap import triage as levels
    from invmap.query import build_filters
    from invmap.render import Context, Result
    from invmap.render.machine import json_text

    command = decl.find("triage")
    values = {o.dest: (None if o.multiple else o.default) for o in decl.options_of(command)}
    values.update(arguments)
    opts = diagnose.TriageOptions(
        words=list(values.get("symptom") or []),
        metrics=list(values["metrics"] or []),
        bench=[values["bench"]] if isinstance(values["bench"], str) else list(values["bench"] or []),
        interval=values["interval"],
        model=values["model"],
        gpu=values["gpu"],
        bandwidth=values["bandwidth"],
        efficiency=values["efficiency"],
        limit=values["limit"],
        every=values["every"],
    )
    env, _, err = _environment()
    with running(env):
        try:
            measured = diagnose.measure_texts(opts)
            idx = State(location, "never", False, env).index()
            found = diagnose.run(idx, build_filters(idx, Args(command, values).filters), opts, measured)
        except InvmapError as exc:
            raise _refusal(exc) from None
    data = levels.public(found.items if measured is not None else found.found)
    said = [*measured.warnings, *measured.notes, *found.said] if measured is not None else []
    text = "".join(json_text(Result([], [], data=data), Context()))
    return json.loads(text), [escape(line) for line in [*said, *err.getvalue().splitlines()] if line.strip()]


def call(location: Any, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """One tool call: the structured content (a list wrapped as {"result": [...]}) and a summary."""
    if tool not in TOOLS:
        raise ToolError(f"Error: no tool named '{escape(tool)}' (tools: {', '.join(TOOLS)})", 2)
    command = decl.find(TOOLS[tool])
    arguments = checked(command, dict(arguments))
    if tool == "triage":
        data, notes = run_triage(location, arguments)
    else:
        data, notes = run_command(location, command.path, command_words(command, arguments))
    structured = {"result": data} if isinstance(data, list) else data
    return structured, summary(tool, data, notes)


def _label(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    for key in ("id", "code", "term", "flag", "title", "name"):
        if item.get(key):
            return str(item[key])
    return "?"


def summary(tool: str, data: Any, notes: list[str]) -> str:
    """A line or two for a person: how many results and the first of them, then what stderr said."""
    if isinstance(data, list):
        shown = ", ".join(_label(item) for item in data[:10]) + (", ..." if len(data) > 10 else "")
        head = f"{tool}: {len(data)} result{'s' if len(data) != 1 else ''}" + (f": {shown}" if data else "")
    elif isinstance(data, dict):
        head = f"{tool}: one result with {', '.join(list(data)[:8])}" + (", ..." if len(data) > 8 else "")
    else:
        head = f"{tool}: {data!r}"
    return "\n".join([escape(head), *notes])


# --- resources -------------------------------------------------------------------------------------------------

SOURCE_URI = "invmap://source/{id}"
LEVEL_URI = "invmap://level/{code}"


def resource_list(location: Any) -> list[Any]:
    from mcp.types import Resource

    sources, _ = run_command(location, "list", ["--fields", "id,name,mechanism", "--json"])
    levels, _ = run_command(location, "layers", ["--json"])
    found = [
        Resource(
            uri=SOURCE_URI.format(id=s["id"]),
            name=s["id"],
            title=s.get("name"),
            description=s.get("mechanism"),
            mime_type="application/json",
        )
        for s in sources
    ]
    found += [
        Resource(
            uri=LEVEL_URI.format(code=lv["code"]),
            name=lv["code"],
            title=lv.get("title"),
            description=lv.get("question") or lv.get("scope"),
            mime_type="application/json",
        )
        for lv in levels
        if lv.get("code")
    ]
    return found


def read_uri(location: Any, uri: str) -> str:
    """A resource's JSON: a source as `show ID --json`, a level as `layers CODE --json`."""
    for template, path in ((SOURCE_URI, "show"), (LEVEL_URI, "layers")):
        prefix = template.split("{")[0]
        if uri.startswith(prefix) and len(uri) > len(prefix):
            data, _ = run_command(location, path, ["--json", "--", uri[len(prefix) :]])
            return json.dumps(data, ensure_ascii=False, indent=2)
    raise ToolError(f"Error: no resource '{escape(uri)}' (invmap://source/ID or invmap://level/CODE)", 1)


# --- the server ------------------------------------------------------------------------------------------------


def server(location: Any) -> Any:
    """The MCP server over the catalog at `location`; it never writes."""
    import anyio
    import mcp.types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tool_list())

    async def call_tool(ctx: Any, params: Any) -> Any:
        job: Callable[[], Any] = lambda: call(location, params.name, params.arguments or {})  # noqa: E731
        try:
            structured, text = await anyio.to_thread.run_sync(job)
        except ToolError as exc:
            error = {"message": exc.text, "exit_code": exc.exit_code, "class": exc.kind}
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"{exc.text}\n(exit {exc.exit_code}: {exc.kind})")],
                structured_content={"error": error},
                is_error=True,
            )
        body = json.dumps(structured, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text), types.TextContent(type="text", text=body)],
            structured_content=structured,
        )

    async def list_resources(ctx: Any, params: Any) -> Any:
        try:
            return types.ListResourcesResult(resources=await anyio.to_thread.run_sync(resource_list, location))
        except ToolError as exc:
            raise MCPError(types.INTERNAL_ERROR, exc.text) from None

    async def list_templates(ctx: Any, params: Any) -> Any:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(uri_template=SOURCE_URI, name="source", mime_type="application/json"),
                types.ResourceTemplate(uri_template=LEVEL_URI, name="level", mime_type="application/json"),
            ]
        )

    async def read_resource(ctx: Any, params: Any) -> Any:
        try:
            text = await anyio.to_thread.run_sync(read_uri, location, str(params.uri))
        except ToolError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.text) from None
        contents = [types.TextResourceContents(uri=str(params.uri), mime_type="application/json", text=text)]
        return types.ReadResourceResult(contents=contents)

    from invmap import __version__

    return Server(
        NAME,
        version=__version__,
        instructions="The map of LLM-inference-engineering research: triage a symptom, scrape or benchmark "
        "to a level, read its sources, their open questions and engine settings, estimate KV and memory.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


@implements("mcp")
def serve(ctx: typer.Context, args: Args) -> None:
    """Serve until the client closes stdin."""
    try:
        import anyio
        from mcp.server.stdio import stdio_server
    except ImportError:
        raise UsageError(
            "invmap mcp needs the Model Context Protocol SDK, which is not installed", hint=f"{INSTALL}"
        ) from None
    run = state(ctx)
    if run.location.is_stdin:
        raise UsageError("invmap mcp talks to its client on stdin: give the catalog as a file, not '-'")
    run.index()  # an invalid or unreadable catalog fails now (exit 3 or 4), not on the first call
    app = server(run.location)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await app.run(read, write, app.create_initialization_options())

    anyio.run(main)
