"""Every estimate's output on a fixed set of argument combinations, written as one JSON file, so a
refactoring of `invmap.estimate` can be checked byte for byte against the version before it:

    python scripts/estimate_outputs.py before.json     # on the old code
    python scripts/estimate_outputs.py after.json      # on the new code
    python scripts/estimate_outputs.py --compare before.json after.json

Each combination is run in-process (Typer's CliRunner) with `--json` and in the plain text format;
exit code, stdout and stderr are kept. The combinations are drawn from a seeded generator over the
estimates' options (good values, edge values, bad values), the shipped models and GPUs, and two
configs on disk, so both runs see the same list.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path

MODELS = [
    None,
    "llama-3.1-8b",
    "llama-3-70b-instruct",
    "qwen2.5-7b-instruct",
    "qwen3-8b",
    "mistral-7b-instruct-v0.1",
    "mixtral-8x7b-instruct-v0.1",
    "gpt-oss-20b",
    "deepseek-v3",
    "gemma-3-270m",
    "opt-13b",
    "DISK_LLAMA",
    "DISK_SAFETENSORS",
]
GPUS = [None, "h100-sxm", "a100-40gb", "h200", "l40s", "b200"]
VALUES = {
    "--layers": ["1", "24", "80", "10000"],
    "--attention-heads": ["8", "32", "64"],
    "--kv-heads": ["1", "4", "8"],
    "--head-dim": ["64", "128", "256"],
    "--element-bytes": ["1", "2", "4"],
    "--kv-cache-dtype": ["auto", "fp8", "bf16", "float16"],
    "--tensor-parallel": ["1", "2", "4", "8", "16"],
    "--tokens": ["1", "100", "2048", "131072"],
    "--concurrency": ["1", "8", "256"],
    "--memory": ["80GB", "24GiB", "1e11", "141GB"],
    "--gpu-memory-utilization": ["0.5", "0.9", "1"],
    "--tokens-per-request": ["1", "8192", "131072"],
    "--block-size": ["16", "7"],
    "--parameters": ["1000000000", "70000000000"],
    "--weight-bytes": ["1", "2"],
    "--hidden-size": ["4096", "8192"],
    "--batch-size": ["1", "4", "64"],
    "--sequence-length": ["512", "4096"],
    "--activation-bytes": ["2", "4"],
    "--activation-tensors": ["2", "8"],
    "--scenario": ["prefill", "decode"],
    "--operations": ["1e9", "1e12"],
    "--bytes-moved": ["2e8", "4e8"],
    "--peak": ["989e12", "2e12"],
    "--bandwidth": ["3.35e12", "1e12"],
    "--prompt-tokens": ["1", "2048", "32768"],
    "--context-tokens": ["1", "2048", "8192"],
}
# Values past a bound or malformed: one in a combination now and then.
BAD = {
    "--layers": ["10001", "0"],
    "--attention-heads": ["5"],
    "--kv-heads": ["5", "64"],
    "--element-bytes": ["17"],
    "--kv-cache-dtype": ["int3"],
    "--tensor-parallel": ["3"],
    "--tokens": ["1000000001", "-3"],
    "--memory": ["2000TB", "lots", "1e400"],
    "--gpu-memory-utilization": ["1.5", "0", "nan"],
    "--block-size": ["0"],
    "--parameters": ["100000000000001"],
    "--scenario": ["train"],
    "--operations": ["nan", "1e31"],
    "--bytes-moved": ["1e-300"],
    "--peak": ["1e22", "inf"],
    "--bandwidth": ["1e-300"],
}
OPTIONS = {
    "kv": [
        "--layers",
        "--attention-heads",
        "--kv-heads",
        "--head-dim",
        "--element-bytes",
        "--kv-cache-dtype",
        "--tensor-parallel",
        "--tokens",
        "--concurrency",
    ],
    "memory": [
        "--memory",
        "--gpu-memory-utilization",
        "--tokens-per-request",
        "--block-size",
        "--parameters",
        "--weight-bytes",
        "--hidden-size",
        "--batch-size",
        "--sequence-length",
        "--activation-bytes",
        "--activation-tensors",
        "--layers",
        "--kv-heads",
        "--kv-cache-dtype",
        "--tensor-parallel",
    ],
    "roofline": [
        "--scenario",
        "--operations",
        "--bytes-moved",
        "--peak",
        "--bandwidth",
        "--parameters",
        "--weight-bytes",
        "--prompt-tokens",
        "--batch-size",
        "--context-tokens",
        "--element-bytes",
        "--kv-cache-dtype",
    ],
}
LLAMA = {
    **json.loads((Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llama-like.json").read_text()),
    "max_position_embeddings": 131072,
}


def combinations(per_kind: int = 150) -> list[list[str]]:
    rng = random.Random(48)
    out: list[list[str]] = []
    for kind, options in OPTIONS.items():
        out.append(["estimate", kind])
        for _ in range(per_kind):
            args = ["estimate", kind]
            model = rng.choice(MODELS)
            if model is not None:
                args += ["--model", model]
            gpu = rng.choice(GPUS) if kind != "kv" else None
            if gpu is not None:
                args += ["--gpu", gpu]
            if gpu is not None and kind == "roofline" and rng.random() < 0.8:  # the table confirms no peaks yet
                args += ["--peak", rng.choice(VALUES["--peak"]), "--bandwidth", rng.choice(VALUES["--bandwidth"])]
            if model in ("gpt-oss-20b", "deepseek-v3", "gemma-3-270m") and kind != "kv" and rng.random() < 0.8:
                args += ["--parameters", rng.choice(VALUES["--parameters"])]
            for flag in rng.sample([o for o in options if o not in args], rng.randint(0, 4)):
                args += [flag, rng.choice(VALUES[flag])]
            if rng.random() < 0.2:
                flag = rng.choice([f for f in options if f in BAD])
                args += [flag, rng.choice(BAD[flag])]
            out.append(args)
    return out


def disk_models(folder: Path) -> dict[str, str]:
    plain = folder / "llama"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps(LLAMA), encoding="utf-8")
    stored = folder / "stored"
    stored.mkdir()
    (stored / "config.json").write_text(json.dumps(LLAMA), encoding="utf-8")
    index = {"metadata": {"total_size": 16060522496}, "weight_map": {}}
    (stored / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    return {"DISK_LLAMA": str(plain), "DISK_SAFETENSORS": str(stored)}


def run_all() -> list[dict]:
    from typer.testing import CliRunner

    from invmap.cli import app

    runner = CliRunner()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        where = disk_models(Path(tmp))
        for args in combinations():
            real = [where.get(a, a) for a in args]
            for tail in (["--json"], ["--format", "plain"]):
                done = runner.invoke(app, real + tail, prog_name="invmap")
                if done.exception and not isinstance(done.exception, SystemExit):
                    out = {"traceback": repr(done.exception)}
                else:
                    out = {"code": done.exit_code, "out": done.stdout, "err": done.stderr}
                shown = [a if a not in where.values() else next(k for k, v in where.items() if v == a) for a in real]
                text = json.dumps(out).replace(tmp, "TMP")
                results.append({"args": shown + tail, **json.loads(text)})
    return results


def compare(before: str, after: str) -> int:
    old = json.loads(Path(before).read_text(encoding="utf-8"))
    new = json.loads(Path(after).read_text(encoding="utf-8"))
    assert [r["args"] for r in old] == [r["args"] for r in new], "different combinations"
    differ = [(a, b) for a, b in zip(old, new) if a != b]
    codes: dict[int, int] = {}
    for r in old:
        codes[r.get("code", -1)] = codes.get(r.get("code", -1), 0) + 1
    print(f"{len(old)} runs ({len(old) // 2} combinations x json and plain), exit codes {dict(sorted(codes.items()))}")
    for a, b in differ:
        print("DIFFERS:", " ".join(a["args"]))
        for key in ("code", "out", "err", "traceback"):
            if a.get(key) != b.get(key):
                print(f"  {key}: {str(a.get(key))[:300]!r}\n   -> {str(b.get(key))[:300]!r}")
    print(f"{len(differ)} differ")
    return 1 if differ else 0


USAGE = "usage: python scripts/estimate_outputs.py OUT.json | --compare BEFORE.json AFTER.json"


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if argv[:1] == ["--compare"] and len(argv) == 3:
        return compare(argv[1], argv[2])
    if len(argv) != 1 or argv[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    Path(argv[0]).write_text(json.dumps(run_all(), indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
