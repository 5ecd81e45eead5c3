"""spaCy and presidio's helpers set up offline and fast: no download, no suffix-list fetch, OpenBLAS held to one
thread, lemmas in a blank pipeline. Nothing heavy is imported before the first call."""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Sequence
from typing import Any

from gate.pii.config import PiiConfig


def _ensure_offline() -> None:
    """Keep tldextract (used by presidio's e-mail recogniser) on its bundled suffix list: no fetch, no cache write.

    The environment variables cover extractors created later; the module-level extractor, created when
    tldextract was first imported (maybe before us), is replaced by an offline one.
    """
    os.environ["TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS"] = ""
    os.environ.setdefault("TLDEXTRACT_CACHE", os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "gate", "tldextract"))
    import tldextract.tldextract as tld

    if getattr(tld.TLD_EXTRACTOR, "suffix_list_urls", ()) or getattr(tld.TLD_EXTRACTOR, "cache_dir", None):
        tld.TLD_EXTRACTOR = tld.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True)


def ner_available(config: PiiConfig | None = None) -> bool:
    """True when the config asks for NER and its spaCy model is installed (checked without importing it)."""
    config = config or PiiConfig()
    if not (config.use_ner and config.ner_entities):
        return False
    try:
        return importlib.util.find_spec(config.ner_model) is not None
    except (ImportError, ValueError):
        return False


def _fast_blas() -> bool:
    """True when spaCy's models can compute with numpy's OpenBLAS held to one thread (threadpoolctl installed).

    Why: thinc's default CPU ops call BLIS, which on this AVX-512 machine runs the NER model's matrix products
    about 3x slower than OpenBLAS (measured: 8.4 vs 2.9 ms for a 4096x288x96 product; NER 1.4-1.6x faster end to
    end), with the same entities on every text we have (4,032 synthetic, triage and labelled texts: 0 differ).
    OpenBLAS starts one thread per core, which on a process pool (one worker per core) costs 30 % more CPU for
    the same work; threadpoolctl is the library that caps it. Without it, the BLIS default stays.
    """
    return importlib.util.find_spec("threadpoolctl") is not None


def _load_spacy(model: str, exclude: Sequence[str]) -> Any:
    """`spacy.load(model, exclude=...)` with its layers on numpy/OpenBLAS ops when `_fast_blas()` (see there)."""
    import spacy

    if not _fast_blas():
        return spacy.load(model, exclude=list(exclude))
    from thinc.api import NumpyOps

    nlp = spacy.load(model, exclude=list(exclude))
    ops = NumpyOps(use_blis=False)
    for _, pipe in nlp.pipeline:  # a layer computes with the ops it holds: set them on every layer
        model = getattr(pipe, "model", None)  # the attribute ruler and lemmatizer have none (or None)
        for node in model.walk() if hasattr(model, "walk") else ():
            node.ops = ops
    return nlp


@functools.lru_cache(maxsize=4)
def _ner_pipeline(config: PiiConfig) -> Any:
    """The NER model's pipeline for `config` (no parser or sentence splitter), or None when `ner_available` says
    no; loaded once per config. The engine analyses with it (gate.pii.presidio_engine) and the post-filters read
    its lemmatizer index (gate.pii.postfilters), so both hold the same loaded model."""
    if not ner_available(config):
        return None
    nlp = _load_spacy(config.ner_model, ["parser", "senter"])
    if nlp.max_length < config.chunk_chars:
        nlp.max_length = config.chunk_chars
    return nlp


def _one_blas_thread() -> Any:
    """A context that holds OpenBLAS to one thread while spaCy runs (a no-op without threadpoolctl)."""
    if not _fast_blas():
        import contextlib

        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _register_lower_lemma() -> str:
    """Register (once) a spaCy component that sets each token's lemma to its lower-cased text.

    Why: presidio's context enhancer compares context words with lemmas; a blank pipeline has none, so without
    this component context words would silently never match in pattern-only mode.
    """
    from spacy.language import Language

    name = "gate_lower_lemma"
    if not Language.has_factory(name):
        def lower_lemma(doc: Any) -> Any:
            for token in doc:
                token.lemma_ = token.lower_
            return doc

        Language.component(name, func=lower_lemma)
    return name
