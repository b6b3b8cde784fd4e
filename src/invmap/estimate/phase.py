"""Operations and bytes of a model's phase: one prefill of P tokens, or one decode step of B sequences
with C tokens of context (what `estimate roofline --model` bounds)."""

from __future__ import annotations

from dataclasses import dataclass

from invmap.estimate.config import Model
from invmap.estimate.inputs import MODEL, Inputs, model_part
from invmap.estimate.kvshape import KvShape, kv_shape
from invmap.estimate.layout import Layout, layout_of
from invmap.estimate.parameters import PARAMETER_FAMILIES, parameters_of
from invmap.estimate.refusals import Refused
from invmap.estimate.units import grouped


def attended(tokens: int, window: int | None) -> int:
    """Positions attended over a causal prefill of `tokens` (token i sees min(i, W) positions)."""
    if window is None or tokens <= window:
        return tokens * (tokens + 1) // 2
    return window * (window + 1) // 2 + (tokens - window) * window


def model_phase(inputs: Inputs, model: Model, scenario: str) -> tuple[float, float, int, list[str], list[str]]:
    """Operations and bytes of one prefill of P tokens, or one decode step at batch B with context C."""
    costs, said = model_costs(inputs, model)
    step = _prefill(inputs, costs) if scenario == "prefill" else _decode(inputs, costs)
    return float(step.ops), float(step.moved), step.tokens, step.formulas, [*said, step.said]


def model_costs(inputs: Inputs, model: Model) -> tuple[StepCosts, list[str]]:
    """What every step of `model` costs, piece by piece (`StepCosts`), and what that assumes: the
    parameters and weights read (options, else the model's), the KV shape (--kv-cache-dtype or
    --element-bytes, else the model's dtype)."""
    layout = layout_of(model)
    active, weights, said = _weights_read(inputs, model, layout)
    kv_inputs = Inputs({k: inputs.options.get(k) for k in ("kv_cache_dtype", "element_bytes")}, "kv")
    shape, _, _ = kv_shape(kv_inputs, model, layout)
    given = any(kv_inputs.options.values())
    for read in kv_inputs.items:  # the KV dtype and element bytes: an option's as it says, else the model's
        if read.name in ("kv_cache_dtype", "element_bytes"):
            inputs.add(read.name, read.value, read.unit, read.source if given else MODEL)
    read = Read(active, weights, layout.attention_heads, layout.query_dim, layout.value_dim)
    return StepCosts(read, shape), said


def _weights_read(inputs: Inputs, model: Model, layout: Layout) -> tuple[int, int, list[str]]:
    """The parameters a step computes with (active per token), the bytes of weights it reads, and
    what that assumes."""
    counted = parameters_of(model)
    given = inputs.options.get("parameters")
    if given is None and counted is None:
        raise Refused(
            "parameters",
            f"invmap does not count the parameters of model_type '{model.model_type}' (it counts "
            f"{', '.join(PARAMETER_FAMILIES)}): give --parameters (active per token), or --operations and --bytes-moved",
            "parameters",
        )
    active = inputs.pick("parameters", (counted[1] if counted else None, model_part("counted from its config")))
    total_params = counted[0] if counted and given is None else active
    weight_bytes = inputs.pick("weight_bytes", (layout.dtype_bytes, MODEL))
    said = [
        "Dense matrix products: 2 operations per parameter per token (a multiply and an add).",
        "Every weight is read from memory once per step (for a mixture of experts, all experts: which ones a batch "
        "touches is not modelled).",
    ]
    if given is not None:
        said.append("--parameters is taken as the parameters read per step too (weights = P x b_w).")
    return active, total_params * weight_bytes, said


@dataclass(frozen=True)
class Read:
    """What every step of a model computes with: the active parameters, the weights' bytes, and the
    attention heads with their query and value dimensions."""

    active: int
    weights: int
    heads: int
    query_dim: int
    value_dim: int

    @property
    def per_pair(self) -> int:
        """Operations of one attended position: scores and values over every head."""
        return 2 * self.heads * (self.query_dim + self.value_dim)


@dataclass(frozen=True)
class Step:
    """One phase's step: its operations and bytes moved, the `tokens` it computes (the P prompt tokens,
    or one for each of B sequences), its formulas with the numbers put in, and what it assumes."""

    ops: int
    moved: int
    tokens: int
    formulas: list[str]
    said: str


