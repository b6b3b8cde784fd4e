"""Untrusted text stays text: control characters escaped before anything reaches a terminal."""

from __future__ import annotations

import contextlib
import re

# C0 and C1 controls, DEL, line/paragraph separators, bidi marks, overrides and isolates, zero-width
# spaces, the word joiner, invisible operators, deprecated format controls, the Mongolian vowel
# separator, tag characters and a byte-order mark: what `model.FORBIDDEN` keeps out of catalogs.
_HIDDEN = "\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\U000e0000-\U000e007f"
_CONTROLS = "\x00-\x1f\x7f-\x9f" + _HIDDEN
_CONTROL = re.compile(f"[{_CONTROLS}]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # undecodable bytes of an argument or file name
_JSON_RAW = re.compile(f"[\x7f-\x9f{_HIDDEN}]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:
        return f"\\U{code:08x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escaped(match: re.Match[str]) -> str:
    """`\\u` escapes as JSON writes them (a character beyond U+FFFF as its UTF-16 surrogate pair)."""
    code = ord(match.group())
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def escape(text: str) -> str:
    r"""`'\x1b]0;pwned\x07'` -> `'\\x1b]0;pwned\\x07'`: shown, never interpreted. Surrogates from
    undecodable bytes in arguments or file names are shown as `\udcff`."""
    text = _CONTROL.sub(_escaped, text)
    if not text.isascii() and _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def message_text(text: str) -> str:
    """A message for stderr: `escape`d, and every other invisible format character (Unicode category
    Cf: U+200C and U+200D, the joiners a catalog may hold inside a word, soft hyphens, ...) escaped
    too: a message quotes what was typed, and an invisible argument must show as something."""
    text = escape(text)
    if text.isascii():
        return text
    import unicodedata

    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cf" else c for c in text)


_DATA_CONTROL = re.compile(
    f"[{_CONTROLS.replace(chr(0) + '-' + chr(0x1F), chr(0) + '-' + chr(8) + chr(0x0B) + '-' + chr(0x1F))}]"
)


_ASCII_DATA_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def data_text(text: str) -> str:
    """Output text (csv, tsv, plain, Markdown, ...) with every control character escaped as `escape`
    does, but the tabs and newlines that structure it."""
    pattern = _ASCII_DATA_CONTROL if text.isascii() else _DATA_CONTROL
    return pattern.sub(_escaped, text) if pattern.search(text) else text


def json_safe(encoded: str) -> str:
    """JSON text (as `json.dumps(ensure_ascii=False)` writes it, C0 controls already escaped) with
    DEL, C1 and bidi controls written as `\\u` escapes too: the same strings to a JSON reader, and
    nothing that could drive a terminal. These characters only ever occur inside strings."""
    if encoded.isascii() and "\x7f" not in encoded:
        return encoded
    return _JSON_RAW.sub(_json_escaped, encoded)


def quiet_stdout(fd: int = 1) -> None:
    """Point stdout (or `fd`) at /dev/null once writing to it has failed (a reader that went away, a
    full disk), so that the interpreter's own final flush cannot fail again and print a traceback."""
    import os

    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
