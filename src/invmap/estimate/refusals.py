"""Why an estimate refuses, as data: a `Refusal` names its reason (a word a program can test: `bound`,
`needs`, `kv_heads_split`...), the inputs it concerns and the exit status it is, beside the sentence a
person reads. Inside the core a refusal travels as the project's error (`Refused`, a usage error, or
`RefusedFile`, an invalid file's), so the CLI's one error road prints it; `refusal_of` turns any such
error back into data (`estimate.run` does, for every scenario)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from invmap.errors import CatalogError, FileAccessError, InvmapError, UsageError

# The reasons, and what each means (a refusal of any other error of the project is `usage`,
# `invalid_file` or `unreadable`, by its exit status).
REASONS = {
    "bound": "an input is outside its declared bounds",
    "needs": "an input needs another that was not given (a device for a KV pool, a model for a phase)",
    "clash": "an input cannot apply beside others given (a model's phase beside a step given whole)",
    "choice": "an input with fixed choices was given none of them (--sampler, --mxfp4-backend)",
    "unknown_input": "the estimate takes no such input",
    "unknown_estimate": "there is no such estimate",
    "unknown_model": "no shipped model has this name (and it is no path)",
    "unknown_gpu": "no shipped GPU has this name",
    "ambiguous_gpu": "several shipped GPUs answer to this name",
    "engine": "the estimates model no such engine (--engine, or a scenario's engine)",
    "kv_cache_dtype": "the KV dtype is unknown, or `auto` without a model dtype",
    "kv_heads": "the KV heads exceed the query heads, or do not divide them",
    "kv_heads_split": "the KV heads do not divide among the tensor-parallel GPUs",
    "latent": "a heads option given for a model whose latent attention caches no heads",
    "heads_split": "the query heads do not divide among the tensor-parallel GPUs (the engine refuses to start)",
    "stages": "more pipeline stages than the model has layers",
    "gpu_figure": "the GPU table has no confirmed figure the estimate needs",
    "parameters": "invmap does not count this model family's parameters",
    "scenario": "the roofline scenario is neither prefill nor decode",
    "phase": "an input describes the other roofline scenario (--batch-size in a prefill)",
    "config": "a model's config (or its safetensors index) holds a value that cannot be",
    "not_finite": "a result would not be a finite number",
    "usage": "another usage error",
    "invalid_file": "another problem of an input file",
    "unreadable": "an input file could not be read",
}


@dataclass(frozen=True)
class Refusal:
    """An estimate that was not made: `reason` (one of REASONS), the sentence (`message`, as the CLI
    prints it after "Error: "), the `inputs` it concerns (by name; config keys for a file's), and the
    exit `status` (2 an option's, 3 a file's value, 4 a file that could not be read)."""

    reason: str
    message: str
    inputs: tuple[str, ...] = ()
    status: int = 2
    error: InvmapError | None = field(default=None, repr=False, compare=False)

    def raised(self) -> InvmapError:
        """The project's error saying it (what the CLI raises for a single estimate)."""
        if self.error is not None:
            return self.error
        return Refused(self.reason, self.message, *self.inputs)

    def as_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "message": self.message, "inputs": list(self.inputs), "status": self.status}


class Refused(UsageError):
    """A refusal of what was given (exit 2)."""

    def __init__(self, reason: str, message: str, *inputs: str) -> None:
        super().__init__(message)
        self.reason, self.inputs = reason, inputs


class RefusedFile(CatalogError):
    """A refusal of a value an input file holds (exit 3, naming the file and the key)."""

    def __init__(self, reason: str, where: str, problem: str, *keys: str) -> None:
        super().__init__(where, [problem])
        self.reason, self.inputs = reason, keys


def refusal_of(exc: InvmapError) -> Refusal:
    """Any error of the project as a refusal (its reason and inputs when the core named them)."""
    fallback = "invalid_file" if isinstance(exc, CatalogError) else "unreadable"
    if not isinstance(exc, (CatalogError, FileAccessError)):
        fallback = "usage"
    reason = getattr(exc, "reason", fallback)
    return Refusal(reason, exc.message, tuple(getattr(exc, "inputs", ())), exc.exit_code, exc)
