"""Where a value of a JSON document is: the line and column of an object's field, for the messages
that name a bad row of a trace (`FILE:LINE:COL`).

Only asked once a problem is found: the document is parsed again by the standard library's pure-Python
scanner with its object parser wrapped to note where each object starts and ends; a field's value is
then found inside its object's span. The fast C parser reads every good trace.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from typing import Any


class Spans:
    """A JSON text parsed again with each object's (start, end) offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._spans: dict[int, tuple[int, int]] = {}
        decoder = json.JSONDecoder()

        def parse_object(s_and_end: tuple[str, int], *rest: Any) -> tuple[Any, int]:
            start = s_and_end[1] - 1
            obj, end = json.decoder.JSONObject(s_and_end, *rest)
            self._spans[id(obj)] = (start, end)
            return obj, end

        decoder.parse_object = parse_object  # type: ignore[assignment]
        decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
        start = len(text) - len(text.lstrip())
        self.value, _ = decoder.raw_decode(text, start)

    def where(self, obj: Any, field: str | None = None) -> tuple[int, int]:
        """(line, column), 1-based, of `field`'s value in `obj` (an object of this document), else of
        the object itself (a missing field, or one whose name is written with escapes)."""
        start, end = self._spans.get(id(obj), (0, 0))
        offset = start
        if field is not None:
            found = re.compile(r'"' + re.escape(field) + r'"\s*:\s*').search(self.text, start, end)
            if found:
                offset = found.end()
        return position(self.text, offset)


def position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based (line, column) of a character offset."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def field_column(line: str, field: str) -> int | None:
    """The 1-based column of `field`'s value in a one-object JSON line, if written plainly."""
    found = re.search(r'"' + re.escape(field) + r'"\s*:\s*', line)
    return found.end() + 1 if found else None
