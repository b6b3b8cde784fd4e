"""Generate large, valid catalogs for benchmarks: `python benchmarks/generate.py N OUT.toml`.

Sources are built from the shipped catalog's own vocabulary with realistic lengths (~870 bytes of
TOML a source, so 100,000 sources are ~87 MB), deterministic for a given N.
"""

from __future__ import annotations

import datetime as dt
import random
import sys
from pathlib import Path

import tomli_w

from invmap import canonical
from invmap import catalog as catalog_io
from invmap.sourcetext import slug

LABELS = [
    "L1",
    "L2",
    "L3",
    "L4",
    "L5",
    "L6",
    "P0 field guide",
    "L2 and L3",
    "L3 and L5",
    "L4 to L6",
    "Runtime lever",
    "L2 and runtime lever",
    "Model and KV memory",
]


def sentence(rng: random.Random, words: list[str], low: int, high: int) -> str:
    text = " ".join(rng.choice(words) for _ in range(rng.randint(low, high)))
    return text[0].upper() + text[1:] + "."


def generate(count: int, seed: int = 7, layers: bool = True) -> str:
    shipped = catalog_io.load(str(catalog_io.shipped_path()))
    words = sorted(
        {
            w.strip(".,;?").lower().replace("'", "")
            for s in shipped.sources
            for w in f"{s.mechanism} {s.objective} {s.question}".split()
        }
    )
    types = sorted({s.type for s in shipped.sources})
    rng = random.Random(seed)
    sources = []
    for n in range(count):
        name = f"{rng.choice(words).capitalize()}{rng.choice(words).capitalize()}-{n}"
        entry = {"id": slug(name), "name": name, "source": f"{name}, {rng.choice(words).capitalize()} et al."}
        entry["authors"] = entry["source"].split(", ", 1)[1]
        if n % 3 == 0:
            entry["arxiv"] = f"{rng.randint(2001, 2612)}.{rng.randint(10000, 99999)}"
        entry["type"] = rng.choice(types)
        if n % 7:
            entry["year"] = rng.randint(1990, 2026)
        entry.update(
            layer=rng.choice(LABELS),
            mechanism=sentence(rng, words, 14, 26),
            objective=sentence(rng, words, 12, 22),
            question=sentence(rng, words, 14, 26),
            availability=sentence(rng, words, 3, 8),
            accessed=dt.date(2026, 1, 1) + dt.timedelta(days=rng.randint(0, 300)),
        )
        sources.append(entry)
    # A [[sources]] file with the shipped level descriptions (which `triage` ranks), as a catalog
    # copied from the shipped one and grown keeps them.
    # (`layers=False`: a plain [[sources]] file.)
    # With the levels, the shipped reports too (their sources left out: the generated ids differ), as
    # triage ranks with them.
    shipped_table = canonical.to_toml_dict(shipped)
    head = {"layers": shipped_table["layers"]} if layers else {}
    reports = [{k: v for k, v in r.items() if k != "sources"} for r in shipped_table.get("reports", [])]
    return canonical._with_sources(tomli_w.dumps(head), sources, reports if layers else [])


def main() -> None:
    count, out = int(sys.argv[1]), Path(sys.argv[2])
    out.write_text(generate(count), encoding="utf-8")


if __name__ == "__main__":
    main()
