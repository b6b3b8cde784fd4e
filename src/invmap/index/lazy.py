"""`Records`: the records at chosen positions of an index, read a slice at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from invmap.fields import SOURCE_FIELDS
from invmap.index.schema import AT_ONCE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from invmap.index.reading import Index


class Records(Sequence):  # of dict[str, Any]
    """The records (only `columns`) at `positions` of an index, read a slice at a time: a command
    holds the positions of what it selected and sorted, and a format writes 100,000 records in
    batches without ever holding them all."""

    def __init__(self, index: Index, positions: Sequence[int], columns: Sequence[str] = SOURCE_FIELDS) -> None:
        self.index, self.positions, self.columns = index, positions, tuple(columns)

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return self.index.at(self.positions[at], self.columns)
        return self.index.at([self.positions[at]], self.columns)[0]

    def json_lines(self, start: int, stop: int, encode: Callable[[dict[str, Any]], str]) -> list[str]:
        """The records of `[start:stop]` as compact JSON lines, written by the index where it can
        (`Index.json_at`), the rest (and every one on an SQLite without JSON) by `encode`."""
        positions = self.positions[start:stop]
        written = self.index.json_at(positions, self.columns)
        if written is None:
            return [encode(r) for r in self.index.at(positions, self.columns)]
        left = [p for p in positions if p in written and written[p] is None]
        encoded = dict(zip(left, map(encode, self.index.at(left, self.columns)))) if left else {}
        return [written[p] or encoded[p] for p in positions if p in written]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for start in range(0, len(self.positions), AT_ONCE * 4):
            yield from self[start : start + AT_ONCE * 4]
