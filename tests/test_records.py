"""Experiment records: drafted, checked, and counted against the open questions."""

from __future__ import annotations

import json

import pytest

from conftest import filled


def test_record_new_fill_check_and_questions(cli, tmp_path):
    folder = tmp_path / "experiments"
    folder.mkdir()
    draft_path = folder / "paged.json"
    made = cli("record", "new", "pagedattention", "-o", str(draft_path))
    assert made.code == 0
    draft = json.loads(draft_path.read_text())
    assert draft["schema_version"] == "1.0" and draft["result_type"] == "measured"
    assert draft["record_id"].startswith("pagedattention-") and draft["sources"] == ["https://arxiv.org/abs/2309.06180"]
    assert "Which allocation and eviction rule" in draft["hypothesis"]
    assert cli("record", "check", str(draft_path)).code == 3
    assert cli("record", "new", "pagedattention", "-o", str(draft_path)).code == 2  # no overwrite without --force
    draft_path.write_text(json.dumps(filled(draft)))
    assert cli("record", "check", str(draft_path)).code == 0
    listed = json.loads(cli("records", str(folder), "--json").out)
    assert listed[0]["addresses"] == ["pagedattention"] and listed[0]["valid"] is True
    q = json.loads(cli("questions", "--layer", "L3", "--records", str(folder), "--json").out)
    assert next(r for r in q if r["id"] == "pagedattention")["records"] == [draft["record_id"]]
    still_open = json.loads(cli("questions", "--layer", "L3", "--records", str(folder), "--open", "--json").out)
    assert "pagedattention" not in [r["id"] for r in still_open] and "vllm" in [r["id"] for r in still_open]
    assert cli("records", str(tmp_path / "missing")).code == 2


@pytest.mark.parametrize(
    "change, message",
    [
        ({"schema_version": "2.0"}, "schema_version must be one of '1.0'"),
        ({"title": "  "}, "title must not be empty"),
        ({"result_type": "guessed"}, "result_type must be one of"),
        ({"workload": []}, "workload must be a JSON object"),
        ({"raw_measurements": []}, "raw_measurements must not be empty"),
        ({"limitations": [""]}, "limitations[0] must not be empty"),
        ({"sources": ["ftp://x"]}, "sources[0] must be an absolute http(s) URL"),
        ({"result_type": "estimated"}, "raw_measurements[0].evidence must match result_type 'estimated'"),
        # White space as the field guide's validator and JSON Schema (Python's re) see it.
        ({"title": "\x1f"}, "title must not be empty"),
        ({"limitations": ["\u2028"]}, "limitations[0] must not be empty"),
        ({"sources": ["https://x\x1c"]}, "sources[0] must be an absolute http(s) URL"),
        ({"sources": ["https:///x"]}, "sources[0] must be an absolute http(s) URL"),
        (
            {"raw_measurements": [{"name": "p50", "value": 1, "unit": "ms", "evidence": "measured", "note": None}]},
            "raw_measurements[0].note must be a string",
        ),
    ],
)
def test_each_rule_broken_once(cli, tmp_path, change, message):
    draft = json.loads(cli("record", "new", "mooncake").out)
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**filled(draft), **change}))
    result = cli("record", "check", str(path))
    assert result.code == 3 and message in result.err, result.err


@pytest.mark.parametrize("content", [b"", b"not json", b"[1, 2]", b"\xff\xfe", b'{"value": NaN}'])
def test_junk_records_are_exit_3(cli, tmp_path, content):
    path = tmp_path / "j.json"
    path.write_bytes(content)
    result = cli("record", "check", str(path), "--json")
    assert result.code == 3 and json.loads(result.out)[0]["valid"] is False


def test_nan_value_is_refused(cli, tmp_path):
    draft = filled(json.loads(cli("record", "new", "mooncake").out))
    text = json.dumps(draft).replace('"value": 12.5', '"value": NaN')
    path = tmp_path / "n.json"
    path.write_text(text)
    assert cli("record", "check", str(path)).code == 3


