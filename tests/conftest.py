"""Shared fixtures: run invmap through CliRunner and as the installed program, isolated from the user.

Every test gets its own cache folder and no INVMAP_CATALOG, so results never depend on the machine.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

from invmap.cli import app

ASSETS = Path(__file__).parent / "assets"
SEED = ASSETS / "seed.md"
REPO = Path(__file__).resolve().parent.parent
# A Llama-3.1-8B-shaped config.json (the standard keys only), shared by the estimate tests and benchmarks.
LLAMA_LIKE = json.loads((Path(__file__).parent / "fixtures" / "llama-like.json").read_text(encoding="utf-8"))


def installed_invmap() -> str:
    """The `invmap` console script of the environment running the tests."""
    beside = Path(sys.executable).with_name("invmap")
    found = str(beside) if beside.exists() else shutil.which("invmap")
    if not found:
        pytest.fail("the invmap console script is not installed in this environment (pip install '.[test,mcp]')")
    return found


@pytest.fixture(scope="session")
def shipped_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped catalog's index, built once per test process: each test's own cache folder starts
    with a copy (a test that is about building it removes it, or uses a catalog of its own)."""
    folder = tmp_path_factory.mktemp("shipped-cache")
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    try:
        assert CliRunner().invoke(app, ["list", "--json"]).exit_code == 0
    finally:
        if saved is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = saved
    return folder / "invmap"


@pytest.fixture(autouse=True)
def isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, shipped_index: Path) -> Path:
    cache = tmp_path_factory.mktemp("cache")
    if shipped_index.is_dir():
        shutil.copytree(shipped_index, cache / "invmap")
        (cache / "invmap").chmod(0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("INVMAP_CATALOG", raising=False)
    monkeypatch.delenv("INVMAP_NO_CACHE", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("INVMAP_PAGER", "cat")  # less would wait for a key on a pseudo-terminal
    monkeypatch.delenv("INVMAP_RECORDS", raising=False)
    # No test reaches the internet: the services are a closed local port unless a test serves them.
    monkeypatch.setenv("INVMAP_ARXIV_API", "http://127.0.0.1:9/api/query")
    monkeypatch.setenv("INVMAP_CROSSREF_API", "http://127.0.0.1:9")
    # Nor the Hugging Face Hub, nor the user's Hugging Face cache or token.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HOME", str(cache / "huggingface"))
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    return cache


@pytest.fixture
def mine(tmp_path) -> Path:
    """A catalog of one's own with only `[[sources]]` tables (the two of tests/assets/mini.toml)."""
    sources = (ASSETS / "mini.toml").read_text(encoding="utf-8").split("[[sources]]", 1)[1]
    path = tmp_path / "mine.toml"
    path.write_text("[[sources]]" + sources, encoding="utf-8")
    return path


@dataclass
class Result:
    code: int
    out: str
    err: str


def _not_json(constant: str):
    raise AssertionError(f"the JSON output holds {constant}, which is not JSON (strict readers reject it)")


def strictly_json(args, result: Result) -> None:
    """Every JSON answer a test sees is strict JSON: no NaN, Infinity or -Infinity (issue 38)."""
    words = list(args)
    fmt = "json" if "--json" in words else None
    for i, word in enumerate(words[:-1]):
        if word in ("--format", "-f") and words[i + 1] in ("json", "jsonl"):
            fmt = words[i + 1]
    if fmt is None or result.code != 0 or not result.out.strip():
        return
    texts = result.out.splitlines() if fmt == "jsonl" else [result.out]
    for text in texts:
        if text.strip():
            json.loads(text, parse_constant=_not_json)


@pytest.fixture
def cli():
    """invmap in-process through Typer's CliRunner: cli('list', '--json'); `environment=` runs it in
    an `invmap.environment.Environment` of the test's (a terminal of some width, say). A JSON answer
    is parsed strictly (`strictly_json`)."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None, environment=None) -> Result:
        extra = {"obj": environment} if environment is not None else {}
        result = runner.invoke(app, list(args), input=input, env=env, prog_name="invmap", **extra)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        done = Result(result.exit_code, result.stdout, result.stderr)
        strictly_json(args, done)
        return done

    return run


@pytest.fixture
def sh():
    """The installed invmap as a real subprocess: sh('list', '--json')."""
    program = installed_invmap()

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None, cwd: str | None = None) -> Result:
        full_env = {**os.environ, **(env or {})}
        done = subprocess.run([program, *args], input=input, capture_output=True, text=True, env=full_env, cwd=cwd)
        result = Result(done.returncode, done.stdout, done.stderr)
        strictly_json(args, result)
        return result

    return run


def seed_rows() -> list[dict[str, str]]:
    """The seed's table read independently of invmap: header names -> cells."""
    lines = [l for l in SEED.read_text(encoding="utf-8").splitlines() if l.startswith("|")]
    header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in l.strip().strip("|").split("|")))) for l in lines[2:]]


