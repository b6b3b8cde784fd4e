"""PyTorch's caching allocator as invmap replays it for a model's weights (estimate/allocator.py), and the
tensors it is replayed over (estimate/tensors.py): the rules by their cases, and the tensors against the
parameter count for every stored config they list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from invmap.estimate.allocator import Held, held
from invmap.estimate.config import load_model
from invmap.estimate.tensors import unlisted, weight_tensors
from invmap.estimate.weights import count

MIB = 2**20
CONFIGS = Path(__file__).parent / "fixtures" / "configs"

# (the requests in bytes, what the allocator holds for them)
CASES = {
    # a large request gets a segment rounded up to 2 MiB; 1 MiB or less of rest is not split off
    "259 MiB": ([259 * MIB], Held(259 * MIB, 260 * MIB, 260 * MIB)),
    "31.5 MiB": ([63 * MIB // 2], Held(63 * MIB // 2, 32 * MIB, 32 * MIB)),
    # 1.5 MiB of rest is split off and stays free (reserved, not allocated)
    "24.5 MiB": ([49 * MIB // 2], Held(49 * MIB // 2, 49 * MIB // 2, 26 * MIB)),
    # under 10 MiB: a 20 MiB segment, split; the next request that fits takes the free rest
    "two of 8 MiB": ([8 * MIB, 8 * MIB], Held(16 * MIB, 16 * MIB, 20 * MIB)),
    "8 MiB then 12.5 MiB": ([8 * MIB, 25 * MIB // 2], Held(41 * MIB // 2, 41 * MIB // 2, 20 * MIB + 14 * MIB)),
    # 1 MiB or less: the small pool's 2 MiB segments, requests rounded up to 512 B
    "1,000 B": ([1_000], Held(1_000, 1_024, 2 * MIB)),
    "three of 1 MiB": ([MIB] * 3, Held(3 * MIB, 3 * MIB, 4 * MIB)),
    "just over 1 MiB": ([MIB + 1], Held(MIB + 1, MIB + 512, 20 * MIB)),
    "nothing": ([], Held(0, 0, 0)),
}


@pytest.mark.parametrize(("sizes", "expected"), CASES.values(), ids=list(CASES))
def test_the_allocator_hands_out_blocks_as_torch_does(sizes, expected):
    assert held(sizes) == expected


def _listed() -> list[Path]:
    found = []
    for folder in sorted(CONFIGS.iterdir()):
        if not (folder / "config.json").is_file():
            continue
        model = load_model(str(folder))
        if not unlisted(model, count(model)):
            found.append(folder)
    return found


LISTED = _listed()


def test_most_stored_configs_are_listed_tensor_by_tensor():
    assert len(LISTED) >= 10, [p.name for p in LISTED]


@pytest.mark.parametrize("folder", LISTED, ids=[p.name for p in LISTED])
def test_the_tensors_hold_the_counted_parameters(folder):
    """At TP 1 on one stage, the listed tensors are the parameters the count gives (less the norms, which
    the count sizes by the hidden size) plus the vocabulary's padding to 64 rows, whatever the family."""
    model = load_model(str(folder))
    weights = count(model)
    layers = range(weights.layers)
    tensors = weight_tensors(model, weights, 1, layers, True, True, [])
    counted = weights.per_gpu_bytes(1, layers, True, True, bool(model.config.get("tie_word_embeddings")))
    c = model.config.get("text_config") or model.config
    vocab = c["vocab_size"]
    padding = (-vocab % 64) * c["hidden_size"] * weights.dtype_bytes
    tables = 1 if c.get("tie_word_embeddings") else 2
    encoders = sum(weights.part_bytes(p) for p in weights.parts if p.module == "encoder")
    assert sum(tensors) == counted - encoders + tables * padding, folder.name


def test_a_biased_mixture_of_experts_lists_its_biases(tmp_path):
    """gpt-oss stored unquantized (its config without quantization_config, as a BF16 re-save is): the
    router, w13 and w2 carry biases and q/k/v too, and the tensors still hold the counted parameters."""
    source = json.loads((CONFIGS / "openai--gpt-oss-20b" / "config.json").read_text(encoding="utf-8"))
    del source["quantization_config"]
    (tmp_path / "config.json").write_text(json.dumps(source), encoding="utf-8")
    model = load_model(str(tmp_path))
    weights = count(model)
    assert unlisted(model, weights) == ""
    layers = range(weights.layers)
    tensors = weight_tensors(model, weights, 1, layers, True, True, [])
    assert sum(tensors) == weights.per_gpu_bytes(1, layers, True, True, False)
    experts, inter, hidden = source["num_local_experts"], source["intermediate_size"], source["hidden_size"]
    assert tensors.count(experts * 2) == source["num_hidden_layers"]  # each layer's router bias
    assert experts * 2 * inter * 2 in tensors and experts * hidden * 2 in tensors  # w13's and w2's biases


def test_a_model_not_listed_says_why():
    for name, why in (
        ("openai--gpt-oss-20b", "quantized weights keep their packed values and scales"),
        ("deepseek-ai--DeepSeek-V2-Lite-Chat", "latent attention's projections"),
    ):
        folder = next((p for p in CONFIGS.iterdir() if p.name.startswith(name)), None)
        if folder is None:
            pytest.fail(f"no stored config {name}")
        model = load_model(str(folder))
        assert unlisted(model, count(model)).startswith(why), name
