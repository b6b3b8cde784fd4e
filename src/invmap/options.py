"""The one declaration of invmap's commands, their options and arguments.

Everything that knows about the command line derives from `COMMANDS`: the Typer commands and their
`--help` (`cli/build.py`), the grouped command list of `invmap --help`, and the completion fast path
(`fastcomplete.py`), which must know every option of every command, flags included. Options that
several commands share are declared once, as bundles: `FILTERS` (declared in the core, `filters.py`,
with its clause), `LISTING` and `OUTPUT`.
No typer, no typing: a TAB press reads this module.
"""

from __future__ import annotations

from collections import namedtuple

from invmap.fields import FIELDS, SORT_KEYS
from invmap.filters import FILTERS, Opt


class Arg(
    namedtuple(
        "Arg",
        ("dest", "metavar", "help", "multiple", "required", "complete", "unless"),
        defaults=(False, True, None, ()),
    )
):
    """A positional argument; a required one may be left out when one of the options named in
    `unless` is given (the command says so, exit 2, when neither is)."""

    __slots__ = ()


class Command(
    namedtuple(
        "Command",
        (
            "name",
            "group",
            "module",
            "summary",
            "view",
            "bundles",
            "options",
            "arguments",
            "examples",
            "parent",
            "network",
        ),
        defaults=("", (), (), (), (), None, False),
    )
):
    """A command: its `name`, help `group` and `summary`, the CLI `module` that implements it, the
    `view` it prints (`formats.py`; "" for none), the option `bundles` it takes, its own `options` and
    `arguments`, help `examples`, the `parent` group of a subcommand (`record new`), and whether it
    asks a network service (`network`: tests give it a local stand-in)."""

    __slots__ = ()

    @property
    def path(self) -> str:
        return f"{self.parent} {self.name}" if self.parent else self.name


# --- bundles -----------------------------------------------------------------------------------

LISTING: tuple[Opt, ...] = (
    Opt(
        "sort",
        ("--sort", "-s"),
        f"Sort by {', '.join(SORT_KEYS[:-1])} or {SORT_KEYS[-1]}; sources without the value sort last.",
        "KEY",
        complete="sort",
    ),
    Opt("reverse", ("--reverse", "-r"), "Reverse the order.", kind="flag", default=False),
    Opt("limit", ("--limit", "-n"), "At most N results (at least 1).", "N", kind="count"),
    Opt(
        "show_all",
        ("--all",),
        "Tables on a terminal: show every row (default: the first 200).",
        kind="flag",
        default=False,
    ),
)

FORMAT = Opt(
    "fmt",
    ("--format", "-f"),
    "FORMATS. Default: table on a terminal, plain in a pipe.",  # FORMATS: this command's, filled in by the CLI
    "FORMAT",
    complete="format",
)
JSON = Opt("json_flag", ("--json",), "Same as --format json.", kind="flag", default=False)
FIELDS_OPT = Opt(
    "fields", ("--fields",), "Only these fields, in this order (see 'invmap fields').", "F1,F2", complete="fields"
)
COLOR = Opt("color", ("--color",), "Colour: auto, always or never.", "WHEN", complete="color")
NO_PAGER = Opt("no_pager", ("--no-pager",), "Never send output through a pager.", kind="flag", default=False)
OUTPUT: tuple[Opt, ...] = (FORMAT, JSON, FIELDS_OPT, COLOR, NO_PAGER)
# What --fields means for a command that prints something other than sources: not offered there.
OUTPUT_NO_FIELDS: tuple[Opt, ...] = (FORMAT, JSON, COLOR, NO_PAGER)

BUNDLES: dict[str, tuple[Opt, ...]] = {
    "filters": FILTERS,
    "level_filters": tuple(o for o in FILTERS if o.for_levels),
    "listing": LISTING,
    "output": OUTPUT,
    "output_no_fields": OUTPUT_NO_FIELDS,
}

GLOBAL: tuple[Opt, ...] = (
    Opt(
        "catalog",
        ("--catalog", "-c"),
        "Catalog file to use ('-' reads stdin). Default: $INVMAP_CATALOG, else the catalog shipped with invmap.",
        "PATH",
        complete="catalog",
    ),
    Opt("color", ("--color",), "Colour: auto, always or never.", "WHEN", complete="color", default="auto"),
    Opt("no_pager", ("--no-pager",), "Never send output through a pager.", kind="flag", default=False),
    Opt("version", ("--version", "-V"), "Print the version and exit.", kind="flag", default=False),
)