class StepCosts:
    """A model's costs by piece, from which every step is summed: a decode step of one sequence, a
    stretch of prefill, the KV bytes of a sequence. `estimate roofline --model` (one prefill, or B
    sequences at one context) and `simulate batching --model` (a step mixing prefill chunks and
    decodes at their own contexts) both add these up: one formula for each. The layers are grouped
    by window (full attention, and each window size) so that a piece costs the same for any depth."""

    def __init__(self, read: Read, shape: KvShape) -> None:
        self.read, self.shape = read, shape
        self.weights = read.weights
        self.full = sum(1 for w in shape.windows if w is None)
        sizes = [w for w in shape.windows if w is not None]
        self.sized = tuple((w, sizes.count(w)) for w in sorted(set(sizes)))
        self.layer_token_bytes = shape.per_layer_token()
        self.full_token_bytes = shape.layer_token(None)  # a full-attention layer's, where its own
        self.per_pair = read.per_pair

    def positions(self, context: int) -> int:
        """Positions one new token attends over all layers with `context` tokens before it; also the
        tokens a sequence of `context` keeps in KV over all layers (a sliding layer at most its window)."""
        if not self.sized:
            return self.full * context
        return self.full * context + sum(n * (context if context < w else w) for w, n in self.sized)

    def decode_operations(self, context: int) -> int:
        """One sequence adds a token reading a KV cache of `context` tokens."""
        return 2 * self.read.active + self.per_pair * self.positions(context)

    def decodes(self, contexts: list[int]) -> tuple[int, int]:
        """Operations and KV bytes of one decode for each context: the sums of `decode_operations` and
        `kv_bytes` (with full attention only, the positions of a sum are the sum of the positions)."""
        if not self.sized:
            return self.decode_sums(sum(contexts), len(contexts))
        held = sum(self.positions(c) for c in contexts)
        return 2 * self.read.active * len(contexts) + self.per_pair * held, self._held_bytes(held, sum(contexts))

    def decode_sums(self, context_sum: int, count: int) -> tuple[int, int]:
        """`decodes` of `count` sequences whose contexts add up to `context_sum` (full attention only)."""
        assert not self.sized
        held = self.full * context_sum
        return 2 * self.read.active * count + self.per_pair * held, self._held_bytes(held, context_sum)

    def causal_pairs(self, start: int, tokens: int) -> int:
        """Positions attended over all layers by prompt tokens start+1..start+tokens (causal)."""
        end = start + tokens
        pairs = self.full * (attended(end, None) - attended(start, None))
        return pairs + sum(n * (attended(end, w) - attended(start, w)) for w, n in self.sized)

    def prefill_operations(self, start: int, tokens: int) -> int:
        """`tokens` prompt tokens after `start` already in the cache (a chunk; the whole prompt from 0)."""
        return 2 * self.read.active * tokens + self.per_pair * self.causal_pairs(start, tokens)

    def kv_bytes(self, tokens: int) -> int:
        """The KV cache of one sequence of `tokens` (`KvShape.per_sequence`, layers grouped)."""
        return self._held_bytes(self.positions(tokens), tokens)

    def _held_bytes(self, positions: int, full_positions: int) -> int:
        """The KV bytes of `positions` held over all layers, `full_positions` of them on each full-attention
        layer (which may keep a token in other bytes than a sliding layer: `KvShape.layer_token`)."""
        on_full = self.full * full_positions
        return on_full * self.full_token_bytes + (positions - on_full) * self.layer_token_bytes


def _prefill(inputs: Inputs, costs: StepCosts) -> Step:
    r = costs.read
    prompt = inputs.pick("prompt_tokens")
    pairs = costs.causal_pairs(0, prompt)
    ops = costs.prefill_operations(0, prompt)
    written = costs.kv_bytes(prompt)
    moved = r.weights + written
    formulas = [
        f"O = 2 x active_parameters x P + 2 x heads x (d_qk + d_v) x causal pairs over all layers = 2 x {r.active:,} x {prompt:,} + "
        f"2 x {r.heads} x ({r.query_dim} + {r.value_dim}) x {pairs:,} = {grouped(ops)} operations",
        f"D = weights_bytes + KV written = {r.weights:,} + {written:,} = {grouped(moved)} bytes",
    ]
    said = "Causal attention: token i attends to min(i, W) earlier positions; activations stay on chip."
    return Step(ops, moved, prompt, formulas, said)


def _decode(inputs: Inputs, costs: StepCosts) -> Step:
    """B sequences each add a token, reading the KV of their C tokens of context."""
    r = costs.read
    batch = inputs.pick("batch_size")
    context = inputs.pick("context_tokens")
    pairs = costs.positions(context)
    ops = batch * costs.decode_operations(context)
    per_sequence = costs.kv_bytes(context)
    return Step(
        ops,
        r.weights + per_sequence * batch,
        batch,
        [
            f"O = B x (2 x active_parameters + 2 x heads x (d_qk + d_v) x positions attended over all layers) = {batch:,} x (2 x {r.active:,} + "
            f"2 x {r.heads} x ({r.query_dim} + {r.value_dim}) x {pairs:,}) = {grouped(ops)} operations",
            f"D = weights_bytes + B x KV of C tokens = {r.weights:,} + {batch:,} x {per_sequence:,} = "
            f"{grouped(r.weights + per_sequence * batch)} bytes",
        ],
        "Decode: each of the B sequences adds one token and reads its whole KV cache of C tokens.",
    )
