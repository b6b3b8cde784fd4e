"""The Typer app: the root group, global options, and errors -> exit codes.

Commands live in querying.py, authoring.py and views.py and stay thin: parse options, call the
core (catalog, query, render), route the result. A command's module is imported only when that
command runs (or when --help lists them all).
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any, Optional

import typer

from invmap import __version__
from invmap import location as catalog_io
from invmap.cli.shared import State, color_mode, complete_color
from invmap.errors import InvmapError, NotFoundError

# Every command, grouped and in the order --help lists them: (module, one-sentence summary).
GROUPS: dict[str, dict[str, tuple[str, str]]] = {
    "Query": {
        "list": ("querying", "List sources, filtered by layer, type and year."),
        "show": ("querying", "Show every field of one or more sources."),
        "questions": ("querying", "Print each source's unresolved engineering question."),
        "search": ("querying", "Search names, titles and mechanisms, best match first."),
        "fields": ("querying", "List the field names that --fields accepts."),
    },
    "Overview": {
        "layers": ("views", "Show the six levels and the sources in each."),
        "stats": ("views", "Count sources by type, year and level."),
        "map": ("views", "Show the map: each level's sources by year."),
        "related": ("views", "List the sources nearest to one source."),
        "guide": ("views", "Print the map's study procedure and notes."),
        "open": ("views", "Open a source's link or code in a browser."),
    },
    "Authoring": {
        "where": ("authoring", "Print which catalog is active, and why."),
        "check": ("authoring", "Validate the catalog and list every problem."),
        "init": ("authoring", "Start a catalog of your own."),
        "add": ("authoring", "Add a source to your catalog."),
        "fmt": ("authoring", "Rewrite the catalog in canonical form."),
        "export": ("authoring", "Export as Markdown, CSV, JSON, BibTeX or TOML."),
        "import": ("authoring", "Turn a Markdown table into a catalog."),
    },
    "Records": {
        "record": ("records", "Draft and check experiment records."),
        "records": ("records", "List experiment records and the sources they address."),
    },
}
COMPLETION_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
COMMANDS: dict[str, str] = {name: module for group in GROUPS.values() for name, (module, _) in group.items()}


class InvmapGroup(typer.core.TyperGroup):
    """The root command group.

    Builds a subcommand only when it is used: Typer would otherwise turn every command's signature
    into click parameters on every run (~1 ms a command), and `list` pays for `add` and `export`.
    Turns every InvmapError raised by a command into its message on stderr and its exit code.
    """

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(f"invmap.cli.{COMMANDS[cmd_name]}")
        for info in module.commands.registered_commands:
            if info.name == cmd_name:
                return plain_command(
                    plain_usage(
                        typer.main.get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)
                    ),
                    ctx,
                )
        for info in getattr(module.commands, "registered_groups", []):
            if info.name == cmd_name:
                return plain_command(
                    plain_usage(
                        typer.main.get_group_from_info(
                            info, pretty_exceptions_short=True, suggest_commands=True, rich_markup_mode=None
                        )
                    ),
                    ctx,
                )
        return None

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Commands in groups, each summary a sentence (no command module is imported for this)."""
        for group, commands in GROUPS.items():
            with formatter.section(f"{group} commands"):
                formatter.write_dl([(name, summary) for name, (_, summary) in commands.items()])

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:  # bare `invmap`: the help, as a success
            sys.stdout.write(ctx.get_help() + "\n")
            ctx.exit(0)
        if "--install-completion" in args:
            # Typer's flag installs for the shell it detects; `--install-completion zsh` names one.
            at = args.index("--install-completion")
            if at + 1 < len(args) and args[at + 1] in COMPLETION_SHELLS:
                from typer.completion import install_callback

                install_callback(ctx, None, args[at + 1])  # installs, says where, exits 0
        return super().parse_args(ctx, args)

    def get_params(self, ctx: typer.Context) -> list[Any]:
        params = super().get_params(ctx)
        plain_values(params)
        for param in params:
            if param.name == "install_completion":
                param.help = (
                    "Install completion for the current shell, or for the one named after it (bash, zsh, fish)."
                )
        return params

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except Exception as exc:  # click's UsageError ("No such command"), which typer does not export
            # Typer's own "Did you mean" looks at the eagerly built command table, which we skip.
            from difflib import get_close_matches

            word = args[0].lstrip("-") if args else ""
            matches = get_close_matches(word, self.list_commands(ctx)) if args else []
            if args and args[0] == "version":
                matches = ["--version"]
            if matches and isinstance(getattr(exc, "message", None), str) and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InvmapError as exc:
            report(exc)
            raise typer.Exit(exc.exit_code) from None


def plain_usage(command: Any) -> Any:
    """Help as people write it: Typer 0.29 prints a required argument as `{NAME}`, a repeated one as
    `{NAME...}...`, and its type as `NAME <str>`; show `NAME` and `NAME...` (subcommands of a group too)."""
    collect = command.collect_usage_pieces

    def pieces(ctx: Any) -> list[str]:
        out = []
        for piece in collect(ctx):
            if piece.startswith("{") and "}" in piece:
                name = piece[1 : piece.index("}")]
                piece = name if name.endswith("...") or not piece.endswith("...") else name + "..."
            out.append(piece)
        return out

    command.collect_usage_pieces = pieces
    for param in command.params:  # `NAME <str>` in the argument list: the metavar says it all
        if isinstance(param, typer.core.TyperArgument):
            param.display_type_rich = lambda ctx: None
    if isinstance(command, typer.core.TyperGroup):
        get = command.get_command
        command.get_command = lambda ctx, name: (lambda found: plain_usage(found) if found else found)(get(ctx, name))
    return command


