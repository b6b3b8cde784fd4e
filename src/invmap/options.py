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

from invmap import quantities
from invmap.fields import FIELDS, LIST_SEPARATOR, SORT_KEYS
from invmap.filters import FILTERS, Opt
from invmap.quantities import Quantity
from invmap.simulate.knobs import ALLOCATIONS, STRATEGIES, TICK_MS, Knob
from invmap.simulate.knobs import BATCHING as BATCHING_KNOBS
from invmap.simulate.knobs import KV as KV_KNOBS


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

    @classmethod
    def optional(cls, dest: str, metavar: str, help: str, **more: object) -> Arg:
        """A positional argument that may be left out."""
        return cls(dest, metavar, help, required=False, **more)


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
            "requires",
        ),
        defaults=("", (), (), (), (), None, False, ()),
    )
):
    """A command: its `name`, help `group` and `summary`, the CLI `module` that implements it, the
    `view` it prints (`formats.py`; "" for none), the option `bundles` it takes, its own `options` and
    `arguments`, help `examples`, the `parent` group of a subcommand (`record new`), whether it
    asks a network service (`network`: tests give it a local stand-in), and what it `requires`
    (`quantities.Needs`: one of some options when another is given, or always; the command refuses
    the rest with its message, and tests give each command what it always needs)."""

    __slots__ = ()

    def __new__(cls, **fields: object) -> Command:  # by keyword only: twelve fields are too many to place
        return super().__new__(cls, **fields)

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
# Writers never guess: `edit` and `rm` take a source's exact id, or an identifier it holds.
EXACT_HELP = "The exact id, arXiv id, DOI or link of the {what} (a near miss is an error naming the closest)."
NAMES = Arg("names", "NAME...", NAME_HELP, multiple=True, complete="source")
NAME = Arg("name", "NAME", NAME_HELP, complete="source")
OUTPUT_PATH = Opt("output_path", ("--output", "-o"), "Write to PATH ('-' is stdout) instead of stdout.", "PATH")
FORCE = Opt("force", ("--force",), "Overwrite PATH if it exists.", kind="flag", default=False)


