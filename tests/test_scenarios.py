"""Estimates as scenarios: a `Scenario` in, an `Outcome` out (the typed `Estimate` with each input's
provenance, or a `Refusal` as data), `run_all` for a sweep, and the sweep view (`render/sweep.py`)
in every format it serves."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from invmap import estimate as core
from invmap import formats
from invmap import quantities as q
from invmap.estimate.inputs import ORIGINS
from invmap.estimate.refusals import Refused
from invmap.render import Context
from invmap.render import text as render_text
from invmap.render.sweep import DEFAULT_MARK, result, rows, text, varying


def strict(text_: str):
    """JSON as a strict parser reads it: NaN and Infinity refused."""
    return json.loads(text_, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))


def argv(s: core.Scenario) -> list[str]:
    """The command line that asks for a scenario."""
    words = ["estimate", s.estimate]
    words += ["--model", s.model] if s.model else []
    words += ["--gpu", s.gpu] if s.gpu else []
    for name, value in s.flags.items():
        words += [q.INPUTS[name].flag, str(value)]
    return words


SCENARIOS = [
    core.Scenario("kv"),
    core.Scenario("kv", model="deepseek-v3", flags={"tokens": 4096, "tensor_parallel": 8}),
    core.Scenario("kv", model="gpt-oss-20b", flags={"kv_cache_dtype": "fp8", "concurrency": 3}),
    core.Scenario("memory"),
    core.Scenario("memory", model="llama-3.1-8b", gpu="h100-sxm", flags={"tokens_per_request": 8192}),
    core.Scenario("memory", model="llama-3-70b-instruct", gpu="h100-sxm", flags={"tensor_parallel": 4}),
    core.Scenario("memory", model="qwen3-8b", flags={"memory": "24GiB", "block_size": 16}),
    core.Scenario("roofline", flags={"scenario": "decode"}),
    core.Scenario(
        "roofline",
        model="llama-3.1-8b",
        flags={"scenario": "decode", "batch_size": 8, "bandwidth_bytes_per_second": 3.35e12},
    ),
    core.Scenario(
        "roofline",
        model="opt-13b",
        gpu="h100-sxm",
        flags={"peak_operations_per_second": 989e12, "bandwidth_bytes_per_second": 3.35e12},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: " ".join(argv(s)[1:]))
def test_a_scenarios_estimate_is_what_the_command_prints(cli, scenario):
    outcome = core.run(scenario)
    assert outcome.ok and outcome.refusal is None
    printed = cli(*argv(scenario), "--json")
    assert printed.code == 0 and strict(printed.out) == outcome.as_json() == outcome.estimate.as_json()


def test_the_result_is_typed_with_each_inputs_provenance():
    e = core.run(SCENARIOS[4]).estimate
    assert isinstance(e, core.Estimate) and e.kind == "memory" and e.fits is True
    origins = {i.name: i.origin for i in e.inputs}
    assert origins["layers"] == "model" and origins["memory"] == "gpu" and origins["tokens_per_request"] == "option"
    assert origins["gpu_memory_utilization"] == "invmap" and origins["batch_size"] == "default"
    assert e.from_default == ("batch_size", "sequence_length", "activation_bytes", "activation_tensors")
    assert e.defaults_used and e.notes[0].startswith("Some inputs are the field guide's defaults")
    assert e.input("memory").source.text == "gpu (79.22 GiB as the device reports it)" and e.input("nothing") is None
    assert set(origins.values()) <= set(ORIGINS)
    roof = core.run(SCENARIOS[7]).estimate
    assert roof.limiting_resource == "memory_bandwidth" and roof.input("scenario").origin == "option"
    assert not core.run(
        core.Scenario(
            "roofline",
            flags={
                "operations": 1e9,
                "bytes_moved": 2e8,
                "peak_operations_per_second": 1e12,
                "bandwidth_bytes_per_second": 1e12,
            },
        )
    ).estimate.defaults_used


def folder_with(tmp_path, name: str, content: str) -> str:
    (tmp_path / name).mkdir()
    (tmp_path / name / "config.json").write_text(content, encoding="utf-8")
    return str(tmp_path / name)


def refused_scenarios(tmp_path) -> dict[str, core.Scenario]:
    huge = json.dumps(
        {"model_type": "llama", "num_hidden_layers": 10**9, "num_attention_heads": 32, "hidden_size": 4096}
    )
    return {
        "bound": core.Scenario("kv", flags={"layers": 10001}),
        "needs": core.Scenario("memory", flags={"block_size": 16}),
        "clash": core.Scenario(
            "roofline", model="llama-3.1-8b", flags={"operations": 1e9, "bytes_moved": 1e9, "batch_size": 8}
        ),
        "choice": core.Scenario(
            "memory", model="llama-3.1-8b", gpu="h100-sxm", flags={"engine": "vllm", "sampler": "sorted"}
        ),
        "unknown_input": core.Scenario("kv", flags={"memory": "80GB"}),
        "unknown_estimate": core.Scenario("fit"),
        "unknown_model": core.Scenario("kv", model="llama-3.1-8"),
        "unknown_gpu": core.Scenario("memory", gpu="h1000"),
        "ambiguous_gpu": core.Scenario("memory", gpu="h100"),
        "engine": core.Scenario("kv", engine="vllm"),
        "kv_cache_dtype": core.Scenario("kv", flags={"kv_cache_dtype": "int3"}),
        "kv_heads": core.Scenario("kv", flags={"kv_heads": 5}),
        "kv_heads_split": core.Scenario("kv", model="llama-3.1-8b", flags={"tensor_parallel": 3}),
        "latent": core.Scenario("kv", model="deepseek-v3", flags={"kv_heads": 8}),
        "gpu_figure": core.Scenario("memory", gpu="a10g"),
        "parameters": core.Scenario("roofline", model="deepseek-v3", flags={"scenario": "decode"}),
        "heads_split": core.Scenario(
            "memory", model="qwen2.5-7b-instruct", gpu="h100-sxm", flags={"engine": "vllm", "tensor_parallel": 8}
        ),
        "stages": core.Scenario(
            "memory", model="llama-3.1-8b", gpu="h100-sxm", flags={"engine": "vllm", "pipeline_parallel": 64}
        ),
        "scenario": core.Scenario("roofline", flags={"scenario": "train"}),
        "phase": core.Scenario("roofline", model="llama-3.1-8b", flags={"batch_size": 8}),
        "config": core.Scenario("kv", model=folder_with(tmp_path, "huge", huge)),
        "invalid_file": core.Scenario("kv", model=folder_with(tmp_path, "broken", "{not json")),
    }


# Reasons no scenario gives today: `usage` (every refusal of the core is named), `unreadable` (a config
# only root could not read: test_estimate's chmod test), `not_finite` (bounds keep every result finite).
UNREACHABLE = {"usage", "unreadable", "not_finite"}


@pytest.mark.parametrize("reason", sorted(set(core.REASONS) - UNREACHABLE))
def test_a_refusal_is_data_with_its_reason_inputs_and_status(cli, tmp_path, reason):
    """Refusals as data: a program tests `refusal.reason` (the KV heads that do not divide among the
    GPUs is `kv_heads_split`, tensor_parallel named), never the message's words; the command line
    prints the same message with the same exit status."""
    table = refused_scenarios(tmp_path)
    assert set(table) == set(core.REASONS) - UNREACHABLE
    outcome = core.run(table[reason])
    assert not outcome.ok and outcome.estimate is None
    refusal = outcome.refusal
    assert refusal.reason == reason and refusal.status in (2, 3, 4)
    assert refusal.as_json() == {
        "reason": reason,
        "message": refusal.message,
        "inputs": list(refusal.inputs),
        "status": refusal.status,
    }
    assert outcome.as_json() == {
        "estimate": table[reason].estimate,
        "evidence": "estimated",
        "scenario": table[reason].as_json(),
        "refused": refusal.as_json(),
    }
    if reason not in ("unknown_input", "unknown_estimate", "engine"):  # no command line asks for these
        printed = cli(*argv(table[reason]))
        assert (printed.code, printed.err) == (refusal.status, f"Error: {refusal.message}\n")


def test_the_kv_head_split_names_its_inputs():
    refusal = core.run(core.Scenario("kv", model="llama-3.1-8b", flags={"tensor_parallel": 3})).refusal
    assert (refusal.reason, refusal.inputs, refusal.status) == ("kv_heads_split", ("tensor_parallel", "kv_heads"), 2)
    replicated = core.run(core.Scenario("kv", model="llama-3.1-8b", flags={"tensor_parallel": 12})).refusal
    assert replicated.reason == "kv_heads_split"


def test_a_result_that_is_not_finite_is_refused():
    from invmap.estimate.inputs import Inputs
    from invmap.estimate.result import Said, estimate_result

    with pytest.raises(Refused) as raised:
        estimate_result(
            "kv",
            Inputs({}, "kv"),
            None,
            None,
            {"total_bytes": float("inf")},
            {"total_bytes": "bytes"},
            Said([], [], [], []),
            {},
        )
    assert raised.value.reason == "not_finite"


def test_run_all_reads_each_model_and_gpu_once(monkeypatch):
    from invmap.estimate import scenario as module

    read: list[str] = []
    real = module.load_model
    monkeypatch.setattr(module, "load_model", lambda ref: read.append(ref) or real(ref))
    base = core.Scenario("memory", model="llama-3.1-8b", gpu="h100-sxm")
    outcomes = core.run_all(
        [base.varied(tensor_parallel=n) for n in (1, 2, 3, 4)] + [core.Scenario("kv", model="nope")] * 2
    )
    assert read == ["llama-3.1-8b", "nope"]
    assert [o.ok for o in outcomes] == [True, True, False, True, False, False]
    assert outcomes[4].refusal.reason == outcomes[5].refusal.reason == "unknown_model"


def test_varied_replaces_inputs_and_none_leaves_one_out():
    base = core.Scenario("kv", flags={"tokens": 10, "concurrency": 2})
    assert base.varied(tokens=20).flags == {"tokens": 20, "concurrency": 2}
    assert base.varied(concurrency=None).flags == {"tokens": 10}
    assert base.flags == {"tokens": 10, "concurrency": 2}


# --- the sweep view --------------------------------------------------------------------------------


def sweep_outcomes():
    base = core.Scenario("memory", model="llama-3.1-8b", gpu="h100-sxm", flags={"tokens_per_request": 131072})
    return core.run_all(
        [base.varied(tensor_parallel=n) for n in (1, 2, 3, 4, 8)]
        + [base.varied(tensor_parallel=16, gpu_memory_utilization=0.5)]
    )


def test_the_sweep_varies_what_differs_and_says_the_rest_once():
    outcomes = sweep_outcomes()
    assert varying(outcomes) == ["tensor_parallel", "gpu_memory_utilization"]
    shown = text(outcomes, 120)
    lines = shown.splitlines()
    assert lines[0] == "Memory estimates (estimated): 6 scenarios"
    assert (
        lines[1].startswith(
            "model: Llama 3.1 8B (llama), shipped config of meta-llama/Meta-Llama-3.1-8B (source: invmap models)"
        )
        and lines[2] == "gpu: H100 SXM"
    )
    rows_ = [line.split() for line in lines if re.match(r"^\d+  ", line)]
    assert [r[:2] for r in rows_] == [["1", "1"], ["2", "2"], ["3", "3"], ["4", "4"], ["5", "8"], ["6", "16"]]
    assert rows_[2][2] == "refused" and rows_[5][2] == "0.5"
    assert "  layers 32 layers from model" in lines and "  batch_size 4 sequences from default" in lines
    assert "  weights_bytes 14.96 GiB" in lines  # the same in every scenario: said once, not a column
    assert "refused:" in lines and "  3: 8 KV heads do not divide among --tensor-parallel 3 GPUs" in lines
    assert any(line.startswith("  Some inputs are the field guide's defaults") for line in lines)  # the note kept


def test_a_varying_input_from_the_field_guides_defaults_is_marked():
    outcomes = core.run_all([core.Scenario("kv"), core.Scenario("kv", flags={"layers": 48})])
    shown = text(outcomes, 80).splitlines()
    body = [line.split() for line in shown if re.match(r"^\d+  ", line)]
    assert [r[1] for r in body] == [f"24{DEFAULT_MARK}", "48"]
    assert f"{DEFAULT_MARK} from default: the field guide's made-up model, device or workload" in shown


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_sweep_fits_the_width_and_never_splits_a_word(width):
    outcomes = sweep_outcomes()
    shown = text(outcomes, width)
    for line in shown.splitlines():
        assert len(line) <= width or "https://" in line, line
    words = set(shown.split())
    for o in outcomes:
        if o.refusal is not None:
            assert all(w in words for w in o.refusal.message.split())
        for note in o.estimate.notes if o.estimate else ():
            assert all(w in words for w in note.split())
    for name in ("tensor_parallel", "kv_available_bytes", "kv_pool_tokens", "max_concurrency"):
        assert all(part in words for part in name.split("_"))  # a header wraps at its spaces only


@pytest.mark.parametrize("fmt", formats.names_for(formats.SWEEP))
def test_the_sweep_view_in_every_format_it_serves(fmt):
    outcomes = sweep_outcomes()
    out = render_text(result(outcomes), fmt, formats.SWEEP, Context(width=80))
    flat, fields = rows(outcomes)
    if fmt == "json":
        assert strict(out) == [o.as_json() for o in outcomes]
        assert strict(out)[0] == core.run(outcomes[0].scenario).estimate.as_json()
    elif fmt == "jsonl":
        assert [strict(line) for line in out.splitlines()] == [o.as_json() for o in outcomes]
    elif fmt in ("csv", "tsv"):
        read = list(csv.DictReader(io.StringIO(out), delimiter="," if fmt == "csv" else "\t"))
        assert (
            list(read[0])
            == fields
            == [
                "scenario",
                "tensor_parallel",
                "gpu_memory_utilization",
                "weights_bytes",
                "weights_bytes_per_gpu",
                "kv_available_bytes",
                "kv_pool_tokens",
                "max_concurrency",
                "fits",
                "refused",
            ]
        )
        assert read[1]["weights_bytes_per_gpu"] == str(flat[1]["weights_bytes_per_gpu"]) == "8030261248"
        assert read[0]["weights_bytes_per_gpu"] == read[0]["weights_bytes"]  # one GPU holds the whole
        assert read[2]["refused"] == "8 KV heads do not divide among --tensor-parallel 3 GPUs"
    else:
        assert out == text(outcomes, 80)


def test_a_sweep_of_one_and_of_none():
    assert text([], 80) == "Estimates (estimated): 0 scenarios\n"
    one = core.run_all([core.Scenario("kv", model="opt-13b")])
    shown = text(one, 80).splitlines()
    assert shown[0] == "KV cache estimates (estimated): 1 scenario"
    assert any("800.00 KiB" in line for line in shown)  # one estimate: every key result is a column
