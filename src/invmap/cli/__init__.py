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
from invmap import catalog as catalog_io
from invmap.cli.shared import State, color_mode, complete_color
from invmap.errors import InvmapError, NotFoundError

# Every command, in the order --help lists them, and the module that defines it.
COMMANDS: dict[str, str] = {
    "list": "querying", "show": "querying", "questions": "querying", "search": "querying", "fields": "querying",
    "layers": "views", "stats": "views", "map": "views", "related": "views", "guide": "views", "open": "views",
    "where": "authoring", "check": "authoring", "init": "authoring", "add": "authoring", "fmt": "authoring",
    "export": "authoring", "import": "authoring",
}  # fmt: skip


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
                return typer.main.get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)
        return None

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:  # bare `invmap`: the help, as a success
            sys.stdout.write(ctx.get_help() + "\n")
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except Exception as exc:  # click's UsageError ("No such command"), which typer does not export
            # Typer's own "Did you mean" looks at the eagerly built command table, which we skip.
            from difflib import get_close_matches

            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches and isinstance(getattr(exc, "message", None), str) and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InvmapError as exc:
            report(exc)
            raise typer.Exit(exc.exit_code) from None


def report(exc: InvmapError) -> None:
    lines = [f"Error: {exc.message}"]
    if isinstance(exc, NotFoundError) and exc.candidates:
        lines.append(f"{(exc.hint or 'candidates').capitalize()}:")
        lines += [f"  {c}" for c in exc.candidates]
    elif exc.hint:
        lines.append(f"Hint: {exc.hint}")
    sys.stderr.write("\n".join(lines) + "\n")


app = typer.Typer(
    cls=InvmapGroup,
    name="invmap",
    help="Query a curated map of LLM-inference-engineering research: which sources address a layer, "
    "what mechanism each proposes, and which engineering question is still open.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain click help: rich's help renderer costs ~60 ms on every --help
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"invmap {__version__}\n")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    catalog: Annotated[
        Optional[str],
        typer.Option("--catalog", "-c", metavar="PATH", help="Catalog file to use ('-' reads stdin). "
                     "Default: $INVMAP_CATALOG, else the catalog shipped with invmap."),
    ] = None,  # fmt: skip
    color: Annotated[
        str, typer.Option("--color", metavar="WHEN", help="Colour: auto, always or never.", autocompletion=complete_color)
    ] = "auto",
    version: Annotated[
        bool, typer.Option("--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """Query a curated map of LLM-inference-engineering research."""
    ctx.obj = State(catalog_io.locate(catalog), color_mode(color))
