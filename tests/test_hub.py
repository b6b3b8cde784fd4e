"""`--model org/name`: a Hugging Face id read from the local Hugging Face cache, else fetched from a
stand-in of the Hub on 127.0.0.1 (HF_ENDPOINT) and cached in the same layout; never the internet."""

from __future__ import annotations

import http.server
import json
import threading
import time
from pathlib import Path

import pytest

PHI4 = (Path(__file__).parent / "fixtures" / "configs" / "microsoft--phi-4" / "config.json").read_bytes()
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_secretSECRET123"


class Hub:
    """Answers `/{id}/resolve/main/{file}` from `files`; `refusals` maps an id to (status, code, message)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.refusals: dict[str, tuple[int, str, str]] = {}
        self.requests: list[tuple[str, str]] = []  # (path, Authorization)
        self.delay = 0.0
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                hub.requests.append((self.path, self.headers.get("Authorization", "")))
                time.sleep(hub.delay)
                repo = "/".join(self.path.strip("/").split("/")[:2])
                if repo in hub.refusals:
                    status, code, message = hub.refusals[repo]
                    return self.answer(status, b"", {"X-Error-Code": code, "X-Error-Message": message})
                body = hub.files.get(self.path)
                if body is None:
                    known = any(p.startswith(f"/{repo}/") for p in hub.files)
                    code = "EntryNotFound" if known else "RepoNotFound"
                    return self.answer(404, b"", {"X-Error-Code": code, "X-Repo-Commit": COMMIT})
                self.answer(200, body, {"X-Repo-Commit": COMMIT})

            def answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def hub(monkeypatch):
    server = Hub()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def _kv(cli, model: str = "microsoft/phi-4", *extra: str):
    return cli("estimate", "kv", "--model", model, "--json", *extra)


def test_a_model_in_the_hugging_face_cache_is_read_without_a_request(cli, hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    folder = tmp_path / "hub" / "models--microsoft--phi-4"
    (folder / "snapshots" / COMMIT).mkdir(parents=True)
    (folder / "snapshots" / COMMIT / "config.json").write_bytes(PHI4)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)
    result = _kv(cli)
    assert result.code == 0, result.err
    model = json.loads(result.out)["model"]
    assert model["source"] == "hub-cache" and model["read_from"] == [str(folder / "snapshots" / COMMIT / "config.json")]
    assert model["model_type"] == "phi3" and hub.requests == []


def test_a_fetched_model_is_cached_and_the_second_run_asks_nothing(cli, hub, isolated):
    hub.files["/microsoft/phi-4/resolve/main/config.json"] = PHI4
    first = _kv(cli)
    assert first.code == 0, first.err
    assert json.loads(first.out)["model"]["source"] == "hub"
    assert [p for p, _ in hub.requests] == [
        "/microsoft/phi-4/resolve/main/config.json",
        "/microsoft/phi-4/resolve/main/model.safetensors.index.json",
    ]
    folder = isolated / "huggingface" / "hub" / "models--microsoft--phi-4"
    assert (folder / "refs" / "main").read_text() == COMMIT
    assert (folder / "snapshots" / COMMIT / "config.json").read_bytes() == PHI4
    assert (folder / ".no_exist" / COMMIT / "model.safetensors.index.json").is_file()  # as huggingface_hub marks it
    hub.requests.clear()
    second = _kv(cli)
    assert second.code == 0 and hub.requests == []
    assert json.loads(second.out)["model"]["source"] == "hub-cache"
    assert json.loads(second.out)["results"] == json.loads(first.out)["results"]


def test_the_safetensors_index_is_fetched_beside_the_config_and_its_total_used(cli, hub):
    hub.files["/microsoft/phi-4/resolve/main/config.json"] = PHI4
    index = {"metadata": {"total_size": 29_319_014_400}, "weight_map": {}}
    hub.files["/microsoft/phi-4/resolve/main/model.safetensors.index.json"] = json.dumps(index).encode()
    result = cli("estimate", "memory", "--model", "microsoft/phi-4", "--gpu", "h100-sxm", "--json")
    assert result.code == 0, result.err
    weights = next(i for i in json.loads(result.out)["inputs"] if i["name"] == "weights_bytes")
    assert weights["value"] == 29_319_014_400


def test_a_cache_that_cannot_be_written_is_not_an_error(cli, hub, tmp_path, monkeypatch):
    hub.files["/microsoft/phi-4/resolve/main/config.json"] = PHI4
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("HF_HUB_CACHE", str(blocked / "hub"))  # under a file: cannot be made
    result = _kv(cli)
    assert result.code == 0, result.err
    assert "not cached" in json.loads(result.out)["model"]["note"]


@pytest.mark.parametrize("value", ["1", "ON", "yes", "True"])
def test_offline_is_cache_only_and_a_miss_is_exit_4(cli, hub, monkeypatch, value):
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    result = _kv(cli)
    assert result.code == 4 and hub.requests == []
    assert "HF_HUB_OFFLINE" in result.err and "not in the Hugging Face cache" in result.err


def test_a_model_the_hub_does_not_know_is_exit_1_with_its_reason(cli, hub):
    result = _kv(cli, "nobody/no-such-model")
    assert result.code == 1
    assert result.err.startswith("Error: the Hugging Face Hub does not know model 'nobody/no-such-model'")
    assert "RepoNotFound" in result.err


def test_a_repository_without_a_config_is_exit_1(cli, hub):
    hub.files["/org/weights-only/resolve/main/README.md"] = b"hi"
    result = _kv(cli, "org/weights-only")
    assert result.code == 1 and "has no config.json" in result.err and "EntryNotFound" in result.err


def test_a_gated_model_is_exit_4_with_the_hubs_reason(cli, hub):
    hub.refusals["meta-llama/Gated-1"] = (403, "GatedRepo", "Access to model meta-llama/Gated-1 is restricted.")
    result = _kv(cli, "meta-llama/Gated-1")
    assert result.code == 4
    assert "is gated" in result.err and "Access to model meta-llama/Gated-1 is restricted." in result.err
    assert "set HF_TOKEN" in result.err


def test_hf_token_is_sent_as_a_bearer_header_and_never_printed(cli, hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    hub.refusals["meta-llama/Gated-1"] = (403, "GatedRepo", "Access to model meta-llama/Gated-1 is restricted.")
    refused = _kv(cli, "meta-llama/Gated-1")
    hub.files["/microsoft/phi-4/resolve/main/config.json"] = PHI4
    done = _kv(cli)
    assert {auth for _, auth in hub.requests} == {f"Bearer {TOKEN}"}
    for result in (refused, done):
        assert TOKEN not in result.out + result.err


def test_a_config_that_is_not_json_is_exit_3_and_not_cached(cli, hub, isolated):
    hub.files["/org/broken/resolve/main/config.json"] = b"{not json"
    result = _kv(cli, "org/broken")
    assert result.code == 3 and "invalid JSON" in result.err
    assert not (isolated / "huggingface" / "hub" / "models--org--broken").exists()


def test_a_slow_hub_meets_the_deadline(cli, hub, monkeypatch):
    monkeypatch.setattr("invmap.estimate.hub.DEADLINE", 0.5)
    hub.delay = 2.0
    started = time.monotonic()
    result = _kv(cli)
    assert result.code == 4 and "did not answer within 0.5 s" in result.err
    assert time.monotonic() - started < 2.0


def test_an_oversized_config_is_refused(cli, hub):
    hub.files["/microsoft/phi-4/resolve/main/config.json"] = b" " * (4 * 2**20 + 1)
    result = _kv(cli)
    assert result.code == 4 and "larger than 4 MB" in result.err


def test_a_path_that_exists_wins_over_an_id(cli, hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "microsoft" / "phi-4").mkdir(parents=True)
    (tmp_path / "microsoft" / "phi-4" / "config.json").write_bytes(PHI4)
    result = _kv(cli)
    assert result.code == 0 and hub.requests == []
    assert json.loads(result.out)["model"]["source"] == "file"


@pytest.mark.parametrize("ref", ["a/b/c", "org/-name", "org/na--me", "org/name.git", "org/" + "n" * 97])
def test_what_is_no_hub_id_is_an_unknown_model(cli, hub, ref):
    result = _kv(cli, ref)
    assert result.code == 2 and hub.requests == []


def test_every_shipped_hub_id_finds_its_entry_offline_without_a_request(cli, hub, monkeypatch):
    from invmap.estimate.tables import model_table

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    named = [e for e in model_table() if e.get("hub_id")]
    assert named
    for entry in named:
        result = _kv(cli, entry["hub_id"])
        assert result.code == 0, result.err
        model = json.loads(result.out)["model"]
        assert (model["name"], model["source"], model["hub_id"]) == (entry["name"], "shipped", entry["hub_id"])
    assert hub.requests == []
    listed = json.loads(cli("models", "--json").out)
    assert {r["name"]: r["hub_id"] for r in listed} == {e["name"]: e.get("hub_id") for e in model_table()}
