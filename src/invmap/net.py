"""The one way invmap asks a server for something: `fetch`, with a total deadline and a size cap.

Every command that uses the network goes through here (`check --links`, `add --from`, `refresh`,
`triage --metrics URL`), so a hostile or broken server is handled once:

- a **total deadline** per request (connecting, every redirect, the headers and the whole body, however
  slowly a server dribbles them): the request runs in a worker thread and the caller waits for it
  at most `deadline` seconds of wall-clock time; the worker's reads are bounded by what is left, and
  it stops at its next chunk once the caller has given up;
- a **cap** on the decoded body: a Content-Length above it is refused before the body is read, the
  body is streamed and decompressed here (gzip, deflate) a bounded piece at a time, so an endless
  chunked body or a gzip bomb stops at `cap` bytes;
- a User-Agent naming invmap; only http and https URLs, redirects at most MAX_REDIRECTS hops and
  never to another scheme.

Every failure (a name that does not resolve, a refused connection, TLS, the deadline, the cap, a
broken answer) is NetworkError (exit 4) with a one-line message naming `service`. An HTTP status of
400 or more is NOT an error here: the Answer carries it and the caller decides what it means. A URL
that cannot be parsed (a port that is no number, an unclosed `[`, a control character, no host) is
MalformedURL, a usage error (exit 2) naming it, before anything is sent; a server that redirects to
such a URL is a NetworkError (the answer is broken, not the question).
"""

from __future__ import annotations

import socket
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from invmap.errors import FileAccessError, NetworkError, UsageError

if TYPE_CHECKING:  # only for the annotation: httpx is imported where a request is made
    import httpx

MAX_REDIRECTS = 10
SCHEMES = ("http", "https")
_PIECE = 64 * 1024  # decompressed at most this much at a time (beyond what the cap leaves)


class MalformedURL(UsageError):
    """A URL given to invmap that cannot be parsed (exit 2); `kind` as a NetworkError's, for callers
    that sort failures (`check --links` reports a catalog's malformed link as a broken one)."""

    kind = "malformed"


def checked_url(url: str) -> None:
    """Nothing, for a URL that parses with a host and a numeric port; else MalformedURL naming it
    (control characters are escaped where the message is shown)."""
    if any(ord(c) < 0x21 or 0x7F <= ord(c) <= 0x9F for c in url):
        raise MalformedURL(f"'{url}' is not a valid URL: it holds a space or a control character")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number or out of range
    except ValueError as exc:
        raise MalformedURL(f"'{url}' is not a valid URL ({exc})") from None
    if parts.scheme.lower() in SCHEMES and not parts.hostname:
        raise MalformedURL(f"'{url}' is not a valid URL: it names no host")
    import httpx

    try:
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise MalformedURL(f"'{url}' is not a valid URL ({_reason(exc)})") from None


@dataclass(frozen=True)
class Answer:
    """What a server answered: the final URL (after redirects), the status, headers, the decoded body."""

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes


def user_agent() -> str:
    from invmap import __version__

    return f"invmap/{__version__} (+https://github.com/santho090/inference-engineering)"


