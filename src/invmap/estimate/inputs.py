"""The values one estimate uses, each with where it came from: an option, the model's config, the
GPU's table entry, the field guide's default or invmap's own (its `origin`), and the words the
result says it with (its `from`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from invmap.estimate.checks import check
from invmap.quantities import ESTIMATES, Quantity

# Where an input's value came from.
ORIGINS = ("option", "model", "gpu", "default", "invmap")


@dataclass(frozen=True)
class From:
    """An input's provenance: its `origin` (one of ORIGINS: `default` is the field guide's made-up
    model, device or workload, `invmap` invmap's own choice) and the words the result says it with."""

    origin: str
    text: str


OPTION = From("option", "option")
MODEL = From("model", "model")
GPU = From("gpu", "gpu")


def model_part(detail: str) -> From:
    """The model's config, saying which part: `model (max_position_embeddings)`."""
    return From("model", f"model ({detail})")


def gpu_part(detail: str) -> From:
    return From("gpu", f"gpu ({detail})")


@dataclass(frozen=True)
class Input:
    """One value an estimate used: its name, value, unit and provenance."""

    name: str
    value: Any
    unit: str
    source: From

    @property
    def origin(self) -> str:
        return self.source.origin

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "from": self.source.text}


class Inputs:
    """The values one estimate (`kind`) uses, each with where it came from. An input's unit and its
    last fallback (the field guide's default or invmap's own) are its declaration's."""

    def __init__(self, options: dict[str, Any], kind: str) -> None:
        self.options = options
        self.kind = kind
        self.declared: dict[str, Quantity] = {q.name: q for q in ESTIMATES[kind]}
        self.items: list[Input] = []
        self.values: dict[str, Any] = {}

    def pick(self, name: str, *candidates: tuple[Any, From]) -> Any:
        """The option if given, else the first candidate (value, from) that is not None, else the
        input's declared default (for a scenario's own, the one of the scenario picked)."""
        if name in self.values:
            return self.values[name]
        given = self.options.get(name)
        if given is not None:
            chosen: tuple[Any, From | None] = (check(name, given), OPTION)
        else:
            chosen = next(((v, f) for v, f in candidates if v is not None), (None, None))
        declared = self.declared[name]
        if chosen[0] is None and declared.default is not None and declared.default.by is not None:
            default = declared.default
            value = default.at(self.values.get("scenario"))
            chosen = (value, From("default" if default.by == "ie" else "invmap", default.source))
        if chosen[0] is not None:
            self.add(name, chosen[0], declared.unit, chosen[1])  # type: ignore[arg-type]
        return chosen[0]

    def add(self, name: str, value: Any, unit: str, source: From) -> None:
        if name in self.values:
            self.items = [i for i in self.items if i.name != name]
        self.values[name] = value
        self.items.append(Input(name, value, unit, source))

    def origin(self, name: str) -> str | None:
        """Where an input's value came from (None when it has none)."""
        return next((i.origin for i in self.items if i.name == name), None)

    @property
    def defaults_used(self) -> bool:
        """Whether a number of the field guide's made-up model, device or workload was used (a
        default choice of mode, such as the prefill scenario, is no made-up figure)."""
        return any(i.origin == "default" and not isinstance(i.value, str) for i in self.items)
