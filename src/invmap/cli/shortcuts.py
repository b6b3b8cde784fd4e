"""Every use of Typer's internals, in one place, behind one switch.

invmap runs correctly without any of this: `INVMAP_TYPER_SHORTCUTS=0` turns it all off (CI runs the
whole suite once that way), and a Typer upgrade is a question about this file alone (typer is pinned
<0.30). What it buys:

- `lazy_command`: the root group builds only the command that runs. Typer would turn every command's
  signature into click parameters on every run (~1 ms a command); `list` pays for `add`. Off: every
  command module is imported and registered the usual way.
- `plain_values`: option values read without pydantic. Typer 0.29 builds a pydantic TypeAdapter for
  every option on every run, given or not, and imports pydantic to do it (~80 ms of a ~170 ms
  `invmap list`). An absent value, a string, a list of strings, or an int typed as digits is taken as
  it is (what Typer's adapter returns for it); anything else goes to Typer's own coercion, with its
  messages. tests/test_startup.py checks that both readings agree for every option of every command.
- `plain_usage` (always applied: it is what the help says, not speed): help as people write it
  (`NAME...` and `[NAME...]`, not `{NAME...}...`, `[NAME...]...` and `NAME <str>`).
- `suggest_command`: "Did you mean" for a mistyped command, which Typer computes from the eagerly
  built command table that `lazy_command` skips.
- `zsh_matches_any_case` (always applied, whatever the switch: it is behaviour, not speed): the zsh
  script Typer writes gains a `matcher` style for invmap alone, so zsh accepts `Attention Is All You
  Need` for `att` as bash (a single candidate replaces the word) and fish (which matches any case
  itself) do.
- `help_through_write` (always applied): `--help` is written as every output is (`shared.help_out`:
  paged on a terminal when taller than it, as other long output), so
  a full or closed stdout is exit 4 and a reader that went away a quiet 0; click's help option
  would skip a closed stdout silently and raise a traceback on a full one.
- `help_keeps_words_whole` (always applied): click's help wrapping breaks at spaces only, never
  inside a URL or an option name at its hyphens.
- `zsh_keeps_punctuation` (always applied): zsh's answers keep apostrophes and quotes in their help.
- `errors_keep_their_status` (always applied): click's usage errors are written to stderr; a full or
  closed stderr must not turn exit 2 into a traceback or another status, and what they quote of the
  command line (an unknown option, an extra argument) is escaped as every message is.
- `real_case_completion`: Typer keeps only candidates that start with the typed text in its case;
  invmap offers `Attention Is All You Need` for `att` (the shells match case-insensitively), so its
  callbacks' candidates are passed on as they are. Off: Typer's filter applies (the TAB fast path,
  which answers from a current index, still offers real case).
"""

from __future__ import annotations

import os
from typing import Any

SWITCH = "INVMAP_TYPER_SHORTCUTS"
ENABLED = os.environ.get(SWITCH, "1").strip().lower() not in ("0", "off", "no", "false")


ZSH_MATCHER = (
    "# invmap offers names in their real case (Attention Is All You Need for 'att'): match any case.\n"
    "zstyle ':completion:*:*:%(prog_name)s:*' matcher 'm:{a-zA-Z}={A-Za-z}'\n"
)


def zsh_matches_any_case() -> None:
    """Put ZSH_MATCHER after `#compdef` in the zsh script, for `source_zsh`, `--show-completion` and
    `--install-completion` alike (Typer keeps the template in two places)."""
    from typer import _completion_classes, _completion_shared

    template = _completion_shared._completion_scripts["zsh"]
    if "zstyle" not in template:
        head, newline, rest = template.lstrip("\n").partition("\n")
        template = "\n" + head + "\n\n" + ZSH_MATCHER + rest
        _completion_shared._completion_scripts["zsh"] = template
        _completion_classes.ZshComplete.source_template = template


def zsh_keeps_punctuation() -> None:
    """Typer's zsh answers escape an apostrophe as `''` and a double quote as `""`, which zsh reads as
    nothing ("the maps study procedure"); answer with `fastcomplete.zsh_escape`, as the fast path does."""
    from typer import _completion_classes

    zsh = _completion_classes.ZshComplete
    if getattr(zsh.format_completion, "_invmap", False):
        return

    def format_completion(self: Any, item: Any) -> str:
        from invmap.fastcomplete import zsh_escape

        if item.help:
            help_text = _completion_classes._sanitize_help_text(zsh_escape(item.help))
            return f'"{zsh_escape(item.value)}":"{help_text}"'
        return f'"{zsh_escape(item.value)}"'

    format_completion._invmap = True  # type: ignore[attr-defined]
    zsh.format_completion = format_completion


def errors_keep_their_status() -> None:
    """Click's error messages written as `shared.say` writes: an unwritable stderr is ignored."""
    from typer._click import exceptions

    for cls in (exceptions.ClickException, exceptions.UsageError, exceptions.NoArgsIsHelpError):
        show = cls.__dict__.get("show")
        if show is None or getattr(show, "_invmap", False):
            continue

        def quiet(self: Any, file: Any = None, _show: Any = show) -> None:
            import sys

            from invmap.safe import message_text

            if file is None and sys.stderr is None:  # a closed stderr: click would write to stdout
                return
            if isinstance(getattr(self, "message", None), str):  # it may quote what was typed
                self.message = message_text(self.message)
            try:
                _show(self, file)
            except (OSError, ValueError, AttributeError):
                pass

        quiet._invmap = True  # type: ignore[attr-defined]
        cls.show = quiet


