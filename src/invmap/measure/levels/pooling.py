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
    found = (_model_queues(view, rule) if waiting is not None else None) or _models_served(view, rule)
    if found is None and waiting is None:
        return Missing("a requests-waiting metric")
    return found


def _model_label(view: Any) -> str | None:
    from invmap.measure.names import BY_KEY

    return BY_KEY[view.engine].model_label if view.engine else None


# What tells how many requests each model had: a finished counter, a latency histogram's count, tokens.
SERVED = (("finished", "counter", "requests finished"), ("e2e", "histogram", "requests"),
          ("ttft", "histogram", "requests"), ("prompt_tokens", "counter", "prompt tokens"))  # fmt: skip


def _models_served(view: Any, rule: Rule) -> Finding | None:
    """Several models (a base model and its LoRA adapters, or several models) served by one engine:
    the structure of L4, stated with each model's numbers; a weak finding alone (nothing says they
    contend), so it is said with low confidence."""
    label = _model_label(view)
    if label is None:
        return None
    for key, kind, unit in SERVED:
        by_model = view.counter_by(key, label) if kind == "counter" else view.count_by(key, label)
        busy = {m: v for m, v in by_model.items() if v > 0}
        if len(busy) >= rule.t("tenants"):
            shown = ", ".join(f"{m}: {count(v)}" for m, v in sorted(busy.items(), key=lambda kv: (-kv[1], kv[0])))
            return Finding(
                f"{len(busy)} models share one engine ({unit} {view.span()}: {shown}): base models and adapters "
                "served together divide its batch and KV cache",
                {"by_model": {m: round(v) for m, v in sorted(busy.items())}, "counted": key},
                strength=0.1,
            )
    return None


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
    label = _model_label(view)
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
