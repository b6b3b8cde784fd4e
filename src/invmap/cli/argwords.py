"""The command line's words read before click parses them: in `invmap search kv cache -survey`, a
word with one dash that is no option of `search` is a word to exclude, which must come after `--`;
click would say "No such option: -s", so the hint shows the line to type instead."""

from __future__ import annotations

from collections.abc import Iterator

from invmap import options as decl
from invmap.errors import UsageError


def dash_words_hint(args: list[str]) -> None:
    """A usage error showing where to put `--`, when `search`'s words hold a one-dash word that is
    letters only and no option of `search`; nothing otherwise (click answers)."""
    at = _search_at(args)
    if at is None:
        return
    read = _search_words(iter(args[at + 1 :]))
    if read is None:
        return
    given, words, odd = read
    if odd is not None:
        import shlex

        shown = shlex.join(["invmap", "search", *given, "--", *words])
        raise UsageError(f"no such option: {odd}", hint=f"exclude words after --: {shown}")


def _search_at(args: list[str]) -> int | None:
    """Where the `search` command is among the words (not a global option's value named so)."""
    globals_with_values = {flag for o in decl.GLOBAL if o.kind != "flag" for flag in o.flags}
    return next(
        (n for n, w in enumerate(args) if w == "search" and (n == 0 or args[n - 1] not in globals_with_values)), None
    )


def _is_dash_word(word: str) -> bool:
    return word.startswith("-") and word != "-"


def _search_words(rest: Iterator[str]) -> tuple[list[str], list[str], str | None] | None:
    """`search`'s words after the command: (its options with their values, the other words, the first
    one-dash word that is no option); None where `--` is already given or click's own message about a
    dash word says it better."""
    options = {flag: o for o in decl.options_of(decl.TOP["search"]) for flag in o.flags}
    given: list[str] = []  # options and their values, then the words: the hint puts `--` between
    words: list[str] = []
    odd = None
    for word in rest:
        if word == "--":
            return None
        option = options.get(word.split("=", 1)[0]) if _is_dash_word(word) else None
        if option is not None:
            given.append(word)
            if option.takes_value and "=" not in word:
                given.append(next(rest, ""))
            continue
        if _is_dash_word(word):
            if word.startswith("--") or not word[1:].isalpha() or word[:2] in options or len(word) < 3:
                return None  # click's own message says it better
            odd = odd or word
        words.append(word)
    return given, words, odd
