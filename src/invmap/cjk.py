"""Chinese (and other CJK) text for matching: FTS5's unicode61 tokenizer keeps a run of CJK characters
as one token, and its trigram tokenizer matches nothing under three characters, while 显存 or 量化
are two. So a CJK run is written as its overlapping character bigrams (`显存不足` -> `显存 存不 不足`),
on the index side (`index/fulltext.py`: the evidence rows) and the query side alike; and before that a
symptom's known terms (data/chinese.toml: each checked against an engine thread that uses it) are read
as the map's English words, so `显存不足 长上下文` also finds `GPU memory` and `context`. No segmenter
(jieba costs too much start-up). Corrections never touch a bigram (two characters are below the
shortest word corrected)."""

from __future__ import annotations

import re
from functools import lru_cache

# CJK Unified Ideographs (and extension A), CJK symbols' letters, Hiragana, Katakana, Hangul syllables
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
CJK_RUN = re.compile(f"[{_CJK}]+")


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def bigrams(text: str) -> str:
    """`text` with each CJK run as its overlapping bigrams, set apart from the words around it by
    spaces (`PD分离慢` -> `PD 分离 离慢`); a run of one character stays itself."""
    if not has_cjk(text):
        return text

    def pairs(m: re.Match[str]) -> str:
        run = m.group(0)
        return " " + (" ".join(run[i : i + 2] for i in range(len(run) - 1)) if len(run) > 1 else run) + " "

    return CJK_RUN.sub(pairs, text)


@lru_cache(maxsize=1)
def terms() -> dict[str, str]:
    """term -> its English words, longest term first (data/chinese.toml)."""
    from importlib import resources

    import tomli

    data = tomli.loads(resources.files("invmap").joinpath("data/chinese.toml").read_text(encoding="utf-8"))
    table = {str(k).casefold(): str(v["english"]) for k, v in data.get("terms", {}).items()}
    return dict(sorted(table.items(), key=lambda kv: -len(kv[0])))


def in_english(text: str) -> str:
    """A symptom for matching: every CJK run as bigrams, then the English words of each known Chinese
    term it holds (letters in either case: `PD分离` or `pd分离`), a term inside a longer known one
    not read again, and each English phrase once (吞吐 and 吞吐量 both say `throughput`)."""
    if not has_cjk(text):
        return text
    rest, found = text.casefold(), []
    for term, english in terms().items():  # longest first: 投机解码 is read once, not also as 解码
        if term in rest:
            rest = rest.replace(term, " ")
            found += [english] if english not in found else []
    return bigrams(text) + (" " + " ".join(found) if found else "")
