"""Sentence embeddings with transformers (AutoModel + AutoTokenizer): pooling as the model's own pooling config says,
then L2 normalisation, so a dot product is the cosine similarity.

Texts are encoded in batches sorted by token length (little padding), under `torch.inference_mode`, with the
thread count set per process: a forked check worker uses 1 thread (the pool already fills the cores), the parent
uses every core. torch and transformers are imported only here, on first use.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from pathlib import Path
from typing import Any

import numpy as np

from gate.data.memo import TextMemo
from gate.embed.model import ensure_model
from gate.errors import GateError

DIM = 384


class Encoder:
    """One loaded model; `encode(texts)` -> float32 array (n, dim), rows L2-normalised (an empty text -> zeros)."""

    def __init__(self, model_dir: Path, threads: int | None = None, batch_size: int = 64,
                 precision: str = "auto") -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar in a check's output
        # bf16 autocast halves CPU time where the CPU has bf16 units (cosines move by < 0.003, measured on MRPC);
        # elsewhere it is slower than fp32, so `auto` picks by the CPU's flags
        self.precision = ("bf16" if _cpu_has_bf16() else "fp32") if precision == "auto" else precision

        self._torch = torch
        if threads is None:
            threads = 1 if mp.parent_process() is not None else (os.cpu_count() or 1)
        torch.set_num_threads(max(1, threads))
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text("utf-8"))
        modes = [k for k in ("pooling_mode_mean_tokens", "pooling_mode_cls_token", "pooling_mode_max_tokens")
                 if pooling.get(k)]
        if len(modes) != 1:
            raise GateError(f"{model_dir / '1_Pooling' / 'config.json'}: unsupported pooling {modes or 'none'}")
        self.pooling = modes[0].removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token")
        st = model_dir / "sentence_bert_config.json"
        self.max_length = int(json.loads(st.read_text("utf-8")).get("max_seq_length", 256)) if st.is_file() else 256
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()
        self.dim = int(pooling.get("word_embedding_dimension", DIM))
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        torch = self._torch
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        if not todo:
            return out
        enc = self.tokenizer([texts[i] for i in todo], truncation=True, max_length=self.max_length)
        lengths = np.fromiter((len(x) for x in enc["input_ids"]), dtype=np.int64, count=len(todo))
        order = np.argsort(lengths, kind="stable")
        autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16")
        with torch.inference_mode(), autocast:
            for s in range(0, len(order), self.batch_size):
                idx = order[s:s + self.batch_size]
                feats = self.tokenizer.pad({k: [enc[k][i] for i in idx] for k in enc}, return_tensors="pt")
                hidden = self.model(**feats).last_hidden_state
                mask = feats["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                if self.pooling == "mean":
                    vec = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                elif self.pooling == "cls":
                    vec = hidden[:, 0]
                else:
                    vec = hidden.masked_fill(mask == 0, -1e9).max(1).values
                vec = torch.nn.functional.normalize(vec.float(), p=2, dim=1)
                out[np.asarray(todo)[idx]] = vec.numpy()
        return out


def _cpu_has_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text("ascii", "replace")
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


_ENCODERS: dict[tuple[int, str], Encoder] = {}


def get_encoder() -> Encoder:
    """The process's encoder, loaded once (per process: a forked worker loads its own, with 1 thread)."""
    key = (os.getpid(), "minilm")
    if key not in _ENCODERS:
        _ENCODERS.clear()
        _ENCODERS[key] = Encoder(ensure_model())
    return _ENCODERS[key]


MEMO_MAX = 100_000  # ~150 MB of float32 vectors


def encode(texts: list[str], memo: TextMemo[np.ndarray] | None = None) -> np.ndarray:
    """Embeddings of `texts`, each distinct text encoded once. `memo` is the run's (RunContext.memo): `leakage` and
    `contamination` with `semantic` on embed the same training rows in one run, and pass one memo so those rows cost
    one encode; without it the memo lives for this call only (nothing is kept between runs in a module global)."""
    memo = TextMemo(MEMO_MAX) if memo is None else memo
    out = np.empty((len(texts), get_encoder().dim), dtype=np.float32)
    for i, vec in enumerate(memo.get_many(texts, get_encoder().encode)):
        out[i] = vec
    return out


