"""L4 (model and GPU pooling): LoRA adapters waiting for slots, or several models on one engine each
with its own queue."""

from __future__ import annotations

from typing import Any

from invmap.measure.findings import Finding, Missing, Rule
from invmap.measure.wording import count


def multiplexed(view: Any, rule: Rule) -> Finding | Missing | None:
    """Tenants queueing on one engine: LoRA adapters waiting for slots, or several models' queues."""
    waiting = view.gauge("waiting")
    found = _adapters_waiting(view, rule) or _adapter_slots_full(view, waiting)
    if found is not None:
        return found
    if waiting is None:
        return Missing("a requests-waiting metric")
    return _model_queues(view, rule)


def _adapters_waiting(view: Any, rule: Rule) -> Finding | None:
    lora = view.info("lora_info")
    if lora is None:
        return None
    running = [a for a in lora.get("running_lora_adapters", "").split(",") if a]
    waiting = [a for a in lora.get("waiting_lora_adapters", "").split(",") if a]
    if len(set(running) | set(waiting)) >= rule.t("tenants") and waiting:
        limit = f" (max_lora {lora['max_lora']})" if lora.get("max_lora") else ""
        return Finding(
            f"LoRA adapters {', '.join(running) or 'none'} running and {', '.join(waiting)} waiting{limit}: "
            "adapters queue for slots on one engine",
            {"running_adapters": running, "waiting_adapters": waiting},
            strength=min(1.0, len(waiting) / 4),
            momentary=True,
        )
    return None


def _adapter_slots_full(view: Any, waiting: Any) -> Finding | None:
    pool = view.gauge("lora_pool_use")
    if pool is not None and waiting is not None and pool.value >= 1.0 and waiting.value >= 1:
        return Finding(
            f"LoRA adapter slots full ({pool.value:.2f}) with {count(waiting.value)} requests waiting",
            {"lora_pool_use": round(pool.value, 4), "waiting": round(waiting.value)},
            strength=0.5,
            momentary=True,
        )
    return None


def _model_queues(view: Any, rule: Rule) -> Finding | None:
    from invmap.measure.names import BY_KEY

    label = BY_KEY[view.engine].model_label if view.engine else None
    if label is None:
        return None  # no label names a model: one model to a process
    queues = view.gauge_by("waiting", label)
    if len(queues) >= rule.t("tenants") and any(v >= 1 for v in queues.values()):
        shown = ", ".join(f"{m}: {count(v)} waiting" for m, v in sorted(queues.items()))
        return Finding(
            f"{len(queues)} models share one engine, each with its own queue ({shown})",
            {"waiting_by_model": {m: round(v) for m, v in sorted(queues.items())}},
            strength=0.5,
            momentary=True,
        )
    return None