def test_readme_walkthrough_from_question_to_experiment(sh, tmp_path):
    """The README's "From question to experiment" steps, as a new user types them in an empty folder."""
    cwd = str(tmp_path)
    assert sh("questions", "--layer", "L3", cwd=cwd).code == 0
    (tmp_path / "experiments").mkdir()  # mkdir -p experiments: writers refuse a missing folder
    made = sh("record", "new", "pagedattention", "-o", "experiments/paged-kv.json", cwd=cwd)
    assert made.code == 0 and (tmp_path / "experiments" / "paged-kv.json").is_file()
    draft = json.loads((tmp_path / "experiments" / "paged-kv.json").read_text())
    assert sh("record", "check", "experiments/paged-kv.json", cwd=cwd).code == 3
    (tmp_path / "experiments" / "paged-kv.json").write_text(json.dumps(filled(draft)))
    assert sh("record", "check", "experiments/paged-kv.json", cwd=cwd).code == 0
    still_open = json.loads(sh("questions", "--records", "experiments", "--open", "--json", cwd=cwd).out)
    assert "pagedattention" not in [r["id"] for r in still_open] and len(still_open) == 29
    listed = sh("records", "--json", cwd=cwd)  # ./experiments is the default folder
    assert json.loads(listed.out)[0]["addresses"] == ["pagedattention"]
    piped = sh("record", "check", "-", "--json", input=json.dumps(filled(draft)), cwd=cwd)
    assert piped.code == 0 and json.loads(piped.out) == [{"path": "-", "valid": True, "problems": []}]


def test_record_new_result_type_id_and_output(cli, tmp_path):
    target = tmp_path / "sim.json"
    made = cli("record", "new", "mooncake", "--result-type", "simulated", "--id", "my-run", "--output", str(target))
    assert made.code == 0
    draft = json.loads(target.read_text(encoding="utf-8"))
    assert (draft["result_type"], draft["record_id"], draft["artifacts"]["source_id"]) == (
        "simulated",
        "my-run",
        "mooncake",
    )
    wrong = cli("record", "new", "mooncake", "--result-type", "guessed")
    assert wrong.code == 2 and "guessed" in wrong.err and wrong.out == ""


def test_draft_prompt_is_a_problem_named_with_the_others(cli, tmp_path):
    path = tmp_path / "draft.json"
    assert cli("record", "new", "pagedattention", "-o", str(path)).code == 0
    result = cli("record", "check", str(path))
    assert result.code == 3
    assert (
        result.err.splitlines()[0]
        == f"{path}: hypothesis still holds the draft's prompt (REPLACE: ...): write your own"
    )
    assert f"{path}: conclusion must not be empty" in result.err.splitlines()


def test_only_a_valid_record_addresses_a_question(cli, tmp_path):
    folder = tmp_path / "experiments"
    folder.mkdir()
    draft = json.loads(cli("record", "new", "pagedattention", "--id", "paged-kv").out)
    (folder / "paged-kv.json").write_text(json.dumps(draft))  # the draft as it is: invalid
    (folder / "mooncake.json").write_text(json.dumps(filled(json.loads(cli("record", "new", "mooncake").out))))
    rows = {r["id"]: r for r in json.loads(cli("questions", "--records", str(folder), "--json").out)}
    assert (rows["pagedattention"]["records"], rows["pagedattention"]["invalid_records"]) == ([], ["paged-kv"])
    assert rows["mooncake"]["records"] and rows["mooncake"]["invalid_records"] == []
    still_open = [r["id"] for r in json.loads(cli("questions", "--records", str(folder), "--open", "--json").out)]
    assert "pagedattention" in still_open and "mooncake" not in still_open
    table = cli("questions", "--records", str(folder), "--layer", "L3", "--format", "table", env={"COLUMNS": "200"}).out
    assert "paged-kv (invalid)" in table


def test_open_questions_use_the_default_records_folder(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    every = [r["id"] for r in json.loads(cli("questions", "--json").out)]
    assert [r["id"] for r in json.loads(cli("questions", "--open", "--json").out)] == every  # no ./experiments
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "m.json").write_text(
        json.dumps(filled(json.loads(cli("record", "new", "mooncake").out)))
    )
    assert "mooncake" not in [r["id"] for r in json.loads(cli("questions", "--open", "--json").out)]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    opened = json.loads(cli("questions", "--open", "--json", env={"INVMAP_RECORDS": str(elsewhere)}).out)
    assert "mooncake" in [r["id"] for r in opened]
