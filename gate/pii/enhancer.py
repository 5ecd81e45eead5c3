"""presidio's lemma context enhancer without its two per-match linear scans: the same scores, found faster.

Why a module of its own: it is a patch of presidio's class, not part of building the engine or of scanning, and
it must stay equal to the stock enhancer (tests/pii/test_presidio_engine.py compares them call by call). Both
scan paths get it through the analyzer that gate.pii.presidio_engine builds; presidio is imported only when it
is built.
"""

from __future__ import annotations

import threading
from typing import Any


def _bisect_enhancer() -> Any:
    """presidio's `LemmaContextAwareEnhancer` with its two per-match linear scans removed; same results.

    Why: the stock `_find_index_of_match_token` walks the document's tokens from the start for every match, so a
    100,000-character chunk with a few hundred matches costs millions of spaCy `Token` creations (16 s measured).
    The first token whose end is after the match start is exactly what the stock loop returns, because token
    ends strictly increase; a bisection over the ends (computed once per document) finds it directly. Likewise
    the context-word walk tests membership in a list of all the document's keywords; a set gives the same answer.
    """
    from bisect import bisect_right

    from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer

    class BisectLemmaEnhancer(LemmaContextAwareEnhancer):
        """See `_bisect_enhancer`. Per-document caches live in thread-local storage (the service may share it)."""

        _local = threading.local()

        def _find_index_of_match_token(self, word: str, start: int, tokens: Any, tokens_indices: list[int]) -> int:
            cache = self._local
            if getattr(cache, "indices", None) is not tokens_indices:  # holding the list keeps its id unique
                cache.ends = [i + len(t) for i, t in zip(tokens_indices, tokens, strict=True)]
                cache.indices = tokens_indices
            i = bisect_right(cache.ends, start)
            if i >= len(cache.ends):
                raise ValueError("Did not find word '" + word + "' in the list of tokens although it "
                                 "is expected to be found")
            return i

        def _add_n_words(self, index: int, n_words: int, lemmas: list[str],
                         lemmatized_filtered_keywords: list[str], is_backward: bool) -> list[str]:
            # presidio's loop, with membership in a set built once per document instead of a list scan per word
            cache = self._local
            if getattr(cache, "keywords", None) is not lemmatized_filtered_keywords:
                cache.keyword_set = frozenset(lemmatized_filtered_keywords)
                cache.keywords = lemmatized_filtered_keywords
            i, words, remaining = index, [], n_words + 1
            while 0 <= i < len(lemmas) and remaining > 0:
                lower = lemmas[i].lower()
                if lower in cache.keyword_set:
                    words.append(lower)
                    remaining -= 1
                i = i - 1 if is_backward else i + 1
            return words

    return BisectLemmaEnhancer()
