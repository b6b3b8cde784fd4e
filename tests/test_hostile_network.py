"""`add --from` and `refresh` against arXiv and Crossref stand-ins on 127.0.0.1 that misbehave on
purpose: dribbled headers and bodies, bodies over the cap, malformed answers, values invmap cannot
store. Every one is one line on stderr and exit 4 (or, for refresh --write, nothing written)."""

from __future__ import annotations

import json
import time

import pytest
from misbehaving import Server, answer, dribble_body, dribble_headers, endless_chunked, fixed, gzip_bomb, huge_length

from conftest import ASSETS, LINKED, source_toml

CELLS = ["--type", "Current", "--layer", "L3", "--mechanism", "m", "--objective", "o", "--question", "q"]
CELLS += ["--availability", "Primary paper.", "--allow-duplicate"]  # its own catalog holds the DOI already
DOI = "10.1145/3600006.3613165"
RECORD = json.loads((ASSETS / "services" / "crossref-10.1145-3600006.3613165.json").read_text())
ONE = source_toml("{id}", year=2023, layer="L2", extra='doi = "{doi}"\n')


@pytest.fixture
def own(tmp_path):
    path = tmp_path / "own.toml"
    path.write_text(ONE.format(id="paged", doi=DOI), encoding="utf-8")
    return path


def _serve(monkeypatch, behave) -> Server:
    server = Server(behave)
    monkeypatch.setenv("INVMAP_ARXIV_API", f"{server.url}/api/query")
    monkeypatch.setenv("INVMAP_CROSSREF_API", server.url)
    monkeypatch.setattr("invmap.metadata.ARXIV_GAP", 0.0)
    return server


def _record(**message) -> bytes:
    return json.dumps({"message": {**RECORD["message"], **message}}).encode()


SLOW = {"headers": dribble_headers(0.2), "body": dribble_body(0.2)}


@pytest.mark.parametrize("identifier, service", [("2407.00079", "arXiv"), (DOI, "Crossref")])
@pytest.mark.parametrize("slow", SLOW)
def test_a_dribbling_service_is_given_up_on_at_the_deadline(cli, own, monkeypatch, identifier, service, slow):
    monkeypatch.setattr("invmap.metadata.TIMEOUT", 1.5)
    before = own.read_bytes()
    with _serve(monkeypatch, SLOW[slow]):
        started = time.monotonic()
        result = cli("--catalog", str(own), "add", "--from", identifier, *CELLS)
        took = time.monotonic() - started
    assert (result.code, result.out, result.err) == (4, "", f"Error: {service} did not answer within 1.5 s\n")
    assert took < 4 and own.read_bytes() == before


def test_the_installed_invmap_gives_up_at_20_seconds_and_exits(sh, own, tmp_path):
    """The real process and the real deadline: a worker thread still reading does not keep it alive."""
    with Server(dribble_body(0.5)) as server:
        started = time.monotonic()
        result = sh("--catalog", str(own), "add", "--from", DOI, *CELLS, env={"INVMAP_CROSSREF_API": server.url})
        took = time.monotonic() - started
    assert (result.code, result.err) == (4, "Error: Crossref did not answer within 20 s\n")
    assert 19.5 < took < 27


@pytest.mark.parametrize("big", [endless_chunked(), huge_length(), gzip_bomb()], ids=["chunked", "length", "gzip"])
@pytest.mark.parametrize("command", ["add", "refresh"])
def test_an_answer_over_the_cap_is_exit_4(cli, own, monkeypatch, big, command):
    before = own.read_bytes()
    args = ["add", "--from", DOI, *CELLS] if command == "add" else ["refresh", "--write"]
    with _serve(monkeypatch, big):
        started = time.monotonic()
        result = cli("--catalog", str(own), *args)
    assert (result.code, result.err) == (4, "Error: Crossref sent an answer larger than 4 MB\n")
    assert time.monotonic() - started < 15 and own.read_bytes() == before


@pytest.mark.parametrize(
    "body",
    [b'{"message":' + b"[" * 100_000, b'{"message": "x"}', b'{"message": []}', b"[]", b'{"message": {"author": 5}}'],
    ids=["deep", "text", "list", "no-object", "authors"],
)
def test_a_malformed_crossref_answer_is_exit_4(cli, own, monkeypatch, body):
    with _serve(monkeypatch, fixed(answer(body, headers={"Content-Type": "application/json"}))) as server:
        result = cli("--catalog", str(own), "add", "--from", DOI, *CELLS)
    if body == b'{"message": {"author": 5}}':  # what is malformed is only left out: no authors
        assert result.code == 0, result.err
        return
    assert (result.code, result.err) == (
        4,
        f"Error: Crossref's answer is not a work record ({server.url}/works/{DOI})\n",
    )