def help_keeps_words_whole() -> None:
    """Click wraps help text with a TextWrapper that breaks at hyphens and inside long words: a URL
    (`https://github.com/vllm-` / `project/vllm`) or an option (`--remove-` / `author-name`) split
    across lines cannot be copied. Its wrapper breaks at spaces only."""
    from typer._click import _textwrap

    wrapper = _textwrap.TextWrapper
    if getattr(wrapper, "_invmap", False):
        return
    made = wrapper.__init__

    def whole_words(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **{**kwargs, "break_on_hyphens": False, "break_long_words": False})

    wrapper.__init__ = whole_words  # type: ignore[method-assign]
    wrapper._invmap = True  # type: ignore[attr-defined]


def own_help_option(option: Any) -> Any:
    """Click's `--help` option, printing through `shared.help_out` (paged like other long output)."""
    if option is None:
        return None

    def show(ctx: Any, param: Any, value: Any) -> None:
        if value and not ctx.resilient_parsing:
            from invmap.cli.shared import help_out

            help_out(ctx, ctx.get_help() + "\n")
            ctx.exit()

    option.callback = show
    return option


def help_through_write(command: Any) -> Any:
    """`command` (and its subcommands) with `own_help_option`."""
    original = command.get_help_option
    command.get_help_option = lambda ctx: own_help_option(original(ctx))
    for sub in getattr(command, "commands", {}).values():
        help_through_write(sub)
    return command


def lazy_command(build: Any, ctx: Any) -> Any:
    """A click command built from a one-command Typer app, its option values read without pydantic."""
    import typer

    command = typer.main.get_command(build())
    return real_case_completion(plain_command(plain_usage(command), ctx), command.name)


def real_case_completion(command: Any, path: str) -> Any:
    """Each parameter's completion callback (`cli/complete.py`, registered by `cli/build.py` in
    `CALLBACKS` by command and parameter) answers unfiltered; subcommands too."""
    if not ENABLED:
        return command
    from typer._click.shell_completion import CompletionItem

    from invmap.cli.build import CALLBACKS

    for param in command.params:
        callback = CALLBACKS.get((path, param.name))
        if callback is not None and hasattr(param, "_custom_shell_complete"):
            param._custom_shell_complete = lambda ctx, param, incomplete, cb=callback: [
                CompletionItem(value, help=help_text) for value, help_text in cb(ctx, incomplete)
            ]
    for name, sub in getattr(command, "commands", {}).items():
        real_case_completion(sub, f"{path} {name}")
    return command


def plain_usage(command: Any) -> Any:
    """Typer 0.29 prints a required argument as `{NAME}`, a repeated one as `{NAME...}...`, and its
    type as `NAME <str>`; show `NAME` and `NAME...` (subcommands of a group too)."""
    import typer

    collect = command.collect_usage_pieces

    def pieces(ctx: Any) -> list[str]:
        out = []
        for piece in collect(ctx):
            if piece.startswith("{") and "}" in piece:
                name = piece[1 : piece.index("}")]
                piece = name if name.endswith("...") or not piece.endswith("...") else name + "..."
            elif piece.startswith("[") and piece.endswith("...]..."):  # an optional repeated one
                piece = piece[: -len("...")]
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
    """Give each option a `PlainValue` reader (see the module's docstring). A Typer without these
    internals (`_runtime_param`, `type_descriptor`) is left to do its own work."""
    if not ENABLED:
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if getattr(param, "_runtime_param", False) is None and hasattr(descriptor, "parameter_info"):
            param._runtime_param = PlainValue(param.type_descriptor)


def plain_command(command: Any, ctx: Any) -> Any:
    """`plain_values` for a command's options, --help included, and those of its subcommands."""
    if not ENABLED:
        return command
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
            return _plain_int(value)
        return NotImplemented


def _plain_int(value: Any) -> Any:
    """An int, or ASCII digits (a sign allowed) that int() reads as Typer would; else NotImplemented."""
    if type(value) is int:
        return value
    digits = value[1:] if type(value) is str and value.startswith("-") else value
    if type(digits) is str and digits.isascii() and digits.isdigit() and len(digits) < 19:
        return int(value)
    return NotImplemented


def suggest_command(exc: Any, args: list[str], names: list[str]) -> None:
    """Add "Did you mean" to click's "No such command" (Typer's own looks at the table we skip);
    `invmap version` is pointed to `--version` either way."""
    from difflib import get_close_matches

    word = args[0].lstrip("-") if args else ""
    matches = get_close_matches(word, names) if args and ENABLED else []
    if args and args[0] == "version":
        matches = ["--version"]
    message = getattr(exc, "message", None)
    if isinstance(message, str) and args and args[0] == "version":
        message = message.split(" Did you mean", 1)[0]  # Typer's own guess ('questions') is worse
    if matches and isinstance(message, str) and "Did you mean" not in message:
        exc.message = f"{message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
