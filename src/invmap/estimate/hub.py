"""`--model org/name`: a Hugging Face model id, read from the local Hugging Face cache, else fetched
from the Hub (config.json and model.safetensors.index.json only, never weights) and kept in that cache.

As huggingface_hub reads them (huggingface/huggingface_hub@ee0a4510f4bc, src/huggingface_hub/):
- the cache is `$HF_HUB_CACHE`, else `$HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub`, else
  `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub` (constants.py); a model's folder is
  `models--{org}--{name}` (file_download.py repo_folder_name), `refs/main` holds the commit of the main
  branch and `snapshots/{commit}/{file}` the files, `.no_exist/{commit}/{file}` a file the Hub said it
  does not have (file_download.py try_to_load_from_cache);
- `$HF_ENDPOINT` (default https://huggingface.co) and `{endpoint}/{id}/resolve/{revision}/{file}`
  (constants.py HUGGINGFACE_CO_URL_TEMPLATE), the commit in the `X-Repo-Commit` header;
- `$HF_HUB_OFFLINE` (else `$TRANSFORMERS_OFFLINE`) is on for 1, ON, YES or TRUE in any case (constants.py
  _is_true); `$HF_TOKEN` is sent as `authorization: Bearer ...` (utils/_auth.py, utils/_headers.py);
- a refusal names itself in `X-Error-Code` (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo)
  and `X-Error-Message` (utils/_http.py hf_raise_for_status); a 401 without a token is also what the Hub
  answers for a private or gated model;
- an id is `namespace/name`, letters, digits, `-`, `_` and `.`, not starting or ending with `-` or `.`,
  the name at most 96 characters, no `--` or `..`, not ending `.git` (utils/_validators.py).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from invmap.errors import NetworkError, NotFoundError
from invmap.net import MalformedURL, checked_url, fetch

ENDPOINT_VAR, DEFAULT_ENDPOINT = "HF_ENDPOINT", "https://huggingface.co"
TOKEN_VAR = "HF_TOKEN"
OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
TRUE_VALUES = ("1", "ON", "YES", "TRUE")
CONFIG, INDEX = "config.json", "model.safetensors.index.json"
CONFIG_CAP = 4 * 2**20  # a config.json is a page of JSON
INDEX_CAP = 32 * 2**20  # an index names every tensor: a mixture of hundreds of experts has tens of thousands
DEADLINE = 20.0  # seconds, each request (as arXiv's and Crossref's)
SERVICE = "the Hugging Face Hub"
MAX_HOPS = 10

_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?"
_ID = re.compile(rf"{_PART}/{_PART}")
_COMMIT = re.compile(r"[0-9a-f]{40}")


def is_hub_id(ref: str) -> bool:
    """`org/name` as the Hub allows it (exactly one slash; a path that exists is tested first)."""
    if not _ID.fullmatch(ref) or "--" in ref or ".." in ref or ref.endswith(".git"):
        return False
    return len(ref.split("/")[1]) <= 96


def cache_root() -> Path:
    env = os.environ
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(var):
            return Path(os.path.expandvars(os.path.expanduser(env[var])))
    home = env.get("HF_HOME") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return Path(os.path.expandvars(os.path.expanduser(home))) / "hub"


def offline() -> bool:
    value = next((os.environ[v] for v in OFFLINE_VARS if os.environ.get(v)), "")
    return value.upper() in TRUE_VALUES


def endpoint() -> str:
    return (os.environ.get(ENDPOINT_VAR) or DEFAULT_ENDPOINT).rstrip("/")


def repo_folder(repo_id: str) -> Path:
    return cache_root() / ("models--" + repo_id.replace("/", "--"))


def cached(repo_id: str) -> tuple[Path, bool] | None:
    """The snapshot folder of the main branch holding config.json, and whether the cache says the Hub
    has no safetensors index; None when the cache does not hold the config."""
    folder = repo_folder(repo_id)
    try:
        commit = (folder / "refs" / "main").read_text(encoding="ascii", errors="replace")[:100].strip()
    except OSError:
        return None
    if not _COMMIT.fullmatch(commit):
        return None
    snapshot = folder / "snapshots" / commit
    if not (snapshot / CONFIG).is_file():
        return None
    return snapshot, (folder / ".no_exist" / commit / INDEX).is_file()


@dataclass
class Fetched:
    config: bytes
    config_url: str
    index: bytes | None  # None: the Hub has no model.safetensors.index.json for it
    index_url: str
    commit: str | None


def url_of(repo_id: str, name: str) -> str:
    return f"{endpoint()}/{repo_id}/resolve/main/{name}"


def fetch_model(repo_id: str) -> Fetched:
    """config.json (a refusal is exit 1 or 4, with the Hub's reason) and the safetensors index (None
    when the Hub does not have one) of the main branch."""
    if offline():
        where = repo_folder(repo_id)
        raise NetworkError(
            f"model '{repo_id}' is not in the Hugging Face cache ({where}) and HF_HUB_OFFLINE is set: "
            "nothing is asked of the Hub",
            kind="error",
        )
    config_url, index_url = url_of(repo_id, CONFIG), url_of(repo_id, INDEX)
    config, commit = _ask(repo_id, config_url, CONFIG_CAP, required=True)
    index, _ = _ask(repo_id, index_url, INDEX_CAP, required=False)
    return Fetched(config or b"", config_url, index, index_url, commit)


def _ask(repo_id: str, url: str, cap: int, *, required: bool) -> tuple[bytes | None, str | None]:
    """The body of `url` (redirects followed here, so the commit header of the first answer is kept
    and the token is never sent to another host); None for a file the Hub does not have when not
    `required`."""
    token = os.environ.get(TOKEN_VAR, "").strip()
    host = urlsplit(url).netloc
    commit: str | None = None
    current = url
    for _ in range(MAX_HOPS + 1):
        sent = {"Authorization": f"Bearer {token}"} if token and urlsplit(current).netloc == host else {}
        answer = fetch(current, service=SERVICE, deadline=DEADLINE, cap=cap, headers=sent, follow_redirects=False)
        commit = commit or _commit(answer.headers)
        location = _header(answer.headers, "location")
        if 300 <= answer.status < 400 and location:
            current = _target(current, location)
            continue
        if answer.status < 300:
            return answer.body, commit
        return _refused(repo_id, current, answer.status, answer.headers, bool(token), required), commit
    raise NetworkError(f"{SERVICE} redirected more than {MAX_HOPS} times", kind="error")


def _header(headers: object, name: str) -> str:
    items = headers.items() if hasattr(headers, "items") else []  # type: ignore[union-attr]
    return next((str(v) for k, v in items if str(k).lower() == name), "")


def _commit(headers: object) -> str | None:
    value = _header(headers, "x-repo-commit").strip()
    return value if _COMMIT.fullmatch(value) else None


def _target(current: str, location: str) -> str:
    target = urljoin(current, location.strip())
    try:
        checked_url(target)
    except MalformedURL:
        raise NetworkError(f"{SERVICE} redirected to a URL that cannot be read", kind="error") from None
    if urlsplit(target).scheme.lower() not in ("http", "https"):
        raise NetworkError(f"{SERVICE} redirected to '{target}', which is not an http(s) URL", kind="error")
    return target


def _refused(repo_id: str, url: str, status: int, headers: object, token: bool, required: bool) -> None:
    """What an HTTP status of 400 or more means, as huggingface_hub reads it."""
    code = _header(headers, "x-error-code").strip()
    reason = " ".join(_header(headers, "x-error-message").split())[:300]
    said = f"HTTP {status}" + (f" {code}" if code else "") + (f": {reason}" if reason else "")
    if code == "EntryNotFound" or (status == 404 and not code and not required):
        if not required:
            return None
        raise NotFoundError(f"model '{repo_id}' has no {CONFIG} on {SERVICE} ({said})")
    if code == "GatedRepo":
        hint = "HF_TOKEN was sent: its account must accept the model's terms" if token else "set HF_TOKEN"
        raise NetworkError(f"model '{repo_id}' is gated on {SERVICE} ({said}); {hint}", kind="error")
    if code in ("RepoNotFound", "RevisionNotFound") or status == 404:
        hint = "" if token else " (a private or gated model needs HF_TOKEN)"
        raise NotFoundError(f"{SERVICE} does not know model '{repo_id}' ({said}){hint}")
    if status in (401, 403):
        hint = "HF_TOKEN was refused" if token else "a private or gated model needs HF_TOKEN"
        raise NetworkError(f"{SERVICE} refused model '{repo_id}' ({said}); {hint}", kind="error")
    raise NetworkError(f"{SERVICE} answered {said} for {url}", kind="error")


def store(repo_id: str, fetched: Fetched) -> tuple[Path | None, str]:
    """The fetched files written into the cache's layout (each atomically, refs/main last, so a
    half-written snapshot is never the main branch's): the snapshot folder, or None and why not (an
    answer without its commit, or a cache folder that cannot be written, is simply not cached)."""
    if fetched.commit is None:
        return None, f"not cached: {SERVICE} did not name the commit (X-Repo-Commit)"
    folder = repo_folder(repo_id)
    snapshot = folder / "snapshots" / fetched.commit
    try:
        _atomic(snapshot / CONFIG, fetched.config)
        if fetched.index is None:
            _atomic(folder / ".no_exist" / fetched.commit / INDEX, b"")
        else:
            _atomic(snapshot / INDEX, fetched.index)
        _atomic(folder / "refs" / "main", fetched.commit.encode())
    except OSError as exc:
        return None, f"not cached in {cache_root()}: {exc.strerror or exc}"
    return snapshot, f"cached in {snapshot}"


def _atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".incomplete")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)  # as any cached file: mkstemp's is the owner's only
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
