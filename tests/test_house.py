"""Guard rails: the import graph has no cycle and the core never imports the CLI; every filter
works on every command that filters; README's tables say what the declarations say."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from conftest import REPO
from invmap import errors, formats
from invmap import options as decl
from invmap.filters import FILTERS

PACKAGE = REPO / "src" / "invmap"
# The command line's own modules; every other module is core (a new module is core unless named here).
CLI = ("invmap.cli", "invmap.options", "invmap.entry", "invmap.__main__", "invmap.fastcomplete", "invmap.complete")
CLI_ONLY_PACKAGES = ("typer", "click")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module `name` imports, at module level or inside a function (the lazy imports too), but
    not under `if TYPE_CHECKING:` (never executed). `from pkg import sub` is an import of `pkg.sub`
    and of `pkg`, the package's face (its `__init__`, which runs first): a submodule imports what it
    needs from the module that owns it (`from invmap.measure.names import ...`), never through the face."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            subs = {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules}
            found |= subs | {base}  # the package's face runs too: `from pkg import sub` imports pkg
    return found - {name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among invmap's modules, as a path, or None."""
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_no_import_cycle_among_invmaps_modules():
    assert _cycle(_graph()) is None


def _reexported(face: Path) -> set[str]:
    """The names a package's face imports from elsewhere (its re-exports), not the ones it defines."""
    tree = ast.parse(face.read_text(encoding="utf-8"))
    return {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom) for a in node.names}


def test_a_submodule_imports_from_the_owner_never_through_its_packages_face():
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        package = name.rpartition(".")[0]
        if path.name == "__init__.py" or package not in modules or package == "invmap":
            continue
        shown = _reexported(modules[package])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == package:
                wrong += [f"{name}: {a.name}" for a in node.names if f"{package}.{a.name}" in modules]
                wrong += [f"{name}: {a.name}" for a in node.names if a.name in shown]
    assert wrong == []


