"""The shipped catalog is the seed's table, cell for cell, and carries the seed's notes and procedure."""

from __future__ import annotations

import json

import pytest

from conftest import SEED, seed_rows
from invmap import catalog as catalog_io
from invmap.vocabulary import SEED_COLUMNS

ROWS = seed_rows()


def test_seed_fixture_has_thirty_rows():
    assert len(ROWS) == 30


@pytest.fixture(scope="module")
def shipped():
    return catalog_io.load(str(catalog_io.shipped_path()))


@pytest.mark.parametrize("position", range(30))
def test_every_cell_verbatim(shipped, position):
    row, source = ROWS[position], shipped.sources[position]
    assert source.type == row["Direction/type"]
    assert source.source == row["Source"]
    assert (str(source.year) if source.year is not None else "n.d.") == row["Year"]
    assert source.layer == row["Layer"]
    assert source.mechanism == row["Central mechanism"]
    assert source.objective == row["Reported objective"]
    assert source.question == row["Unresolved engineering question"]
    assert source.availability == row["Implementation availability"]
    assert source.accessed.isoformat() == row["Accessed"]


def test_json_output_matches_seed(cli):
    records = json.loads(cli("list", "--json").out)
    assert len(records) == 30
    for row, record in zip(ROWS, records):
        for header, key in SEED_COLUMNS:
            value = record[key]
            expected = row[header]
            if key == "year":
                assert value == (None if expected == "n.d." else int(expected))
            else:
                assert value == expected


def test_notes_and_procedure_come_from_the_seed(shipped):
    text = SEED.read_text(encoding="utf-8").splitlines()
    assert shipped.catalog.preface == text[0]
    steps = [line[2:] for line in text if line.startswith("- ")]
    assert list(shipped.catalog.procedure) == steps and len(steps) == 5
    assert shipped.catalog.afterword == text[-1]


def test_derived_identity_fields(shipped):
    by_id = {s.id: s for s in shipped.sources}
    assert len(by_id) == 30
    assert by_id["pagedattention"].name == "PagedAttention"
    assert by_id["pagedattention"].authors == "Kwon et al."
    assert by_id["vllm"].name == "vLLM"
    assert by_id["llm-d"].name == "llm-d"
    assert by_id["roofline"].authors == "Williams, Waterman, and Patterson"
    assert by_id["mooncake"].arxiv == "2407.00079"
    assert by_id["bullet"].doi == "10.1145/3779212.3790135"
    assert by_id["vattention"].authors is None and by_id["vattention"].name == "vAttention"
    bare = "Fast Inference from Transformers via Speculative Decoding"
    assert by_id["speculative-decoding"].name == "Speculative Decoding"
    assert by_id["speculative-decoding"].source == by_id["speculative-decoding"].title == bare


def test_no_performance_figures_added(shipped):
    # The map omits paper-reported performance figures on purpose: no field may add any.
    for source in shipped.sources:
        assert "%" not in " ".join(str(v) for v in source if v is not None)