NAME_HELP = "Id, name, Source text, title, arXiv id, DOI or link; case, spacing and small typos are forgiven."
NAMES = Arg("names", "NAME...", NAME_HELP, multiple=True, complete="source")
NAME = Arg("name", "NAME", NAME_HELP, complete="source")
OUTPUT_PATH = Opt("output_path", ("--output", "-o"), "Write to PATH ('-' is stdout) instead of stdout.", "PATH")
FORCE = Opt("force", ("--force",), "Overwrite PATH if it exists.", kind="flag", default=False)
JSON_ONLY = Opt("json_flag", ("--json",), "Print the result as JSON.", kind="flag", default=False)


def _option_help(f, command: str) -> str:
    """A field's `add`/`edit` option help: its meaning as a sentence, then an example in quotes."""
    meaning = f.help.replace(", or null", "").replace(" or null", "")
    if f.kind.many:
        singular = f.flag.removeprefix("--").replace("-", " ")
        meaning = f"one {singular}, of {meaning}; repeat the option for each" + (
            " (the list given replaces the whole list)" if command == "edit" else ""
        )
    elif f.name == "year":
        meaning = "publication year, or n.d. for an undated source"
    text = (meaning[0].upper() + meaning[1:] if not meaning.startswith("arXiv") else meaning) + "."
    if f.example and f.name != "year":
        text += (
            f' Example: "{f.example}".' if " " in f.example or f.example.endswith(".") else f" Example: {f.example}."
        )
    if command == "add" and f.name == "id":
        text += " Default: the name's slug."
    if command == "add" and f.name == "accessed":
        text += " Default: today."
    if f.name == "type":
        text += " One of the catalog's types, any case (see --new-type)."
    return text


def _field_options(command: str) -> tuple[Opt, ...]:
    """`add`'s and `edit`'s options, one per stored field (a list's is singular and repeatable)."""
    return tuple(
        Opt(
            f.name,
            (f.flag,),
            _option_help(f, command),
            f.kind.metavar,
            multiple=f.kind.many,
            complete="type" if f.name == "type" else f.name if f.kind.name == "choice" else None,
        )
        for f in FIELDS
        if f.stored
    )


NEW_TYPE = Opt("new_type", ("--new-type",), "Allow a --type the catalog does not use yet.", kind="flag", default=False)

