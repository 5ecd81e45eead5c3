"""Presidio analyzer built offline, and a batched scan that returns exactly what a plain `analyze()` loop returns.

Why this module exists:

* **Offline, always.** A bare `AnalyzerEngine()` calls `spacy.cli.download("en_core_web_lg")` (no timeout) and
  the e-mail recogniser makes `tldextract` fetch the Public Suffix List. Here the NLP engine is always passed in
  (presidio's no-op engine, a blank spaCy tokenizer, or the small NER model when it is already installed), and
  tldextract is pinned to its bundled snapshot. Nothing is imported before the first call, so `import gate.pii`
  costs nothing for commands that never scan.
* **Speed without changing answers.** On chat data the plain loop spends its time in presidio's phone recogniser
  (8 regions × phonenumbers on every date, amount and id), the URL regex, the NLP pipeline and per-call overhead
  (deep copies, explanations). `scan_texts` returns the same hits as `gate.pii.oracles.scan_texts_plain` (tests)
  but: deduplicates identical texts; runs a recogniser only when its cheap, provably necessary prefilter regex
  matches, phonenumbers only on the few windows that can hold a phone number the post-filter keeps and the URL
  patterns only on the whitespace-free runs that hold a top-level domain; skips
  the NLP step and `analyze()` when no recogniser fired on a match the post-filters keep; with the NER model,
  runs only the `ner` component (it has its own tok2vec) on every text through `nlp.pipe`, and the tagger and
  lemmatizer (context words need lemmas) only on texts with a kept match whose score context could still raise;
  and spreads unique texts over forked worker processes. Both paths share an enhancer that removes presidio's
  two per-match linear scans (a 100,000-character text took 16 s in them).
* **Never the raw text.** A `Hit` holds offsets, type, score and recogniser name, never the matched value, so
  findings can be logged, stored and compared without leaking what they point at.

This module builds the engine and holds the scan entry points; the other parts have a module each: gate's own
recognisers (the English street address included) in gate.pii.recognizers, the post-filters that drop hits in
gate.pii.postfilters, the faster context enhancer in gate.pii.enhancer, the worker processes in gate.pii.pool,
and the prefilters in gate.pii.prefilters.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gate.pii.chunking import _chunks, _sanitize
from gate.pii.config import NER_CONF, PRESIDIO_RECOGNIZERS, PiiConfig, require
from gate.pii.enhancer import _bisect_enhancer
from gate.pii.hits import Hit, _sort
from gate.pii.pool import map_units
from gate.pii.postfilters import _dropped, _to_hits
from gate.pii.prefilters import _phone_windows, _prefilters, _url_windows
from gate.pii.spacy_setup import (
    _ensure_offline,
    _load_spacy,
    _ner_pipeline,
    _one_blas_thread,
    _register_lower_lemma,
    ner_available,
)

if TYPE_CHECKING:
    from presidio_analyzer import AnalyzerEngine, EntityRecognizer

#: spaCy components that produce lemmas (context words need them); NER does not depend on them.
_LEMMA_COMPONENTS = ("tok2vec", "tagger", "attribute_ruler", "lemmatizer")
#: Batch size for `nlp.pipe`: 256 measured fastest per CPU second for 300-500-character messages with the small
#: model on OpenBLAS (64: 0.8x, 512 and more: 0.8x; bench/results/pii_scan.md).
_PIPE_BATCH = 256
#: presidio's maximum score; context words cannot raise a match that already has it.
_MAX_SCORE = 1.0
#: A span the NER model tagged: (start, end, presidio's name for its label).
Span = tuple[int, int, str]
#: Texts longer than this skip the prefilter pass: they almost always hold a match, and the pass would be paid twice.
_DIRECT_CHARS = 20_000


# ------------------------------------------------------------------------------------------------------ the engine

@dataclass
class _Engine:
    """Everything built once per config: the analyzer, the recognisers with prefilters, the spaCy pipeline."""

    config: PiiConfig
    analyzer: AnalyzerEngine
    entities: list[str]
    patterns: list[tuple[EntityRecognizer, Callable[[str], Any] | None]]
    ner_entities: list[str]
    nlp: Any  # spacy.Language or None
    ner_only: bool  # NER may run alone and the lemma components later (checked on the loaded model)


def _ner_is_independent(nlp: Any) -> bool:
    """True when the `ner` component can run before/without tok2vec, tagger and lemmatizer and give the same ents.

    Holds for en_core_web_sm 3.x: its NER has its own tok2vec (no listener) and reads only NORM, PREFIX, SUFFIX
    and SHAPE, none of which the attribute ruler sets. Checked on the loaded model, never assumed.
    """
    if "ner" not in nlp.pipe_names:
        return False
    ner = nlp.get_pipe("ner")
    try:
        listens = any("listener" in node.name.lower() for node in ner.model.walk())
    except Exception:
        return False
    if listens:
        return False
    if "attribute_ruler" in nlp.pipe_names:
        lexical = {"NORM", "PREFIX", "SUFFIX", "SHAPE", "ORTH", "LOWER"}
        for pattern in nlp.get_pipe("attribute_ruler").patterns:
            if lexical & {str(k).upper() for k in pattern.get("attrs", {})}:
                return False
    return True


def _import_presidio() -> None:
    """Imports presidio-analyzer without torch and transformers when neither is loaded yet.

    presidio imports both at import time, for its transformers NLP engine and its GPU detection, which gate never
    uses (spaCy on the CPU, or patterns only). That import is the largest fixed cost of a check with PII (about
    half of presidio's import time, seconds on every `gate check`). Hidden while presidio, spaCy and thinc import,
    they are recorded there as absent; any other code can still import them afterwards."""
    if "presidio_analyzer" in sys.modules:
        return
    hidden = [m for m in ("torch", "transformers") if m not in sys.modules]
    for m in hidden:
        sys.modules[m] = None  # type: ignore[assignment]  # the import system's "not installed" marker
    try:
        import presidio_analyzer  # noqa: F401
    finally:
        for m in hidden:
            if m in sys.modules and sys.modules[m] is None:
                del sys.modules[m]


def _extras(entity: str, config: PiiConfig) -> list[EntityRecognizer]:
    """gate's recognisers for formats presidio's miss (`gate.pii.recognizers`), with the entity's threshold and
    context words. Each comes with its sound prefilter (`gate.pii.recognizers.prefilter`)."""
    from gate.pii.recognizers import extra_recognizers

    out = extra_recognizers(entity, config.language)
    for rec in out:
        rec.score_thresholds = {entity: config.threshold(entity)}
        extra = config.extra_context(entity)
        if extra:
            rec.context = list(rec.context or []) + [w.lower() for w in extra]
    return out


@functools.lru_cache(maxsize=4)
def _engine(config: PiiConfig) -> _Engine:
    """Build the analyzer for `config` (cached: building costs ~1 s with the NER model)."""
    require("presidio_analyzer", "presidio-analyzer")
    _ensure_offline()
    _import_presidio()
    from presidio_analyzer import AnalyzerEngine, PatternRecognizer, RecognizerRegistry
    from presidio_analyzer import predefined_recognizers as predefined
    from presidio_analyzer.nlp_engine import NerModelConfiguration, NlpEngineProvider, NoOpNlpEngine, SpacyNlpEngine
    from presidio_analyzer.predefined_recognizers import SpacyRecognizer

    lang = config.language
    #: presidio's registry sets its `global_regex_flags` (DOTALL | MULTILINE | IGNORECASE) on every pattern
    #: recogniser it builds; the IBAN class default lacks IGNORECASE, so "gb42nawi04..." was never found
    registry_flags = re.DOTALL | re.MULTILINE | re.IGNORECASE

    from gate.pii.recognizers import street_address_recognizer

    def build(entity: str) -> EntityRecognizer:
        if entity == "ADDRESS":
            return street_address_recognizer(lang)
        cls = getattr(predefined, PRESIDIO_RECOGNIZERS[entity])
        if entity == "PHONE_NUMBER":
            return cls(supported_language=lang, supported_regions=config.phone_regions)
        rec = cls(supported_language=lang)
        if isinstance(rec, PatternRecognizer):
            rec.global_regex_flags = registry_flags
        return rec

    unknown = [e for e in config.entities if e != "ADDRESS" and e not in PRESIDIO_RECOGNIZERS]
    if unknown:  # PiiConfig refuses these already; kept for a config built around its validation
        raise ValueError(f"no pattern recogniser for {unknown}")
    from gate.pii.recognizers import prefilter as extra_prefilter

    prefilters = _prefilters(config)
    patterns: list[tuple[EntityRecognizer, Callable[[str], Any] | None]] = []
    for entity in config.entities:
        rec = build(entity)
        rec.score_thresholds = {entity: config.threshold(entity)}
        extra = config.extra_context(entity)
        if extra:
            rec.context = list(rec.context or []) + [w.lower() for w in extra]
        patterns.append((rec, prefilters.get(type(rec).__name__)))
        patterns.extend((extra, extra_prefilter(extra)) for extra in _extras(entity, config))

    recognizers = [rec for rec, _ in patterns]
    ner_entities: list[str] = []
    nlp = None
    ner_only = False
    if ner_available(config):
        nlp = _ner_pipeline(config)
        nlp_engine = SpacyNlpEngine(models=[{"lang_code": lang, "model_name": config.ner_model}],
                                    ner_model_configuration=NerModelConfiguration(**NER_CONF))
        nlp_engine.nlp = {lang: nlp}
        ner_entities = list(config.ner_entities)
        spacy_rec = SpacyRecognizer(supported_language=lang, supported_entities=ner_entities)
        spacy_rec.score_thresholds = {e: config.threshold(e) for e in ner_entities}
        recognizers.append(spacy_rec)
        for entity in ner_entities:  # gate's own patterns for a NER entity (a name in a signature)
            for extra in _extras(entity, config):
                patterns.append((extra, extra_prefilter(extra)))
                recognizers.append(extra)
        ner_only = _ner_is_independent(nlp)
    elif config.pattern_nlp == "blank":
        import spacy

        nlp_blank = spacy.blank(lang)
        nlp_blank.add_pipe(_register_lower_lemma())
        nlp_blank.max_length = max(nlp_blank.max_length, config.chunk_chars)
        nlp_engine = SpacyNlpEngine(models=[{"lang_code": lang, "model_name": "blank"}],
                                    ner_model_configuration=NerModelConfiguration(**NER_CONF))
        nlp_engine.nlp = {lang: nlp_blank}
    else:
        nlp_engine = NlpEngineProvider(nlp_configuration={
            "nlp_engine_name": "no_op", "models": [{"lang_code": lang, "model_name": "no_op"}]}).create_engine()

    registry = RecognizerRegistry(recognizers=recognizers, supported_languages=[lang])
    enhancer = None if isinstance(nlp_engine, NoOpNlpEngine) else _bisect_enhancer()
    analyzer = AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=[lang],
                              default_score_threshold=config.default_threshold, context_aware_enhancer=enhancer)
    for rec in recognizers:
        if not rec.is_loaded:
            rec.load()
            rec.is_loaded = True
    entities = list(config.entities) + ner_entities
    return _Engine(config, analyzer, entities, patterns, ner_entities, nlp, ner_only)


@functools.lru_cache(maxsize=4)
def _recall_nlp(ner_model: str) -> Any:
    """The spaCy model for the recall scan: its entity recogniser only (no tagger, lemmatizer or parser), and no
    shared token-to-vector layer unless the recogniser listens to it: the small English model's recogniser embeds
    its own, so the shared one was a fifth of the scan's CPU for nothing (same spans without it)."""
    nlp = _load_spacy(ner_model, ["parser", "senter", "tagger", "attribute_ruler", "lemmatizer"])
    if "tok2vec" in nlp.pipe_names and "ner" not in getattr(nlp.get_pipe("tok2vec"), "listening_components", ["ner"]):
        nlp.disable_pipe("tok2vec")
    return nlp


def recall_spans_texts(texts: Sequence[str], config: PiiConfig | None = None) -> list[list[Span]]:
    """Per text, every span the NER model tags, whatever its label (PERSON, GPE, ORG, DATE, CARDINAL...) and
    whatever the configured thresholds: for masking a snippet's context, not for findings.

    Why only the model: a snippet's context goes through the allowlist of `gate.pii.redact.mask_context`, which
    shape-masks every token that is not a common word, so each pattern entity (digits, e-mails, URLs, keys,
    postcodes, dates, addresses) is masked there already; the presidio pattern recognisers this scan also ran
    before the allowlist added only a typed label, at a cost. What the allowlist lets through is a
    name made only of common words ("Will White"), which the model still tags. When NER is off (`use_ner:
    false`) or its model is not installed, nothing is loaded and every list is empty. All texts go through one
    `nlp.pipe`.
    """
    config = config or PiiConfig()
    if not texts or not ner_available(config):
        return [[] for _ in texts]
    _ensure_offline()
    nlp = _recall_nlp(config.ner_model)
    clean = [_sanitize(t) for t in texts]
    with _one_blas_thread():
        docs = list(nlp.pipe(clean, batch_size=_PIPE_BATCH))
    return [_entity_spans(doc) for doc in docs]


def _entity_spans(doc: Any) -> list[Span]:
    """Every entity of a spaCy document, labels mapped as presidio maps them (ORG -> ORGANIZATION, ...)."""
    mapping: dict[str, str] = NER_CONF["model_to_presidio_entity_mapping"]  # type: ignore[assignment]
    return sorted({(e.start_char, e.end_char, mapping.get(e.label_, e.label_)) for e in doc.ents})


def recall_spans(text: str, config: PiiConfig | None = None) -> list[Span]:
    """`recall_spans_texts` for one text."""
    return recall_spans_texts([text], config)[0]


def engine_info(config: PiiConfig | None = None) -> dict[str, Any]:
    """What produced the findings (for the run record): versions, whether NER ran, the config key."""
    from importlib.metadata import PackageNotFoundError, version

    config = config or PiiConfig()
    eng = _engine(config)
    info: dict[str, Any] = {"config": str(config), "ner": eng.nlp is not None, "entities": list(eng.entities)}
    for dist in ("presidio-analyzer", "spacy", "phonenumbers", config.ner_model.replace("_", "-")):
        try:
            info[dist] = version(dist)
        except PackageNotFoundError:
            info[dist] = None
    return info


# ----------------------------------------------------------------------------------------------- the fast path

def _scan_units(units: Sequence[str], config: PiiConfig) -> list[list[Hit]]:
    """Scan unique chunks (each ≤ `chunk_chars`) with prefilters, lazy NLP and batched spaCy; offsets per chunk."""
    eng = _engine(config)
    with _windowed_recognizers(eng.analyzer, config.phone_min_digits):
        return _scan_units_with(eng, units, config)


@contextlib.contextmanager
def _windowed_recognizers(analyzer: AnalyzerEngine, min_digits: int) -> Iterator[None]:
    """While the fast path runs, presidio's phone and URL recognisers inside `analyze()` read only their windows.

    Why exact: a phone hit outside every phone window has no run of `min_digits` close digits, so the post-filter
    drops it, and it cannot remove a kept phone hit in presidio's de-duplication (one containing a kept hit would
    hold its run); inside a window phonenumbers sees the same candidates as on the whole text (`_phone_windows`).
    A URL match lies in a whitespace-free run holding a top-level domain, and is the same on the run alone
    (`_url_windows`). Each recogniser is a copy with the same id, name and context words, so the context enhancer
    treats its hits as before; the oracles in gate.pii.oracles, which call `analyze()` outside the fast path, keep
    the originals. Measured: phonenumbers on whole texts was 45 % of the second pass (bench/results/pii_command.md).
    A scan running beside another in this process (threads) finds the copies in place and leaves them to it: both
    windowed and whole-text recognisers give the same hits, so any interleaving is exact.
    """
    recognizers = analyzer.registry.recognizers
    saved = {i: rec for i, rec in enumerate(recognizers)
             if type(rec).__name__ in _WINDOWED and not getattr(rec, "_gate_windowed", False)}
    try:
        for i, rec in saved.items():
            recognizers[i] = _windowed(rec, min_digits)
        yield
    finally:
        for i, rec in saved.items():
            recognizers[i] = rec


#: The recognisers the fast path runs on windows of a text, not on all of it.
_WINDOWED = ("PhoneRecognizer", "UrlRecognizer")


def _windows(rec: EntityRecognizer, text: str, min_digits: int) -> list[tuple[int, int]]:
    if type(rec).__name__ == "PhoneRecognizer":
        return _phone_windows(text, min_digits)
    return _url_windows(text)


def _windowed(rec: EntityRecognizer, min_digits: int) -> EntityRecognizer:
    """A copy of `rec` whose `analyze` runs the original on each window and shifts the hits back."""
    def analyze(text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
        return _analyze_windows(rec, text, entities, nlp_artifacts, min_digits)
    clone = copy.copy(rec)
    clone.analyze = analyze  # type: ignore[method-assign]
    clone._gate_windowed = True  # type: ignore[attr-defined]
    return clone


def _analyze_windows(rec: EntityRecognizer, text: str, entities: list[str], nlp_artifacts: Any,
                     min_digits: int) -> list[Any]:
    out = []
    for a, b in _windows(rec, text, min_digits):
        for r in rec.analyze(text[a:b], entities, nlp_artifacts):
            r.start, r.end = r.start + a, r.end + a
            out.append(r)
    return out


def _scan_units_spans(units: Sequence[str], config: PiiConfig) -> list[tuple[list[Hit], list[Span]]]:
    """`_scan_units`, and per unit the NER model's spans of every label (`recall_spans_texts`' spans, read off the
    documents the scan made anyway; empty without NER)."""
    eng = _engine(config)
    spans: list[list[Span]] = [[] for _ in units]
    with _windowed_recognizers(eng.analyzer, config.phone_min_digits):
        hits = _scan_units_with(eng, units, config, spans)
    return list(zip(hits, spans, strict=True))


def _scan_units_with(eng: _Engine, units: Sequence[str], config: PiiConfig,
                     spans_out: list[list[Span]] | None = None) -> list[list[Hit]]:
    """`_scan_units` with the engine built and the phone and URL recognisers windowed; with NER, each unit's entity
    spans go to `spans_out` when given."""
    lang = config.language
    # 1. Pattern recognisers, only where their prefilter matches; remember which entity types fired on
    #    matches the post-filters would keep (a text whose matches are all dropped needs no scoring at all),
    #    and whether context words could still change a kept match's score (not when it is already 1.0).
    fired: list[list[str]] = []
    lemmas: list[bool] = []
    for unit in units:
        kinds: list[str] = []
        scorable = False
        if len(unit) > _DIRECT_CHARS:  # long texts fire anyway: skip the first pass, analyze as the plain path
            fired.append([e for rec, _ in eng.patterns for e in rec.supported_entities])
            lemmas.append(True)
            continue
        if unit:
            for rec, prefilter in eng.patterns:
                if prefilter is not None and prefilter(unit) is None:
                    continue
                if type(rec).__name__ == "PhoneRecognizer":
                    kept_scores = [0.0] if _phone_fires(rec, unit, eng.entities, config) else []
                else:
                    raw = (_analyze_windows(rec, unit, eng.entities, None, config.phone_min_digits)
                           if type(rec).__name__ in _WINDOWED else rec.analyze(unit, eng.entities, None))
                    emails = [(r.start, r.end) for r in raw if r.entity_type == "EMAIL_ADDRESS"]
                    kept_scores = [r.score for r in raw
                                   if not _dropped(unit, r.entity_type, r.start, r.end, config, emails)]
                if kept_scores:
                    kinds.extend(rec.supported_entities)
                    scorable = scorable or (bool(rec.context) and min(kept_scores) < _MAX_SCORE)
        fired.append(kinds)
        lemmas.append(scorable)

    out: list[list[Hit]] = [[] for _ in units]
    if eng.nlp is None:
        # 2a. Pattern-only: analyze (which tokenizes for context words) only texts where something fired.
        for i, unit in enumerate(units):
            if fired[i]:
                results = eng.analyzer.analyze(unit, lang, entities=fired[i])
                out[i] = _sort(_to_hits(unit, results, 0, config))
        return out

    # 2b. NER: every text needs the `ner` component; lemmas only where context words could change a score.
    nlp = eng.nlp
    nlp_engine = eng.analyzer.nlp_engine
    todo = [i for i, u in enumerate(units) if u]
    if eng.ner_only:
        skip = [p for p in nlp.pipe_names if p != "ner"]
        docs = dict(zip(todo, nlp.pipe([units[i] for i in todo], batch_size=_PIPE_BATCH, disable=skip),
                        strict=True))
        need = [i for i in todo if lemmas[i]]
        if need:
            sub = [docs[i] for i in need]
            for name in _LEMMA_COMPONENTS:
                if name in nlp.pipe_names:
                    sub = list(nlp.get_pipe(name).pipe(sub, batch_size=_PIPE_BATCH))
            docs.update(zip(need, sub, strict=True))
    else:
        docs = dict(zip(todo, nlp.pipe([units[i] for i in todo], batch_size=_PIPE_BATCH), strict=True))

    conf = nlp_engine.ner_model_configuration
    mapping, ignore = conf.model_to_presidio_entity_mapping or {}, set(conf.labels_to_ignore or ())
    wanted = set(eng.ner_entities)
    for i in todo:
        doc = docs[i]
        if spans_out is not None:
            spans_out[i] = _entity_spans(doc)
        if not fired[i] and not any(
                e.label_ not in ignore and mapping.get(e.label_, e.label_) in wanted - ignore
                and not _dropped(units[i], mapping.get(e.label_, e.label_), e.start_char, e.end_char, config)
                for e in doc.ents):
            continue  # no pattern hit and no entity presidio would keep: skip the analyze() call
        artifacts = nlp_engine._doc_to_nlp_artifact(doc, lang)
        entities = fired[i] + eng.ner_entities
        results = eng.analyzer.analyze(units[i], lang, entities=entities, nlp_artifacts=artifacts)
        out[i] = _sort(_to_hits(units[i], results, 0, config))
    return out


def _phone_fires(rec: EntityRecognizer, text: str, entities: list[str], config: PiiConfig) -> bool:
    """Would presidio's phone recogniser, run on the whole text, report a hit the post-filter keeps?

    Answered by running it only on the windows that can hold such a hit (see `_phone_safe_cut`), which skips
    the dates, amounts and ids that make up most of phonenumbers' work on support text.
    """
    for a, b in _phone_windows(text, config.phone_min_digits):
        for r in rec.analyze(text[a:b], entities, None):
            if not _dropped(text, r.entity_type, r.start + a, r.end + a, config):
                return True
    return False


def scan_texts(texts: Sequence[str], config: PiiConfig | None = None, *,
               workers: int | None = None) -> list[list[Hit]]:
    """Scan many texts; returns, per input text, the same hits as `scan_text` would, much faster.

    `workers`: processes to use (None = automatic, 1 = in this process). Identical texts are scanned once (chat
    datasets repeat system prompts thousands of times); long texts are cut into `chunk_chars` pieces exactly as
    `scan_text` cuts them.
    """
    return _scan_texts(texts, config, workers, spans=False)[0]


def scan_texts_with_spans(texts: Sequence[str], config: PiiConfig | None = None, *,
                          workers: int | None = None) -> tuple[list[list[Hit]], list[list[Span]]]:
    """`scan_texts`, and per text the NER model's spans of every label, as `recall_spans_texts` gives them for a
    snippet's context masking, read off the documents the scan made anyway (the recall scan ran the model over
    the same texts a second time: 7 of the pii command's 87 CPU seconds on 15,000 texts). Empty without NER."""
    return _scan_texts(texts, config, workers, spans=True)


def _scan_texts(texts: Sequence[str], config: PiiConfig | None, workers: int | None, *,
                spans: bool) -> tuple[list[list[Hit]], list[list[Span]]]:
    config = config or PiiConfig()
    eng = _engine(config)  # build before forking so workers inherit it
    chunk_index: dict[str, int] = {}
    units: list[str] = []
    plans: list[list[tuple[int, int]]] = []  # per text: (offset, unit index)
    for text in texts:
        plan = []
        for offset, chunk in _chunks(_sanitize(text), config.chunk_chars):
            idx = chunk_index.get(chunk)
            if idx is None:
                idx = chunk_index[chunk] = len(units)
                units.append(chunk)
            plan.append((offset, idx))
        plans.append(plan)

    ner = eng.nlp is not None
    if spans:
        pairs = map_units(_scan_units_spans, units, config, workers=workers, ner=ner)
        unit_hits, unit_spans = [h for h, _ in pairs], [s for _, s in pairs]
    else:
        unit_hits, unit_spans = map_units(_scan_units, units, config, workers=workers, ner=ner), []

    out: list[list[Hit]] = []
    for plan in plans:
        if len(plan) == 1 and plan[0][0] == 0:
            out.append(list(unit_hits[plan[0][1]]))
            continue
        hits = [Hit(h.entity_type, h.start + off, h.end + off, h.score, h.recognizer)
                for off, idx in plan for h in unit_hits[idx]]
        out.append(_sort(hits))
    found = [[(a + off, b + off, label) for off, idx in plan for a, b, label in unit_spans[idx]] for plan in plans
             ] if spans else []
    return out, found
