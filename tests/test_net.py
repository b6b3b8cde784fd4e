"""invmap.net.fetch against servers on 127.0.0.1 that misbehave on purpose: a total deadline however
slowly a server dribbles, a cap on the decoded body, http(s) only, every failure one NetworkError."""

from __future__ import annotations

import gzip
import socket
import time

import pytest
from misbehaving import Server, answer, dribble_body, dribble_headers, endless_chunked, fixed, gzip_bomb, huge_length

from invmap import net
from invmap.errors import NetworkError


def _fails(url: str, **kw) -> tuple[NetworkError, float]:
    start = time.monotonic()
    with pytest.raises(NetworkError) as caught:
        net.fetch(url, service="the test server", **kw)
    return caught.value, time.monotonic() - start


@pytest.mark.parametrize("behave", [dribble_headers(0.3), dribble_body(0.3)], ids=["headers", "body"])
def test_a_dribbling_server_meets_the_total_deadline(behave):
    with Server(behave) as server:
        error, took = _fails(server.url, deadline=1.5)
    assert (error.message, error.kind, error.exit_code) == (
        "the test server did not answer within 1.5 s",
        "timeout",
        4,
    )
    assert 1.4 < took < 3.0


@pytest.mark.parametrize("behave", [endless_chunked(), huge_length(), gzip_bomb()], ids=["chunked", "length", "gzip"])
def test_answers_over_the_cap_are_refused(behave):
    with Server(behave) as server:
        error, took = _fails(server.url, cap=4 * 2**20)
    assert (error.message, error.kind) == ("the test server sent an answer larger than 4 MB", "too-large")
    assert took < 10


def test_a_gzip_answer_under_the_cap_is_decoded_and_the_request_names_invmap():
    body = b'{"message": "ok"}' * 1000
    packed = gzip.compress(body)
    with Server(fixed(answer(packed, headers={"Content-Encoding": "gzip"}))) as server:
        got = net.fetch(server.url + "/a?b=c", service="the test server")
        head = server.heads[0].decode()
    assert (got.status, got.body, got.url) == (200, body, server.url + "/a?b=c")
    assert "\r\nuser-agent: invmap/" in head.lower() and "(+https://github.com/" in head


def test_http_errors_are_answers_not_exceptions():
    with Server(fixed(answer(b"gone", "404 Not Found"))) as server:
        got = net.fetch(server.url, service="the test server")
    assert (got.status, got.body) == (404, b"gone")


def test_redirects_are_followed_but_never_to_another_scheme():
    def behave(head: bytes):
        path = head.split(b" ")[1]
        if path == b"/file":
            yield 0.0, answer(b"", "302 Found", {"Location": "file:///etc/passwd"})
        elif path == b"/loop":
            yield 0.0, answer(b"", "302 Found", {"Location": "/loop"})
        elif path == b"/moved":
            yield 0.0, answer(b"", "301 Moved Permanently", {"Location": "/here"})
        else:
            yield 0.0, answer(b"here")

    with Server(behave) as server:
        got = net.fetch(server.url + "/moved", service="S")
        assert (got.url, got.body) == (server.url + "/here", b"here")
        hop = net.fetch(server.url + "/moved", service="S", follow_redirects=False)
        assert (hop.status, hop.headers["location"]) == (301, "/here")
        error, _ = _fails(server.url + "/file")
        assert error.message == "the test server redirected to 'file:///etc/passwd', which is not an http(s) URL"
        error, _ = _fails(server.url + "/loop")
        assert error.message == f"the test server redirected more than {net.MAX_REDIRECTS} times"


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "javascript:alert(1)"])
def test_only_http_urls_are_asked(url):
    error, _ = _fails(url)
    assert error.message == f"cannot ask the test server: '{url}' is not an http(s) URL"


def test_a_refused_connection_and_an_unknown_name_are_one_line_each(monkeypatch):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    error, _ = _fails(f"http://127.0.0.1:{port}/")
    assert (error.message, error.kind) == ("cannot reach the test server: 127.0.0.1 refused the connection", "refused")
    real = socket.getaddrinfo

    def resolve(host, *args, **kw):  # no resolver is asked: the name is unknown here, as DNS would say
        if host == "name-that-does-not-exist.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    error, _ = _fails("http://name-that-does-not-exist.invalid/")
    assert error.kind == "unresolved" and "\n" not in error.message
    assert error.message == "cannot reach the test server: the name name-that-does-not-exist.invalid does not resolve"


def test_a_server_that_closes_mid_body_is_a_broken_answer():
    with Server(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")) as server:
        error, _ = _fails(server.url)
    assert error.kind == "error" and error.message.startswith("the test server sent a broken answer: ")


def test_a_head_request_reads_no_body():
    with Server(dribble_body(5.0)) as server:
        got, took = None, time.monotonic()
        got = net.fetch(server.url, service="S", method="HEAD", deadline=3)
        took = time.monotonic() - took
    assert got.status == 200 and got.body == b"" and took < 2
