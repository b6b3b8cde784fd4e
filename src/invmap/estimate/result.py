"""One estimate's result, typed (`Estimate`): every input with its provenance, the results with their
units, what is said of them; `as_json()` is the `--json` object the README documents, and what the
text view and the experiment record are drawn from."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from invmap.estimate.config import Model
from invmap.estimate.defaults import LABEL
from invmap.estimate.gpus import Gpu
from invmap.estimate.inputs import Input, Inputs
from invmap.estimate.refusals import Refused
from invmap.estimate.units import human

# The keys one kind of estimate adds to its JSON object after `human` (null when not known).
EXTRA_KEYS = {"kv": (), "memory": ("fits", "verdict"), "roofline": ("limiting_resource", "scenario")}

DEFAULTS_NOTE = (
    "Some inputs are the field guide's defaults (marked 'from default'), which describe a made-up model, "
    "device and workload: give --model and --gpu, or the options, for a real one."
)


@dataclass
class Said:
    """An estimate's words: its formulas with the numbers put in, what it assumes, what it leaves out,
    and notes."""

    formulas: list[str]
    assumptions: list[str]
    limitations: list[str]
    notes: list[str]


@dataclass(frozen=True)
class Estimate:
    """One estimate (`kind`: kv, memory or roofline), labelled `estimated`: the model's and the GPU's
    summaries (or None), every input with where it came from, the workload, the results with their
    units, the kind's own facts (`extra`: memory's `fits` and `verdict`, roofline's
    `limiting_resource` and `scenario`), and what is said of them."""

    kind: str
    model: dict[str, Any] | None
    gpu: dict[str, Any] | None
    inputs: tuple[Input, ...]
    workload: dict[str, Any]
    results: dict[str, Any]
    units: dict[str, str]
    extra: dict[str, Any]
    formulas: tuple[str, ...]
    assumptions: tuple[str, ...]
    limitations: tuple[str, ...]
    notes: tuple[str, ...]  # a note that defaults were used comes first
    evidence: str = field(default=LABEL)

    @property
    def defaults_used(self) -> bool:
        """Whether a number of the field guide's made-up model, device or workload was used."""
        return any(i.origin == "default" and not isinstance(i.value, str) for i in self.inputs)

    @property
    def from_default(self) -> tuple[str, ...]:
        """The inputs taken from the field guide's defaults, by name."""
        return tuple(i.name for i in self.inputs if i.origin == "default" and not isinstance(i.value, str))

    @property
    def configuration(self) -> dict[str, Any]:
        return {i.name: i.value for i in self.inputs}

    @property
    def human(self) -> dict[str, str]:
        return {name: human(value, self.units[name]) for name, value in self.results.items()}

    def input(self, name: str) -> Input | None:
        return next((i for i in self.inputs if i.name == name), None)

    @property
    def fits(self) -> bool | None:
        return self.extra.get("fits")

    @property
    def verdict(self) -> str | None:
        return self.extra.get("verdict")

    @property
    def limiting_resource(self) -> str | None:
        return self.extra.get("limiting_resource")

    def as_json(self) -> dict[str, Any]:
        """The one-result object of `estimate kv|memory|roofline --json` (README "JSON")."""
        return {
            "estimate": self.kind,
            "evidence": self.evidence,
            "model": self.model,
            "gpu": self.gpu,
            "configuration": self.configuration,
            "inputs": [i.as_json() for i in self.inputs],
            "workload": dict(self.workload),
            "results": dict(self.results),
            "units": dict(self.units),
            "human": self.human,
            **{key: self.extra.get(key) for key in EXTRA_KEYS[self.kind]},
            "formulas": list(self.formulas),
            "assumptions": list(self.assumptions),
            "limitations": list(self.limitations),
            "notes": list(self.notes),
            "defaults_used": self.defaults_used,
        }


def estimate_result(
    kind: str,
    inputs: Inputs,
    model: Model | None,
    gpu: Gpu | None,
    results: dict[str, Any],
    units: dict[str, str],
    said: Said,
    workload: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> Estimate:
    """The result of estimate `kind`: results with their units, every input with where it came from,
    and what is said of them (a note first when a field guide default was used). A result that is not
    a finite number is refused: the inputs' bounds keep every result finite, and this says so if not."""
    for name, value in results.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise Refused("not_finite", f"the estimate's {name} is not a finite number ({value})", name)
    notes = list(said.notes)
    if inputs.defaults_used:
        notes.insert(0, DEFAULTS_NOTE)
    if model is not None and model.defaults:
        notes.append(
            "Keys the config leaves out are read as transformers' defaults for its family: "
            + "; ".join(model.defaults)
            + "."
        )
    return Estimate(
        kind,
        model.summary() if model is not None else None,
        gpu.summary() if gpu is not None else None,
        tuple(inputs.items),
        workload,
        results,
        units,
        dict(extra or {}),
        tuple(said.formulas),
        tuple(said.assumptions),
        tuple(said.limitations),
        tuple(notes),
    )
