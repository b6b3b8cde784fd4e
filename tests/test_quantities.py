"""The estimates' inputs declared once (`invmap.quantities`): the options, help, bounds, config-key
bounds, defaults and needs are derived from the declarations, and these tests iterate them, so a
new input is covered as soon as it is declared. A declaration that contradicts itself fails here."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

from conftest import LLAMA_LIKE, REPO
from invmap import complete
from invmap import estimate as core
from invmap import options as decl
from invmap import quantities as q
from invmap.estimate import checks

# The one-estimate commands (`estimate fit` is a sweep of memory estimates, with its own declared inputs).
ESTIMATE_COMMANDS = [c for c in decl.COMMANDS if c.parent == "estimate" and c.view == decl.ESTIMATE_VIEW]
NUMERIC = [(kind, x) for kind in q.KINDS for x in q.inputs_of(kind) if x.kind in ("int", "float")]


def ids(value) -> str:
    return getattr(value, "name", None) or getattr(value, "path", None) or str(value)


# --- one declaration, derived everywhere -----------------------------------------------------------


def test_every_estimate_command_is_a_declared_estimate():
    assert [c.name for c in ESTIMATE_COMMANDS] == list(q.KINDS)


def test_estimate_fits_options_are_its_declared_inputs():
    fit = decl.find("estimate fit")
    declared = q.inputs_of("fit")
    assert [(o.dest, o.flags, o.help) for o in fit.options] == [(x.name, x.flags, x.help_text) for x in declared]
    assert fit.requires == q.NEEDS["fit"] and fit.view == "sweep"
    assert {x.name for x in declared} - {"model", "gpu", "concurrency"} <= set(q.flags_of("memory"))


@pytest.mark.parametrize("command", ESTIMATE_COMMANDS, ids=ids)
def test_an_estimates_options_are_its_declared_inputs(command):
    """Each declared input is an option with the declaration's flags, help (its default said), metavar
    and kind, in the declared order, then the record options."""
    declared = q.inputs_of(command.name)
    options = command.options[: len(declared)]
    assert [o.dest for o in command.options[len(declared) :]] == ["record", "output_path", "force"]
    for x, o in zip(declared, options):
        assert (o.dest, o.flags, o.metavar) == (x.name, x.flags, x.metavar)
        assert o.help == x.help_text and o.help.startswith(x.help)
        assert o.kind == {"int": "int", "float": "float"}.get(x.kind, "text")
        if x.default is not None:
            assert f"Default: {x.default.help}." in o.help
        if x.kind == "name":
            assert o.complete == x.name
        if x.kind == "choice":  # completes with exactly its declared choices, never an index kind's values
            assert o.complete == q.choice_completion(x) and complete.choice_values(o.complete) == (tuple(x.choices), {})
    assert command.requires == q.NEEDS[command.name]


@pytest.mark.parametrize(("kind", "x"), [(k, x) for k in q.KINDS for x in q.inputs_of(k)], ids=ids)
def test_a_variant_keeps_its_inputs_flags_kind_and_bounds(kind, x):
    """An estimate's own version of an input (roofline's --parameters) changes its help, unit or
    default, never what is typed or allowed."""
    base = q.INPUTS[x.name]
    same = ("flags", "kind", "bounds", "metavar", "choices", "keys")
    assert {f: getattr(x, f) for f in same} == {f: getattr(base, f) for f in same}


def test_the_core_reads_its_inputs_from_the_declarations():
    assert checks.FLAGS == {name: x.flag for name, x in q.INPUTS.items()}
    assert core.KV_DTYPES is q.KV_DTYPES
    assert tuple(core.IE_ROOFLINE) == q.SCENARIOS
    for scenario, figures in core.IE_ROOFLINE.items():
        assert figures == {n: q.INPUTS[n].default.at(scenario) for n in figures}


def test_an_alias_reaches_help_completion_and_suggestions(cli):
    """`--peak` is an alias of --peak-operations-per-second: help lists both, TAB knows both, and a
    typo of it is answered with the option it spells."""
    help_text = " ".join(cli("estimate", "roofline", "--help").out.split())
    assert "--peak-operations-per-second, --peak FLOP/S" in help_text
    from invmap import fastcomplete

    command = decl.find("estimate roofline")
    assert fastcomplete._arguments_before(command, ["--peak", "1e15"]) == 0  # an option taking a value
    assert fastcomplete._arguments_before(command, ["--peek", "1e15"]) is None  # unknown: left to Typer
    typo = cli("estimate", "roofline", "--peek", "1e15")
    assert typo.code == 2 and typo.err.endswith(
        "Error: No such option: --peek. Did you mean --peak-operations-per-second?\n"
    )


# --- bounds ----------------------------------------------------------------------------------------


def below(x: q.Quantity) -> str:
    return "0" if x.bounds.integer or x.bounds.fraction else f"{x.bounds.low / 10:g}"


def above(x: q.Quantity) -> str:
    return str(x.bounds.high + 1) if x.bounds.integer else f"{x.bounds.high * 10:g}"


@pytest.mark.parametrize(("kind", "x"), NUMERIC, ids=ids)
def test_each_numeric_input_refuses_values_past_its_bounds_naming_the_option(cli, kind, x):
    for value in (below(x), above(x), *(["nan", "inf"] if not x.bounds.integer else [])):
        result = cli("estimate", kind, x.flag, value)
        assert (result.code, result.out) == (2, ""), (x.flag, value, result.err)
        assert (
            result.err
            == f"Error: {x.flag} {x.bounds.problem(float(value) if '.' in value or not x.bounds.integer else int(value))}\n"
        )


@pytest.mark.parametrize(("kind", "x"), NUMERIC, ids=ids)
def test_each_numeric_input_takes_its_bounds_themselves(cli, kind, x):
    """The lowest and the highest value allowed pass the bound check (another rule may still refuse
    them: 10^9 KV heads exceed the query heads)."""
    device = ["--memory", "80GB"] if kind == "memory" else []
    for value in (x.bounds.low if not x.bounds.fraction else 1.0, x.bounds.high):
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        result = cli("estimate", kind, x.flag, shown, *device, "--json")
        assert "must be" not in result.err or "must be divisible" in result.err, (x.flag, shown, result.err)
        if result.code == 0:
            assert all(math.isfinite(v) for v in json.loads(result.out)["results"].values())


def test_a_config_key_read_as_an_input_takes_its_bounds():
    declared = {key: x for key, x in q.CONFIG_KEYS.items() if x.flags}
    assert declared["num_hidden_layers"].bounds == q.INPUTS["layers"].bounds
    assert {key: x.name for key, x in declared.items()} == {
        "num_hidden_layers": "layers",
        "num_attention_heads": "attention_heads",
        "hidden_size": "hidden_size",
        "num_key_value_heads": "kv_heads",
        "head_dim": "head_dim",
        "num_global_key_value_heads": "kv_heads",
        "global_head_dim": "head_dim",
        "max_position_embeddings": "tokens_per_request",
    }


def _keys_read() -> set[str]:
    """Every config key the estimates read as a number (`need`, `optional_int`, `check_key` calls)."""
    found = set()
    for path in (REPO / "src" / "invmap" / "estimate").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("need", "optional_int", "check_key"):
                key = node.args[1] if getattr(node.func, "id") != "check_key" else node.args[0]
                if isinstance(key, ast.Constant):
                    found.add(key.value)
    return found


def test_every_config_key_read_is_declared_with_its_bounds():
    assert _keys_read() == set(q.CONFIG_KEYS)


# A model on disk that reads each declared config key, and the estimate that reads it.
LLAMA = {**LLAMA_LIKE, "max_position_embeddings": 8192}
LATENT = {"model_type": "deepseek_v3", "num_hidden_layers": 4, "num_attention_heads": 8, "kv_lora_rank": 512}
LATENT |= {"qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
OPT = {"model_type": "opt", "hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8, "ffn_dim": 2048}
OPT |= {"vocab_size": 1000, "max_position_embeddings": 2048, "word_embed_proj_dim": 512}
GEMMA = {"model_type": "gemma3_text", "num_hidden_layers": 6, "num_attention_heads": 4, "head_dim": 256}
GEMMA |= {"sliding_window": 512, "sliding_window_pattern": 6}
MIXTRAL = {**LLAMA, "model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2}
# Mixtures counted by their standard keys (any model_type): Qwen's experts and shared expert, DeepSeek's
# routed experts under latent attention with a query down-projection.
QWEN_MOE = {**LLAMA, "model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2}
QWEN_MOE |= {"moe_intermediate_size": 768, "shared_expert_intermediate_size": 1024}
DEEPSEEK = {**LATENT, "hidden_size": 1024, "vocab_size": 1000, "intermediate_size": 2048, "q_lora_rank": 256}
DEEPSEEK |= {"n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 256}
# Gemma 4's own keys: full-attention layers with their own heads, per-layer embeddings, and a vision
# encoder whose keys sit in its `vision_config` (ENCODER_KEYS below).
GEMMA4 = {**LLAMA, "model_type": "gemma4_text", "layer_types": ["sliding_attention", "full_attention"] * 16}
GEMMA4 |= {"sliding_window": 512, "global_head_dim": 256, "attention_k_eq_v": True, "num_global_key_value_heads": 2}
GEMMA4 |= {"hidden_size_per_layer_input": 64, "vocab_size_per_layer_input": 1000, "num_kv_shared_layers": 2}
GEMMA4["vision_config"] = {"model_type": "gemma4_vision", "hidden_size": 128, "intermediate_size": 256}
GEMMA4["vision_config"] |= {"num_hidden_layers": 2, "num_attention_heads": 4, "patch_size": 16}
GEMMA4["vision_config"] |= {"position_embedding_size": 1024}
# Gemma 3 with a SigLIP encoder (its image_size and num_channels).
GEMMA3_MM = {**GEMMA, "hidden_size": 512, "vocab_size": 1000, "intermediate_size": 1024}
GEMMA3_MM["vision_config"] = {"model_type": "siglip_vision_model", "hidden_size": 128, "intermediate_size": 256}
GEMMA3_MM["vision_config"] |= {"num_hidden_layers": 2, "patch_size": 14, "image_size": 224, "num_channels": 3}
ENCODER_KEYS = dict.fromkeys(("patch_size", "position_embedding_size", "image_size", "num_channels"), "vision_config")
READ_BY = {
    "num_hidden_layers": (LLAMA, ["kv"]),
    "num_attention_heads": (LLAMA, ["kv"]),
    "hidden_size": (LLAMA, ["kv"]),
    "num_key_value_heads": (LLAMA, ["kv"]),
    "head_dim": ({**LLAMA, "head_dim": 128}, ["kv"]),
    "max_position_embeddings": (LLAMA, ["kv"]),
    "vocab_size": (LLAMA, ["memory"]),
    "intermediate_size": (LLAMA, ["memory"]),
    "ffn_dim": (OPT, ["memory"]),
    "word_embed_proj_dim": (OPT, ["memory"]),
    "kv_lora_rank": (LATENT, ["kv"]),
    "qk_rope_head_dim": (LATENT, ["kv"]),
    "qk_nope_head_dim": (LATENT, ["kv"]),
    "v_head_dim": (LATENT, ["kv"]),
    "sliding_window": (GEMMA, ["kv"]),
    "sliding_window_pattern": (GEMMA, ["kv"]),
    "_sliding_window_pattern": (
        {**{k: v for k, v in GEMMA.items() if k != "sliding_window_pattern"}, "_sliding_window_pattern": 6},
        ["kv"],
    ),
    "num_local_experts": (MIXTRAL, ["kv"]),
    "num_experts_per_tok": (MIXTRAL, ["kv"]),
    "metadata.total_size": (LLAMA, ["memory"]),
    "num_experts": (QWEN_MOE, ["memory"]),
    "moe_intermediate_size": (QWEN_MOE, ["memory"]),
    "shared_expert_intermediate_size": (QWEN_MOE, ["memory"]),
    "n_routed_experts": (DEEPSEEK, ["memory"]),
    "q_lora_rank": (DEEPSEEK, ["memory"]),
    "global_head_dim": (GEMMA4, ["kv", "memory"]),
    "num_global_key_value_heads": (GEMMA4, ["kv", "memory"]),
    "hidden_size_per_layer_input": (GEMMA4, ["memory"]),
    "num_kv_shared_layers": (GEMMA4, ["kv", "memory"]),
    "vocab_size_per_layer_input": (GEMMA4, ["memory"]),
    "patch_size": (GEMMA4, ["memory"]),
    "position_embedding_size": (GEMMA4, ["memory"]),
    "image_size": (GEMMA3_MM, ["memory"]),
    "num_channels": (GEMMA3_MM, ["memory"]),
}


def test_every_declared_config_key_has_a_model_reading_it():
    assert set(READ_BY) == set(q.CONFIG_KEYS)


def write_model(folder, config: dict, total_size=None) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if total_size is not None:
        index = {"metadata": {"total_size": total_size}, "weight_map": {}}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    return str(folder)


@pytest.mark.parametrize("key", sorted(q.CONFIG_KEYS))
def test_a_config_value_past_its_declared_bound_is_exit_3_naming_the_file_and_key(cli, tmp_path, key):
    config, estimates = READ_BY[key]
    x = q.CONFIG_KEYS[key]
    value = x.bounds.high + 1
    if key == "metadata.total_size":
        folder, where = (
            write_model(tmp_path / "m", config, total_size=value),
            tmp_path / "m" / "model.safetensors.index.json",
        )
    elif key in ENCODER_KEYS:
        sub = ENCODER_KEYS[key]
        folder = write_model(tmp_path / "m", {**config, sub: {**config[sub], key: value}})
        where = f"{tmp_path / 'm' / 'config.json'} ({sub})"
    else:
        folder, where = write_model(tmp_path / "m", {**config, key: value}), tmp_path / "m" / "config.json"
    bound_of = f" (the bound of {x.flag})" if x.flags else ""
    for kind in estimates:
        result = cli("estimate", kind, "--model", folder)
        assert (result.code, result.out) == (3, ""), (key, result.err)
        assert result.err == f"Error: {where}: '{key}' must be at most {x.bounds.high:,}{bound_of}, not {value:,}\n"
        # the model as given is read without complaint
        if key != "metadata.total_size":
            write_model(tmp_path / "ok", config)
            assert cli("estimate", kind, "--model", str(tmp_path / "ok")).code == 0, key


# --- needs -----------------------------------------------------------------------------------------


def sample(x: q.Quantity) -> str:
    """A value of an input that passes its own checks (its default where it has a plain one, so that it
    agrees with the other inputs' defaults)."""
    if x.kind == "choice":
        return x.choices[-1]
    if x.kind in ("size", "version"):
        return x.example
    if x.default is not None and isinstance(x.default.value, (int, float)):
        return str(x.default.value)
    return "1" if x.bounds.integer or x.bounds.fraction else "1e9"


@pytest.mark.parametrize("kind", q.KINDS)
def test_every_need_names_declared_inputs(kind):
    names = {x.name for x in q.inputs_of(kind)}
    for need in q.NEEDS[kind]:
        assert set(need.given) <= names and set(need.one_of) <= names, need
        assert "{flag}" in need.message or not need.given


@pytest.mark.parametrize(
    ("kind", "name"), [(k, n) for k in q.KINDS for need in q.NEEDS[k] for n in need.given], ids=str
)
def test_an_input_given_without_what_it_needs_is_refused_with_the_declared_message(cli, kind, name):
    need = next(n for n in q.NEEDS[kind] if name in n.given)
    x = q.INPUTS[name]
    result = cli("estimate", kind, x.flag, sample(x))
    assert (result.code, result.out) == (2, "")
    assert result.err == f"Error: {need.message.format(flag=x.flag)}\n"
    typed = {"int": int, "float": float}.get(x.kind, str)(sample(x))
    outcome = core.run(core.Scenario(kind, flags={name: typed}))
    assert outcome.refusal.reason == "needs" and outcome.refusal.inputs == (name, *need.one_of)
    met = next(n for n in need.one_of)
    given = {"gpu": ["--gpu", "h100-sxm"], "memory": ["--memory", "80GB"], "model": ["--model", "llama-3.1-8b"]}
    given["engine"] = ["--engine", "vllm", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    assert "needs" not in cli("estimate", kind, x.flag, sample(x), *given[met]).err


def test_a_need_declared_always_is_refused_and_given_by_the_format_test(cli, monkeypatch):
    """The trial of `estimate fit`, which needs --gpu or --memory whatever else is given: one
    declaration refuses a run without either, and the every-command-by-every-format test gives the
    command its first option's example instead of a hand table."""
    from test_formats import argv_of

    always = q.Needs((), ("gpu", "memory"), "estimate memory needs a device: give --gpu or --memory")
    monkeypatch.setitem(q.NEEDS, "memory", (*q.NEEDS["memory"], always))
    result = cli("estimate", "memory")
    assert (result.code, result.err) == (2, "Error: estimate memory needs a device: give --gpu or --memory\n")
    command = decl._estimate("memory", "trial", ())
    assert command.requires[-1] == always
    assert argv_of(command) == ["estimate", "memory", "--gpu", "h100-sxm"]
    assert cli(*argv_of(command), "--json").code == 0
    assert argv_of(decl.find("estimate memory")) == ["estimate", "memory"]  # nothing needed always today


# --- no input is ignored silently -------------------------------------------------------------------

# What each estimate is given besides, in later passes: a model and a device (so the inputs that need
# them are used), and for a roofline the decode scenario (whose own inputs a prefill refuses).
WITH = {"kv": ["--model", "llama-3.1-8b"], "memory": ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]}
WITH["roofline"] = ["--model", "llama-3.1-8b", "--peak", "1e15", "--bandwidth", "3e12"]
CONTEXTS = {kind: [[], WITH[kind]] for kind in q.KINDS}
CONTEXTS["roofline"].append([*WITH["roofline"], "--scenario", "decode"])
CONTEXTS["memory"].append([*WITH["memory"], "--engine", "vllm"])  # the engine's own inputs
MXFP4 = str(Path(__file__).parent / "fixtures" / "configs" / "openai--gpt-oss-20b")
CONTEXTS["memory"].append(["--model", MXFP4, "--gpu", "h100-sxm", "--engine", "vllm"])  # an MXFP4 model's kernel


@pytest.mark.parametrize(
    ("kind", "x", "extra"),
    [(k, x, extra) for k in q.KINDS for x in q.inputs_of(k) if x.kind != "name" for extra in CONTEXTS[k]],
    ids=lambda v: " ".join(v) if isinstance(v, list) else ids(v),
)
def test_an_input_given_is_used_or_refused_never_ignored(cli, kind, x, extra):
    """A declared input given to its estimate shows in the result's inputs as the option's (or the
    run is refused, exit 2, naming it): an input the estimate does not read, or reads only with
    something else without declaring that need, fails here (the trial of a new option forgot its need)."""
    if x.flag in extra or set(x.flags) & set(extra):
        extra = [w for n, w in enumerate(extra) if w not in x.flags and (n == 0 or extra[n - 1] not in x.flags)]
    if x.name == "scenario":
        extra = [w for w in extra if w not in ("--scenario", "decode")]
    result = cli("estimate", kind, *extra, x.flag, sample(x), "--json")
    if result.code == 2:
        assert result.err.startswith("Error: ") and x.flag in result.err
        return
    assert result.code == 0, result.err
    inputs = {i["name"]: i for i in json.loads(result.out)["inputs"]}
    assert x.name in inputs, f"{x.flag} was given and not used"
    assert inputs[x.name]["from"] == "option" or inputs[x.name]["from"].startswith(x.flag)


def test_every_input_is_used_in_some_context(cli):
    """The inputs refused in every context above would be inputs no estimate reads."""
    for kind in q.KINDS:
        for x in q.inputs_of(kind):
            if x.kind == "name":
                continue
            used = False
            for extra in CONTEXTS[kind]:
                extra = [w for n, w in enumerate(extra) if w not in x.flags and (n == 0 or extra[n - 1] not in x.flags)]
                if x.phases:
                    extra = [w for w in extra if w not in ("--scenario", "decode")] + ["--scenario", x.phases[0]]
                used |= cli("estimate", kind, *extra, x.flag, sample(x), "--json").code == 0
            assert used, (kind, x.flag)


@pytest.mark.parametrize(("kind", "name"), [(k, n) for k in q.KINDS for c in q.CLASHES[k] for n in c.given], ids=str)
def test_an_input_that_cannot_apply_beside_others_is_refused(cli, kind, name):
    clash = next(c for c in q.CLASHES[kind] if name in c.given)
    x = q.INPUTS[name]
    others = [w for n in clash.with_all for w in (q.INPUTS[n].flag, sample(q.INPUTS[n]))]
    result = cli("estimate", kind, *WITH[kind], *others, x.flag, sample(x))
    assert (result.code, result.out, result.err) == (2, "", f"Error: {clash.message.format(flag=x.flag)}\n")
    assert cli("estimate", kind, *WITH[kind], *others, "--json").code == 0


@pytest.mark.parametrize(
    "x", [x for x in q.QUANTITIES if x.default is not None and x.default.value is not None], ids=ids
)
def test_a_declared_default_is_within_the_inputs_bounds_and_choices(x):
    values = x.default.value.values() if isinstance(x.default.value, dict) else [x.default.value]
    for value in values:
        if x.kind == "choice":
            assert value in x.choices
        else:
            assert x.bounds.problem(value) is None, (x.name, value)
    assert x.default.by in ("ie", "invmap")


@pytest.mark.parametrize("kind", q.KINDS)
def test_a_tools_input_schema_is_the_declarations(kind):
    """What an agent's tool would take (issue agents): every input, with its bounds, choices, help and
    default, from the same declarations as the options; a scenario of the schema's defaults runs."""
    schema = q.json_schema(kind)
    assert list(schema["properties"]) == [x.name for x in q.inputs_of(kind)]
    for x in q.inputs_of(kind):
        p = schema["properties"][x.name]
        assert p["description"] == x.help_text
        if x.kind in ("int", "float"):
            low = p.get("minimum", p.get("exclusiveMinimum"))
            assert (low, p["maximum"]) == (x.bounds.low, x.bounds.high)
        assert p.get("enum") == (list(x.choices) if x.choices else None)
        if x.kind == "version":  # the schema takes what the option takes, and refuses what it refuses
            import re

            assert p["type"] == "string" and re.search(p["pattern"], x.example)
            assert not any(re.search(p["pattern"], bad) for bad in ("x", "0.15.1 beta", "1", "0.15.1.2.3"))
    conditional = {n for need in q.NEEDS[kind] for n in need.given} | {n for c in q.CLASHES[kind] for n in c.given}
    conditional |= {x.name for x in q.inputs_of(kind) if x.phases}
    flags = {n: p["default"] for n, p in schema["properties"].items() if "default" in p and n in q.flags_of(kind)}
    outcome = core.run(core.Scenario(kind, flags={n: v for n, v in flags.items() if n not in conditional}))
    assert outcome.ok, outcome.refusal
    json.dumps(schema, allow_nan=False)


def test_the_declarations_import_nothing_but_themselves():
    """A TAB press reads options.py and so quantities.py: no typing, typer, pydantic or dataclasses."""
    import subprocess
    import sys

    probe = (
        "import sys, invmap.filters; before = set(sys.modules); import invmap.quantities; "
        "print(sorted(set(sys.modules) - before))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout == "['invmap.quantities']\n"
