"""`check --links` against a real HTTP server on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections import Counter

import pytest

from conftest import LINKED, installed_invmap


class Server:
    """A local server whose paths answer as the tests need; it counts requests and how many were in
    flight at once."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.methods: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.answer("HEAD")

            def do_GET(self):
                self.answer("GET")

            def reply(self, code, headers=()):
                with server.lock:  # no longer in flight once the answer starts (the client may go on)
                    server.in_flight -= 1
                    self.counted = False
                self.send_response(code)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def answer(self, method):
                path = self.path
                self.counted = True
                with server.lock:
                    server.hits[path] += 1
                    server.methods.append((method, path))
                    count = server.hits[path]
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    if path == "/ok":
                        self.reply(200)
                    elif path == "/moved":
                        self.reply(301, [("Location", "/ok")])
                    elif path == "/moved-for-now":
                        self.reply(302, [("Location", "/ok")])
                    elif path == "/moved-dead":
                        self.reply(301, [("Location", "/gone")])
                    elif path == "/gone":
                        self.reply(404)
                    elif path == "/forbidden":
                        self.reply(403)
                    elif path == "/busy":
                        if count == 1:
                            self.reply(429, [("Retry-After", "1")])
                        else:
                            self.reply(200)
                    elif path == "/always-busy":
                        self.reply(429, [("Retry-After", "0")])
                    elif path == "/flaky":
                        self.reply(500 if count == 1 else 200)
                    elif path == "/no-head":
                        self.reply(405 if method == "HEAD" else 200)
                    elif path == "/slow":
                        time.sleep(2)
                        self.reply(200)
                    elif path.startswith("/wait"):
                        time.sleep(0.3)
                        self.reply(200)
                    else:
                        self.reply(500)
                finally:
                    with server.lock:
                        if getattr(self, "counted", True):
                            server.in_flight -= 1

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def catalog(tmp_path, urls: dict[str, str]):
    path = tmp_path / "links.toml"
    path.write_text("".join(LINKED.format(id=i, url=u) for i, u in urls.items()), encoding="utf-8")
    return path


def run(cli, path, *args):
    return cli("--catalog", str(path), "check", "--links", "--json", "--alive", "--timeout", "1", *args)


def by_id(result):
    return {r["id"]: r for r in json.loads(result.out)}


def test_each_kind_of_answer_is_reported(cli, tmp_path, server):
    paths = ["ok", "moved", "moved-for-now", "moved-dead", "gone", "forbidden", "busy", "flaky", "no-head", "slow"]
    path = catalog(tmp_path, {p: f"{server.base}/{p}" for p in paths})
    started = time.monotonic()
    result = run(cli, path)
    assert result.code == 1  # /gone and /moved-dead are dead
    found = by_id(result)
    status = {i: (r["status"], r["code"]) for i, r in found.items()}
    assert status == {
        "ok": ("alive", 200),
        "moved": ("redirected", 200),
        "moved-for-now": ("redirected", 200),
        "moved-dead": ("dead", 404),
        "gone": ("dead", 404),
        "forbidden": ("blocked", 403),
        "busy": ("alive", 200),  # after waiting the second Retry-After asked for
        "flaky": ("alive", 200),  # a 5xx is asked once more
        "no-head": ("alive", 200),  # HEAD refused: GET
        "slow": ("timeout", None),
    }
    assert found["moved"]["final_url"] == f"{server.base}/ok"
    assert found["moved-dead"]["final_url"] == f"{server.base}/gone"
    assert ("GET", "/no-head") in server.methods and server.hits["/flaky"] == 2 and server.hits["/busy"] == 2
    assert time.monotonic() - started >= 1.0  # Retry-After: 1 was honoured
    assert list(found["ok"]) == ["id", "field", "url", "status", "code", "final_url", "error"]


