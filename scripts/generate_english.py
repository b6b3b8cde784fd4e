"""Write src/invmap/data/english-frequencies.txt: how common English finds each word.

    pip install wordfreq && python scripts/generate_english.py

The list is derived from wordfreq's English frequency data (https://github.com/rspeer/wordfreq; its
data files are under the Creative Commons Attribution-ShareAlike 4.0 licence, so this list is
too; NOTICE): every word of two letters or more made of the letters a-z only, with a Zipf frequency (log10
of its frequency per billion words) of at least ZIPF, about once in 3 million words, each line
`word<TAB>zipf` to one decimal. A search weighs a word less the more common English finds it
(`than`, `high`, `slow`); which words are English at all, for corrections, is data/english.txt
(scripts/build_english_words.py).
wordfreq is needed only to regenerate the file, never at run time.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ZIPF = 2.5
OUT = Path(__file__).resolve().parent.parent / "src" / "invmap" / "data" / "english-frequencies.txt"
HEADER = (
    "# How common English finds each word (word<TAB>Zipf frequency): every a-z word of 2+ letters with a Zipf\n"
    f"# frequency >= {ZIPF} in wordfreq's English data (https://github.com/rspeer/wordfreq), by\n"
    "# scripts/generate_english.py. Derived from wordfreq's data: CC BY-SA 4.0\n"
    "# (https://creativecommons.org/licenses/by-sa/4.0/); this file is under the same licence.\n"
)


def main() -> None:
    try:
        import wordfreq
    except ImportError:
        sys.exit("scripts/generate_english.py: pip install wordfreq first")
    words = {}
    for w in wordfreq.iter_wordlist("en", "best"):
        zipf = wordfreq.zipf_frequency(w, "en")
        if zipf < ZIPF:
            break  # the list runs from the most common word down
        if re.fullmatch(r"[a-z]{2,}", w):
            words[w] = zipf
    lines = [f"{w}\t{words[w]:.1f}" for w in sorted(words)]
    OUT.write_text(HEADER + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(words)} words")


if __name__ == "__main__":
    main()
