"""Strangers' files: devices, FIFOs and sockets as a catalog or an overlay's base are refused before
a byte is read (exit 4, one line), and an overlay's base replaced while it is read never leaves a
stale index."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time

import pytest

from conftest import ASSETS, installed_invmap, tab

MINI = (ASSETS / "mini.toml").read_text(encoding="utf-8")


def _special(tmp_path, kind: str) -> str:
    if kind in ("/dev/zero", "/dev/urandom"):
        return kind
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    return str(path)


KINDS = {"/dev/zero": "a character device", "/dev/urandom": "a character device", "fifo": "a FIFO", "sock": "a socket"}


def _run(*args: str) -> subprocess.CompletedProcess:
    """The installed invmap; a hang is a failure (20 s), not a stuck suite."""
    return subprocess.run(
        [installed_invmap(), *args], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("as_base", [False, True], ids=["catalog", "base"])
def test_what_is_not_a_regular_file_is_refused_at_once(tmp_path, kind, as_base):
    special = _special(tmp_path, kind)
    catalog = special
    if as_base:
        catalog = str(tmp_path / "overlay.toml")
        with open(catalog, "w", encoding="utf-8") as handle:
            handle.write(f'[catalog]\nextends = "{special}"\n')
    message = f"Error: cannot read {special}: it is {KINDS[kind]}, not a regular file\n"
    for args in (["list"], ["show", "mooncake"], ["edit", "mooncake", "--year", "2024"], ["check"]):
        started = time.monotonic()
        done = _run("--catalog", catalog, *args)
        assert (done.returncode, done.stdout, done.stderr) == (4, "", message), args
        assert time.monotonic() - started < 5
    where = _run("--catalog", catalog, "where")
    assert where.returncode == 0 and where.stdout.startswith(catalog)
    started = time.monotonic()
    done = tab(f"invmap -c {catalog} show ")
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "", "") and time.monotonic() - started < 3


def test_an_overlay_base_replaced_while_it_is_read_is_read_again(cli, tmp_path, monkeypatch):
    """The base is swapped for a new file just after invmap has read it, before the index is built:
    the index must not stay on the old content once the new file is there."""
    from invmap import catalog as catalogs

    base = tmp_path / "base.toml"
    base.write_text(MINI, encoding="utf-8")
    overlay = tmp_path / "overlay.toml"
    overlay.write_text(f'[catalog]\nextends = "{base}"\n', encoding="utf-8")
    newer = tmp_path / "newer.toml"
    newer.write_text(MINI.replace('id = "mooncake"', 'id = "mooncake-two"'), encoding="utf-8")
    real = catalogs.read_table
    swapped = []

    def read_then_swap(path):
        table = real(path)
        if path == str(base) and not swapped:
            swapped.append(True)
            os.replace(newer, base)  # a new file (a new inode) under the same name
        return table

    monkeypatch.setattr(catalogs, "read_table", read_then_swap)
    first = [r["id"] for r in json.loads(cli("--catalog", str(overlay), "list", "--json").out)]
    monkeypatch.setattr(catalogs, "read_table", real)
    again = [r["id"] for r in json.loads(cli("--catalog", str(overlay), "list", "--json").out)]
    assert swapped and "mooncake-two" in again and "mooncake" not in again, (first, again)
