"""The filters that select sources, each declared once with its clause: the option that gives it
(`--layer`), its help, and the SQL it adds (a flag's `clause` is SQL over `sources`; a value filter's
names the clause builder that `query` registers under that name, checked when `query` is
imported). The CLI (`options.py`) takes these into its bundles; the core (`query`, `triage`) reads
them here, never from the CLI's declarations. No typing: a TAB press reads this module.
"""

from __future__ import annotations

from collections import namedtuple

from invmap.fields import TEXT_FIELDS

SHOWN_FLAGS_WIDTH = 58  # the widest `  FLAGS METAVAR` help shows, on a 60-column screen


class Opt(
    namedtuple(
        "Opt",
        (
            "dest",
            "flags",
            "help",
            "metavar",
            "kind",
            "complete",
            "multiple",
            "default",
            "clause",
            "for_levels",
            "example",
            "aliases",
        ),
        defaults=(None, "text", None, False, None, None, True, None, ()),
    )
):
    """An option: `dest` (the parameter), `flags` (`--layer`, `-l`), `help`, `metavar`; `kind` text |
    flag | int | count (an int of at least 1) | float; `complete` (what TAB offers: a name
    `fastcomplete` and `cli/complete.py` know); `multiple` (repeatable, commas too); `default`;
    for a filter, `clause` (SQL over `sources` for a flag, else the name of `query`'s clause builder)
    and `for_levels` (whether `layers` takes it); `example`, a value that selects some sources of the
    shipped map but not all (a filter's tests use it); `aliases`: an old spelling of the option
    (`--level`), still read, with a warning, and said in its help, or a word a user may reach for
    (`level`, `tp`: another command's or an engine's name for it), which an unknown option is matched
    against to suggest this one (an alias is never offered by completion)."""

    @property
    def old_flags(self) -> tuple[str, ...]:
        """The old spellings still read (`--level` for `--layer`)."""
        return tuple(a for a in self.aliases if a.startswith("-"))

    __slots__ = ()

    @property
    def shown_flags(self) -> tuple[str, ...]:
        """The flags help lists: the first and the short ones (`-tp`), then more while the list stays
        short enough for a 60-column help screen; the rest (`--tensor-parallel-size`, `--tp-size`: other
        engines' spellings) are read as the first flag, named in the option's help."""
        shown = [self.flags[0], *(f for f in self.flags[1:] if not f.startswith("--"))]
        value = len(self.metavar or "") + 1 if self.takes_value else 0
        for flag in self.flags[1:]:
            if flag.startswith("--") and 2 + len(", ".join([*shown, flag])) + value <= SHOWN_FLAGS_WIDTH:
                shown.append(flag)
        return tuple(f for f in self.flags if f in shown)

    @property
    def other_spellings(self) -> tuple[str, ...]:
        """The flags read as this option but not listed in help (see `shown_flags`)."""
        return tuple(f for f in self.flags if f not in self.shown_flags)

    @property
    def takes_value(self) -> bool:
        return self.kind != "flag"


FILTERS: tuple[Opt, ...] = (
    Opt(
        "layer",
        ("--layer", "-l"),
        "A level code (L1..L6, RL, P0; a digit 1-6 names L1..L6), words of a level's title or scope "
        "(disaggregation), or part of a layer label. Repeat or use commas to OR.",
        "LAYER",
        complete="layer",
        multiple=True,
        clause="layer",
        for_levels=False,
        example="L3",
        aliases=("level",),
    ),
    Opt(
        "type",
        ("--type", "-t"),
        "Direction/type, any case (Current, Foundational, ...). Repeat or use commas to OR.",
        "TYPE",
        complete="type",
        multiple=True,
        clause="type",
        example="Current",
    ),
    Opt(
        "year",
        ("--year", "-y"),
        "2024, 2023..2025, 2025.., ..2017 or n.d. Repeat or use commas to OR.",
        "YEARS",
        multiple=True,
        clause="year",
        example="2024",
    ),
    Opt(
        "has_code",
        ("--has-code",),
        "Only sources with a public code repository (a `code` link).",
        kind="flag",
        default=False,
        clause="code IS NOT NULL",
    ),
)

# What `--in` and `field:word` may name.
SEARCHABLE: tuple[str, ...] = (*TEXT_FIELDS, "all")
VALUE_CLAUSES: frozenset[str] = frozenset(o.clause for o in FILTERS if o.kind != "flag")
