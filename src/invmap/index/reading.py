"""`Index`: an open index of one catalog, its reads grouped by what they answer."""

from __future__ import annotations

from invmap.index.fulltext import FullTextReads
from invmap.index.levels import LevelReads
from invmap.index.sources import SourceReads
from invmap.index.words import WordReads


class Index(SourceReads, LevelReads, FullTextReads, WordReads):
    """An open index of one catalog: its sources (`SourceReads`), levels, reports and glossary
    (`LevelReads`), full-text matches (`FullTextReads`) and words (`WordReads`). Every query goes
    through `Connection._rows`, which, should the file turn out to be broken mid-run, rebuilds the
    index from the catalog and asks again."""
