"""The map's vocabulary: layer codes and how labels name them, the seed's columns.

Plain constants and one pure function, with no pydantic: completion, help and the records all
share them, and the light paths must not pay for building the models. Fields live in `fields.py`.
"""

from __future__ import annotations

import re
from functools import lru_cache

# The layer codes of the map, in display order: six system layers, the runtime levers that act across
# them (quantization, speculative decoding, parallelism: `RL`), then the portfolio layer.
LAYER_CODES: tuple[str, ...] = ("L1", "L2", "L3", "L4", "L5", "L6", "RL", "P0")
LEVELS: tuple[str, ...] = LAYER_CODES[:6]  # the six levels of the stack
TRIAGE_CODES: tuple[str, ...] = (*LEVELS, "RL")  # what a symptom can be triaged to (and a report labelled)
LAYER_CODES_TEXT = ", ".join(LAYER_CODES)

# "L3", "l3", and ranges such as "L4 to L6", "L4-L6" or "L4..L6".
_CODE_OR_RANGE = re.compile(r"\b([LP])(\d+)\b(?:\s*(?:to|-|–|\.\.)\s*\b([LP])(\d+)\b)?", re.IGNORECASE)
# The seed's words for the runtime levers ("Runtime lever", "L2 and runtime lever"), and the code itself.
_LEVER = re.compile(r"\bruntime levers?\b|\bRL\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def layer_codes(label: str) -> tuple[str, ...]:
    """The layer codes a label covers, in map order.

    `L3` -> (L3,); `L2 and L3` -> (L2, L3); `L4 to L6` -> (L4, L5, L6); `Runtime lever` -> (RL,);
    `L2 and runtime lever` -> (L2, RL).
    A code outside L1..L6/P0 (`L9`) or a reversed range (`L6 to L4`) raises ValueError.
    """
    found: set[str] = {"RL"} if _LEVER.search(label) else set()
    for match in _CODE_OR_RANGE.finditer(label):
        letter, first, end_letter, last = match.groups()
        start = f"{letter.upper()}{int(first)}"
        _require_code(start, label)
        if end_letter is None:
            found.add(start)
            continue
        end = f"{end_letter.upper()}{int(last)}"
        _require_code(end, label)
        i, j = LAYER_CODES.index(start), LAYER_CODES.index(end)
        if end_letter.upper() != letter.upper() or j < i:
            raise ValueError(f"layer range '{match.group(0)}' in {label!r} does not go from a lower to a higher code")
        found.update(LAYER_CODES[i : j + 1])
    return tuple(code for code in LAYER_CODES if code in found)


def _require_code(code: str, label: str) -> None:
    if code not in LAYER_CODES:
        raise ValueError(f"unknown layer code '{code}' in {label!r} (valid codes: {LAYER_CODES_TEXT})")


# The nine columns of the seed's table, with the seed's headers.
SEED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Direction/type", "type"),
    ("Source", "source"),
    ("Year", "year"),
    ("Layer", "layer"),
    ("Central mechanism", "mechanism"),
    ("Reported objective", "objective"),
    ("Unresolved engineering question", "question"),
    ("Implementation availability", "availability"),
    ("Accessed", "accessed"),
)