# The JSON contract's keys, in order, written out here (not derived from invmap.fields) so that a
# change to the contract has to change a test too.
JSON_KEYS = [
    "id",
    "name",
    "source",
    "title",
    "keywords",
    "authors",
    "author_names",
    "arxiv",
    "doi",
    "url",
    "code",
    "settings",
    "seam",
    "places",
    "recreate",
    "type",
    "year",
    "venue",
    "published_in",
    "entry_type",
    "report_number",
    "layer",
    "layers",
    "mechanism",
    "objective",
    "question",
    "availability",
    "accessed",
]


def add_args(name: str = "Z", **fields: str) -> list[str]:
    """`add` options for a minimal valid source named `name`; keyword arguments add or replace fields."""
    values = {
        "name": name,
        "source": name,
        "type": "Current",
        "year": "2025",
        "layer": "L3",
        "mechanism": "m",
        "objective": "o",
        "question": "q",
        "availability": "a",
        **fields,
    }
    return [part for key, value in values.items() for part in (f"--{key}", value)]


def generated_catalog(path: Path, count: int, layers: bool = False) -> Path:
    """A catalog of `count` sources written by benchmarks/generate.py (plain [[sources]] tables, or
    with the shipped [layers] table first)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate", REPO / "benchmarks" / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    path.write_text(generate.generate(count, layers=layers), encoding="utf-8")
    return path


def bash(command: str, **env: str) -> subprocess.CompletedProcess:
    """A bash command line (pipes, redirections, `$PIPESTATUS`) with `env` added: text out, at most 60 s."""
    return subprocess.run(
        command,
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )


def tab(words: str | None, cword: str | None = None, **env: str) -> subprocess.CompletedProcess:
    """The installed invmap asked for completions as bash's script asks: COMP_WORDS `words` (left
    unset when None), COMP_CWORD `cword` (else the last word); stdin is a pipe nobody writes to."""
    full = {k: v for k, v in os.environ.items() if k != "COMP_WORDS"}
    full.update(_INVMAP_COMPLETE="complete_bash", **env)
    if words is not None:
        full["COMP_WORDS"] = words
    full["COMP_CWORD"] = cword if cword is not None else str(len((words or "").split(" ")) - 1)
    return subprocess.run(
        [installed_invmap()], capture_output=True, text=True, env=full, stdin=subprocess.PIPE, timeout=30
    )


def screen(args: list[str], cols: int, env: dict | None = None, rows: int = 300) -> list[str]:
    """What the installed invmap shows on a pseudo-terminal `cols` wide (escape sequences removed)."""
    program = installed_invmap()
    command = f"stty cols {cols} rows {rows}; '{program}' " + " ".join(
        "'" + a.replace("'", "'\\''") + "'" for a in args
    )
    # The width is the terminal's: $COLUMNS (200 for CliRunner tests) would win over it, and only some
    # shells (bash, not dash) reset it after `stty`, so it is left out and the shell is always sh.
    outside = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    out = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**outside, "SHELL": "/bin/sh", "INVMAP_PAGER": "cat", "TERM": "xterm-256color", **(env or {})},
    ).stdout
    return _visible(out).splitlines()


def on_terminal(
    args: list[str], cols: int, env: dict | None = None, rows: int = 300, input: str | None = None
) -> list[str]:
    """What `screen` shows, in-process: invmap run through CliRunner in an `Environment` whose stdin,
    stdout and stderr are a terminal `cols` x `rows` (escape sequences removed). For how output looks
    at a width; `screen` stays for what only a real pseudo-terminal shows (its size, its pager)."""
    from invmap.environment import Environment

    variables = {"COLUMNS": str(cols), "LINES": str(rows), "INVMAP_PAGER": "cat", "TERM": "xterm-256color"}
    result = CliRunner().invoke(
        app,
        list(args),
        input=input,
        env={**variables, **(env or {})},
        prog_name="invmap",
        obj=Environment.terminal(columns=cols, lines=rows),
    )
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return _visible(result.output).splitlines()


def _visible(out: str) -> str:
    """A terminal's text without its escape sequences (hyperlinks, colours) and carriage returns."""
    out = re.sub(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)", "", out)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out).replace("\r", "")


