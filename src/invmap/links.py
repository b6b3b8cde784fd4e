"""`invmap check --links`: is every link of the map still alive?

Each `url` (the effective link: the catalog's own, else the arXiv or DOI page) and `code` link is
asked for with HEAD (GET where HEAD is refused), redirects followed one hop at a time so the first
hop says whether the move is permanent. Requests run concurrently (threads, `invmap.net.fetch`), at
most `per_host` at once to one host and `TOTAL` in all, each with a total deadline (`--timeout`) and
none begun after the run's RUN_DEADLINE; `Retry-After` on 429 or 503 is honoured up to `MAX_WAIT`
seconds, other 5xx answers are asked once more.

What a link is: `alive`; `redirected` (alive elsewhere; a warning); `blocked` (401/403: publishers
often refuse clients that are not browsers; a warning); `timeout`, `rate-limited` or `error` (5xx,
a broken answer; warnings, maybe transient); `dead` (404/410, a name that does not resolve, a
refused connection, also at the end of a redirect chain). Results that are not transient are kept in
the cache folder for `max_age` seconds; a transient one is never kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

TOTAL = 16  # requests in flight at once, all hosts together
MAX_REDIRECTS = 10
MAX_WAIT = 30.0  # the longest Retry-After honoured, in seconds
RETRIES_AFTER = 2  # 429/503 asked again at most this often
CACHE_NAME = "links.json"
DEAD = ("dead", "refused")  # what makes `check --links` exit 1
KEPT = ("alive", "redirected", "dead", "blocked")  # results worth caching (not transient)
PERMANENT = (301, 308)
RUN_DEADLINE = 600.0  # seconds for one run's requests together; each request has --timeout in all
_RUN = [RUN_DEADLINE]  # the deadline of the run under way (for its message)


@dataclass
class Link:
    id: str
    field: str  # url | code | places[N]
    url: str
    stored: bool  # the catalog holds this value (not derived from an arXiv id or DOI)


@dataclass
class Outcome:
    status: str
    code: int | None = None
    final_url: str | None = None
    error: str | None = None
    permanent: bool = False  # the first hop of a redirect was 301 or 308
    reached: bool = False  # some server answered (the network works)


def links_of(sources: Sequence[Any]) -> list[Link]:
    """Every link of these sources: the effective `url` and `code`, each once per source, then each
    place's permalink (derived from its repository and commit: never rewritten by --update-redirects)."""
    from invmap.fields import KINDS

    places = KINDS["places"]
    out = []
    for s in sources:
        if s.link:
            out.append(Link(s.id, "url", s.link, stored=bool(s.url)))
        if s.code and s.code != s.link:
            out.append(Link(s.id, "code", s.code, stored=True))
        for n, place in enumerate(places.json(places.fill(s.places, s.__dict__))):
            if place.get("url"):
                out.append(Link(s.id, f"places[{n}]", place["url"], stored=False))
    return out


def check(
    links: Sequence[Link],
    *,
    per_host: int = 2,
    timeout: float = 10.0,
    max_age: float = 86400.0,
    cache_folder: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    clock: Callable[[], float] = time.time,
    run_deadline: float | None = None,
) -> list[tuple[Link, Outcome]]:
    """Each link with its outcome, in the order given; cached answers younger than `max_age` reused.
    Each request has `timeout` seconds in all; no request begins after `run_deadline` seconds
    (RUN_DEADLINE when None): the links not checked by then are `timeout`s."""
    cache = _read_cache(cache_folder) if cache_folder and max_age > 0 else {}
    now = clock()
    unique = list(dict.fromkeys(link.url for link in links))
    known: dict[str, Outcome] = {}
    for url in unique:
        entry = cache.get(url)
        if isinstance(entry, dict) and now - float(entry.get("checked", 0)) <= max_age:
            with contextlib.suppress(TypeError, ValueError):
                known[url] = Outcome(**{k: v for k, v in entry.items() if k != "checked"})
    asked = [u for u in unique if u not in known]
    done = len(unique) - len(asked)
    if progress:
        progress(done, len(unique))
    if asked:
        _RUN[0] = RUN_DEADLINE if run_deadline is None else run_deadline
        run_end = time.monotonic() + _RUN[0]
        known.update(_check_all(asked, per_host, timeout, lambda: progress and progress(1, 0), run_end))
    if cache_folder:
        _write_cache(cache_folder, cache, {u: known[u] for u in asked}, clock())
    return [(link, known[link.url]) for link in links]


