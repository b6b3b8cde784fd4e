"""`estimate fit`: the capacity question. The engine's start-up (`estimate memory --engine`) for each
tensor-parallel size of one node, and the smallest that holds --concurrency requests of
--max-model-len tokens; a size the engine would refuse (query heads that do not divide) is a
refused scenario with the engine's reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from invmap.estimate.checks import check, check_all, check_needs
from invmap.estimate.defaults import LABEL
from invmap.estimate.scenario import Outcome, Scenario, run_all
from invmap.quantities import FIT_TENSOR_PARALLEL, INPUTS, flags_of


@dataclass(frozen=True)
class Fit:
    """The scenarios tried (one a tensor-parallel size), what was asked, and the smallest that holds it."""

    outcomes: list[Outcome]
    concurrency: int
    chosen: int | None  # index into outcomes

    @property
    def answer(self) -> dict[str, Any] | None:
        if self.chosen is None:
            return None
        estimate = self.outcomes[self.chosen].estimate
        tp, pp = estimate.configuration["tensor_parallel"], estimate.configuration["pipeline_parallel"]  # type: ignore[union-attr]
        r = estimate.results  # type: ignore[union-attr]
        return {
            "tensor_parallel": tp,
            "pipeline_parallel": pp,
            "gpus": tp * pp,
            "max_concurrency": r["max_concurrency"],
            "kv_pool_tokens": r["kv_pool_tokens"],
            "longest_request_tokens": r["longest_request_tokens"],
        }

    @property
    def sentence(self) -> str:
        first = next((o.estimate for o in self.outcomes if o.estimate is not None), None)
        length = first.configuration.get("tokens_per_request") if first is not None else None
        asked = f"{self.concurrency:,} request{'s' if self.concurrency != 1 else ''}" + (
            f" of {length:,} tokens" if length else ""
        )
        answer = self.answer
        if answer is None:
            return f"No tensor-parallel size up to {max(FIT_TENSOR_PARALLEL)} holds {asked} on this device."
        gpus = answer["gpus"]
        return (
            f"The smallest that holds {asked}: tensor parallel {answer['tensor_parallel']}"
            + (f" x pipeline {answer['pipeline_parallel']}" if answer["pipeline_parallel"] > 1 else "")
            + f" ({gpus} GPU{'s' if gpus > 1 else ''}), {answer['max_concurrency']:.2f}x concurrency."
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "estimate": "fit",
            "evidence": LABEL,
            "concurrency": self.concurrency,
            "answer": self.answer,
            "verdict": self.sentence,
            "scenarios": [o.as_json() for o in self.outcomes],
        }


def fit(model: str | None, gpu: str | None, flags: dict[str, Any]) -> Fit:
    """The engine's start-up at each tensor-parallel size of FIT_TENSOR_PARALLEL, and the smallest size
    whose pool holds `concurrency` requests (each at most its max_model_len)."""
    given = {k: v for k, v in flags.items() if v is not None and k in flags_of("fit")}
    check_all(given)
    check_needs("fit", {*given, *(["model"] if model is not None else []), *(["gpu"] if gpu is not None else [])})
    wanted = given.pop("concurrency", None)
    wanted = INPUTS["concurrency"].bounds.low if wanted is None else check("concurrency", wanted)
    given.setdefault("engine", "vllm")
    scenarios = [
        Scenario("memory", model=model, gpu=gpu, flags={**given, "tensor_parallel": tp}) for tp in FIT_TENSOR_PARALLEL
    ]
    outcomes = run_all(scenarios)
    chosen = next(
        (
            n
            for n, o in enumerate(outcomes)
            if o.estimate is not None and o.estimate.fits and o.estimate.results["max_concurrency"] >= wanted
        ),
        None,
    )
    if all(o.refusal is not None for o in outcomes):  # nothing to compare: the first refusal is the answer
        raise outcomes[0].refusal.raised()  # type: ignore[union-attr]
    return Fit(outcomes, wanted, chosen)
