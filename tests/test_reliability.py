"""Issue: nothing lost, nothing injected — process-level faults, each through the real program."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ASSETS, add_args, bash, installed_invmap, tab

MINI = (ASSETS / "mini.toml").read_text(encoding="utf-8")
ADD = add_args()


@pytest.fixture
def mine(tmp_path) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(MINI, encoding="utf-8")
    return path


@pytest.fixture
def terminal_signals():
    """The signal dispositions of a process started from a terminal, whatever this one inherited (a
    run under `nohup` or as a background job starts with SIGHUP or SIGINT ignored, which invmap keeps
    ignored); the inherited ones restored after."""
    wanted = {signal.SIGTERM: signal.SIG_DFL, signal.SIGHUP: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler}
    inherited = {sig: signal.signal(sig, handler) for sig, handler in wanted.items()}
    held = signal.pthread_sigmask(signal.SIG_BLOCK, [])  # a finished write blocks them until the process ends
    yield
    for sig in wanted:  # one sent while blocked is pending: let it through ignored, not into this worker
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, list(wanted))
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    for sig, handler in inherited.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_a_write_leaves_the_file_and_no_temporary(mine, monkeypatch, signum, terminal_signals):
    from invmap import writers

    before = mine.read_bytes()

    def interrupted_fsync(fd: int) -> None:
        os.kill(os.getpid(), signum)
        time.sleep(1)  # the handler runs before this returns

    monkeypatch.setattr(os, "fsync", interrupted_fsync)
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    with pytest.raises(SystemExit) as stopped:
        writers.write_atomic(mine, "new text")
    assert stopped.value.code == 128 + signum
    assert mine.read_bytes() == before
    assert sorted(p.name for p in mine.parent.iterdir()) == ["mine.toml"]
    assert {sig: signal.getsignal(sig) for sig in previous} == previous  # handlers restored


def test_a_write_under_nohup_survives_the_hangup(mine, monkeypatch, terminal_signals):
    """SIGHUP ignored at the start (`nohup invmap add ...`) stays ignored: the write completes."""
    from invmap import writers

    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    real_fsync = os.fsync

    def hung_up_fsync(fd: int) -> None:  # the new file's fsync, before it replaces the old
        monkeypatch.setattr(os, "fsync", real_fsync)
        os.kill(os.getpid(), signal.SIGHUP)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", hung_up_fsync)
    writers.write_atomic(mine, "new text")
    assert mine.read_text(encoding="utf-8") == "new text"
    assert sorted(p.name for p in mine.parent.iterdir()) == ["mine.toml"]
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def test_new_files_follow_the_umask_and_replaced_files_keep_their_mode(mine, tmp_path):
    program = installed_invmap()
    out = tmp_path / "export.csv"
    done = bash(f"umask 077; '{program}' export --format csv -o '{out}'")
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    os.chmod(mine, 0o640)
    assert bash(f"'{program}' --catalog '{mine}' add " + " ".join(f"'{a}'" for a in ADD)).returncode == 0
    assert stat.S_IMODE(mine.stat().st_mode) == 0o640


def test_write_errors_are_exit_4():
    program = installed_invmap()
    full = bash(f"'{program}' export --format csv -o /dev/full")
    assert (
        full.returncode == 4
        and full.stderr.startswith("Error: cannot write /dev/full")
        and "Traceback" not in full.stderr
    )
    closed = bash(f"'{program}' list >&-")
    assert closed.returncode == 4 and "cannot write to stdout" in closed.stderr and "Traceback" not in closed.stderr
    devnull = bash(f"'{program}' export --format json -o /dev/null")
    assert devnull.returncode == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_closed_stdin_is_exit_4():
    program = installed_invmap()
    done = bash(f"'{program}' --catalog - list <&-")
    assert done.returncode == 4 and "stdin" in done.stderr and "Traceback" not in done.stderr


def test_a_closed_stderr_does_not_change_the_exit_code():
    program = installed_invmap()
    assert bash(f"'{program}' show nosuchsourceatall 2>&-").returncode == 1
    assert bash(f"'{program}' list --type nosuchtype 2>&-").returncode == 2


def test_non_utf8_argument_is_a_usage_error(mine):
    program = installed_invmap()
    done = bash(f"'{program}' --catalog '{mine}' add --name $'B\\xffad' " + " ".join(f"'{a}'" for a in ADD[2:]))
    assert done.returncode == 2 and "not valid UTF-8" in done.stderr and "Traceback" not in done.stderr
    assert mine.read_text(encoding="utf-8") == MINI


def _until_invmap_runs(pid: int) -> None:
    """Wait until invmap's own code has taken Ctrl-C over: the interpreter catches SIGINT from its
    start-up on (Python's handler, a traceback), entry.py gives it back its default action. Read
    from /proc/PID/status (SigCgt), so a loaded machine's slow start-up moves nothing."""
    bit = 1 << (signal.SIGINT - 1)
    seen_python, deadline = False, time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return  # already ended
        caught = int(re.search(r"SigCgt:\s*([0-9a-f]+)", status).group(1), 16) & bit
        if caught:
            seen_python = True
        elif seen_python:
            return
        time.sleep(0.0005)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads signal dispositions from /proc")
def test_ctrl_c_ends_quietly_at_any_moment(tmp_path):
    # From the moment invmap's own code runs (before it, the interpreter's start-up and the console
    # script's `import re` answer Ctrl-C with Python's traceback, as any Python program does):
    # never a traceback, never a false error such as an "invalid catalog" from a validator that was
    # interrupted. A finished command keeps its status; an interrupted one dies by SIGINT, which a
    # shell reports as 130.
    program = installed_invmap()
    for n, delay in enumerate((0.0, 0.01, 0.03, 0.06, 0.1, 0.15, 0.25)):
        env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / f"cache{n}")}  # a first run: parse, validate, index
        proc = subprocess.Popen(
            [program, "list", "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
        )
        _until_invmap_runs(proc.pid)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        # 130: the signal came while the index was being built, which removes its temporary file and
        # then ends with 128 + SIGINT (index/building.py), what a shell reports for a kill by SIGINT too.
        assert proc.returncode in (0, -signal.SIGINT, 128 + signal.SIGINT), (delay, proc.returncode, err)
        assert err == "", (delay, err)
    in_shell = bash(f"'{program}' list --json > /dev/null & pid=$!; sleep 0.1; kill -INT $pid; wait $pid; echo $?")
    assert in_shell.stdout.strip() in ("0", "130")


def test_messages_say_it_plainly(cli, tmp_path):
    one = tmp_path / "one.toml"
    one.write_text(MINI.split("[[sources]]")[0] + "[[sources]]" + MINI.split("[[sources]]")[1], encoding="utf-8")
    assert cli("--catalog", str(one), "check").out == f"{one}: ok, 1 source\n"
    empty = cli("init", "")
    assert (empty.code, empty.err) == (2, "Error: a path is required\n")
    no_labels = cli("--catalog", str(one), "list", "--layer", "banana")
    assert no_labels.code == 2 and "such as )" not in no_labels.err and "(such as" not in no_labels.err


def test_completion_environment_without_words_is_silent():
    done = tab(None, "1")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_huge_catalog_never_reaches_the_completion_path(tmp_path):
    done = tab("invmap -c /dev/zero show ", INVMAP_MAX_CATALOG="1M")
    assert done.returncode == 0 and "Traceback" not in done.stderr


def test_export_to_stdout_and_import_output_refusal(cli, tmp_path):
    assert json.loads(cli("export", "--format", "json", "-o", "-").out)[0]["id"] == "kiely-guide"
    target = tmp_path / "t.toml"
    target.write_text("keep")
    md = cli("export", "--format", "markdown").out
    refused = cli("import", "-", "-o", str(target), input=md)
    assert refused.code == 2 and target.read_text() == "keep"
    assert cli("import", "-", "-o", str(target), "--force", input=md).code == 0


def test_using_invmap_as_a_library_leaves_ctrl_c_alone():
    import sys

    code = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler);"  # as from a terminal
        "from typer.testing import CliRunner; from invmap.cli import app;"
        "CliRunner().invoke(app, ['list', '--json']);"
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr


@pytest.mark.parametrize("name", ["nested.toml", "dotted.toml", "osc_title.toml"])
def test_tab_on_a_hostile_catalog_offers_nothing_quietly(name):
    done = tab(f"invmap -c {ASSETS / 'hostile' / name} show ")
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "", "")
