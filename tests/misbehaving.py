"""Servers on 127.0.0.1 that misbehave on purpose: they dribble headers or a body a byte at a time,
send endless or huge bodies, gzip bombs, redirects to other schemes. Each answers every connection
with raw bytes from a behaviour (a generator of (delay, bytes) steps), so nothing is left to an HTTP
library's good manners."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Callable, Iterator

Step = tuple[float, bytes]


class Server:
    """`behave(request_head) -> steps`; `url` is `http://127.0.0.1:PORT`; stop with `close()`."""

    def __init__(self, behave: Callable[[bytes], Iterator[Step]]) -> None:
        self.behave = behave
        self.heads: list[bytes] = []
        self.closed = threading.Event()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            conn.settimeout(10)
            try:
                while b"\r\n\r\n" not in head:
                    data = conn.recv(65536)
                    if not data:
                        return
                    head += data
                self.heads.append(head)
                for delay, data in self.behave(head):
                    if self.closed.wait(delay):
                        return
                    conn.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.closed.set()
        self.sock.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def answer(body: bytes = b"ok", status: str = "200 OK", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _dribble(head: bytes, unit: bytes, gap: float, steps: int) -> Callable[[bytes], Iterator[Step]]:
    def behave(request: bytes) -> Iterator[Step]:
        yield 0.0, head
        for _ in range(steps):
            yield gap, unit

    return behave


def dribble_headers(gap: float = 0.5, steps: int = 10_000) -> Callable[[bytes], Iterator[Step]]:
    """`HTTP/1.1 200 OK` then one header byte every `gap` seconds, never ending the headers."""
    return _dribble(b"HTTP/1.1 200 OK\r\n", b"X", gap, steps)


def dribble_body(gap: float = 0.5, steps: int = 10_000) -> Callable[[bytes], Iterator[Step]]:
    """Headers at once (a body of a million bytes announced), then one body byte every `gap` seconds."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\nContent-Type: text/plain\r\n\r\n"
    return _dribble(head, b"x", gap, steps)


def endless_chunked() -> Callable[[bytes], Iterator[Step]]:
    """A chunked body that never ends (64 KiB chunks, as fast as they are read)."""

    def behave(head: bytes) -> Iterator[Step]:
        yield 0.0, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
        chunk = b"%x\r\n" % 65536 + b"[" * 65536 + b"\r\n"
        for _ in range(100_000):
            yield 0.0, chunk

    return behave


def huge_length() -> Callable[[bytes], Iterator[Step]]:
    """A Content-Length of 10 GB, then bytes as fast as they are read."""

    def behave(head: bytes) -> Iterator[Step]:
        yield 0.0, b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n"
        for _ in range(100_000):
            yield 0.0, b"x" * 65536

    return behave


def gzip_bomb(size: int = 64 * 2**20) -> Callable[[bytes], Iterator[Step]]:
    """`size` zero bytes gzipped (a few tens of KB on the wire), announced honestly."""
    body = gzip.compress(b"\0" * size, compresslevel=9)

    def behave(head: bytes) -> Iterator[Step]:
        yield 0.0, answer(body, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})

    return behave


def fixed(data: bytes) -> Callable[[bytes], Iterator[Step]]:
    """The same raw bytes for every request."""

    def behave(head: bytes) -> Iterator[Step]:
        yield 0.0, data

    return behave


def elapsed(run: Callable[[], object]) -> tuple[object, float]:
    start = time.monotonic()
    out = run()
    return out, time.monotonic() - start
