"""The label every estimate carries, and the field guide's `ie roofline` defaults by scenario (read
from the inputs' declarations in `invmap.quantities`, where every default is declared with whose it
is)."""

from __future__ import annotations

from invmap.quantities import INPUTS, KINDS, SCENARIOS

__all__ = ["IE_ROOFLINE", "KINDS", "LABEL"]

LABEL = "estimated"


# The field guide's `ie roofline` defaults (src/inference_engineering/cli.py), one set a scenario.
IE_ROOFLINE = {
    scenario: {
        name: INPUTS[name].default.at(scenario)
        for name in ("operations", "bytes_moved", "peak_operations_per_second", "bandwidth_bytes_per_second")
    }
    for scenario in SCENARIOS
}
