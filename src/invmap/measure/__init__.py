"""From measurements to levels: an engine's (or a router's) Prometheus scrape or a benchmark's results,
read against the rules in `rules.py` (declared in data/rules.toml), give level assessments
`[{code, score, confidence, evidence}]` and notes (assessing.py); here, a scrape fetched from a URL, the
decode bandwidth bound a rule compares with, and the measured levels combined with the words'.

Nothing here imports the CLI; the network is reached only through `invmap.net`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from invmap.measure.assessing import Assessment, assess_bench, assess_compare, assess_scrapes
from invmap.text import plural

__all__ = ["Assessment", "DecodeBound", "assess_bench", "assess_compare", "assess_scrapes", "combine", "scrape_url"]

ACCEPT = "text/plain;version=0.0.4"  # what a scrape asks for: the text format prometheus_client parses
SCRAPE_DEADLINE = 30.0
SCRAPE_CAP = 256 * 2**20  # as a file's or stdin's (scrape.CAP)
SPOOL = 8 * 2**20  # bytes of a scraped body held in memory; past this it is spooled to a temporary file


def scrape_url(url: str) -> Any:
    """One scrape of `url` through the network helper: exit 4 for any failure, an HTTP status of 400 or
    more included. The body is written to a temporary file as it arrives (in memory up to `SPOOL`
    bytes), then read from there a line at a time as a file is: a body near the cap is never held
    whole (before, a 256 MiB body peaked at twice that)."""
    import tempfile

    import invmap.measure.scrape as scrape
    from invmap import net
    from invmap.errors import NetworkError

    with tempfile.SpooledTemporaryFile(max_size=SPOOL, prefix="invmap-scrape-") as body:
        answer = net.fetch(
            url, service=url, deadline=SCRAPE_DEADLINE, cap=SCRAPE_CAP, headers={"Accept": ACCEPT}, into=body
        )
        if answer.status >= 400:
            raise NetworkError(f"{url} answered HTTP {answer.status}", kind="error")
        body.seek(0)
        return scrape.read(body, url)  # type: ignore[arg-type]


class DecodeBound:
    """The shortest a decode step can take: reading `model`'s weights and the batch's KV once from
    memory at `bandwidth` bytes per second (else `gpu`'s), derated by `efficiency` (the fraction of it
    a step reaches; None is 1), by invmap.estimate's roofline (decode scenario) with compute left
    unbounded, since the bound sought is the memory one."""

    def __init__(self, model: Any, gpu: Any, bandwidth: float | None, efficiency: float | None = None) -> None:
        self.model, self.gpu, self.bandwidth, self.efficiency = model, gpu, bandwidth, efficiency
        self._seen: dict[tuple[int, int], float] = {}

    def seconds(self, batch: int, context: int) -> float | None:
        """The bound in seconds, or None where the batch or context measured is past what an
        estimate takes (the measurement's, not an option's: nothing to blame on --batch-size)."""
        from invmap import estimate
        from invmap.errors import UsageError

        key = (max(1, batch), max(1, context))
        if key not in self._seen:
            try:
                found = estimate.roofline(self._options(*key), self.model, self.gpu)["results"][
                    "step_time_lower_bound_seconds"
                ]
            except UsageError:
                return None
            self._seen[key] = float(found)
        return self._seen[key]

    def check(self) -> None:
        """The bound of one request of one token, its errors raised as the estimate commands raise
        them: a config that cannot be read (exit 3 with the file and key) is said whatever batch and
        context are measured, even those `seconds` is None for."""
        from invmap import estimate

        estimate.roofline(self._options(1, 1), self.model, self.gpu)

    def _options(self, batch: int, context: int) -> dict[str, Any]:
        """The roofline's options: decode of `batch` requests of `context` tokens, compute unbounded."""
        from invmap import estimate

        options: dict[str, Any] = {
            "scenario": "decode",
            "batch_size": batch,
            "context_tokens": context,
            "peak_operations_per_second": estimate.MAX_RATE,
        }
        if self.bandwidth is not None:
            options["bandwidth_bytes_per_second"] = self.bandwidth
        if self.efficiency is not None:
            options["efficiency"] = self.efficiency
        return options

    def rate(self) -> str:
        rate = self.bandwidth if self.bandwidth is not None else self.gpu.bandwidth
        named = self.gpu.display if self.gpu is not None and self.bandwidth is None else ""
        if self.efficiency is not None and self.efficiency != 1:
            of = f"{self.efficiency:g} x {rate / 1e12:.3g} TB/s" + (f", {named}" if named else "")
            return f"{rate * self.efficiency / 1e12:.3g} TB/s ({of})"
        return f"{rate / 1e12:.3g} TB/s" + (f" ({named})" if named else "")


def _shaped(item: dict[str, Any]) -> dict[str, Any]:
    """An item with every key of the one level shape (`triage.KEYS`; absent parts empty), and what the
    terminal view needs (keys starting with `_`)."""
    from invmap import triage

    empty: dict[str, Any] = {"confidence": "", "matched": [], "excluded": [], "corrected": {}, "question": None}
    shaped = {k: item.get(k, empty.get(k, [])) for k in triage.KEYS}
    shaped.update({k: v for k, v in item.items() if k.startswith("_")})
    shaped.setdefault("_marked", [])
    return shaped


def combine(
    index: Any,
    measured: Assessment,
    worded: list[dict[str, Any]],
    words: Sequence[str],
    filters: Any,
    limit: int | None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Levels from measurements first (best first), each with the words' match where the words found it
    too; then levels only the words found, with low confidence when measurements point elsewhere.
    Returns the items (at most `limit`; None: all) and notes (a disagreement between the two is said)."""
    from invmap import triage

    by_code = {item["code"]: item for item in worded}
    items: list[dict[str, Any]] = []
    notes: list[str] = []
    for level in measured.levels:
        base = by_code.pop(level["code"], None) or triage.level_item(index, level["code"], words, filters)
        if base is None:
            base = {"code": level["code"], "title": level["code"], "_marked": []}
            notes.append(f"this catalog has no level {level['code']}; its evidence is shown without sources")
        item = dict(base)
        item["score"] = level["score"]
        item["confidence"] = level["confidence"]
        item["evidence"] = level["evidence"]
        items.append(_shaped(item))
    leftover = [by_code[item["code"]] for item in worded if item["code"] in by_code]
    if measured.levels and worded and worded[0]["code"] not in {lv["code"] for lv in measured.levels}:
        top = measured.levels[0]["code"]
        notes.append(
            f"the measurements point to {top}, the words first to {worded[0]['code']}: measurements outweigh "
            "words, so the measured levels come first"
        )
    if worded and not measured.levels:
        notes.append("no rule fired on the measurements: the levels below are the words' alone")
    for item in leftover:
        shaped = _shaped(item)
        if measured.levels:
            shaped["confidence"] = "low"  # words alone, where the numbers point elsewhere
        items.append(shaped)
    if limit and len(items) > limit:
        more = len(items) - limit
        notes.append(f"{plural(more, 'more level')} not shown (--limit {limit})")
        items = items[:limit]
    return items, notes
