"""Layer labels -> codes, and what a valid source is."""

from __future__ import annotations

import datetime as dt

import pytest

from conftest import JSON_KEYS
from invmap.vocabulary import layer_codes


@pytest.mark.parametrize(
    "label, codes",
    [
        ("L3", ("L3",)),
        ("L2 and L3", ("L2", "L3")),
        ("L4 to L6", ("L4", "L5", "L6")),
        ("L1 and machine model", ("L1",)),
        ("P0 field guide", ("P0",)),
        ("Runtime lever", ("RL",)),
        ("L2 and runtime lever", ("L2", "RL")),
        ("L3 and L5", ("L3", "L5")),
        ("Model and KV memory", ()),
        ("l5", ("L5",)),
        ("L4-L6", ("L4", "L5", "L6")),
        ("L5 and L2", ("L2", "L5")),
    ],
)
def test_layer_codes(label, codes):
    assert layer_codes(label) == codes


@pytest.mark.parametrize("label", ["L9", "L0", "P1", "L6 to L4", "L2 and L7"])
def test_bad_layer_labels(label):
    with pytest.raises(ValueError):
        layer_codes(label)


def test_source_link_and_dict():
    from invmap.model import Source

    base = dict(
        id="x",
        name="X",
        source="X",
        type="Current",
        layer="L3",
        mechanism="m",
        objective="o",
        question="q",
        availability="a",
        accessed=dt.date(2026, 8, 7),
    )
    assert Source(**base).link is None
    assert Source(**base, arxiv="2407.00079").link == "https://arxiv.org/abs/2407.00079"
    assert Source(**base, doi="10.1234/x").link == "https://doi.org/10.1234/x"
    assert Source(**base, doi="10.1234/x", url="https://example.org/x").link == "https://example.org/x"
    record = Source(**base, year=2024).to_dict()
    assert list(record) == JSON_KEYS
    assert record["layers"] == ["L3"] and record["accessed"] == "2026-08-07" and record["year"] == 2024
