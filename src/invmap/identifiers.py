"""Identifiers people paste: arXiv ids, DOIs and links in their common forms, made canonical.

`2407.00079v2`, `arXiv:2407.00079` and `http://arxiv.org/pdf/2407.00079v2` are one paper;
`doi:10.1145/X` and `https://doi.org/10.1145/X` one DOI; `https://docs.vllm.ai/` and
`http://docs.vllm.ai` one link. The index stores the canonical forms; `show` looks them up.
"""

from __future__ import annotations

import re

_ARXIV_ID = r"(\d{4}\.\d{4,5})(v\d+)?"
_ARXIV = re.compile(
    rf"^(?:arxiv:\s*|(?:https?://)?(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/)?{_ARXIV_ID}(?:\.pdf)?/?$", re.IGNORECASE
)
_DOI = re.compile(r"^(?:doi:\s*|(?:https?://)?(?:dx\.)?doi\.org/)?(10\.\d{4,9}/\S+)$", re.IGNORECASE)
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_HOST_PATH = re.compile(r"^[\w-]+(?:\.[\w-]+)+/", re.IGNORECASE)


def arxiv_id(text: str) -> str | None:
    """The bare arXiv id (no version) of any common form, else None."""
    m = _ARXIV.match(text.strip())
    return m.group(1) if m else None


def arxiv_cited(text: str) -> str | None:
    """The arXiv id of any common form with its version when it names one (`2505.04021v1`), else None."""
    m = _ARXIV.match(text.strip())
    return m.group(1) + (m.group(2) or "") if m else None


def doi(text: str) -> str | None:
    """The DOI, lowercased (DOIs are case-insensitive), of any common form, else None."""
    m = _DOI.match(text.strip())
    return m.group(1).lower() if m else None


def canonical_link(url: str) -> str:
    """`https://Docs.vLLM.ai/` -> `docs.vllm.ai`: no scheme, host lowercased, no trailing slash."""
    text = _SCHEME.sub("", url.strip())
    host, slash, rest = text.partition("/")
    return (host.lower() + slash + rest).rstrip("/")


def is_link(text: str) -> bool:
    """A scheme (`https://...`), or a dotted host followed by `/` (`github.com/llm-d/llm-d`)."""
    stripped = text.strip()
    return bool(_SCHEME.match(stripped) or _HOST_PATH.match(stripped))


def keys_for_query(text: str) -> list[str] | None:
    """The index keys an identifier-like query stands for, or None when it is not one.

    An identifier that matches nothing is "no source matches", never a fuzzy guess.
    """
    keys = []
    if (a := arxiv_id(text)) is not None:
        keys.append("arxiv:" + a)
    if (d := doi(text)) is not None:
        keys.append("doi:" + d)
    if is_link(text) or keys:
        if is_link(text):
            keys.append("link:" + canonical_link(text))
        return keys
    return None