def ids_of(result) -> list[str]:
    """The ids of a `--json` result that succeeded."""
    import json

    assert result.code == 0, result.err
    return [r["id"] for r in json.loads(result.out)]


SERVICES = ASSETS / "services"


class Services:
    def __init__(self) -> None:
        self.requests: list[tuple[float, str, str]] = []  # (time, path with query, user agent)
        self.busy = False
        services = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def send(self, code: int, body: str, kind: str) -> None:
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                services.requests.append((time.monotonic(), self.path, self.headers.get("User-Agent", "")))
                url = urlsplit(self.path)
                if url.path == "/api/query":
                    if services.busy:
                        return self.send(200, "Rate exceeded.", "text/plain")
                    ids = parse_qs(url.query).get("id_list", [""])[0].split(",")
                    recorded = SERVICES / f"arxiv-{ids[0]}.xml"
                    body = (recorded if recorded.exists() else SERVICES / "arxiv-error.xml").read_text()
                    return self.send(200, body, "application/atom+xml")
                if url.path.startswith("/works/"):
                    doi = url.path.removeprefix("/works/").replace("/", "-")
                    recorded = SERVICES / f"crossref-{doi}.json"
                    if recorded.exists():
                        return self.send(200, recorded.read_text(), "application/json")
                    return self.send(404, "Resource not found.", "text/plain")
                return self.send(500, "no", "text/plain")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def env(self) -> dict[str, str]:
        return {"INVMAP_ARXIV_API": f"{self.base}/api/query", "INVMAP_CROSSREF_API": self.base}


@pytest.fixture
def services(monkeypatch):
    """Recorded arXiv and Crossref answers from a server on 127.0.0.1, named by INVMAP_*_API."""
    s = Services()
    for key, value in s.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr("invmap.metadata.ARXIV_GAP", 0.2)  # the rule is tested once, below, at its real value
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def source_toml(
    ident: str,
    *,
    name: str | None = None,
    source: str | None = None,
    year: int | None = 2024,
    layer: str = "L3",
    mechanism: str = "m",
    extra: str = "",
) -> str:
    """One `[[sources]]` table: the cells every source needs (placeholders where a test does not care
    about them), then `extra` (TOML lines, e.g. a url or doi)."""
    lines = ["[[sources]]", f'id = "{ident}"', f'name = "{name or ident}"', f'source = "{source or name or ident}"']
    lines += ['type = "Current"'] + ([f"year = {year}"] if year is not None else []) + [f'layer = "{layer}"']
    lines += [f'mechanism = "{mechanism}"', 'objective = "o"', 'question = "q"', 'availability = "a"']
    return "\n".join([*lines, "accessed = 2026-08-07", ""]) + extra


# A catalog source with only the cells a link check needs: `LINKED.format(id=..., url=...)`.
LINKED = "\n" + source_toml("{id}", extra='url = "{url}"\n')


def filled(draft: dict, result_type: str = "measured") -> dict:
    """A drafted experiment record (`record new`) filled in: valid."""
    value = {"name": "p50", "value": 12.5, "unit": "ms", "evidence": result_type}
    return {
        **draft,
        "result_type": result_type,
        "hypothesis": "Paging keeps capacity.",
        "conclusion": "It did.",
        "raw_measurements": [value],
        "derived_metrics": [{**value, "value": 3}],
        "limitations": ["one GPU"],
    }
