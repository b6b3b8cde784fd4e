"""Rebuild catalog.toml from the seed document: `python scripts/build_catalog.py SEED [OUT]`.

Uses the same Markdown reader and Source-text derivation as `invmap import`, then adds what the seed
does not carry as data: the map's title and a short title for each layer code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from invmap.catalog import dumps, validate
from invmap.interchange import read_markdown

TITLE = "LLM inference engineering research map"

# Written from what the sources covering each code have in common.
LAYER_TITLES = {
    "L1": "Kernels and hardware bounds",
    "L2": "Request scheduling and batching",
    "L3": "KV-cache memory management",
    "L4": "Multi-model pooling and autoscaling",
    "L5": "Prefill/decode disaggregation and KV transfer",
    "L6": "Cluster routing and control policy",
    "P0": "Companion projects",
}


def main() -> None:
    seed = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("catalog.toml")
    raw = read_markdown(seed.read_text(encoding="utf-8"), str(seed))
    raw["catalog"]["title"] = TITLE
    raw["layers"] = LAYER_TITLES
    out.write_text(dumps(validate(raw, str(seed))), encoding="utf-8")


if __name__ == "__main__":
    main()
