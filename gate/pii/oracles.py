"""The reference scans `scan_texts` is held to: presidio's plain loop on gate's engine (`scan_texts_plain`) and on
presidio as a user builds it (`scan_texts_stock`). Tests and the speed benchmark run them; `gate check` never does.

Why apart from the engine: they are oracles, not a scan path, and keeping them out of gate.pii.presidio_engine
leaves that module the engine and its fast path only."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gate.pii.chunking import _chunks, _sanitize
from gate.pii.config import NER_CONF, PiiConfig
from gate.pii.hits import Hit, _sort
from gate.pii.postfilters import _to_hits
from gate.pii.presidio_engine import _engine
from gate.pii.spacy_setup import _one_blas_thread

if TYPE_CHECKING:
    from presidio_analyzer import AnalyzerEngine


def scan_text(text: str, config: PiiConfig | None = None) -> list[Hit]:
    """Scan one text the plain way: `AnalyzerEngine.analyze` per chunk. The reference `scan_texts` must match."""
    config = config or PiiConfig()
    with _one_blas_thread():
        return _scan_text_plain(text, config)


def _scan_text_plain(text: str, config: PiiConfig) -> list[Hit]:
    eng = _engine(config)
    hits: list[Hit] = []
    for offset, chunk in _chunks(_sanitize(text), config.chunk_chars):
        if not chunk:
            continue
        results = eng.analyzer.analyze(chunk, config.language, entities=eng.entities)
        hits.extend(_to_hits(chunk, results, offset, config))
    return _sort(hits)


def scan_texts_plain(texts: Sequence[str], config: PiiConfig | None = None) -> list[list[Hit]]:
    """The plain per-text loop, kept as the reference for tests and for the speed comparison."""
    config = config or PiiConfig()
    with _one_blas_thread():
        return [_scan_text_plain(t, config) for t in texts]


@functools.lru_cache(maxsize=2)
def _stock_analyzer(config: PiiConfig) -> AnalyzerEngine:
    """presidio as a user builds it, around the same recognisers: its own `SpacyNlpEngine.load()` (the model's
    whole pipeline, parser included, on spaCy's default BLIS ops) and its stock context enhancer.

    Why: the reference that `scan_texts` is held to. `scan_texts_plain` shares gate's engine (parser excluded,
    OpenBLAS ops, bisecting enhancer), so equality with it cannot show that those choices change nothing.
    """
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NerModelConfiguration, SpacyNlpEngine

    eng = _engine(config)
    nlp_engine = eng.analyzer.nlp_engine
    if eng.nlp is not None:
        nlp_engine = SpacyNlpEngine(models=[{"lang_code": config.language, "model_name": config.ner_model}],
                                    ner_model_configuration=NerModelConfiguration(**NER_CONF))
        nlp_engine.load()  # the model is installed (ner_available): presidio does not download it
    registry = RecognizerRegistry(recognizers=list(eng.analyzer.registry.recognizers),
                                  supported_languages=[config.language])
    return AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=[config.language],
                          default_score_threshold=config.default_threshold)


def scan_texts_stock(texts: Sequence[str], config: PiiConfig | None = None) -> list[list[Hit]]:
    """presidio's plain loop on `_stock_analyzer`: one `analyze()` per chunk, then the same post-filters."""
    config = config or PiiConfig()
    analyzer = _stock_analyzer(config)
    entities = _engine(config).entities
    out = []
    for text in texts:
        hits: list[Hit] = []
        for offset, chunk in _chunks(_sanitize(text), config.chunk_chars):
            if chunk:
                results = analyzer.analyze(chunk, config.language, entities=entities)
                hits.extend(_to_hits(chunk, results, offset, config))
        out.append(_sort(hits))
    return out