def cosine_pairs(emb: np.ndarray, threshold: float, block: int = 2048) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair i < j with cosine >= threshold, exactly (blocks of `block` rows against the rest): (i, j, cos)."""
    n = len(emb)
    li: list[np.ndarray] = []
    lj: list[np.ndarray] = []
    ls: list[np.ndarray] = []
    for s in range(0, n, block):
        sims = emb[s:s + block] @ emb[s:].T
        a, b = np.nonzero(sims >= threshold)
        keep = b > a  # j > i; the block's own diagonal and lower triangle are dropped
        a, b = a[keep], b[keep]
        li.append(a + s)
        lj.append(b + s)
        ls.append(sims[a, b])
    if not li:
        e = np.zeros(0, np.int64)
        return e, e, np.zeros(0, np.float32)
    return np.concatenate(li).astype(np.int64), np.concatenate(lj).astype(np.int64), np.concatenate(ls)


def _spherical_kmeans(x: np.ndarray, k: int, rng: np.random.Generator, iters: int) -> np.ndarray:
    """k unit centroids of the rows of `x`, fitted on a sample of at most 64 rows per centroid (bounded cost)."""
    sample = x[rng.choice(len(x), size=min(len(x), 64 * k), replace=False)]
    cent = sample[rng.choice(len(sample), size=k, replace=False)].copy()
    for _ in range(iters):
        lab = np.argmax(sample @ cent.T, axis=1)
        for c in range(k):
            v = sample[lab == c].sum(0)
            norm = float(np.linalg.norm(v))
            if norm > 0:
                cent[c] = v / norm
    return cent


def buckets(emb: np.ndarray, max_bucket: int = 1024, fanout: int = 256, margin: float = 0.04, seed: int = 0,
            iters: int = 8, max_depth: int = 8) -> list[np.ndarray]:
    """Row indices split into buckets of at most ~`max_bucket` rows by a k-means tree: a set over the cap is split
    by spherical k-means into at most `fanout` parts (each fitted on a bounded sample), recursively. A row whose
    second-nearest centroid is within `margin` of its nearest goes to both, so close pairs near a border stay
    together. Every level costs O(n * fanout * dim) and the tree has log_fanout(n / max_bucket) levels (one up
    to ~260k rows: the wide fan-out keeps the border copies from compounding level after level), and the exact
    search inside the buckets costs n * max_bucket: linear in n, where a flat k-means with sqrt(n) centroids and
    buckets of sqrt(n) rows grows as n^1.5."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    stack: list[tuple[np.ndarray, int]] = [(np.arange(len(emb)), 0)]
    while stack:
        idx, depth = stack.pop()
        if len(idx) <= max_bucket or depth >= max_depth:
            out.append(idx)
            continue
        k = int(min(fanout, max(2, -(-len(idx) // max_bucket))))
        x = emb[idx]
        sims = x @ _spherical_kmeans(x, k, rng, iters).T
        order = np.argsort(-sims, axis=1)[:, :2]
        rows = np.arange(len(idx))
        near = sims[rows, order[:, 0]] - sims[rows, order[:, 1]] <= margin
        children = [idx[(order[:, 0] == c) | (near & (order[:, 1] == c))] for c in range(k)]
        if max(len(c) for c in children) >= len(idx):  # no split possible (identical rows): keep it whole
            out.append(idx)
            continue
        stack.extend((c, depth + 1) for c in children if len(c) > 1)
    return out


def bucketed_pairs(emb: np.ndarray, threshold: float, max_bucket: int = 1024, margin: float = 0.04,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs with cosine >= threshold for large sets: exact search inside the buckets of `buckets` (k-means
    buckets as NeMo Curator's semantic dedup uses, kept to a bounded size), each pair once. A pair whose rows
    share no bucket is missed; bench/semantic_dedup.py measures the recall against exact search."""
    n = len(emb)
    li: list[np.ndarray] = []
    lj: list[np.ndarray] = []
    ls: list[np.ndarray] = []
    for members in buckets(emb, max_bucket=max_bucket, margin=margin, seed=seed):
        members = np.sort(members)
        a, b, s = cosine_pairs(emb[members], threshold)
        li.append(members[a])
        lj.append(members[b])
        ls.append(s)
    if not li:
        e = np.zeros(0, np.int64)
        return e, e, np.zeros(0, np.float32)
    i, j, s = np.concatenate(li), np.concatenate(lj), np.concatenate(ls)
    _, first = np.unique(i * n + j, return_index=True)  # a pair found in two buckets counts once
    return i[first], j[first], s[first]


def similar_pairs(emb: np.ndarray, threshold: float, exact_max: int = 20000) -> tuple[Any, Any, Any]:
    """Exact blockwise search up to `exact_max` rows, bounded k-means buckets above (linear in n)."""
    if len(emb) <= exact_max:
        return cosine_pairs(emb, threshold)
    return bucketed_pairs(emb, threshold)