def test_the_plain_report_lists_what_is_not_alive(cli, tmp_path, server):
    path = catalog(
        tmp_path, {"ok": f"{server.base}/ok", "gone": f"{server.base}/gone", "moved": f"{server.base}/moved"}
    )
    result = cli("--catalog", str(path), "check", "--links")
    assert result.code == 1
    assert result.out.splitlines() == [
        f"moved\turl\t{server.base}/moved\tredirected permanently → {server.base}/ok",
        f"gone\turl\t{server.base}/gone\tdead 404",
    ] or sorted(result.out.splitlines()) == sorted(
        [
            f"gone\turl\t{server.base}/gone\tdead 404",
            f"moved\turl\t{server.base}/moved\tredirected permanently → {server.base}/ok",
        ]
    )


def test_nothing_dead_is_exit_0(cli, tmp_path, server):
    path = catalog(tmp_path, {"ok": f"{server.base}/ok", "moved": f"{server.base}/moved"})
    assert run(cli, path).code == 0


def test_no_more_than_the_per_host_limit_in_flight(cli, tmp_path, server):
    path = catalog(tmp_path, {f"w{n}": f"{server.base}/wait{n}" for n in range(8)})
    assert run(cli, path, "--per-host", "2").code == 0
    assert server.most_in_flight == 2
    server.most_in_flight = 0
    assert run(cli, path, "--per-host", "1", "--max-age", "0").code == 0
    assert server.most_in_flight == 1


def test_results_are_cached_but_never_a_transient_failure(cli, tmp_path, server, isolated):
    path = catalog(
        tmp_path, {"ok": f"{server.base}/ok", "gone": f"{server.base}/gone", "busy": f"{server.base}/always-busy"}
    )
    first = by_id(run(cli, path))
    assert (first["busy"]["status"], first["gone"]["status"]) == ("rate-limited", "dead")
    kept = json.loads((isolated / "invmap" / "links.json").read_text())
    assert set(kept) == {f"{server.base}/ok", f"{server.base}/gone"}  # not the 429
    busy = server.hits["/always-busy"]
    assert by_id(run(cli, path)) == first
    assert (server.hits["/ok"], server.hits["/gone"]) == (1, 1)  # answered from the cache
    assert server.hits["/always-busy"] > busy  # a transient failure is asked again
    run(cli, path, "--max-age", "0")
    assert server.hits["/ok"] == 2  # --max-age 0 checks again


def test_only_the_ids_given(cli, tmp_path, server):
    path = catalog(tmp_path, {"ok": f"{server.base}/ok", "gone": f"{server.base}/gone"})
    result = run(cli, path, "ok")
    assert (result.code, list(by_id(result))) == (0, ["ok"])


def test_a_refused_connection_is_dead_and_no_network_is_exit_4(cli, tmp_path):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = catalog(tmp_path, {"closed": f"http://127.0.0.1:{port}/x"})
    result = run(cli, path)
    assert result.code == 1 and by_id(result)["closed"]["status"] == "refused"
    offline = catalog(tmp_path, {"a": "http://host-that-does-not-exist.invalid/", "b": "http://other.invalid/"})
    result = run(cli, offline)
    assert result.code == 4 and result.out == ""
    assert result.err.startswith("Error: cannot check links: the network cannot be used")


def test_update_redirects_rewrites_permanent_moves_of_stored_values_only(cli, tmp_path, server):
    path = catalog(
        tmp_path,
        {"moved": f"{server.base}/moved", "for-now": f"{server.base}/moved-for-now", "ok": f"{server.base}/ok"},
    )
    result = cli("--catalog", str(path), "check", "--links", "--update-redirects")
    assert result.code == 0
    records = {r["id"]: r for r in json.loads(cli("--catalog", str(path), "list", "--json").out)}
    assert records["moved"]["url"] == f"{server.base}/ok"
    assert records["for-now"]["url"] == f"{server.base}/moved-for-now"  # a 302 is not permanent
    assert cli("check", "--links", "--update-redirects").code == 2  # never the shipped catalog


def test_bad_options(cli):
    assert cli("check", "--links", "--max-age", "soon").code == 2
    assert cli("check", "--links", "--timeout", "0").code == 2
    assert cli("check", "--update-redirects").code == 2  # --update-redirects goes with --links
    assert installed_invmap()
