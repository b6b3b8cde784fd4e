"""An estimate as an experiment record (format 1.0, result type `estimated`) addressing a source's
question."""

from __future__ import annotations

from typing import Any

from invmap.estimate.defaults import LABEL

RAW = {
    "kv": ("bytes_per_token", "bytes_per_sequence"),
    "memory": ("weights_bytes", "activation_bytes"),
    "roofline": ("arithmetic_intensity_operations_per_byte", "compute_ceiling_operations_per_second"),
}


HYPOTHESES = {
    "kv": "KV storage grows linearly with tokens and concurrent sequences under the model's fixed dimensions.",
    "memory": "The weights and the activation working set leave the stated room for the KV pool.",
    "roofline": "The phase is bounded by the lower of the compute and memory-bandwidth roofs.",
}


def record(result: dict[str, Any], source: dict[str, Any], record_id: str, invmap_version: str) -> dict[str, Any]:
    """An experiment record (format 1.0, result type `estimated`) addressing `source`'s question."""
    kind = result["estimate"]
    subject = result["model"]["display"] if result["model"] else "the field guide's made-up model"

    def value(name: str) -> dict[str, Any]:
        return {"name": name, "value": result["results"][name], "unit": result["units"][name], "evidence": LABEL}

    raw = [value(n) for n in RAW[kind]]
    derived = [value(n) for n in result["results"] if n not in RAW[kind]]
    h = result["human"]
    if kind == "kv":
        w = result["workload"]
        main = (
            f"{h['bytes_per_token']} of KV per token and {h['total_bytes']} for {w['concurrent_sequences']:,} "
            f"sequences of {w['tokens_per_sequence']:,} tokens"
        )
    elif kind == "memory":
        main = f"weights of {h['weights_bytes']}" + (f"; {result['verdict']}" if result.get("verdict") else "")
    else:
        lower = "compute" if result["limiting_resource"] == "compute" else "memory bandwidth"
        main = f"an upper bound of {h['upper_bound_operations_per_second']}, the lower roof being {lower}"
    exclusion = result["limitations"][0]
    sources = [source["url"]] if source.get("url") else []
    for url in (result["model"] or {}).get("read_from", []):
        if url.startswith(("http://", "https://")) and url not in sources:
            sources.append(url)
    environment: dict[str, Any] = {"execution": f"CPU-only formula (invmap {invmap_version} estimate {kind})"}
    environment["hardware"] = result["gpu"]["display"] if result["gpu"] else "not applicable"
    return {
        "schema_version": "1.0",
        "record_id": record_id,
        "title": f"{kind} estimate for {subject}, addressing {source['name']}: {source['question']}",
        "hypothesis": HYPOTHESES[kind],
        "result_type": LABEL,
        "workload": dict(result["workload"]),
        "environment": environment,
        "configuration": dict(result["configuration"]),
        "raw_measurements": raw,
        "derived_metrics": derived or [value(RAW[kind][-1])],
        "conclusion": f"The estimate gives {main}. {exclusion}",
        "limitations": list(result["limitations"]) + list(result["assumptions"]),
        "artifacts": {
            "source_id": source["id"],
            "question": source["question"],
            "estimate": result,
        },
        "sources": sources,
    }
