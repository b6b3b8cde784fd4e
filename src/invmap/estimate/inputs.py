"""The values one estimate uses, each with where it came from (an option, the model, the GPU, the
field guide's default or invmap's own)."""

from __future__ import annotations

from typing import Any

from invmap.estimate.checks import check


class Inputs:
    """The values an estimate uses, each with where it came from (`option`, `model`, `gpu`, the field
    guide's `default`, or invmap's own default)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.items: list[dict[str, Any]] = []
        self.values: dict[str, Any] = {}

    def pick(self, name: str, unit: str, *candidates: tuple[Any, str]) -> Any:
        """The option if given, else the first candidate (value, from) that is not None."""
        if name in self.values:
            return self.values[name]
        given = self.options.get(name)
        if given is not None:
            chosen: tuple[Any, str] = (check(name, given), "option")
        else:
            chosen = next(((v, f) for v, f in candidates if v is not None), (None, ""))
        if chosen[0] is not None:
            self.add(name, chosen[0], unit, chosen[1])
        return chosen[0]

    def add(self, name: str, value: Any, unit: str, source: str) -> None:
        if name in self.values:
            self.items = [i for i in self.items if i["name"] != name]
        self.values[name] = value
        self.items.append({"name": name, "value": value, "unit": unit, "from": source})

    @property
    def defaults_used(self) -> bool:
        return any(i["from"] == "default" for i in self.items)