def test_a_package_face_counts_as_a_module_in_the_graph(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg import sub\n", encoding="utf-8")
    (tmp_path / "pkg" / "sub.py").write_text("from pkg import helper\n", encoding="utf-8")
    (tmp_path / "pkg" / "helper.py").write_text("", encoding="utf-8")
    modules = {"pkg": tmp_path / "pkg" / "__init__.py", "pkg.sub": tmp_path / "pkg" / "sub.py"}
    modules["pkg.helper"] = tmp_path / "pkg" / "helper.py"
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert graph["pkg.sub"] == {"pkg", "pkg.helper"}
    assert _cycle(graph) == ["pkg", "pkg.sub", "pkg"]


def test_the_graph_sees_lazy_imports_and_finds_a_cycle():
    modules = _modules()
    lazy = _imports("invmap.index.opening", modules["invmap.index.opening"], modules)
    assert "invmap.catalog" in lazy  # imported inside functions only
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_core_imports_neither_the_cli_nor_typer_or_click():
    graph = _graph()
    core = [m for m in graph if not any(m == c or m.startswith(c + ".") for c in CLI)]
    assert {"invmap.model", "invmap.catalog", "invmap.index", "invmap.query", "invmap.triage"} <= set(core)
    bad = {
        m: sorted(i for i in graph[m] if any(i == c or i.startswith(c + ".") for c in (*CLI, *CLI_ONLY_PACKAGES)))
        for m in core
    }
    assert {m: i for m, i in bad.items() if i} == {}


def test_only_the_index_imports_sqlite3():
    graph = _graph()
    users = sorted(m for m, imported in graph.items() if "sqlite3" in imported)
    assert users and all(m == "invmap.index" or m.startswith("invmap.index.") for m in users), users


def test_only_render_imports_rich():
    """Drawing is render's job: no other module (the CLI included) imports rich, lazily or not."""
    graph = _graph()

    def rich_imports(module: str) -> list[str]:
        return sorted(i for i in graph[module] if i == "rich" or i.startswith("rich."))

    drawing = [m for m in graph if m == "invmap.render" or m.startswith("invmap.render.")]
    assert "invmap.render.tables" in drawing and rich_imports("invmap.render.tables")  # the check sees them
    assert {m: rich_imports(m) for m in graph if m not in drawing and rich_imports(m)} == {}


# --- the house drawing: floors, and no arrow back up ---------------------------------------------

# docs/design.md's layers, bottom up: a module imports from its own floor or a lower one, never from a
# higher one. A module is on the floor of the longest name here it is, or is inside; a new module
# must be placed (the test says which is not).
FLOORS = (
    (
        "ground",  # declarations and small helpers every floor uses
        "invmap",
        "invmap.errors",
        "invmap.safe",
        "invmap.text",
        "invmap.marks",
        "invmap.vocabulary",
        "invmap.fields",
        "invmap.filters",
        "invmap.quantities",
        "invmap.formats",
        "invmap.cache",
        "invmap.location",
        "invmap.environment",
        "invmap.identifiers",
        "invmap.engines",
        "invmap.english",
        "invmap.cjk",
        "invmap.trace",
        "invmap.sourcetext",
        "invmap.inputfile",
        "invmap.net",
    ),
    ("model", "invmap.model"),
    (
        "catalog",
        "invmap.reading",
        "invmap.catalog",
        "invmap.overlay",
        "invmap.validation",
        "invmap.problems",
        "invmap.canonical",
        "invmap.writers",
        "invmap.spans",
        "invmap.edits",
        "invmap.fastwrite",
        "invmap.records",
        "invmap.interchange",
    ),
    ("index", "invmap.index"),
    (
        "query",  # reading the index, and the operations the CLI runs (options in, data out)
        "invmap.query",
        "invmap.search",
        "invmap.triage",
        "invmap.covering",
        "invmap.quoting",
        "invmap.glossary",
        "invmap.overview",
        "invmap.measure",
        "invmap.estimate",
        "invmap.simulate",
        "invmap.links",
        "invmap.metadata",
        "invmap.diffing",
        "invmap.entries",
        "invmap.authoring",
        "invmap.checking",
        "invmap.refresh",
        "invmap.exchange",
        "invmap.diagnose",
    ),
    ("render", "invmap.render"),
    ("cli", *CLI),
)


def _floor(module: str) -> int | None:
    placed = [
        (len(name), n)
        for n, (_, *names) in enumerate(FLOORS)
        for name in names
        if module == name or (name != "invmap" and module.startswith(name + "."))
    ]
    return max(placed)[1] if placed else None


def test_every_module_stands_on_a_floor_and_no_import_goes_back_up():
    graph = _graph()
    assert [m for m in graph if _floor(m) is None] == []
    up = {
        m: sorted(f"{i} ({FLOORS[_floor(i)][0]})" for i in graph[m] if i in graph and _floor(i) > _floor(m))
        for m in graph
    }
    assert {f"{m} ({FLOORS[_floor(m)][0]})": i for m, i in up.items() if i} == {}


def test_the_floors_see_an_arrow_back_up():
    assert _floor("invmap.render.tables") > _floor("invmap.query.why") > _floor("invmap.catalog")
    assert _floor("invmap.index.opening") == _floor("invmap.index") and _floor("invmap") == 0


# --- radon: one job a module ---------------------------------------------------------------------

MOST_COMPLEX = 20  # cyclomatic complexity of one function or method
LEAST_MAINTAINABLE = 10  # maintainability index of one module (radon's, comments counted as in `radon mi`)


def _blocks(blocks):
    for b in blocks:
        yield b
        yield from _blocks([*getattr(b, "methods", ()), *getattr(b, "closures", ()), *getattr(b, "inner_classes", ())])


@pytest.mark.parametrize("module", sorted(_modules()))
def test_no_function_too_complex_and_no_module_unmaintainable(module):
    from radon.complexity import cc_visit
    from radon.metrics import mi_visit

    code = _modules()[module].read_text(encoding="utf-8")
    complex_ = {f"{b.name}:{b.lineno}": b.complexity for b in _blocks(cc_visit(code)) if b.complexity > MOST_COMPLEX}
    assert complex_ == {}
    assert mi_visit(code, multi=True) >= LEAST_MAINTAINABLE


# --- every filter, on every command that filters --------------------------------------------------

FILTERING = [c for c in decl.COMMANDS if "filters" in c.bundles or "level_filters" in c.bundles]
WORDS = {"symptom": ["kv", "cache", "full"], "text": ["cache"]}


def _filter_args(o) -> list[str]:
    return [o.flags[0]] if o.kind == "flag" else [o.flags[0], o.example]


@pytest.mark.parametrize("command", FILTERING, ids=lambda c: c.path)
@pytest.mark.parametrize("o", FILTERS, ids=lambda o: o.dest)
def test_every_filter_works_on_every_command_that_filters(cli, command, o):
    taken = {x.dest for x in decl.options_of(command)}
    if o.dest not in taken:
        assert command.bundles == ("level_filters", *command.bundles[1:]) or "level_filters" in command.bundles
        result = cli(*command.path.split(), *_filter_args(o))
        assert result.code == 2 and "No such option" in result.err
        return
    words = [w for a in command.arguments if a.required for w in WORDS[a.dest]]
    machine = "json" in formats.names_for(command.view) if command.view else False
    tail = ["--format", "json"] if machine else ["-o", "-"] if command.name == "export" else []
    result = cli(*command.path.split(), *words, *_filter_args(o), *tail)
    assert result.code == 0, (command.path, o.dest, result.err)
    if command.name == "list":
        every = {r["id"] for r in json.loads(cli("list", "--json").out)}
        chosen = {r["id"] for r in json.loads(result.out)}
        assert chosen and chosen < every  # the example narrows, as its declaration says


def test_every_filter_has_an_example_or_is_a_flag():
    assert all((o.kind == "flag") == (o.example is None) for o in FILTERS)


# --- README and its docs/ pages say what the declarations say ------------------------------------

README = (REPO / "README.md").read_text(encoding="utf-8")
README_MOST_LINES = 300  # the front door; everything else is a page in docs/


def _section(heading: str, page: str = "README.md") -> str:
    text = (REPO / page).read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1 :]
    end = re.search(r"^#{1,4} ", rest, re.M)
    return rest[: end.start()] if end else rest