COMMANDS: tuple[Command, ...] = (
    # --- query
    Command(
        "triage",
        "Query",
        "querying",
        "From a measured symptom, an engine's metrics or a benchmark's results to the level, its sources and "
        "their open questions.",
        "triage",
        ("filters", "output_no_fields"),
        (
            Opt("limit", ("--limit", "-n"), "At most N levels (at least 1).", "N", kind="count", default=3),
            Opt("every", ("--all",), "Every level, with its score (none left out).", kind="flag", default=False),
            Opt(
                "metrics",
                ("--metrics",),
                "An engine's Prometheus metrics: a file of a /metrics scrape, '-' for stdin, or an http(s) URL to "
                "scrape. Give it twice (before, after) to read the window between them.",
                "SOURCE",
                multiple=True,
            ),
            Opt(
                "interval",
                ("--interval",),
                "With one --metrics URL: scrape it twice, this far apart (30s, 2m). With two scrapes: how far "
                "apart they were taken, for rates.",
                "DURATION",
            ),
            Opt(
                "bench",
                ("--bench",),
                "A benchmark's results: vllm bench serve or SGLang bench_serving (JSON, or the printed summary), "
                "GenAI-Perf (JSON or CSV export), GuideLLM (JSON report).",
                "FILE",
            ),
        ),
        (
            Arg(
                "symptom",
                "SYMPTOM...",
                "What you measured or saw, in words (quoted or not; quotes, - and : are just text); optional with "
                "--metrics or --bench.",
                multiple=True,
                unless=("metrics", "bench"),
            ),
        ),
        (
            'invmap triage "TTFT p99 jumps when long prompts arrive"',
            "invmap triage requests preempted, KV cache full",
            "invmap triage slow KV handoff --json | jq -r '.[0].code'",
            "invmap triage --metrics http://localhost:8000/metrics --interval 30s",
            "invmap triage --metrics before.prom --metrics after.prom --interval 60s",
            "invmap triage --bench results.json --json | jq -r '.[].evidence[].text'",
        ),
        network=True,
    ),
    Command(
        "list",
        "Query",
        "querying",
        "List sources, filtered by layer, type and year.",
        "records",
        ("filters", "listing", "output"),
        examples=(
            "invmap list --layer L3",
            "invmap list --layer disaggregation --type current",
            "invmap list --has-code --year 2023..2025 --json | jq -r '.[].id'",
        ),
    ),
    Command(
        "show",
        "Query",
        "querying",
        "Show every field of one or more sources.",
        "source",
        ("output",),
        arguments=(NAMES,),
        examples=(
            "invmap show PagedAttention",
            "invmap show 2407.00079",
            "invmap show https://docs.vllm.ai/ sglang --json",
        ),
    ),
    Command(
        "questions",
        "Query",
        "querying",
        "Print each source's unresolved engineering question.",
        "records",
        ("filters", "listing", "output"),
        (
            Opt(
                "records_dir",
                ("--records",),
                "Show which experiment records address each question (default folder: $INVMAP_RECORDS, else "
                "./experiments).",
                "DIR",
            ),
            Opt("open_only", ("--open",), "Only questions no valid record addresses yet.", kind="flag", default=False),
        ),
        examples=(
            "invmap questions --layer L5",
            "invmap questions --records experiments --open",
            "invmap questions --format jsonl | jq -r .question",
        ),
    ),
    Command(
        "search",
        "Query",
        "querying",
        "Search every text field, best match first, and say why each matched.",
        "records",
        ("filters", "output"),
        (
            Opt(
                "within",
                ("--in",),
                "Search only this field (any text field, or 'all'); repeat or use commas. Default: every text field "
                "but type.",
                "FIELD",
                complete="search_in",
                multiple=True,
            ),
            Opt("limit", ("--limit", "-n"), "At most N results (at least 1).", "N", kind="count", default=10),
            Opt(
                "min_score",
                ("--min-score",),
                "Drop results scoring below SCORE (0 to 100; every result matches at least one word).",
                "SCORE",
                kind="float",
                default=0.0,
            ),
            Opt(
                "exact",
                ("--exact",),
                "Whole words as typed: no stemming, no typo correction, no glossary (like rg -w).",
                kind="flag",
                default=False,
            ),
        ),
        (
            Arg(
                "text",
                "TEXT...",
                'Words to look for, in any order and case. "a phrase" (quote marks included) must occur as is; '
                "-word excludes (after --); field:word looks in one field.",
                multiple=True,
            ),
        ),
        (
            "invmap search speculative decoding",
            "invmap search ttft                      # the glossary: also 'time to first token'",
            "invmap search '\"prefix caching\"'        # a phrase, quote marks and all",
            "invmap search --json -- kv cache -survey  # -word excludes; -- ends the options",
            "invmap search question:eviction         # one word in one field",
            "invmap search batching --exact          # no stemming, correction or glossary",
        ),
    ),
    Command(
        "define",
        "Query",
        "querying",
        "Explain a term of the glossary (TTFT, goodput, ...), or list them all.",
        "terms",
        ("output_no_fields",),
        arguments=(
            Arg(
                "terms",
                "TERM...",
                "A term, its expansion or an alias, any case.",
                multiple=True,
                required=False,
                complete="term",
            ),
        ),
        examples=("invmap define", "invmap define ttft", "invmap define 'time per output token' --json"),
    ),
    Command(
        "fields",
        "Query",
        "querying",
        "List the field names that --fields accepts.",
        examples=("invmap fields", "invmap list --fields id,name,url"),
    ),
    # --- overview
    Command(
        "layers",
        "Overview",
        "views",
        "Show the six levels and the sources in each; one level in full.",
        "levels",
        ("level_filters", "output_no_fields"),
        arguments=(
            Arg(
                "code",
                "CODE",
                "One level (L1..L6, RL, P0, or a digit 1-6): its question, metrics, symptoms and sources.",
                required=False,
                complete="level",
            ),
        ),
        examples=("invmap layers", "invmap layers L3", "invmap layers --json | jq -r '.[] | \"\\(.code) \\(.title)\"'"),
    ),
    Command(
        "stats",
        "Overview",
        "views",
        "Count sources by type, year and level.",
        "counts",
        ("filters", "output_no_fields"),
        examples=("invmap stats", "invmap stats --layer L5 --json"),
    ),
    Command(
        "map",
        "Overview",
        "views",
        "Show the map: each level's sources by year.",
        "grid",
        ("filters", "output_no_fields"),
        examples=("invmap map", "invmap map --layer L3", "invmap map --json"),
    ),
    Command(
        "related",
        "Overview",
        "views",
        "List the sources nearest to one source.",
        "records",
        ("output",),
        (Opt("limit", ("--limit", "-n"), "At most N results (at least 1).", "N", kind="count", default=5),),
        (NAME,),
        ("invmap related PagedAttention", "invmap related mooncake --limit 3 --json"),
    ),
    Command(
        "guide",
        "Overview",
        "views",
        "Print the map's study procedure and notes.",
        "document",
        ("output_no_fields",),
        examples=("invmap guide", "invmap guide --format markdown > procedure.md"),
    ),
    Command(
        "open",
        "Overview",
        "views",
        "Open a source's link or code in a browser.",
        "",
        (),
        (
            Opt(
                "code",
                ("--code",),
                "The public source repository instead of the paper or page.",
                kind="flag",
                default=False,
            ),
            Opt("print_only", ("--print",), "Print the link instead of opening it.", kind="flag", default=False),
        ),
        (Arg("names", "NAME...", NAME_HELP, multiple=True, complete="source_or_code"),),
        ("invmap open mooncake", "invmap open vllm --code", "invmap open gqa --print"),
    ),
    # --- authoring
    Command(
        "where",
        "Authoring",
        "authoring",
        "Print which catalog is active, and why.",
        options=(Opt("json_flag", ("--json",), "Also the state of its index, as JSON.", kind="flag", default=False),),
        examples=("invmap where", "invmap where --json | jq .index"),
    ),
    Command(
        "check",
        "Authoring",
        "authoring",
        "Validate the catalog and list every problem; --links checks its links.",
        "",
        (),
        (
            JSON_ONLY,
            Opt(
                "links",
                ("--links",),
                "Check that every url and code link (or those of ID...) answers.",
                kind="flag",
                default=False,
            ),
            Opt(
                "all_links", ("--all",), "With --links: list the links that are alive too.", kind="flag", default=False
            ),
            Opt(
                "update_redirects",
                ("--update-redirects",),
                "With --links: rewrite permanently redirected url and code values in your catalog.",
                kind="flag",
                default=False,
            ),
            Opt(
                "max_age",
                ("--max-age",),
                "With --links: reuse results younger than this (30m, 24h, 7d; 0 checks again).",
                "AGE",
                default="24h",
            ),
            Opt(
                "per_host", ("--per-host",), "With --links: requests at once to one host.", "N", kind="count", default=2
            ),
            Opt(
                "timeout",
                ("--timeout",),
                "With --links: seconds to wait for one answer.",
                "SECONDS",
                kind="float",
                default=10.0,
            ),
        ),
        (Arg("ids", "ID...", "With --links: only these sources.", multiple=True, required=False, complete="source"),),
        (
            "invmap check",
            "invmap --catalog my-map.toml check --json",
            "invmap check --links",
            "invmap check --links vllm --json",
        ),
    ),
    Command(
        "init",
        "Authoring",
        "authoring",
        "Start a catalog of your own.",
        "",
        (),
        (
            FORCE,
            Opt(
                "overlay",
                ("--overlay",),
                "Start an overlay of the shipped map: your additions and changes only; the rest follows "
                "the installed invmap.",
                kind="flag",
                default=False,
            ),
        ),
        (Arg("path", "PATH", "Where to write the new catalog."),),
        ("invmap init my-map.toml", "invmap init --overlay my-map.toml", "export INVMAP_CATALOG=$PWD/my-map.toml"),
    ),
    Command(
        "add",
        "Authoring",
        "authoring",
        "Add a source to your catalog.",
        "",
        (),
        (
            *_field_options("add"),
            Opt(
                "from_id",
                ("--from",),
                "Fill title, authors, year, venue, arXiv id and DOI (and a name and Source text, unless given) "
                "from arXiv or Crossref: an arXiv id or a DOI in any form.",
                "ID",
            ),
            NEW_TYPE,
            Opt(
                "json_flag",
                ("--json",),
                "Print the added source as JSON (the JSON contract).",
                kind="flag",
                default=False,
            ),
        ),
        examples=(
            'invmap -c my-map.toml add --from 2407.00079 --type Current --layer "L3 and L5" \\',
            '    --mechanism "..." --objective "..." --question "..." --availability "Primary paper."',
            'invmap -c my-map.toml add --name TestServe --source "TestServe, Doe et al." --type Current \\',
            '    --year 2025 --layer "L2 and L5" --mechanism "..." --objective "..." --question "..." \\',
            '    --availability "Primary paper." --arxiv 2501.00001 --keyword "chunked prefill"',
        ),
    ),
    Command(
        "edit",
        "Authoring",
        "authoring",
        "Change fields of a source in your catalog.",
        "",
        (),
        (
            *_field_options("edit"),
            Opt(
                "unset",
                ("--unset",),
                "Remove an optional field. Repeat or use commas for several.",
                "FIELD",
                multiple=True,
                complete="optional_field",
            ),
            NEW_TYPE,
            Opt(
                "json_flag",
                ("--json",),
                "Print the edited source as JSON (the JSON contract).",
                kind="flag",
                default=False,
            ),
        ),
        (Arg("target", "ID", "The id (or any name 'show' takes) of the source to change.", complete="source"),),
        (
            'invmap -c my-map.toml edit vllm --seam "the scheduler and the KV-cache manager"',
            "invmap -c my-map.toml edit gqa --keyword GQA --keyword MQA --unset venue",
        ),
    ),
    Command(
        "rm",
        "Authoring",
        "authoring",
        "Remove sources from your catalog.",
        "",
        (),
        (),
        (Arg("targets", "ID...", "The ids (or names) of the sources to remove.", multiple=True, complete="source"),),
        ("invmap -c my-map.toml rm testserve", "invmap -c overlay.toml rm kiely-guide  # hides a shipped source"),
    ),
    Command(
        "fmt",
        "Authoring",
        "authoring",
        "Rewrite the catalog in canonical form.",
        "",
        (),
        (
            Opt(
                "check_only",
                ("--check",),
                "Change nothing; exit 1 if the file is not canonical.",
                kind="flag",
                default=False,
            ),
        ),
        examples=("invmap -c my-map.toml fmt", "invmap -c my-map.toml fmt --check"),
    ),
    Command(
        "export",
        "Authoring",
        "authoring",
        "Export as Markdown, CSV, JSON, BibTeX or TOML.",
        "catalog",
        ("filters",),
        (
            Opt("fmt", ("--format", "-f"), "FORMATS.", "FORMAT", complete="format", default="markdown"),
            OUTPUT_PATH,
            FORCE,
            Opt(
                "links",
                ("--links",),
                "Markdown: Source cells as links, availability linked to code.",
                kind="flag",
                default=False,
            ),
            Opt(
                "excel_safe",
                ("--excel-safe",),
                "csv/tsv: prefix ' to cells a spreadsheet would run as a formula.",
                kind="flag",
                default=False,
            ),
        ),
        examples=(
            "invmap export --format bibtex -o map.bib",
            "invmap export --format markdown --links",
            "invmap export --format csv --excel-safe -o map.csv",
        ),
    ),
    Command(
        "import",
        "Authoring",
        "authoring",
        "Turn a Markdown table into a catalog.",
        "",
        (),
        (OUTPUT_PATH, FORCE),
        (Arg("file", "FILE", "A Markdown file with the seed's table ('-' reads stdin)."),),
        ("invmap import research-map.md -o my-map.toml", "invmap export | invmap import -"),
    ),
    Command(
        "refresh",
        "Authoring",
        "authoring",
        "Compare titles, authors, venues and DOIs with arXiv and Crossref.",
        "diff",
        ("output_no_fields",),
        (Opt("write", ("--write",), "Apply the differences to your catalog.", kind="flag", default=False),),
        (
            Arg(
                "ids",
                "ID...",
                "Only these sources (default: every source with an arXiv id or DOI).",
                multiple=True,
                required=False,
                complete="source",
            ),
        ),
        ("invmap refresh", "invmap refresh mooncake --json", "invmap -c my-map.toml refresh --write"),
        network=True,
    ),
    Command(
        "diff",
        "Authoring",
        "authoring",
        "Show what changed between two catalogs or Markdown maps.",
        "diff",
        ("output_no_fields",),
        (),
        (
            Arg(
                "old",
                "A",
                "A catalog (.toml), a Markdown map (.md), 'shipped' or '-' (stdin).",
                complete="catalog_file",
            ),
            Arg(
                "new",
                "B",
                "A catalog (.toml), a Markdown map (.md), 'shipped' or '-' (stdin).",
                complete="catalog_file",
            ),
        ),
        ("invmap diff shipped my-map.toml", "invmap diff old.md new.md --json"),
    ),
    # --- records
    Command(
        "record",
        "Records",
        "records",
        "Draft and check experiment records.",
        examples=(
            "invmap record new pagedattention -o experiments/paged-kv.json",
            "invmap record check experiments/*.json",
        ),
    ),
    Command(
        "new",
        "Records",
        "records",
        "Draft a record citing one source and carrying its open question.",
        "",
        (),
        (
            Opt("output_path", ("--output", "-o"), "Write to FILE instead of stdout.", "FILE"),
            Opt(
                "result_type",
                ("--result-type",),
                "measured, simulated, estimated or reported.",
                "TYPE",
                complete="result_type",
                default="measured",
            ),
            Opt("record_id", ("--id",), "The record_id. Default: SOURCE-ID-YYYY-MM-DD.", "ID"),
            Opt("force", ("--force",), "Overwrite FILE if it exists.", kind="flag", default=False),
        ),
        (NAME,),
        (
            "invmap record new pagedattention -o experiments/paged-kv.json",
            "invmap record new mooncake --result-type simulated",
        ),
        "record",
    ),
    Command(
        "check",
        "Records",
        "records",
        "Validate experiment records; every problem with its JSON path.",
        "",
        (),
        (JSON_ONLY,),
        (Arg("files", "FILE...", "Record files ('-' reads stdin).", multiple=True),),
        ("invmap record check experiments/*.json", "invmap record check - < draft.json --json"),
        "record",
    ),
    Command(
        "records",
        "Records",
        "records",
        "List experiment records and the sources they address.",
        "records",
        ("output_no_fields",),
        arguments=(Arg("folder", "DIR", "Default: $INVMAP_RECORDS, else ./experiments.", required=False),),
        examples=("invmap records", "invmap records experiments --json | jq '.[].addresses'"),
    ),
)

