"""The Typer app: the root group, global options, and errors -> exit codes.

Every command is declared in `options.py` and implemented in one of the command modules (querying,
views, authoring, records), each implementation thin: read the values, call the core
(catalog, query, search, render), route the result. A command's module is imported only when that
command runs (`shortcuts.lazy_command`), or, with the shortcuts off, all of them at start.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

import invmap.cli.shortcuts as shortcuts
from invmap import __version__
from invmap import location as catalog_location
from invmap import options as decl
from invmap.cli.argwords import dash_words_hint
from invmap.cli.shared import State, color_mode, complete_color, running
from invmap.environment import Environment
from invmap.errors import InvmapError, NotFoundError

COMPLETION_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
COMMANDS: dict[str, str] = {name: c.module for name, c in decl.TOP.items()}


class InvmapGroup(typer.core.TyperGroup):
    """The root command group: commands listed in their declared groups; each built only when it runs
    (with the shortcuts on); every InvmapError a command raises turned into its message on stderr and
    its exit code."""

    def main(self, *args: Any, **extra: Any) -> Any:
        """One run: its environment made here, once (a test passes its own as `obj`)."""
        given = extra.get("obj")
        if not isinstance(given, Environment):
            given = None
        else:  # the help's width too (click would compute it from the process's terminal, as here)
            del extra["obj"]
            extra.setdefault("terminal_width", max(min(given.columns, 80) - 2, 50))
        with running(given):
            return super().main(*args, **extra)

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return list(COMMANDS) if shortcuts.ENABLED else super().list_commands(ctx)

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:
        if not shortcuts.ENABLED:
            command = super().get_command(ctx, cmd_name)
            return shortcuts.help_through_write(shortcuts.plain_usage(command)) if command is not None else None
        if cmd_name not in COMMANDS:
            return None
        from invmap.cli.build import typer_app

        return shortcuts.help_through_write(shortcuts.lazy_command(lambda: typer_app(cmd_name), ctx))

    def get_help_option(self, ctx: typer.Context) -> Any:
        return shortcuts.own_help_option(super().get_help_option(ctx))

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Commands in groups, each summary a sentence (no command module is imported for this)."""
        for group in decl.GROUPS:
            with formatter.section(f"{group} commands"):
                formatter.write_dl([(c.name, c.summary) for c in decl.TOP.values() if c.group == group])

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:  # bare `invmap`: the help, as a success
            from invmap.cli.shared import help_out

            help_out(ctx, ctx.get_help() + "\n")
            ctx.exit(0)
        try:
            dash_words_hint(args)
        except InvmapError as exc:
            report(exc)
            ctx.exit(exc.exit_code)
        if "--install-completion" in args:
            # Typer's flag installs for the shell it detects; `--install-completion zsh` names one.
            at = args.index("--install-completion")
            if at + 1 < len(args) and args[at + 1] in COMPLETION_SHELLS:
                from typer.completion import install_callback

                install_callback(ctx, None, args[at + 1])  # installs, says where, exits 0
        return super().parse_args(ctx, args)

    def get_params(self, ctx: typer.Context) -> list[Any]:
        params = super().get_params(ctx)
        shortcuts.plain_values(params)
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
            shortcuts.suggest_command(exc, args, self.list_commands(ctx))
            raise

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InvmapError as exc:
            inputs = getattr(exc, "inputs", ())  # an estimate's refusal names the inputs it concerns
            if inputs and ctx.meta.get("typed"):
                from invmap.cli.build import spelled_as_typed

                exc.message = spelled_as_typed(exc.message, inputs, ctx.meta["typed"])
            report(exc)
            raise typer.Exit(exc.exit_code) from None


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
    help="Query a curated map of LLM-inference-engineering research: which level a delay or capacity failure "
    "belongs to, which sources address it, what mechanism each proposes, which engineering question is still "
    "open, and where to read it.",
    epilog="\b\nExamples:\n  invmap triage TTFT jumps when long prompts arrive\n  invmap list --layer L3\n"
    "  invmap show PagedAttention\n  invmap questions -l L5 --json | jq -r '.[].question'\n\n"
    "Run 'invmap COMMAND --help' for a command's options and examples.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain click help: rich's help renderer costs ~60 ms on every --help
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
shortcuts.zsh_matches_any_case()
shortcuts.zsh_keeps_punctuation()
shortcuts.help_keeps_words_whole()
shortcuts.errors_keep_their_status()


def _version(value: bool) -> None:
    """`invmap 0.3.0 — 30 sources, accessed 2026-08-07`: the shipped catalog, whatever --catalog says."""
    if value:
        from invmap.cli.shared import write
        from invmap.index import open_catalog

        try:
            shipped = open_catalog(catalog_location.locate(None)._replace(path=str(catalog_location.shipped_path())))
            latest = max(shipped.values("accessed"), default="n.d.")
            text = f"invmap {__version__} — {shipped.count()} sources, accessed {latest}\n"
        except InvmapError:
            text = f"invmap {__version__}\n"
        write(text)
        raise typer.Exit()


_GLOBAL = {o.dest: o for o in decl.GLOBAL}


@app.callback()
def main(
    ctx: typer.Context,
    catalog: Annotated[
        Optional[str],
        typer.Option(*_GLOBAL["catalog"].flags, metavar=_GLOBAL["catalog"].metavar, help=_GLOBAL["catalog"].help),
    ] = None,
    color: Annotated[
        str,
        typer.Option(
            *_GLOBAL["color"].flags,
            metavar=_GLOBAL["color"].metavar,
            help=_GLOBAL["color"].help,
            autocompletion=complete_color,
        ),
    ] = "auto",
    no_pager: Annotated[bool, typer.Option(*_GLOBAL["no_pager"].flags, help=_GLOBAL["no_pager"].help)] = False,
    version: Annotated[
        bool, typer.Option(*_GLOBAL["version"].flags, help=_GLOBAL["version"].help, callback=_version, is_eager=True)
    ] = False,
) -> None:
    """Query a curated map of LLM-inference-engineering research."""
    ctx.obj = State(catalog_location.locate(catalog), color_mode(color), pager=not no_pager)


if not shortcuts.ENABLED:  # every command registered the usual way (the lazy group is a shortcut)
    from invmap.cli.build import typer_app as _typer_app

    for _name in COMMANDS:
        _sub = _typer_app(_name)
        if decl.SUB.get(_name):
            app.add_typer(_sub, name=_name)
        else:
            app.registered_commands.extend(_sub.registered_commands)