def _table_first_cells(text: str) -> list[str]:
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| ---")]
    return [row.split("|")[1].strip() for row in rows[1:]]


def test_readme_json_contract_lists_every_key_in_order(cli):
    cells = _table_first_cells(_section("# JSON contract", "docs/json.md"))
    keys = [k for cell in cells for k in re.findall(r"`([a-z_]+)`", cell)]
    assert keys == list(json.loads(cli("show", "vllm", "--json").out))  # show adds `reports`, the last row
    assert keys[:-1] == list(json.loads(cli("list", "--json").out)[0])


def test_readme_filter_table_lists_every_filter():
    cells = _table_first_cells(_section("## Filters", "docs/search.md"))
    assert cells == ["`" + ", ".join(sorted(o.flags, key=len)) + "`" for o in FILTERS]


def test_readme_exit_code_table_names_every_error_class_code():
    cells = _table_first_cells(_section("### Exit codes"))
    codes = {c.exit_code for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.InvmapError)}
    assert {int(c) for c in cells} == {0, 130} | codes


def test_readme_names_every_format():
    for heading, page in (("## Scripting", "README.md"), ("# Output formats and the terminal", "docs/output.md")):
        listed = re.search(r"^Formats: (.+)\.$", _section(heading, page), re.M)
        assert listed and re.findall(r"`([a-z]+)`", listed.group(1)) == list(formats.NAMES), page


def test_readme_is_a_front_door_whose_docs_links_all_exist():
    assert len(README.splitlines()) <= README_MOST_LINES
    pages = sorted((REPO / "docs").glob("*.md"))
    for page in [REPO / "README.md", *pages]:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text):
            assert (page.parent / target).is_file(), (page.name, target)
        assert "](#" not in text, page.name  # no anchor left from the old README
    linked = set(re.findall(r"\]\(docs/([a-z-]+\.md)\)", README))
    assert {p.name for p in pages} - linked <= {"glossary-sources.md"}  # every reference page is reachable
    assert "## The five steps" in README and "## Scripting" in README and "### Exit codes" in README