def test_a_huge_year_from_crossref_is_a_malformed_answer(cli, own, monkeypatch):
    body = _record().replace(b"[[2023, 10, 23]]", b"[[1" + b"0" * 5000 + b"]]")
    with _serve(monkeypatch, fixed(answer(body))):
        result = cli("--catalog", str(own), "add", "--from", DOI, *CELLS)
    assert result.code == 4 and result.err.startswith("Error: Crossref's answer is not a work record")


def test_a_bad_year_from_a_service_is_not_blamed_on_year(cli, own, monkeypatch):
    body = _record(issued={"date-parts": [[1]]})
    with _serve(monkeypatch, fixed(answer(body))):
        result = cli("--catalog", str(own), "add", "--from", DOI, *CELLS)
        assert result.code == 4 and "--year takes" not in result.err
        assert result.err == (
            "Error: Crossref gives a year invmap cannot use: takes a year such as 2024, "
            "or n.d. for an undated source, not '1'\nHint: give --year yourself\n"
        )
        given = cli("--catalog", str(own), "add", "--from", DOI, *CELLS, "--id", "p2", "--year", "2023")
        assert given.code == 0, given.err  # an option given wins, and the service's year is not used


def test_one_run_of_requests_has_a_deadline_too(cli, tmp_path, monkeypatch):
    """Each answer comes in time for its own request, but refresh's requests together outlast the run."""
    monkeypatch.setattr("invmap.metadata.RUN_DEADLINE", 2.0)
    path = tmp_path / "many.toml"
    path.write_text("".join(ONE.format(id=f"s{n}", doi=f"10.1234/{n}") for n in range(8)), encoding="utf-8")
    before = path.read_bytes()

    def slowly(head):
        yield 0.6, answer(_record())

    with _serve(monkeypatch, slowly):
        started = time.monotonic()
        result = cli("--catalog", str(path), "refresh", "--write")
        took = time.monotonic() - started
    assert (result.code, path.read_bytes()) == (4, before)
    assert result.err == "Error: Crossref did not answer within 2 s (the deadline of one run, every request together)\n"
    assert took < 3.5


def test_refresh_write_is_all_or_nothing(cli, tmp_path, monkeypatch):
    path = tmp_path / "two.toml"
    path.write_text(ONE.format(id="good", doi="10.1234/good") + "\n" + ONE.format(id="bad", doi="10.1234/bad"))
    before = path.read_bytes()

    def behave(head):
        bad = b"/works/10.1234/bad" in head
        yield 0.0, answer(_record(title=["a title with \x1b[31m in it" if bad else "A fine title"]))

    with _serve(monkeypatch, behave):
        result = cli("--catalog", str(path), "refresh", "--write")
    assert result.code == 2 and path.read_bytes() == before
    assert result.err.startswith(f"Error: cannot change sources in {path}:\n") and "U+001B" in result.err
    assert "\x1b" not in result.err


def _links(tmp_path, urls: dict[str, str]):
    path = tmp_path / "links.toml"
    path.write_text("".join(LINKED.format(id=i, url=u) for i, u in urls.items()), encoding="utf-8")
    return path


def test_check_links_gives_up_on_dribbling_servers_at_the_timeout(sh, tmp_path):
    """The installed invmap: headers dribbled, a body dribbled (GET, after a refused HEAD), a 10 GB
    body; --timeout 2 is the whole of each request, and the process ends soon after."""

    def body_after_head(head):
        if head.startswith(b"HEAD"):
            yield 0.0, answer(b"", "405 Method Not Allowed")
        else:
            yield from dribble_body(0.3)(head)

    with Server(dribble_headers(0.3)) as a, Server(body_after_head) as b, Server(huge_length()) as c:
        path = _links(tmp_path, {"headers": a.url + "/x", "body": b.url + "/y", "huge": c.url + "/z"})
        started = time.monotonic()
        result = sh("--catalog", str(path), "check", "--links", "--json", "--alive", "--timeout", "2")
        took = time.monotonic() - started
    found = {r["id"]: (r["status"], r["error"]) for r in json.loads(result.out)}
    assert found == {
        "headers": ("timeout", "no answer in time"),
        "body": ("alive", None),  # the body of a link is never read: its status is the answer
        "huge": ("alive", None),
    }
    assert result.code == 0 and took < 8


def test_check_links_has_a_deadline_for_the_run(cli, tmp_path, monkeypatch):
    monkeypatch.setattr("invmap.links.RUN_DEADLINE", 1.5)

    def slowly(head):
        yield 0.6, answer(b"")

    with Server(slowly) as server:
        path = _links(tmp_path, {f"s{n}": f"{server.url}/{n}" for n in range(6)})
        started = time.monotonic()
        result = cli("--catalog", str(path), "check", "--links", "--json", "--alive", "--per-host", "1")
        took = time.monotonic() - started
    found = [(r["status"], r["error"]) for r in json.loads(result.out)]
    assert found[:2] == [("alive", None)] * 2
    assert found[3:] == [("timeout", "not checked within the run's 1.5 s")] * 3
    assert took < 3
