"""Ranked retrieval: what `search`, `related` and `triage` share.

A query is parsed into words (`"a phrase"` is one required phrase, `-word` excludes, `field:word`
looks in one field). Each word becomes a group of alternatives, any of which counts as the word: the
word itself (stemmed by the index's own Porter tokenizer, so `eviction` matches `evicted` and never
`deflection`), a correction when the word is nowhere in the catalog (`specualtive` -> `speculative`,
picked by rapidfuzz among the catalog's own stems), the other names the glossary gives it (`ttft` <->
`time to first token`), and the CamelCase word it forms with its neighbour (`flash attention` ->
`FlashAttention`). SQLite's FTS5 finds the rows of each group; the ranking rule is, in this order:
more of the query's words matched, then the words held as a phrase, then BM25 with the fields'
weights. No second search path exists; `--exact` only turns the expansions off and filters the raw text.

The modules, one job each:
  terms.py        what a parsed query is (groups of alternatives, hits), and the stop words
  parsing.py      shell words -> phrases, words, `field:word`s, exclusions -> a Query
  expansion.py    each word's alternatives: corrections, glossary names, compounds
  expressions.py  FTS5 expressions of phrases and groups
  coverage.py     the coverage-first ranking (`rank`: triage's level items, places and settings)
  rarity.py       how much a word counts: IDF and how ordinary an English word it is
  bm25f.py        `search`'s BM25F ranking (`weighted`, `Ranking`)
"""

from __future__ import annotations

from invmap.search.bm25f import Ranking, weighted
from invmap.search.coverage import exact_filter, rank
from invmap.search.expressions import expression, group_expression, phrase
from invmap.search.parsing import build_query, parse
from invmap.search.terms import STOP_WORDS, Group, Hit, Query, words_of

__all__ = [
    "STOP_WORDS", "Group", "Hit", "Query", "Ranking", "build_query", "exact_filter", "expression",
    "group_expression", "parse", "phrase", "rank", "weighted", "words_of",
]  # fmt: skip
