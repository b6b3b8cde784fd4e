"""Text keys shared by the index, the glossary and completion: case, spacing and punctuation folded
(`normalize`), the parts of CamelCase words (`camel_parts`), and whether a word is ordinary English
(`is_english`, the one function here that reads a file: the shipped word list, once a process)."""

from __future__ import annotations

import functools
import re

_NOT_WORD = re.compile(r"[\W_]+")
_ASCII_LOWER = bytes(range(256)).lower()
_ASCII_NOT_WORD = bytes(c for c in range(128) if not chr(c).isalnum())
_CAMEL = re.compile(r"[^\W\d_]*[a-z][A-Z][^\W_]*|[A-Z]{2,}[a-z][^\W_]*")
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_HAS_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")


def normalize(text: str) -> str:
    """Case, spacing and punctuation do not matter: `Paged attention` == `pagedattention`."""
    if text.isascii():  # the common case: one pass over the bytes, ~15x faster than the expression
        return text.encode().translate(_ASCII_LOWER, _ASCII_NOT_WORD).decode()
    return _NOT_WORD.sub("", text.casefold())


def camel_parts(*texts: str | None) -> str | None:
    """The parts of the CamelCase words in `texts` (`FlashAttention, KVCache-centric` -> `Flash
    Attention KV Cache`), so that a search for `attention` finds PagedAttention; None when there are none."""
    text = " ".join(t for t in texts if t)
    if not _HAS_CAMEL.search(text):
        return None
    return " ".join(" ".join(_CAMEL_PART.findall(word)) for word in _CAMEL.findall(text)) or None


ENGLISH_FILE = "english.txt"  # in the package's data folder; written by scripts/build_english_words.py
_WORD_PARTS = re.compile(r"[-'\u2019]")


def english_path() -> str:
    """Where the installed package keeps its English word list."""
    import os  # only when the list is first wanted

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", ENGLISH_FILE)


@functools.cache
def english_text() -> str:
    """The shipped English word list as one string, newline, word, newline, word ... newline, its
    words in byte order: read once a process. It stays whole (one read, no split into 50,000
    strings): ~1 ms, where building a set of the words took ~15 ms on this 2-core machine."""
    return read_english(english_path())


def read_english(path: str) -> str:
    """A word list written by scripts/build_english_words.py, less its header line, with a newline
    before its first word. A missing, unreadable or foreign file is FileAccessError (exit 4): the
    installation is broken, and corrections would silently go wrong without the list."""
    from invmap.errors import FileAccessError  # only on this file's first read

    try:
        with open(path, encoding="ascii") as f:
            header, _, body = f.read().partition("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise FileAccessError(f"{path}: cannot read invmap's English word list ({e}); reinstall invmap") from e
    if not header.startswith("#") or not body.endswith("\n"):
        raise FileAccessError(f"{path}: not invmap's English word list; reinstall invmap")
    return "\n" + body


def _listed(text: str, word: str) -> bool:
    """Whether `word` is a line of `text` (sorted lines between newlines), by bisection on the text."""
    lo, hi = 0, len(text) - 1  # text[lo] and text[hi] are newlines; the lines between are candidates
    while lo < hi:
        at = text.rfind("\n", lo, (lo + hi) // 2 + 1)  # the newline starting the line across the middle
        end = text.index("\n", at + 1)
        line = text[at + 1 : end]
        if line == word:
            return True
        if line < word:
            lo = end
        else:
            hi = at
    return False


@functools.lru_cache(maxsize=4096)
def is_english(word: str) -> bool:
    """Whether `word` is an ordinary English word (wordfreq's 50,000 most frequent), in any case
    (`Claims`, `arrive`, `loading`), so that a correction step leaves it as typed; a word of hyphenated
    or apostrophised parts is English when every part is (`well-known`, `doesn't`). Digits, symbols
    and an empty word are not. ~10 us a word, cached."""
    folded = word.casefold()
    parts = _WORD_PARTS.split(folded)
    return all(part.isascii() and part.isalpha() and _listed(english_text(), part) for part in parts)


def plural(count: int, word: str) -> str:
    """`1 source`, `2 sources`: a count and its noun."""
    return f"{count} {word}{'s' if count != 1 else ''}"