def _check_all(
    urls: Sequence[str], per_host: int, timeout: float, step: Callable[[], Any], run_end: float
) -> dict[str, Outcome]:
    """Each URL's outcome: TOTAL threads, at most `per_host` requests at once to one host, every
    request through `invmap.net.fetch` (a total deadline of `timeout` seconds, the body never read)
    and none begun after `run_end` (time.monotonic())."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import httpx  # here: only check --links pays for it

    lock = threading.Lock()
    hosts: dict[str, threading.BoundedSemaphore] = {}

    def gate(url: str) -> threading.BoundedSemaphore:
        try:
            host = (urlsplit(url).hostname or "").lower()
        except ValueError:  # a malformed link: net.fetch says so, as the link's outcome
            host = ""
        with lock:
            return hosts.setdefault(host, threading.BoundedSemaphore(per_host))

    limits = httpx.Limits(max_connections=TOTAL * 2, max_keepalive_connections=TOTAL)
    client = httpx.Client(follow_redirects=False, limits=limits, http2=False, trust_env=False)

    def one(url: str) -> Outcome:
        outcome = _follow(client, url, gate, timeout, run_end)
        step()
        return outcome

    pool = ThreadPoolExecutor(max_workers=TOTAL, thread_name_prefix="invmap-links")
    try:
        futures = [(url, pool.submit(one, url)) for url in urls]
        return {url: future.result() for url, future in futures}
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # Ctrl-C: what has not begun never will
        client.close()


class _RunOver(Exception):
    """The run's deadline passed before this link's next request could begin."""


def _ask(client: Any, method: str, url: str, gate: Callable[[str], Any], timeout: float, run_end: float) -> Any:
    """One request (the body never read), within `timeout` and the run's deadline."""
    from invmap import net

    with gate(url):
        left = run_end - time.monotonic()
        if left <= 0:
            raise _RunOver
        try:
            host = urlsplit(url).hostname or url
        except ValueError:
            host = url
        return net.fetch(
            url,
            service=host,
            deadline=min(timeout, left),
            method=method,
            follow_redirects=False,
            client=client,
            read_body=False,
        )


