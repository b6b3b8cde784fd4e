"""The marks around matched words: search's highlights put them in, render draws the words between
them bold on a terminal, and every machine format and JSON value has them taken out (`unmarked`).
Catalog text never holds control characters, so the two can never be a record's own."""

MARK = ("\x02", "\x03")  # opens and closes a matched word


def unmarked(text: str) -> str:
    """`text` without the marks."""
    return text.replace(MARK[0], "").replace(MARK[1], "")
