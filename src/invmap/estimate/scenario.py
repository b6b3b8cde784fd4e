"""Estimates as scenarios: a `Scenario` in (which estimate, the model and GPU by name, the engine, the
inputs given: plain data, as a command line or a tool call gives them), an `Outcome` out (the typed
`Estimate`, or the `Refusal` saying why not). `run_all` runs a list of scenarios (a sweep), reading
each model and GPU once; every outcome keeps its inputs' provenance and its notes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from invmap.errors import InvmapError
from invmap.estimate.checks import check
from invmap.estimate.config import Model, load_model
from invmap.estimate.defaults import LABEL
from invmap.estimate.gpus import Gpu, find_gpu
from invmap.estimate.kv_estimate import kv_estimate
from invmap.estimate.memory_estimate import memory_estimate
from invmap.estimate.refusals import Refusal, Refused, refusal_of
from invmap.estimate.result import Estimate
from invmap.estimate.roofline_estimate import roofline_estimate
from invmap.quantities import ENGINES, INPUTS, KINDS, flags_of, inputs_of


@dataclass(frozen=True)
class Scenario:
    """One estimate to make: `estimate` (kv, memory or roofline), `model` (a config.json, its folder
    or a shipped name) and `gpu` (a shipped name) as given, `engine` (None: no engine's start-up is
    modelled yet), and `flags`: the other inputs given, by name (`quantities.inputs_of`), as typed
    (numbers, a size such as "80GB", a choice). An input left out takes its provenance's fallback."""

    estimate: str
    model: str | None = None
    gpu: str | None = None
    engine: str | None = None
    flags: Mapping[str, Any] = field(default_factory=dict)

    def varied(self, **flags: Any) -> Scenario:
        """The same scenario with these inputs given instead (None leaves one out)."""
        merged = {**self.flags, **flags}
        return replace(self, flags={k: v for k, v in merged.items() if v is not None})

    def as_json(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "model": self.model,
            "gpu": self.gpu,
            "engine": self.engine,
            "flags": dict(self.flags),
        }


@dataclass(frozen=True)
class Outcome:
    """What one scenario gave: its `estimate`, or its `refusal` (never both)."""

    scenario: Scenario
    estimate: Estimate | None = None
    refusal: Refusal | None = None

    @property
    def ok(self) -> bool:
        return self.estimate is not None

    def as_json(self) -> dict[str, Any]:
        """The estimate's one-result object; a refused scenario as `{estimate, evidence, scenario, refused}`."""
        if self.estimate is not None:
            return self.estimate.as_json()
        return {
            "estimate": self.scenario.estimate,
            "evidence": LABEL,
            "scenario": self.scenario.as_json(),
            "refused": self.refusal.as_json(),  # type: ignore[union-attr]
        }


ESTIMATORS: dict[str, Callable[..., Estimate]] = {
    "kv": lambda options, model, gpu: kv_estimate(options, model),
    "memory": memory_estimate,
    "roofline": roofline_estimate,
}


class _Tables:
    """The models and GPUs a run of scenarios names, each read once (a failure too, as a refusal)."""

    def __init__(self) -> None:
        self.models: dict[str, Model | InvmapError] = {}
        self.gpus: dict[str, Gpu | InvmapError] = {}

    def model(self, ref: str | None) -> Model | None:
        return None if ref is None else self._once(self.models, ref, load_model)

    def gpu(self, name: str | None) -> Gpu | None:
        return None if name is None else self._once(self.gpus, name, find_gpu)

    @staticmethod
    def _once(seen: dict[str, Any], key: str, read: Callable[[str], Any]) -> Any:
        if key not in seen:
            try:
                seen[key] = read(key)
            except InvmapError as exc:
                seen[key] = exc
        if isinstance(seen[key], InvmapError):
            raise seen[key]
        return seen[key]


def _checked(scenario: Scenario) -> dict[str, Any]:
    """The scenario's inputs as an estimate takes them (every declared flag, None when not given);
    an estimate, input or engine it does not know is refused."""
    kind = scenario.estimate
    if kind not in KINDS:
        raise Refused("unknown_estimate", f"unknown estimate '{kind}' (estimates: {', '.join(KINDS)})")
    names = flags_of(kind)
    unknown = [name for name in scenario.flags if name not in names]
    if scenario.gpu is not None and "gpu" not in {q.name for q in inputs_of(kind)}:
        unknown.insert(0, "gpu")
    if unknown:
        raise Refused("unknown_input", f"estimate {kind} takes no input '{unknown[0]}'", unknown[0])
    if scenario.engine is not None and scenario.engine not in ENGINES:
        known = f"one of {', '.join(ENGINES)}" if ENGINES else "none yet: leave it out"
        raise Refused("engine", f"estimates model no engine '{scenario.engine}' ({known})", "engine")
    if scenario.engine is not None and "engine" not in names:
        raise Refused(
            "engine", f"estimate {kind} models no engine's start-up (estimate memory --engine does)", "engine"
        )
    options = {name: scenario.flags.get(name) for name in names}
    if scenario.engine is not None and "engine" in options:
        options["engine"] = scenario.engine
    for name, value in options.items():  # a count typed as vLLM reads one (128k, 32K) becomes its number
        if isinstance(value, str) and INPUTS[name].kind == "tokens":
            options[name] = check(name, value)
    return options


def run(scenario: Scenario, tables: _Tables | None = None) -> Outcome:
    """One scenario's estimate, or the refusal saying why not (as data: never raised)."""
    tables = tables or _Tables()
    try:
        options = _checked(scenario)
        model = tables.model(scenario.model)
        gpu = tables.gpu(scenario.gpu)
        return Outcome(scenario, estimate=ESTIMATORS[scenario.estimate](options, model, gpu))
    except InvmapError as exc:
        return Outcome(scenario, refusal=refusal_of(exc))


def run_all(scenarios: Iterable[Scenario]) -> list[Outcome]:
    """Each scenario's outcome, in order (a sweep): every model and GPU named is read once."""
    tables = _Tables()
    return [run(s, tables) for s in scenarios]


def kv(options: dict[str, Any], model: Model | None) -> dict[str, Any]:
    """`estimate kv`'s JSON object from an options dictionary and a loaded model (errors raised)."""
    return kv_estimate(options, model).as_json()


def memory(options: dict[str, Any], model: Model | None, gpu: Gpu | None) -> dict[str, Any]:
    """`estimate memory`'s JSON object from an options dictionary, a loaded model and GPU."""
    return memory_estimate(options, model, gpu).as_json()


def roofline(options: dict[str, Any], model: Model | None, gpu: Gpu | None) -> dict[str, Any]:
    """`estimate roofline`'s JSON object from an options dictionary, a loaded model and GPU (what
    `measure.DecodeBound` calls)."""
    return roofline_estimate(options, model, gpu).as_json()