def _option_help(f, command: str) -> str:
    """A field's `add`/`edit` option help: its meaning as a sentence, then an example in quotes."""
    meaning = f.help.replace(", or null", "").replace(" or null", "")
    if f.kind.many:
        singular = f.flag.removeprefix("--").replace("-", " ")
        meaning = f"one {singular}, of {meaning}; repeat the option for each" + (
            f" (added to the list: see {f.remove_flag} and {f.set_flag})"
            if command == "edit" and f.kind.name == "list"
            else " (the items given replace the list)"
            if command == "edit"
            else ""
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
    """`add`'s and `edit`'s options, one per stored field (a list's is singular and repeatable); `edit`
    has two more for each list field, declared here once for every list field: `--remove-X` (one item,
    repeatable) and `--set-Xs "a;b"` (the whole list)."""
    out = []
    for f in FIELDS:
        if not f.stored:
            continue
        out.append(
            Opt(
                f.name,
                (f.flag,),
                _option_help(f, command),
                f.kind.metavar,
                multiple=f.kind.many,
                complete="type" if f.name == "type" else f.name if f.kind.name == "choice" else None,
            )
        )
        if f.kind.name == "list" and command == "edit":  # a list of small tables is given whole
            singular = f.flag.removeprefix("--").replace("-", " ")
            out.append(
                Opt(
                    REMOVE_PREFIX + f.name,
                    (f.remove_flag,),
                    f"Remove one {singular} from the list; repeat the option for each.",
                    f.kind.metavar,
                    multiple=True,
                )
            )
            out.append(
                Opt(
                    SET_PREFIX + f.name,
                    (f.set_flag,),
                    f"Replace the whole list with these, separated by '{LIST_SEPARATOR}' (\"\" empties it).",
                    f"A{LIST_SEPARATOR}B",
                )
            )
    return tuple(out)


# The `dest` of a list field's `edit --remove-X` and `--set-Xs` options: the prefix, then the field's name.
REMOVE_PREFIX, SET_PREFIX = "remove_", "set_"


NEW_TYPE = Opt("new_type", ("--new-type",), "Allow a --type the catalog does not use yet.", kind="flag", default=False)

# --- estimates: the field guide's `ie memory kv|model` and `ie roofline`, from a model and a GPU ----
# Every input of an estimate is declared once, in the core's ground floor (`quantities.py`): its
# options, help, kind and default; the options here are made from those declarations.


# vLLM's names for an estimate's inputs (vllm/engine/arg_utils.py: `--tensor-parallel-size`/`-tp`,
# `--max-model-len`, `--max-num-seqs`), which a user coming from the engine types: an unknown option
# of these names suggests invmap's.
# A name an input already takes as a flag (`--tensor-parallel-size`) is read as it, never suggested.
ENGINE_WORDS: dict[str, tuple[str, ...]] = {
    "tensor_parallel": ("tp", "tensor-parallel-size"),
    "tokens": ("max-model-len",),
    "tokens_per_request": ("max-model-len",),
    "concurrency": ("max-num-seqs",),
}


def input_option(q: Quantity) -> Opt:
    """The option giving an estimate's input: its flags, help (with its default), metavar; numbers
    are read as numbers, sizes and names as text; a choice or a name completes from the core's tables."""
    kind = {"int": "int", "float": "float"}.get(q.kind, "text")
    complete = q.name if q.kind == "name" else quantities.choice_completion(q) if q.kind == "choice" else None
    return Opt(
        q.name,
        q.flags,
        q.help_text,
        q.metavar,
        kind=kind,
        complete=complete,
        example=q.example,
        aliases=tuple(w for w in ENGINE_WORDS.get(q.name, ()) if f"--{w}" not in q.flags and f"-{w}" not in q.flags),
    )


MODEL_OPT = input_option(quantities.MODEL)
GPU_OPT = input_option(quantities.GPU)
EFFICIENCY_OPT = input_option(quantities.INPUTS["efficiency"])
RECORD_OPTS: tuple[Opt, ...] = (
    Opt(
        "record",
        ("--record",),
        "Also write an experiment record (estimated) addressing this source's question; needs -o.",
        "SOURCE",
        complete="source",
    ),
    Opt("output_path", ("--output", "-o"), "With --record: the record's file.", "FILE"),
    Opt("force", ("--force",), "With --record: overwrite FILE if it exists.", kind="flag", default=False),
)
ESTIMATE_VIEW = "estimate"


def _estimate(name: str, summary: str, examples: tuple[str, ...]) -> Command:
    """A subcommand of `estimate`: its declared inputs as options (then --record), printed as the
    estimate view; what it always needs (`requires`) is its declared needs that no option sets off."""
    return Command(
        name=name,
        group="Recreate",
        module="estimates",
        summary=summary,
        view=ESTIMATE_VIEW,
        bundles=("output_no_fields",),
        options=(*(input_option(q) for q in quantities.inputs_of(name)), *RECORD_OPTS),
        arguments=(),
        examples=examples,
        parent="estimate",
        requires=quantities.NEEDS[name],
    )


# --- simulations: the field guide's `ie simulate batching` and `ie simulate kv`, on its traces or the user's ---

SIMULATION_VIEW = "simulation"


def _knob(k: Knob) -> Opt:
    """A number of a simulation, named after the field guide's config field, with its default and bounds."""
    return Opt(k.name, (k.flag,), f"{k.help}. Default: {k.default:,}; {k.low:,} to {k.high:,}.", "N", kind="int")


def _trace(forms: str) -> Opt:
    return Opt(
        "trace",
        ("--trace",),
        f"The workload instead of the field guide's built-in trace: {forms} ('-' reads stdin; told apart by content).",
        "FILE",
    )


SIM_EVENTS = Opt(
    "events",
    ("--events",),
    "Also print each request's ticks (batching) or each allocator event (kv).",
    kind="flag",
    default=False,
)
SIM_RECORD: tuple[Opt, ...] = (
    Opt(
        "record",
        ("--record",),
        "Also write an experiment record (simulated) addressing this source's question; needs -o.",
        "SOURCE",
        complete="source",
    ),
    Opt("output_path", ("--output", "-o"), "With --record: the record's file.", "FILE"),
    Opt("force", ("--force",), "With --record: overwrite FILE if it exists.", kind="flag", default=False),
)


def _simulation(name: str, summary: str, options: tuple[Opt, ...], forms: str, examples: tuple[str, ...]) -> Command:
    """A subcommand of `simulate`: its options, printed as the simulation view."""
    return Command(
        name=name,
        group="Recreate",
        module="simulate",
        summary=summary,
        view=SIMULATION_VIEW,
        bundles=("output_no_fields",),
        options=(*options, _trace(forms), SIM_EVENTS, *SIM_RECORD),
        examples=examples,
        parent="simulate",
    )


# With --model and --gpu a tick is an engine step in milliseconds: the model, the GPU, the engine's budget
# (vLLM's option names) and the roofs' derating, each the estimates' own declaration.
ENGINE_OPTS: tuple[Opt, ...] = (
    MODEL_OPT,
    GPU_OPT,
    *(input_option(q) for q in quantities.ENGINE_BUDGET),
    *(input_option(q) for q in quantities.inputs_of("roofline") if q.name in quantities.ENGINE_ROOFS),
)


SIMULATIONS: tuple[Command, ...] = (
    Command(
        name="simulate",
        group="Recreate",
        module="simulate",
        summary="Recreate: batching strategies and KV allocation, as the field guide's simulators (simulated).",
        examples=(
            "invmap simulate batching",
            "invmap simulate kv --allocation paged",
            "invmap simulate batching --trace splitwise_conv.csv --capacity-units-per-tick 512",
        ),
    ),
    _simulation(
        "batching",
        "Static, continuous and chunked batching side by side, in ticks (in milliseconds with --model and --gpu).",
        (
            Opt(
                "strategy",
                ("--strategy",),
                f"{', '.join(STRATEGIES[:-1])} or {STRATEGIES[-1]}; repeat or use commas for several. Default: all three.",
                "STRATEGY",
                complete="strategy",
                multiple=True,
            ),
            *(_knob(k) for k in BATCHING_KNOBS),
            Opt(
                "tick_ms",
                ("--tick-ms",),
                f"{TICK_MS.help}. Default: {TICK_MS.default:g} (invmap's assumption); {TICK_MS.low:g} to {TICK_MS.high:,}.",
                "MS",
                kind="float",
            ),
            *ENGINE_OPTS,
        ),
        "the field guide's requests JSON, Vidur's CSV trace or LLMServingSim's JSON lines",
        (
            "invmap simulate batching",
            "invmap simulate batching --strategy chunked --events",
            "invmap simulate batching --trace requests.jsonl --max-ticks 1000000 --json | jq '.results[].aggregate'",
            "invmap simulate batching --strategy continuous --record orca -o experiments/orca-ticks.json",
            "invmap simulate batching --model llama-3.1-8b --gpu h100-sxm --strategy chunked --efficiency 0.6",
        ),
    ),
    _simulation(
        "kv",
        "Paged and contiguous KV block allocation side by side.",
        (
            Opt(
                "allocation",
                ("--allocation",),
                f"{' or '.join(ALLOCATIONS)}; repeat or use commas for both. Default: both.",
                "MODE",
                complete="allocation",
                multiple=True,
            ),
            *(_knob(k) for k in KV_KNOBS),
            Opt(
                "no_auto_evict",
                ("--no-auto-evict",),
                "Refuse an allocation that does not fit instead of evicting the least recently touched.",
                kind="flag",
                default=False,
            ),
        ),
        "the field guide's KV events JSON",
        (
            "invmap simulate kv",
            "invmap simulate kv --allocation contiguous --events",
            "invmap simulate kv --trace kv-paged.json --total-blocks 16 --json | jq .results.paged.final_state",
            "invmap simulate kv --allocation paged --record pagedattention -o experiments/paged-blocks.json",
        ),
    ),
)


COMMANDS: tuple[Command, ...] = (
    # --- query
    Command(
        name="triage",
        group="Triage and search",
        module="querying",
        summary="From a measured symptom, an engine's metrics or a benchmark's results to the level, its sources and "
        "their open questions.",
        view="triage",
        bundles=("filters", "output_no_fields"),
        options=(
            Opt("limit", ("--limit", "-n"), "At most N levels (at least 1).", "N", kind="count", default=3),
            Opt("every", ("--all",), "Every level, with its score (none left out).", kind="flag", default=False),
            Opt(
                "verbose",
                ("--verbose",),
                "With --metrics or --bench: every rule that could not run and what it lacks (else the first "
                "few families).",
                kind="flag",
                default=False,
            ),
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
                "A benchmark's results: vllm bench serve or SGLang bench_serving (JSON, or the printed summary, "
                "with the command pasted above it), vllm bench throughput (its Throughput line), GenAI-Perf (JSON or "
                "CSV export), GuideLLM (JSON report). Give it twice (before, after) to compare two runs.",
                "FILE",
                multiple=True,
            ),
            MODEL_OPT._replace(
                help="With --metrics or --bench: the model served (a config.json, its folder, or a shipped name), "
                "for the decode bandwidth bound; give --gpu too."
            ),
            GPU_OPT._replace(help="With --model: the GPU serving it (invmap gpus), for its memory bandwidth."),
            Opt(
                "bandwidth",
                ("--bandwidth",),
                "With --model: the GPU's memory bandwidth in bytes per second (3.35e12), instead of --gpu's.",
                "B/S",
                kind="float",
            ),
            EFFICIENCY_OPT._replace(
                help="With --model: the fraction of the bandwidth a decode step reaches, in (0, 1]. Default: 1."
            ),
        ),
        arguments=(
            Arg(
                "symptom",
                "SYMPTOM...",
                "What you measured or saw, in words (quoted or not; quotes, - and : are just text); optional with "
                "--metrics or --bench.",
                multiple=True,
                unless=("metrics", "bench"),
            ),
        ),
        examples=(
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
        name="list",
        group="Triage and search",
        module="querying",
        summary="List sources, filtered by layer, type and year.",
        view="records",
        bundles=("filters", "listing", "output"),
        examples=(
            "invmap list --layer L3",
            "invmap list --layer disaggregation --type current",
            "invmap list --has-code --year 2023..2025 --json | jq -r '.[].id'",
        ),
    ),
    Command(
        name="show",
        group="Read",
        module="querying",
        summary="Show every field of one or more sources.",
        view="source",
        bundles=("output",),
        arguments=(NAMES,),
        examples=(
            "invmap show PagedAttention",
            "invmap show 2407.00079",
            "invmap show https://docs.vllm.ai/ sglang --json",
        ),
    ),
    Command(
        name="questions",
        group="Read",
        module="querying",
        summary="Print each source's unresolved engineering question.",
        view="records",
        bundles=("filters", "listing", "output"),
        options=(
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
        name="search",
        group="Triage and search",
        module="querying",
        summary="Search every text field, best match first, and say why each matched.",
        view="records",
        bundles=("filters", "output"),
        options=(
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
        arguments=(
            Arg(
                "text",
                "TEXT...",
                'Words to look for, in any order and case. "a phrase" (quote marks included) must occur as is; '
                "-word excludes (after --); field:word looks in one field.",
                multiple=True,
            ),
        ),
        examples=(
            "invmap search speculative decoding",
            "invmap search ttft                      # the glossary: also 'time to first token'",
            "invmap search '\"prefix caching\"'        # a phrase, quote marks and all",
            "invmap search --json -- kv cache -survey  # -word excludes; -- ends the options",
            "invmap search question:eviction         # one word in one field",
            "invmap search batching --exact          # no stemming, correction or glossary",
        ),
    ),
    Command(
        name="define",
        group="Read",
        module="querying",
        summary="Explain a term of the glossary (TTFT, goodput, ...), or list them all.",
        view="terms",
        bundles=("output_no_fields",),
        arguments=(
            Arg.optional(
                "terms",
                "TERM...",
                "A term, its expansion or an alias, any case.",
                multiple=True,
                complete="term",
            ),
        ),
        examples=("invmap define", "invmap define ttft", "invmap define 'time per output token' --json"),
    ),
    Command(
        name="reports",
        group="Triage and search",
        module="querying",
        summary="List the real symptom reports shipped with the map (or your catalog's), by level, engine or source.",
        view="records",
        bundles=("output_no_fields",),
        options=(
            Opt(
                "layer",
                ("--layer", "-l"),
                "Only reports whose level is this code, L1..L6 or RL: those whose primary level it is first, "
                "then those whose secondary level it is. Repeat or use commas to OR.",
                "CODE",
                complete="triage_level",
                multiple=True,
                aliases=("--level",),
            ),
            Opt(
                "engine",
                ("--engine", "-e"),
                "Only reports from this engine (vllm, sglang, llama.cpp, ...).",
                "ENGINE",
                complete="engine",
                multiple=True,
            ),
            Opt(
                "source",
                ("--source",),
                "Only reports that this map source addresses (an id).",
                "ID",
                complete="source",
                multiple=True,
            ),
        ),
        examples=(
            "invmap reports --layer L3",
            "invmap reports --engine sglang --json | jq -r '.[].url'",
            "invmap reports --source pagedattention",
        ),
    ),
    Command(
        name="settings",
        group="Code and settings",
        module="querying",
        summary="List the engine flags that switch each source's mechanism on or tune it.",
        view="records",
        bundles=("output_no_fields",),
        options=(
            Opt(
                "engine",
                ("--engine", "-e"),
                "Only this engine's flags (vLLM, SGLang, TGI, ...), any case. Repeat or use commas to OR.",
                "ENGINE",
                complete="setting_engine",
                multiple=True,
            ),
        ),
        arguments=(
            Arg.optional(
                "names",
                "SOURCE...",
                "Only these sources (default: every source with settings). " + NAME_HELP,
                multiple=True,
                complete="source",
            ),
        ),
        examples=(
            "invmap settings pagedattention",
            "invmap settings --engine sglang",
            "invmap settings sarathi-serve --engine vllm --json | jq -r '.[].flag'",
        ),
    ),
    Command(
        name="fields",
        group="Read",
        module="querying",
        summary="List the field names that --fields accepts (JSON: name, header, kind, help, stored, sortable, searchable).",
        view="fields",
        options=(FORMAT, JSON),
        examples=("invmap fields", "invmap fields --json | jq -r '.[].name'", "invmap list --fields id,name,url"),
    ),
    # --- overview
    Command(
        name="layers",
        group="Read",
        module="views",
        summary="Show the six levels and the sources in each; one level in full.",
        view="levels",
        bundles=("level_filters", "output_no_fields"),
        arguments=(
            Arg.optional(
                "code",
                "CODE",
                "One level (L1..L6, RL, P0, or a digit 1-6): its question, metrics, symptoms and sources.",
                complete="level",
            ),
        ),
        examples=("invmap layers", "invmap layers L3", "invmap layers --json | jq -r '.[] | \"\\(.code) \\(.title)\"'"),
    ),
    Command(
        name="stats",
        group="Read",
        module="views",
        summary="Count sources by type, year and level.",
        view="counts",
        bundles=("filters", "output_no_fields"),
        examples=("invmap stats", "invmap stats --layer L5 --json"),
    ),
    Command(
        name="map",
        group="Read",
        module="views",
        summary="Show the map: each level's sources by year.",
        view="grid",
        bundles=("filters", "output_no_fields"),
        examples=("invmap map", "invmap map --layer L3", "invmap map --json"),
    ),
    Command(
        name="related",
        group="Read",
        module="views",
        summary="List the sources nearest to one source.",
        view="records",
        bundles=("output",),
        options=(Opt("limit", ("--limit", "-n"), "At most N results (at least 1).", "N", kind="count", default=5),),
        arguments=(NAME,),
        examples=("invmap related PagedAttention", "invmap related mooncake --limit 3 --json"),
    ),
    Command(
        name="guide",
        group="Read",
        module="views",
        summary="Print the map's study procedure and notes.",
        view="document",
        bundles=("output_no_fields",),
        examples=("invmap guide", "invmap guide --format markdown > procedure.md"),
    ),
    Command(
        name="open",
        group="Code and settings",
        module="views",
        summary="Open a source's link or code in a browser.",
        view="",
        bundles=(),
        options=(
            Opt(
                "code",
                ("--code",),
                "The public source repository instead of the paper or page.",
                kind="flag",
                default=False,
            ),
            Opt(
                "place",
                ("--place",),
                "With --code: the Nth place in the code (as show numbers them under Where to look), at its "
                "pinned commit.",
                "N",
                kind="count",
            ),
            Opt("print_only", ("--print",), "Print the link instead of opening it.", kind="flag", default=False),
        ),
        arguments=(Arg("names", "NAME...", NAME_HELP, multiple=True, complete="source_or_code"),),
        examples=(
            "invmap open mooncake",
            "invmap open vllm --code",
            "invmap open --code lmcache --place 1 --print",
            "invmap open gqa --print",
        ),
    ),
    Command(
        name="mcp",
        group="Triage and search",
        module="mcp",
        summary="Serve the map's queries to a coding agent: a Model Context Protocol server on stdio.",
        view="",
        examples=(
            "invmap mcp  # an agent's client starts it",
            "invmap --catalog my-map.toml mcp",
        ),
    ),
    # --- authoring
    Command(
        name="where",
        group="Your catalog",
        module="checking",
        summary="Print which catalog is active, and why.",
        view="where",
        options=(
            FORMAT,
            Opt(
                "json_flag",
                ("--json",),
                "Same as --format json: also the state of its index.",
                kind="flag",
                default=False,
            ),
        ),
        examples=("invmap where", "invmap where --json | jq .index"),
    ),
    Command(
        name="check",
        group="Your catalog",
        module="checking",
        summary="Validate the catalog and list every problem; --links checks its links.",
        view="check",
        bundles=(),
        options=(
            FORMAT,
            JSON,
            Opt(
                "links",
                ("--links",),
                "Check that every url and code link (or those of ID...) answers.",
                kind="flag",
                default=False,
            ),
            Opt(
                "all_links",
                ("--all", "--alive"),
                "Every warning, not a screenful; with --links: every link, the alive ones too.",
                kind="flag",
                default=False,
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
        arguments=(
            Arg.optional(
                "ids",
                "PATH|ID...",
                "The catalog file to check (default: the active one); with --links: only these sources.",
                multiple=True,
                complete="source",
            ),
        ),
        examples=(
            "invmap check",
            "invmap check my-map.toml --json",
            "invmap check --links",
            "invmap check --links vllm --json",
        ),
    ),
    Command(
        name="init",
        group="Your catalog",
        module="editing",
        summary="Start a catalog of your own.",
        view="",
        bundles=(),
        options=(
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
        arguments=(Arg("path", "PATH", "Where to write the new catalog."),),
        examples=(
            "invmap init my-map.toml",
            "invmap init --overlay my-map.toml",
            "export INVMAP_CATALOG=$PWD/my-map.toml",
        ),
    ),
    Command(
        name="add",
        group="Your catalog",
        module="editing",
        summary="Add a source to your catalog.",
        view="written",
        bundles=(),
        options=(
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
                "allow_duplicate",
                ("--allow-duplicate",),
                "Add it although a source of the map has its arXiv id, DOI or link.",
                kind="flag",
                default=False,
            ),
            FORMAT,
            JSON,
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
        name="edit",
        group="Your catalog",
        module="editing",
        summary="Change fields of a source in your catalog.",
        view="written",
        bundles=(),
        options=(
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
            FORMAT,
            JSON,
        ),
        arguments=(Arg("target", "ID", EXACT_HELP.format(what="source to change"), complete="source_id"),),
        examples=(
            'invmap -c my-map.toml edit vllm --seam "the scheduler and the KV-cache manager"',
            "invmap -c my-map.toml edit gqa --keyword GQA --keyword MQA --unset venue",
        ),
    ),
    Command(
        name="rm",
        group="Your catalog",
        module="editing",
        summary="Remove sources from your catalog.",
        view="",
        bundles=(),
        options=(
            Opt(
                "yes",
                ("--yes",),
                "Remove without asking (rm asks on a terminal, and needs --yes elsewhere).",
                kind="flag",
                default=False,
            ),
            Opt(
                "drop_citations",
                ("--drop-citations",),
                "Also remove the sources from the sources of the catalog's reports that cite them (rm refuses "
                "otherwise, saying how many do).",
                kind="flag",
                default=False,
            ),
            Opt(
                "undo",
                ("--undo",),
                "Bring back base sources this overlay removes (the ids given).",
                kind="flag",
                default=False,
            ),
        ),
        arguments=(
            Arg("targets", "ID...", EXACT_HELP.format(what="sources to remove"), multiple=True, complete="source_id"),
        ),
        examples=(
            "invmap -c my-map.toml rm testserve --yes",
            "invmap -c overlay.toml rm kiely-guide  # hides a shipped source",
            "invmap -c overlay.toml rm --undo kiely-guide",
        ),
    ),
    Command(
        name="fmt",
        group="Your catalog",
        module="editing",
        summary="Rewrite the catalog in canonical form.",
        view="",
        bundles=(),
        options=(
            Opt(
                "check_only",
                ("--check",),
                "Change nothing; exit 1 if the file is not canonical.",
                kind="flag",
                default=False,
            ),
            Opt(
                "drop_comments",
                ("--drop-comments",),
                "Rewrite the file although its comments would be lost (fmt refuses otherwise).",
                kind="flag",
                default=False,
            ),
        ),
        arguments=(
            Arg.optional(
                "path",
                "PATH",
                "The catalog file to rewrite (default: the active one).",
                complete="catalog_file",
            ),
        ),
        examples=("invmap fmt my-map.toml", "invmap fmt --check my-map.toml"),
    ),
    Command(
        name="export",
        group="Your catalog",
        module="exchange",
        summary="Export as Markdown, CSV, JSON, BibTeX or TOML.",
        view="catalog",
        bundles=("filters",),
        options=(
            Opt(
                "fmt",
                ("--format", "-f"),
                "FORMATS. Default: the one -o PATH's extension means (.bib, .csv, .tsv, .json, .jsonl, .md, .toml), "
                "else markdown.",
                "FORMAT",
                complete="format",
            ),
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
            "invmap export -o map.bib                # the format from the extension",
            "invmap export --format markdown --links",
            "invmap export --format csv --excel-safe -o map.csv",
        ),
    ),
    Command(
        name="import",
        group="Your catalog",
        module="exchange",
        summary="Turn a Markdown table into a catalog.",
        view="",
        bundles=(),
        options=(OUTPUT_PATH, FORCE),
        arguments=(Arg("file", "FILE", "A Markdown file with the seed's table ('-' reads stdin)."),),
        examples=("invmap import research-map.md -o my-map.toml", "invmap export | invmap import -"),
    ),
    Command(
        name="refresh",
        group="Your catalog",
        module="exchange",
        summary="Compare titles, authors, venues and DOIs with arXiv and Crossref.",
        view="diff",
        bundles=("output_no_fields",),
        options=(Opt("write", ("--write",), "Apply the differences to your catalog.", kind="flag", default=False),),
        arguments=(
            Arg.optional(
                "ids",
                "ID...",
                "Only these sources (default: every source with an arXiv id or DOI).",
                multiple=True,
                complete="source",
            ),
        ),
        examples=("invmap refresh", "invmap refresh mooncake --json", "invmap -c my-map.toml refresh --write"),
        network=True,
    ),
    Command(
        name="diff",
        group="Your catalog",
        module="exchange",
        summary="Show what changed between two catalogs or Markdown maps.",
        view="diff",
        bundles=("output_no_fields",),
        options=(),
        arguments=(
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
        examples=("invmap diff shipped my-map.toml", "invmap diff old.md new.md --json"),
    ),
    # --- estimates
    Command(
        name="estimate",
        group="Recreate",
        module="estimates",
        summary="Recreate: KV, memory and roofline estimates (estimated).",
        examples=(
            "invmap estimate kv --model llama-3.1-8b --tokens 8192 --concurrency 16",
            "invmap estimate memory --model qwen3-8b --memory 80GB --tokens-per-request 8192",
            "invmap estimate roofline --scenario decode --model llama-3.1-8b --batch-size 8",
            "invmap estimate fit --model llama-3-70b-instruct --gpu h100-sxm --concurrency 32 --max-model-len 8k",
        ),
    ),
    _estimate(
        "kv",
        "KV bytes per token, per sequence and in total.",
        (
            "invmap estimate kv",
            "invmap estimate kv --model opt-13b --tokens 2048 --concurrency 1",
            "invmap estimate kv --model ./Llama-3.1-8B/config.json --kv-cache-dtype fp8 --tensor-parallel 2",
            "invmap estimate kv --model deepseek-v3 --record pagedattention -o experiments/kv.json",
        ),
    ),
    _estimate(
        "memory",
        "Weights, activations and the KV pool left on a GPU.",
        (
            "invmap estimate memory",
            "invmap estimate memory --model llama-3.1-8b --gpu h100-sxm --tokens-per-request 8192",
            "invmap estimate memory --model llama-3-70b-instruct --gpu h100-sxm --json | jq .verdict",
            "invmap estimate memory --engine vllm --model llama-3.1-8b --gpu h100-sxm --max-model-len 32k",
        ),
    ),
    Command(
        name="fit",
        group="Recreate",
        module="estimates",
        summary="The smallest tensor-parallel size that holds C requests of T tokens.",
        view="sweep",
        bundles=("output_no_fields",),
        options=tuple(input_option(q) for q in quantities.inputs_of("fit")),
        arguments=(),
        examples=(
            "invmap estimate fit --model llama-3-70b-instruct --gpu h100-sxm --concurrency 32 --max-model-len 8k",
            "invmap estimate fit --model qwen2.5-7b-instruct --memory 79.15GiB --concurrency 64 --json | jq .answer",
        ),
        parent="estimate",
        requires=quantities.NEEDS["fit"],
    ),
    _estimate(
        "roofline",
        "Intensity, ridge point and the lower roof of a phase.",
        (
            "invmap estimate roofline",
            "invmap estimate roofline --scenario decode",
            "invmap estimate roofline --scenario decode --model llama-3.1-8b --gpu h100-sxm",
            "invmap estimate roofline --scenario decode --model llama-3.1-8b --gpu h100-sxm --efficiency 0.8",
        ),
    ),
    Command(
        name="models",
        group="Recreate",
        module="estimates",
        summary="List the models estimates know, and where each config was read.",
        view="records",
        bundles=("output_no_fields",),
        examples=("invmap models", "invmap models --json | jq -r '.[] | \"\\(.name) \\(.kv_bytes_per_token)\"'"),
    ),
    Command(
        name="gpus",
        group="Recreate",
        module="estimates",
        summary="List the GPUs estimates know, and where each figure was read.",
        view="records",
        bundles=("output_no_fields",),
        arguments=(
            Arg.optional(
                "gpu", "NAME", "One GPU (a name or alias): each of its figures with its source.", complete="gpu"
            ),
        ),
        examples=(
            "invmap gpus",
            "invmap gpus h100-sxm",
            "invmap gpus --json | jq -r '.[] | select(.bandwidth.value != null) | .name'",
        ),
    ),
    # --- simulations
    *SIMULATIONS,
    # --- records
    Command(
        name="record",
        group="Record",
        module="records",
        summary="Draft and check experiment records.",
        examples=(
            "invmap record new pagedattention -o experiments/paged-kv.json",
            "invmap record check experiments/*.json",
        ),
    ),
    Command(
        name="new",
        group="Record",
        module="records",
        summary="Draft a record citing one source and carrying its open question.",
        view="",
        bundles=(),
        options=(
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
        arguments=(NAME,),
        examples=(
            "invmap record new pagedattention -o experiments/paged-kv.json",
            "invmap record new mooncake --result-type simulated",
        ),
        parent="record",
    ),
    Command(
        name="check",
        group="Record",
        module="records",
        summary="Validate experiment records; every problem with its JSON path.",
        view="record check",
        bundles=(),
        options=(FORMAT, JSON),
        arguments=(Arg("files", "FILE...", "Record files ('-' reads stdin).", multiple=True),),
        examples=("invmap record check experiments/*.json", "invmap record check - < draft.json --json"),
        parent="record",
    ),
    Command(
        name="records",
        group="Record",
        module="records",
        summary="List experiment records and the sources they address.",
        view="records",
        bundles=("output_no_fields",),
        arguments=(Arg.optional("folder", "DIR", "Default: $INVMAP_RECORDS, else ./experiments."),),
        examples=("invmap records", "invmap records experiments --json | jq '.[].addresses'"),
    ),
)

# The fields beyond a source's that a command's records carry (and its --fields accepts).
EXTRA_FIELDS: dict[str, tuple[str, ...]] = {
    "search": ("score", "matched", "corrected", "why"),
    "related": ("score",),
    "questions": ("records", "invalid_records", "estimated_records", "simulated_records"),
    "show": ("reports",),
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
# The help's groups, in the order of the map's procedure (`invmap guide`): a command sits under the step it serves.
GROUPS: tuple[str, ...] = ("Triage and search", "Read", "Code and settings", "Recreate", "Record", "Your catalog")


def options_of(command: Command) -> tuple[Opt, ...]:
    """Every option of a command: its bundles' (in order), then its own."""
    out = [o for bundle in command.bundles for o in BUNDLES[bundle]]
    own = {o.dest for o in command.options}
    return tuple([o for o in out if o.dest not in own] + list(command.options))


def find(path: str) -> Command | None:
    """`list` or `record new` -> its declaration."""
    parent, _, name = path.rpartition(" ")
    return SUB.get(parent, {}).get(name) if parent else TOP.get(name)
