"""Estimates: KV-cache bytes, memory left for the KV pool, and roofline bounds, from a model's
config.json and a GPU's datasheet figures (step 4 of the map's procedure: recreate before
generalizing). Pure computation: no I/O beyond reading a model's config files and the shipped tables
(`data/models.toml`, `data/gpus.toml`); no typer.

The formulas are the field guide's (`docs/reference/equations.md` of santho090/inference-engineering),
with its `ie memory model`, `ie memory kv` and `ie roofline` defaults, which describe a made-up model
and device: an estimate that uses them says so. Precedence everywhere: an explicit option, then the
model's config (`--model`) or the GPU's figures (`--gpu`), then those defaults. Every input is
declared once, with its bounds and default, in `invmap.quantities`.

The way in is a `Scenario` (which estimate, model, GPU, engine, the inputs given: plain data) and
`run(scenario)` (or `run_all(scenarios)`, a sweep): each gives an `Outcome`, the typed `Estimate`
(every input with its provenance, the results with their units, formulas, assumptions, limitations,
notes; `as_json()` is the `--json` object) or a `Refusal` (its reason, message, inputs and exit
status: data, never text to match). `kv`, `memory` and `roofline` take an options dictionary and a
loaded model and GPU and return the JSON object, raising the project's errors.

Every result is labelled `estimated`; `record()` turns one into an experiment record (format 1.0).

This package's modules, one job each: `tables` (the shipped tables), `config` (a model's config),
`layout` (its attention layout), `parameters` (its parameter count), `gpus` (a GPU's figures),
`defaults` and `checks` (the label, the bounds from the declarations), `refusals` (why not, as
data), `inputs` (each value with its provenance), `units` (numbers as read), `kvshape` (the KV
dimensions), `kv_estimate`, `memory_estimate`, `roofline_estimate` and `phase` (the formulas),
`result` (the typed result; its text is drawn by `render.estimate`), `scenario` (scenarios in,
outcomes out), `experiment` (the record), `listing` (`invmap models`). This module names
what the rest of invmap calls.
"""

from __future__ import annotations

from invmap.estimate.checks import MAX_RATE, check
from invmap.estimate.config import Model, load_model, models
from invmap.estimate.defaults import IE_ROOFLINE, KINDS, LABEL
from invmap.estimate.experiment import record
from invmap.estimate.fit import Fit, fit
from invmap.estimate.gpus import FIGURES, Gpu, find_gpu, gpu_flat_rows, gpu_rows, gpus
from invmap.estimate.inputs import Input
from invmap.estimate.kvshape import KV_DTYPES
from invmap.estimate.layout import SUPPORTED_TYPES, layout_of
from invmap.estimate.listing import model_rows
from invmap.estimate.parameters import parameters_of
from invmap.estimate.refusals import REASONS, Refusal
from invmap.estimate.result import Estimate
from invmap.estimate.scenario import Outcome, Scenario, kv, memory, roofline, run, run_all
from invmap.estimate.tables import gpu_names, gpu_table, model_names, model_table
from invmap.estimate.units import human_bytes, parse_size

__all__ = [
    "FIGURES",
    "IE_ROOFLINE",
    "KINDS",
    "KV_DTYPES",
    "LABEL",
    "MAX_RATE",
    "REASONS",
    "SUPPORTED_TYPES",
    "Estimate",
    "Fit",
    "Gpu",
    "Input",
    "Model",
    "Outcome",
    "Refusal",
    "Scenario",
    "check",
    "find_gpu",
    "fit",
    "gpu_flat_rows",
    "gpu_names",
    "gpu_rows",
    "gpu_table",
    "gpus",
    "human_bytes",
    "kv",
    "layout_of",
    "load_model",
    "memory",
    "model_names",
    "model_rows",
    "model_table",
    "models",
    "parameters_of",
    "parse_size",
    "record",
    "roofline",
    "run",
    "run_all",
]