def plain_values(params: list[Any]) -> None:
    """Read plain option values without pydantic. Typer 0.29 builds a pydantic TypeAdapter for
    every option on every run, given or not, and imports pydantic to do it: ~80 ms of a 170 ms
    `invmap list`. An option that is absent, a string, a list of strings, or an int typed as digits
    is taken as it is, which is what Typer's adapter returns for it; anything else (a number to
    convert, a bad value) goes to Typer's own coercion, with its messages. tests/test_startup.py
    checks that both agree for every option, and that warm queries never import pydantic. A Typer
    without these internals (`_runtime_param`, `type_descriptor`) is left to do its own work."""
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if getattr(param, "_runtime_param", False) is None and hasattr(descriptor, "parameter_info"):
            param._runtime_param = PlainValue(param.type_descriptor)


def plain_command(command: Any, ctx: Any) -> Any:
    """`plain_values` for a command's options, --help included, and those of its subcommands."""
    plain_values(command.get_params(ctx))
    for sub in getattr(command, "commands", {}).values():
        plain_command(sub, ctx)
    return command


class PlainValue:
    """Typer's `RuntimeParam.coerce` for values that need no conversion; the rest is delegated."""

    __slots__ = ("descriptor", "typer_param")

    def __init__(self, descriptor: Any) -> None:
        self.descriptor = descriptor
        self.typer_param: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        plain = self.plain(value, multi=param.multiple or param.nargs == -1)
        if plain is not NotImplemented:
            return plain
        if self.typer_param is None:
            from typer._coercion import build_runtime_param

            self.typer_param = build_runtime_param(self.descriptor)
        return self.typer_param.coerce(value, param=param, ctx=ctx)

    def plain(self, value: Any, multi: bool) -> Any:
        info, kind = self.descriptor.parameter_info, self.descriptor.annotation
        if info.parser is not None or self.descriptor.file_annotation is not None:
            return NotImplemented
        if value is None:
            return () if multi else None
        if multi:
            if kind == list[str] and isinstance(value, (list, tuple)) and all(type(v) is str for v in value):
                return list(value)
            return NotImplemented
        if kind in (str, bool, float) and type(value) is kind:
            return value
        if kind is int and info.min is None and info.max is None:
            if type(value) is int:
                return value
            digits = value[1:] if type(value) is str and value.startswith("-") else value
            if type(digits) is str and digits.isascii() and digits.isdigit() and len(digits) < 19:
                return int(value)
        return NotImplemented


def report(exc: InvmapError) -> None:
    """The error on stderr, with every control character escaped: a message may quote a hostile
    argument, file name or catalog cell."""
    lines = [f"Error: {exc.message}"]
    if isinstance(exc, NotFoundError) and exc.candidates:
        lines.append(f"{(exc.hint or 'candidates').capitalize()}:")
        lines += [f"  {c}" for c in exc.candidates]
    elif exc.hint:
        lines.append(f"Hint: {exc.hint}")
    from invmap.cli.shared import say

    say("\n".join(lines))


app = typer.Typer(
    cls=InvmapGroup,
    name="invmap",
    help="Query a curated map of LLM-inference-engineering research: which sources address a level, "
    "what mechanism each proposes, which engineering question is still open, and where to read it.",
    epilog="\b\nExamples:\n  invmap list --layer L3\n  invmap show PagedAttention\n  invmap questions --layer L5 --json | jq -r '.[].question'\n\nRun 'invmap COMMAND --help' for a command's options and examples.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain click help: rich's help renderer costs ~60 ms on every --help
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    """`invmap 0.3.0 — 30 sources, accessed 2026-08-07`: the shipped catalog, whatever --catalog says."""
    if value:
        from invmap.cli.shared import write
        from invmap.index import open_catalog

        try:
            shipped = open_catalog(catalog_io.locate(None)._replace(path=str(catalog_io.shipped_path())))
            latest = max(shipped.values("accessed"), default="n.d.")
            write(f"invmap {__version__} — {shipped.count()} sources, accessed {latest}\n")
        except InvmapError:
            write(f"invmap {__version__}\n")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    catalog: Annotated[
        Optional[str],
        typer.Option(
            "--catalog",
            "-c",
            metavar="PATH",
            help="Catalog file to use ('-' reads stdin). "
            "Default: $INVMAP_CATALOG, else the catalog shipped with invmap.",
        ),
    ] = None,
    color: Annotated[
        str,
        typer.Option("--color", metavar="WHEN", help="Colour: auto, always or never.", autocompletion=complete_color),
    ] = "auto",
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Never send output through a pager.")] = False,
    version: Annotated[
        bool, typer.Option("--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """Query a curated map of LLM-inference-engineering research."""
    ctx.obj = State(catalog_io.locate(catalog), color_mode(color), pager=not no_pager)
