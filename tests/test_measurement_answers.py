"""What invmap says on every real measurement of the development set, pinned (issue 41, section 4): each
file of tests/fixtures/measurements run through the CLI (`triage --metrics FILE` or `--bench FILE`, and
each before/after pair as `--bench A --bench B`), its levels with their confidence and its exit code
compared with tests/measurement_answers.toml. A rule change that changes an answer fails here; re-pin on
purpose with `python tests/test_measurement_answers.py` and say why in the commit. Whether the answers
are right is benchmarks/measurements.py's question (against the labels), not this file's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import tomli

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures" / "measurements"
PINNED = HERE / "measurement_answers.toml"
ENTRIES: list[dict] = tomli.loads((FIXTURES / "index.toml").read_text(encoding="utf-8"))["measurement"]
OPTION = {"scrape": "--metrics", "bench": "--bench"}


def cases() -> dict[str, list[str]]:
    """Each case's name and triage arguments: every file, then every before/after pair."""
    out = {e["file"]: [OPTION[e["kind"]], str(FIXTURES / e["file"])] for e in ENTRIES}
    pairs: dict[str, dict[str, str]] = {}
    for e in ENTRIES:
        if "pair" in e:
            pairs.setdefault(e["pair"], {})[e["side"]] = e["file"]
    for name, sides in sorted(pairs.items()):
        out[f"pair {name}"] = ["--bench", str(FIXTURES / sides["before"]), "--bench", str(FIXTURES / sides["after"])]
    return out


CASES = cases()


def answer(result) -> str:
    """`exit 0: L2 high, L6 high`, or `exit 0: []`, or `exit 3` for a refusal."""
    if result.code != 0:
        return f"exit {result.code}"
    levels = json.loads(result.out)
    return "exit 0: " + (", ".join(f"{lv['code']} {lv['confidence']}" for lv in levels) or "[]")


@pytest.mark.parametrize("case", list(CASES))
def test_each_real_measurement_gets_its_pinned_answer(cli, case):
    pinned = tomli.loads(PINNED.read_text(encoding="utf-8"))["answer"]
    result = cli("triage", *CASES[case], "--json")
    assert "Traceback" not in result.err
    assert answer(result) == pinned[case]


def test_every_case_is_pinned_and_every_pin_is_a_case():
    assert sorted(tomli.loads(PINNED.read_text(encoding="utf-8"))["answer"]) == sorted(CASES)


if __name__ == "__main__":  # re-pin: run the installed CLI in-process over every case
    from typer.testing import CliRunner

    sys.path.insert(0, str(HERE))
    from invmap.cli import app

    runner = CliRunner()
    lines = [
        "# Pinned by `python tests/test_measurement_answers.py` (see that file): case -> what invmap says.",
        "",
        "[answer]",
    ]
    for name, args in CASES.items():
        done = runner.invoke(app, ["triage", *args, "--json"], prog_name="invmap")

        class Done:
            code, out = done.exit_code, done.stdout

        lines.append(f"{json.dumps(name)} = {json.dumps(answer(Done))}")
    PINNED.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{PINNED}: {len(CASES)} answers pinned")
