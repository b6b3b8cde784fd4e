"""The shipped tables (`data/models.toml`, `data/gpus.toml`): read once, when an estimate or a TAB
needs them, and an entry found by its name or display name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from invmap.estimate.refusals import Refused

DATA = Path(__file__).parent.parent / "data"


_TABLES: dict[str, list[dict[str, Any]]] = {}


def table(name: str) -> list[dict[str, Any]]:
    if name not in _TABLES:
        import tomli  # small files; tomli words any error, and the files ship with invmap

        with open(DATA / f"{name}s.toml", "rb") as handle:
            _TABLES[name] = tomli.load(handle)[name]
    return _TABLES[name]


def model_table() -> list[dict[str, Any]]:
    return table("model")


def gpu_table() -> list[dict[str, Any]]:
    return table("gpu")


def model_names() -> tuple[str, ...]:
    return tuple(m["name"] for m in model_table())


def gpu_names() -> tuple[str, ...]:
    return tuple(g["name"] for g in gpu_table())


def folded(text: str) -> str:
    return re.sub(r"[\s_]+", "-", text.strip().casefold())


def entry_named(entries: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The entry whose name, display name or Hugging Face id (`hub_id`, a model's) is `name` (case,
    spaces and underscores aside)."""
    wanted = folded(name)
    return next(
        (e for e in entries if wanted in (folded(e["name"]), folded(e["display"]), folded(e.get("hub_id") or ""))),
        None,
    )


def unknown(kind: str, name: str, names: tuple[str, ...], hint: str) -> Refused:
    """The refusal of a name no shipped entry has (exit 2): the closest name, and every one."""
    import difflib

    close = difflib.get_close_matches(folded(name), names, n=1, cutoff=0.6)
    suggestion = f"; did you mean '{close[0]}'?" if close else ""
    which = "model" if kind == "model" else "gpu"
    return Refused(f"unknown_{which}", f"unknown {kind} '{name}'{suggestion} ({hint}: {', '.join(names)})", which)
