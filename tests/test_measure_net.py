"""triage --metrics URL (issue: metrics): a scrape through invmap.net on a local server on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import threading

import pytest
import scrapes
from test_measure import kv_pressure


class Endpoint:
    """/metrics answering each GET with the next of `bodies` (the last one again once they run out)."""

    def __init__(self, bodies: list[str], status: int = 200) -> None:
        self.bodies = bodies
        self.status = status
        self.accepts: list[str | None] = []
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                endpoint.accepts.append(self.headers.get("Accept"))
                body = endpoint.bodies[min(len(endpoint.accepts), len(endpoint.bodies)) - 1].encode()
                self.send_response(endpoint.status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=lambda: self.server.serve_forever(poll_interval=0.05), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    made: list[Endpoint] = []

    def make(bodies: list[str], status: int = 200) -> Endpoint:
        made.append(Endpoint(bodies, status))
        return made[-1]

    yield make
    for e in made:
        e.close()


def test_a_url_is_scraped_with_the_text_format_asked_for(cli, endpoint):
    server = endpoint([kv_pressure(0.97, 48)])
    result = cli("triage", "--metrics", server.url, "--json")
    assert result.code == 0, result.err
    assert [e["text"] for i in json.loads(result.out) for e in i["evidence"]] == [
        "kv usage 0.97 (>= 0.90) and 48 preemptions since the engine started"
    ]
    assert server.accepts == ["text/plain;version=0.0.4"]


def test_a_url_with_interval_is_scraped_twice_for_a_window(cli, endpoint):
    server = endpoint([kv_pressure(0.93, 10), kv_pressure(0.96, 22)])
    result = cli("triage", "--metrics", server.url, "--interval", "200ms", "--json")
    assert result.code == 0, result.err
    assert len(server.accepts) == 2
    assert [e["text"] for i in json.loads(result.out) for e in i["evidence"]] == [
        "kv usage 0.96 (>= 0.90) and 12 preemptions in 0.2 s"
    ]
    assert "window: 0.2 s (vLLM)" in result.err


def test_an_http_error_is_exit_4(cli, endpoint):
    server = endpoint(["upstream gone"], status=503)
    result = cli("triage", "--metrics", server.url)
    assert (result.code, result.out, result.err) == (4, "", f"Error: {server.url} answered HTTP 503\n")


def test_no_server_is_exit_4_in_one_line(cli):
    result = cli("triage", "--metrics", "http://127.0.0.1:9/metrics")
    assert (result.code, result.out) == (4, "")
    assert result.err.startswith("Error: ") and len(result.err.splitlines()) == 1


def test_a_page_that_is_no_scrape_is_exit_3(cli, endpoint):
    server = endpoint(["<html><body>login</body></html>\n"])
    result = cli("triage", "--metrics", server.url)
    assert (result.code, result.out) == (3, "")
    assert result.err.startswith(f"Error: {server.url}:1:1: not Prometheus text exposition")


def test_a_url_and_a_file_make_a_window(cli, endpoint, tmp_path):
    before = tmp_path / "before.prom"
    before.write_text(scrapes.vllm().counter("vllm:num_preemptions", 5).gauge("vllm:kv_cache_usage_perc", 0.95).text())
    server = endpoint([kv_pressure(0.95, 9)])
    result = cli("triage", "--metrics", str(before), "--metrics", server.url, "--interval", "30s", "--json")
    assert [e["text"] for i in json.loads(result.out) for e in i["evidence"]] == [
        "kv usage 0.95 (>= 0.90) and 4 preemptions in 30 s"
    ]
