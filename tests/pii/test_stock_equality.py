"""Issue 19 section 1: the fast scan gives exactly what presidio's plain `analyze` loop gives, presidio built the
way a user builds it (its own `SpacyNlpEngine.load()`: the whole model pipeline, parser included, spaCy's default
BLIS ops, the stock context enhancer) around the same recognisers. `scan_texts_plain` shares gate's engine, so
equality with it alone could not show that excluding the parser or computing on OpenBLAS changes nothing.
"""

from __future__ import annotations

import pytest
from labelled import make_labelled

from gate.pii import PiiConfig, oracles, scan_texts, spacy_setup
from gate.pii import presidio_engine as pe

pytest.importorskip("presidio_analyzer")


@pytest.mark.forks
def test_fast_scan_equals_stock_presidio_loop_on_labelled_sample(ner_cfg: PiiConfig) -> None:
    """Equal on every text but where presidio's parser put a sentence start at the edge of a name.

    Measured on the whole 1,200-text corpus: 2 texts differ, both a PERSON only the stock loop reports ("Acceso
    Maximiano" closed by a sentence start after it, "KGaA" opening one), because spaCy's NER never continues an
    entity over a sentence start and gate runs without the parser. OpenBLAS vs BLIS, batching, the prefilters
    and the bisecting enhancer change nothing (0 of 4,232 texts). Text 470 of the sample is one of the two.
    """
    texts = [item.text for item in make_labelled(500, seed=15)]
    stock = oracles.scan_texts_stock(texts, ner_cfg)
    fast = scan_texts(texts, ner_cfg, workers=1)
    assert scan_texts(texts, ner_cfg, workers=2) == fast
    parser = oracles._stock_analyzer(ner_cfg).nlp_engine.nlp[ner_cfg.language]
    differ = []
    for i, (text, want, got) in enumerate(zip(texts, stock, fast, strict=True)):
        if want == got:
            continue
        differ.append(i)
        assert set(got) < set(want), (i, text)  # never a hit stock presidio does not report
        starts = {s.start_char for s in parser(text).sents}
        for h in set(want) - set(got):
            assert h.recognizer == "SpacyRecognizer", (i, h)
            assert any(h.start <= s <= h.end + 1 for s in starts), (i, h, sorted(starts))
    assert differ == [470], differ
    found = {h.entity_type for hits in stock for h in hits}
    assert {"PERSON", "LOCATION", "EMAIL_ADDRESS", "PHONE_NUMBER"} <= found, found


def test_stock_reference_is_presidio_own_pipeline(ner_cfg: PiiConfig) -> None:
    """The reference really is presidio's loaded model (parser present, default ops), not gate's engine."""
    stock = oracles._stock_analyzer(ner_cfg).nlp_engine.nlp[ner_cfg.language]
    ours = pe._engine(ner_cfg).nlp
    assert stock is not ours and "parser" in stock.pipe_names and "parser" not in ours.pipe_names
    ner_ops = {type(node.ops).__name__ + str(getattr(node.ops, "use_blis", "")) for node in
               ours.get_pipe("ner").model.walk()}
    if spacy_setup._fast_blas():
        assert ner_ops == {"NumpyOpsFalse"}, ner_ops  # gate's NER computes on OpenBLAS, held to one thread


def test_one_blas_thread_inside_the_scan(ner_cfg: PiiConfig) -> None:
    """OpenBLAS runs one thread per core by default: on a pool of one worker per core that cost 30 % more CPU."""
    if not spacy_setup._fast_blas():
        pytest.skip("threadpoolctl not installed: spaCy stays on BLIS")
    from threadpoolctl import threadpool_info

    with spacy_setup._one_blas_thread():
        assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
