"""GPUs: a shipped table entry as figures in base units, with where each was read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from invmap.estimate.tables import entry_named, gpu_names, gpu_table, unknown


@dataclass
class Gpu:
    name: str
    display: str
    vendor: str
    memory_bytes: int | None
    memory_gb: float | None
    bandwidth: float | None  # bytes per second
    bf16_peak: float | None  # dense operations per second
    fp8_peak: float | None
    read_from: list[str]

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "display": self.display,
            "vendor": self.vendor,
            "memory_gb": self.memory_gb,
            "memory_bytes": self.memory_bytes,
            "bandwidth_tb_s": None if self.bandwidth is None else self.bandwidth / 1e12,
            "bf16_dense_tflops": None if self.bf16_peak is None else self.bf16_peak / 1e12,
            "fp8_dense_tflops": None if self.fp8_peak is None else self.fp8_peak / 1e12,
            "read_from": list(self.read_from),
        }


def _gpu_of(entry: dict[str, Any]) -> Gpu:
    def scaled(key: str, scale: float) -> float | None:
        value = entry.get(key)
        return None if value is None else float(value) * scale

    memory_gb = entry.get("memory_gb")
    return Gpu(
        entry["name"],
        entry["display"],
        entry["vendor"],
        None if memory_gb is None else int(round(memory_gb * 10**9)),  # decimal GB, converted once
        memory_gb,
        scaled("bandwidth_tb_s", 1e12),
        scaled("bf16_dense_tflops", 1e12),
        scaled("fp8_dense_tflops", 1e12),
        list(entry.get("read_from", [])),
    )


def gpus() -> list[Gpu]:
    return [_gpu_of(g) for g in gpu_table()]


def find_gpu(name: str) -> Gpu:
    entry = entry_named(gpu_table(), name)
    if entry is not None:
        return _gpu_of(entry)
    raise unknown("GPU", name, gpu_names(), "shipped GPUs (invmap gpus); or give --memory, --bandwidth, --peak")


def gpu_rows() -> list[dict[str, Any]]:
    """`invmap gpus`: each shipped GPU's figures (None where not confirmed) and where they were read."""
    return [g.summary() for g in gpus()]