def size_text(size: int) -> str:
    """4194304 -> `4 MB`, 1536 -> `1.5 KB` (binary units, as the cap is given)."""
    for unit, scale in (("MB", 2**20), ("KB", 2**10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"


def fetch(
    url: str,
    *,
    service: str,
    deadline: float = 20.0,
    cap: int = 4 * 2**20,
    headers: Mapping[str, str] | None = None,
    method: str = "GET",
    follow_redirects: bool = True,
    client: httpx.Client | None = None,
    read_body: bool = True,
    into: IO[bytes] | None = None,
) -> Answer:
    """Ask `url` (`method`, no body sent); the Answer, whatever its status (>= 400 included).

    NetworkError (exit 4, one line naming `service`) when the server cannot be reached, does not
    answer in full within `deadline` seconds, sends more than `cap` decoded bytes, redirects more
    than MAX_REDIRECTS times or to a scheme other than http(s), or sends a broken answer. `client`
    (kept open) is used when given, else one is made and closed for this request. The body of a
    HEAD request, or of any request with `read_body=False` (a link check), is not read: `body` is b"".
    With `into` (a binary file: a scrape's spooled temporary file), the decoded body is written there
    a piece at a time instead of held (`body` is b""), so a body near the cap is never in memory whole;
    a failing write is a FileAccessError (exit 4) saying so.
    """
    checked_url(url)
    scheme = urlsplit(url).scheme.lower()
    if scheme not in SCHEMES:
        raise NetworkError(f"cannot ask {service}: '{url}' is not an http(s) URL", kind="error")
    if not deadline > 0:
        raise NetworkError(f"{service} did not answer within {deadline:g} s", kind="timeout")
    started = time.monotonic()
    stop = threading.Event()
    outcome: list[Any] = []
    parts: list[bytes] = []
    sink = parts.append if into is None else _writer(into, service)
    if not read_body or method.upper() == "HEAD":
        sink = None

    def work() -> None:
        try:
            end = started + deadline
            outcome.append(
                _exchange(url, service, end, deadline, cap, headers, method, follow_redirects, client, stop, sink)
            )
        except BaseException as exc:  # handed to the caller's thread, which raises it
            outcome.append(exc)

    worker = threading.Thread(target=work, name=f"invmap-fetch {service}", daemon=True)
    worker.start()
    worker.join(deadline)  # wall-clock: however slowly headers or body arrive
    if not outcome:
        stop.set()  # the worker gives up at its next chunk or read timeout; nobody waits for it
        raise NetworkError(f"{service} did not answer within {deadline:g} s", kind="timeout")
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return Answer(result.url, result.status, result.headers, b"".join(parts)) if parts else result


def _writer(into: IO[bytes], service: str) -> Callable[[bytes], object]:
    def write(piece: bytes) -> None:
        try:
            into.write(piece)
        except (OSError, ValueError) as exc:
            raise FileAccessError(
                f"cannot hold the answer of {service} in a temporary file: {getattr(exc, 'strerror', None) or exc}"
            ) from None

    return write


def _exchange(
    url: str,
    service: str,
    end: float,
    deadline: float,
    cap: int,
    headers: Mapping[str, str] | None,
    method: str,
    follow: bool,
    client: Any,
    stop: threading.Event,
    sink: Callable[[bytes], object] | None,
) -> Answer:
    import httpx  # here, not at the top: warm commands never pay for it (tests/test_startup.py)

    sent = {"User-Agent": user_agent(), "Accept-Encoding": "gzip, deflate"}
    sent.update(headers or {})
    own = client is None
    if own:
        client = httpx.Client(follow_redirects=False, http2=False)
    try:
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            left = end - time.monotonic()
            if left <= 0 or stop.is_set():
                raise NetworkError(f"{service} did not answer within {deadline:g} s", kind="timeout")
            try:
                request = client.build_request(method, current, headers=sent, timeout=httpx.Timeout(left))
            except (httpx.InvalidURL, ValueError, TypeError) as exc:
                raise NetworkError(f"cannot ask {service} ({current}): {_reason(exc)}", kind="error") from None
            try:
                response = client.send(request, stream=True, follow_redirects=False)
            except httpx.TimeoutException:
                raise NetworkError(f"{service} did not answer within {deadline:g} s", kind="timeout") from None
            except httpx.ConnectError as exc:
                raise _connect_error(exc, service, current) from None
            except (httpx.HTTPError, httpx.InvalidURL, ValueError, OSError) as exc:
                raise NetworkError(f"cannot ask {service} ({current}): {_reason(exc)}", kind="error") from None
            try:
                location = response.headers.get("location")
                if follow and 300 <= response.status_code < 400 and location:
                    target = _redirect(current, location, service)
                    if urlsplit(target).scheme.lower() not in SCHEMES:
                        raise NetworkError(
                            f"{service} redirected to '{target}', which is not an http(s) URL", kind="error"
                        )
                    current = target
                    continue
                if sink is not None:
                    _read(response, service, end, deadline, cap, stop, sink)
                return Answer(current, response.status_code, dict(response.headers), b"")
            finally:
                response.close()
        raise NetworkError(f"{service} redirected more than {MAX_REDIRECTS} times", kind="error")
    finally:
        if own:
            client.close()


def _redirect(current: str, location: str, service: str) -> str:
    """Where a redirect points; a Location that is no URL is the server's broken answer (exit 4)."""
    try:
        target = urljoin(current, location.strip())
        checked_url(target)
    except (ValueError, MalformedURL) as exc:
        raise NetworkError(
            f"{service} redirected to a URL that cannot be read ({_reason(exc)})", kind="error"
        ) from None
    return target


def _read(
    response: Any,
    service: str,
    end: float,
    deadline: float,
    cap: int,
    stop: threading.Event,
    sink: Callable[[bytes], object],
) -> None:
    """The decoded body, streamed a piece at a time into `sink`: refused past `cap` decoded bytes or
    past the deadline."""
    import httpx

    too_large = NetworkError(f"{service} sent an answer larger than {size_text(cap)}", kind="too-large")
    length = response.headers.get("content-length", "").strip()
    if length.isdigit() and int(length) > cap:
        raise too_large  # refused before a byte of the body is read (a compressed body only grows)
    decoder = _decoder(response.headers.get("content-encoding", ""), service)
    size = 0
    try:
        for chunk in response.iter_raw():
            if stop.is_set() or time.monotonic() > end:
                raise NetworkError(f"{service} did not answer within {deadline:g} s", kind="timeout")
            for piece in decoder(chunk, cap - size + 1):
                size += len(piece)
                if size > cap:
                    raise too_large
                sink(piece)
        for piece in decoder(None, cap - size + 1):
            size += len(piece)
            if size > cap:
                raise too_large
            sink(piece)
    except httpx.TimeoutException:
        raise NetworkError(f"{service} did not answer within {deadline:g} s", kind="timeout") from None
    except (httpx.HTTPError, zlib.error, OSError) as exc:
        raise NetworkError(f"{service} sent a broken answer: {_reason(exc)}", kind="error") from None


def _decoder(encoding: str, service: str) -> Any:
    """A function (chunk or None at the end, room) -> decoded pieces, never more than `room` bytes at
    a time beyond what is asked for, so a small compressed chunk cannot expand unchecked."""
    names = [e.strip().lower() for e in encoding.split(",") if e.strip() and e.strip().lower() != "identity"]
    if not names:
        return lambda chunk, room: [chunk] if chunk else []
    if len(names) > 1 or names[0] not in ("gzip", "x-gzip", "deflate"):
        raise NetworkError(f"{service} answered in an encoding invmap cannot read ({encoding.strip()})", kind="error")
    state: dict[str, Any] = {"z": zlib.decompressobj(zlib.MAX_WBITS | 16 if names[0] != "deflate" else zlib.MAX_WBITS)}
    raw_deflate = names[0] == "deflate"

    def decode(chunk: bytes | None, room: int) -> list[bytes]:
        out: list[bytes] = []
        if chunk is None:
            tail = state["z"].flush()
            return [tail] if tail else []
        data = chunk
        while data:
            try:
                piece = state["z"].decompress(data, max(1, min(room, _PIECE)))
            except zlib.error:
                if raw_deflate and not out and state.get("tried") is None:  # some servers send raw deflate
                    state["tried"] = True
                    state["z"] = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise
            state["tried"] = False
            out.append(piece)
            room -= len(piece)
            if room <= 0:
                return out  # the caller sees the cap passed
            data = state["z"].unconsumed_tail
        return out

    return decode


def _connect_error(exc: BaseException, service: str, url: str) -> NetworkError:
    cause = _root_cause(exc)
    host = urlsplit(url).hostname or url
    if isinstance(cause, socket.gaierror):
        return NetworkError(f"cannot reach {service}: the name {host} does not resolve", kind="unresolved")
    if isinstance(cause, ConnectionRefusedError):
        return NetworkError(f"cannot reach {service}: {host} refused the connection", kind="refused")
    import ssl

    if isinstance(cause, ssl.SSLError):
        return NetworkError(f"cannot reach {service}: TLS failed with {host} ({_reason(cause)})", kind="tls")
    return NetworkError(f"cannot reach {service} ({host}): {_reason(cause)}", kind="error")


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception httpx wraps (a ConnectionRefusedError, a socket.gaierror, ...)."""
    seen = {id(exc)}
    while (inner := exc.__cause__ or exc.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        exc = inner
    return exc


def _reason(exc: BaseException) -> str:
    """One line: what went wrong, without the exception's class name unless that is all there is."""
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())