def _request(client: Any, url: str, gate: Callable[[str], Any], timeout: float, run_end: float) -> Any:
    """One hop: HEAD, then GET where HEAD is refused; 429/503 waited for, other 5xx asked once more."""
    waits = 0
    retried = False
    method = "HEAD"
    while True:
        response = _ask(client, method, url, gate, timeout, run_end)
        if method == "HEAD" and response.status in (400, 403, 405, 406, 501):
            method = "GET"
            continue
        if response.status in (429, 503) and waits < RETRIES_AFTER:
            delay = _retry_after(response.headers.get("retry-after"))
            if delay is not None and delay <= MAX_WAIT and time.monotonic() + delay < run_end:
                waits += 1
                time.sleep(delay)
                continue
        if response.status >= 500 and response.status != 503 and not retried:
            retried = True
            continue
        return response


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (a number of seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _follow(client: Any, url: str, gate: Callable[[str], Any], timeout: float, run_end: float) -> Outcome:
    from invmap.errors import NetworkError
    from invmap.net import MalformedURL

    first_hop: int | None = None
    current = url
    reached = False
    try:
        for _ in range(MAX_REDIRECTS + 1):
            response = _request(client, current, gate, timeout, run_end)
            reached = True
            code = response.status
            location = response.headers.get("location")
            if 300 <= code < 400 and location:
                first_hop = code if first_hop is None else first_hop
                try:
                    current = urljoin(current, location.strip())
                    scheme = urlsplit(current).scheme.lower()
                except ValueError:
                    return Outcome("error", code, None, "redirected to a URL that cannot be read", reached=True)
                if scheme not in ("http", "https"):
                    return Outcome("error", code, current, "redirected to a URL that is not http(s)", reached=True)
                continue
            return _classify(code, url, current, first_hop)
        return Outcome("error", None, current, f"more than {MAX_REDIRECTS} redirects", reached=True)
    except MalformedURL as exc:  # a catalog's link that is no URL is dead, whatever the network does
        return Outcome("dead", None, None, exc.message, reached=True)  # (so it never reads as "no network")
    except _RunOver:
        moved = None if current == url else current
        return Outcome("timeout", None, moved, f"not checked within the run's {_RUN[0]:g} s", reached=reached)
    except NetworkError as exc:
        moved = None if current == url else current
        if exc.kind == "timeout":
            return Outcome("timeout", None, moved, "no answer in time", reached=reached)
        if exc.kind == "refused":
            return Outcome("refused", None, moved, "connection refused", reached=True)  # a host answered "no"
        if exc.kind == "unresolved":
            return Outcome("dead", None, moved, "the name does not resolve", reached=reached)
        if exc.kind == "too-large":
            return Outcome("error", None, moved, "an answer over the size cap", reached=True)
        return Outcome("error", None, moved, exc.message, reached=reached)


def _classify(code: int, url: str, final: str, first_hop: int | None) -> Outcome:
    moved = final if final != url else None
    permanent = first_hop in PERMANENT
    if 200 <= code < 300:
        return Outcome("redirected" if moved else "alive", code, moved, None, permanent, True)
    if code in (404, 410):
        return Outcome("dead", code, moved, None, permanent, True)
    if code in (401, 403):
        return Outcome("blocked", code, moved, None, permanent, True)
    if code == 429:
        return Outcome("rate-limited", code, moved, None, permanent, True)
    return Outcome("error", code, moved, f"HTTP {code}", permanent, True)


def describe(outcome: Outcome) -> str:
    """`dead 404`, `redirected → URL`, `blocked 403`, `timeout`, `refused`, `rate-limited`, ..."""
    if outcome.status == "redirected":
        return f"redirected{' permanently' if outcome.permanent else ''} → {outcome.final_url}"
    if outcome.code is not None and outcome.status in ("dead", "blocked", "error", "rate-limited"):
        return f"{outcome.status} {outcome.code}" + (
            f" (after a redirect to {outcome.final_url})" if outcome.final_url else ""
        )
    return outcome.status + (f" ({outcome.error})" if outcome.error and outcome.status in ("dead", "error") else "")


def network_unusable(results: Sequence[tuple[Link, Outcome]]) -> bool:
    """No server answered any request and some failure was the network's (not a refused connection)."""
    return bool(results) and not any(o.reached for _, o in results) and any(o.status != "refused" for _, o in results)


def _read_cache(folder: str) -> dict[str, Any]:
    try:
        with open(os.path.join(folder, CACHE_NAME), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(folder: str, old: dict[str, Any], new: dict[str, Outcome], now: float) -> None:
    """The cache with this run's lasting answers added (transient ones are never kept); best effort."""
    from invmap.errors import FileAccessError
    from invmap.writers import replace_own_file

    kept = {u: e for u, e in old.items() if isinstance(e, dict)}
    for url, outcome in new.items():
        if outcome.status in KEPT:
            kept[url] = {**asdict(outcome), "checked": now}
        else:
            kept.pop(url, None)
    with contextlib.suppress(FileAccessError):
        replace_own_file(os.path.join(folder, CACHE_NAME), json.dumps(kept))


def parse_age(text: str) -> float:
    """`30m`, `24h`, `7d`, `90s` or a number of seconds -> seconds; ValueError otherwise."""
    value = text.strip().lower()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    scale = units.get(value[-1:], None)
    number = value[:-1] if scale else value
    try:
        seconds = float(number) * (scale or 1)
    except ValueError:
        raise ValueError(f"takes an age such as 30m, 24h or 7d (0 checks again), not '{text}'") from None
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise ValueError(f"takes an age such as 30m, 24h or 7d (0 checks again), not '{text}'")
    return seconds