# The fields beyond a source's that a command's records carry (and its --fields accepts).
EXTRA_FIELDS: dict[str, tuple[str, ...]] = {
    "search": ("score", "matched", "why"),
    "related": ("score",),
    "questions": ("records", "invalid_records"),
}


def fields_for(path: str) -> tuple[str, ...]:
    """The names `--fields` accepts for a command: every source field, then its extras."""
    from invmap.fields import SOURCE_FIELDS

    return (*SOURCE_FIELDS, *EXTRA_FIELDS.get(path, ()))


TOP: dict[str, Command] = {c.name: c for c in COMMANDS if c.parent is None}
SUB: dict[str, dict[str, Command]] = {}
for _c in COMMANDS:
    if _c.parent is not None:
        SUB.setdefault(_c.parent, {})[_c.name] = _c
GROUPS: tuple[str, ...] = ("Query", "Overview", "Authoring", "Records")


def options_of(command: Command) -> tuple[Opt, ...]:
    """Every option of a command: its bundles' (in order), then its own."""
    out = [o for bundle in command.bundles for o in BUNDLES[bundle]]
    own = {o.dest for o in command.options}
    return tuple([o for o in out if o.dest not in own] + list(command.options))


def find(path: str) -> Command | None:
    """`list` or `record new` -> its declaration."""
    parent, _, name = path.rpartition(" ")
    return SUB.get(parent, {}).get(name) if parent else TOP.get(name)
