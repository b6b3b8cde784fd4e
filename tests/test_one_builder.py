"""One index builder at a time per catalog: first runs started together wait for the one that builds
and then read its index; a build stopped by SIGTERM, SIGHUP or SIGINT leaves no partial file."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from conftest import generated_catalog, installed_invmap


def _start(catalog, cache, *args: str) -> subprocess.Popen:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "INVMAP_TRACE": "1"}
    return subprocess.Popen(
        [installed_invmap(), "--catalog", str(catalog), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_first_runs_at_once_build_the_index_once(tmp_path):
    catalog = generated_catalog(tmp_path / "big.toml", 8000)
    cache = tmp_path / "cache"
    runs = [_start(catalog, cache, "list", "--format", "csv") for _ in range(6)]
    done = [(p.communicate(timeout=300), p.returncode) for p in runs]
    outs = {out for (out, _), _ in done}
    assert [code for _, code in done] == [0] * 6 and len(outs) == 1
    traces = [err for (_, err), _ in done]
    assert sum("index: built " in e for e in traces) == 1, traces
    assert sum("(built by another invmap)" in e for e in traces) >= 1
    leftovers = [n for n in os.listdir(cache / "invmap") if n.endswith(".tmp")]
    assert leftovers == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_build_stopped_by_a_signal_leaves_no_partial_file(tmp_path, sig):
    catalog = generated_catalog(tmp_path / "big.toml", 12000)
    cache = tmp_path / "cache"
    run = _start(catalog, cache, "list", "--format", "csv")
    folder = cache / "invmap"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until the build has its temporary file
        if folder.is_dir() and any(n.endswith(".tmp") for n in os.listdir(folder)):
            break
        time.sleep(0.005)
    else:
        pytest.fail("no temporary index appeared")
    run.send_signal(sig)
    out, err = run.communicate(timeout=60)
    left = sorted(n for n in os.listdir(folder) if not n.endswith(".lock"))
    assert "Traceback" not in err and not [n for n in left if n.endswith(".tmp")]
    if run.returncode in (0, -sig):  # a machine so loaded that the build ended before the signal came
        assert len(left) == 1 and left[0].startswith("index-")
        return
    assert (run.returncode, out, left) == (128 + sig, "", []), err
