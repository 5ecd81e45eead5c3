"""In-process transformers generation: the default engine, needing no server and no GPU.

It renders each request with the model's own chat template (tools included), generates in left-padded batches of
requests that share decoding settings, and parses tool calls and reasoning out of the raw text in the template's
format with gate's one tool-call parser (`gate.template.toolcalls`, which follows vLLM's parsers). Greedy at
temperature 0, so the same request gives the same answer on the same machine.
`response_format` cannot be enforced here (no grammar engine); it is recorded as unconstrained so format scores from
this engine are read as raw adherence, which is what the embedded engine is for.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from gate import install_hint
from gate.engines.engine import Engine, EngineError, EngineIdentity, hash_path, hash_text, read_chat_template
from gate.engines.types import Request, Response
from gate.template.toolcalls import detect_format, parse_tool_calls, schemas_of, split_reasoning


class EmbeddedEngine(Engine):
    """transformers `generate` on a local model directory, with an optional PEFT adapter."""

    name = "embedded"

    def __init__(self, model: str | os.PathLike[str], *, adapter: str | os.PathLike[str] | None = None,
                 batch_size: int = 8, dtype: str = "float32", device: str = "cpu",
                 chat_template: str | None = None, tool_format: str | None = None) -> None:
        self.model_path = str(model)
        self.adapter_path = str(adapter) if adapter else None
        self.batch_size = max(1, batch_size)
        self.dtype = dtype
        self.device = device
        self.chat_template = read_chat_template(self.model_path, chat_template)
        self.tool_format = tool_format or detect_format(self.chat_template)
        self._model: Any = None
        self._tok: Any = None
        self._identity: EngineIdentity | None = None

    @property
    def identity(self) -> EngineIdentity:
        if self._identity is None:
            import torch
            import transformers

            self._identity = EngineIdentity(
                engine=self.name,
                engine_version=f"transformers {transformers.__version__}; torch {torch.__version__}",
                model=self.model_path, model_hash=hash_path(self.model_path),
                adapter=self.adapter_path, adapter_hash=hash_path(self.adapter_path) if self.adapter_path else None,
                # batch size changes padding and so, in low precision, the last bits of a logit
                flags=(f"dtype={self.dtype}", f"device={self.device}", f"batch_size={self.batch_size}",
                       f"tool_format={self.tool_format}"),
                chat_template_hash=hash_text(self.chat_template),
            )
        return self._identity

    def start(self) -> None:
        if self._model is not None:
            return
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise EngineError(f"the embedded engine needs torch and transformers ({exc}); "
                              f"{install_hint('train')}") from None
        try:
            with _quiet_loading():
                tok = AutoTokenizer.from_pretrained(self.model_path)
                model = AutoModelForCausalLM.from_pretrained(self.model_path, dtype=getattr(torch, self.dtype))
                if self.adapter_path:
                    from peft import PeftModel

                    model = PeftModel.from_pretrained(model, self.adapter_path)
        except Exception as exc:
            msg = f"cannot load model {self.model_path}: {type(exc).__name__}: {exc}".splitlines()[0]
            raise EngineError(msg) from None
        if self.chat_template:
            tok.chat_template = self.chat_template
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        self._tok = tok
        self._model = model.to(self.device).eval()

    def stop(self) -> None:
        self._model = None
        self._tok = None

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        self.start()
        out: list[Response | None] = [None] * len(requests)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.temperature, r.top_p, r.max_tokens, r.seed, r.stop, r.logprobs), []).append(i)
        for idx in groups.values():
            for s in range(0, len(idx), self.batch_size):
                chunk = idx[s:s + self.batch_size]
                try:
                    for i, resp in zip(chunk, self._batch([requests[i] for i in chunk]), strict=True):
                        out[i] = resp
                except Exception as exc:
                    for i in chunk:
                        out[i] = Response(text="", error=f"{type(exc).__name__}: {exc}".splitlines()[0])
                if self.on_answers is not None:
                    self.on_answers(len(chunk))
        return [r for r in out if r is not None]

    @property
    def pid(self) -> int | None:
        return os.getpid()

    def loglikelihood(self, pairs: Sequence[tuple[Request, str]]) -> list[float | None] | None:
        """lm-eval's recipe: context = the rendered prompt up to the assistant turn, continuation tokenized on its
        own and appended; one forward pass per pair, summing the log-softmax of each continuation token."""
        import torch

        self.start()
        tok, model = self._tok, self._model
        out: list[float | None] = []
        for req, cont in pairs:
            try:
                ctx = tok(self._render(req), add_special_tokens=False)["input_ids"]
                cids = tok(cont, add_special_tokens=False)["input_ids"]
                if not cids:
                    out.append(None)
                    continue
                ids = torch.tensor([ctx + cids], device=self.device)
                with torch.inference_mode():
                    logits = model(input_ids=ids).logits[0, len(ctx) - 1:-1].float()
                lp = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(cids, device=self.device)[:, None])
                out.append(float(lp.sum()))
            except Exception:
                out.append(None)
        return out

    def _render(self, req: Request) -> str:
        # the scorecard's template variables first, so they can never override how gate itself renders
        kwargs: dict[str, Any] = {**(req.chat_template_kwargs or {}), "add_generation_prompt": True,
                                  "tokenize": False}
        if req.tools:
            kwargs["tools"] = [dict(t) for t in req.tools]
        return self._tok.apply_chat_template([dict(m) for m in req.messages], **kwargs)

    def _batch(self, reqs: list[Request]) -> list[Response]:
        import torch

        tok, model = self._tok, self._model
        first = reqs[0]
        prompts = [self._render(r) for r in reqs]
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        gen: dict[str, Any] = {"max_new_tokens": first.max_tokens, "pad_token_id": tok.pad_token_id,
                               "return_dict_in_generate": True, "output_scores": first.logprobs}
        if first.temperature and first.temperature > 0:
            gen.update(do_sample=True, temperature=first.temperature, top_p=first.top_p)
            if first.seed is not None:
                torch.manual_seed(first.seed)
        else:
            gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if first.stop:
            gen.update(stop_strings=list(first.stop), tokenizer=tok)
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        t0 = time.perf_counter()
        with torch.inference_mode():
            res = model.generate(**enc, **gen)
        elapsed = time.perf_counter() - t0
        prompt_len = enc["input_ids"].shape[1]
        new = res.sequences[:, prompt_len:]
        logps = None
        if first.logprobs:
            logps = torch.stack([torch.log_softmax(s.float(), dim=-1) for s in res.scores], dim=1)
        out = []
        for b, req in enumerate(reqs):
            ids = new[b].tolist()
            cut = next((k for k, t in enumerate(ids) if t in eos_ids), None)
            hit_eos = cut is not None
            ids = ids[:cut] if hit_eos else ids
            text = tok.decode(ids, skip_special_tokens=False)
            for special in (tok.pad_token, tok.eos_token):
                if special:
                    text = text.replace(special, "")
            reasoning, content = split_reasoning(text) if "</think>" in text else (None, text)
            content, calls = (parse_tool_calls(content, self.tool_format, schemas_of(req.tools)) if req.tools
                              else (content, ()))
            if calls:
                finish = "tool_calls"
            elif hit_eos or len(ids) < req.max_tokens:
                finish = "stop"
            else:
                finish = "length"
            lp = None
            if logps is not None:
                lp = tuple(float(logps[b, k, t]) for k, t in enumerate(ids))
            out.append(Response(
                text=content, tool_calls=calls, finish_reason=finish, reasoning=reasoning,
                prompt_tokens=int(enc["attention_mask"][b].sum()), completion_tokens=len(ids) + (1 if hit_eos else 0),
                latency_s=elapsed, logprobs=lp,
                raw={"engine": "embedded", "raw_text": text, "batch": len(reqs),
                     **({"response_format": "unconstrained"} if req.response_format else {})},
            ))
        return out


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """transformers prints a "Loading weights" tqdm bar (on stderr, TTY or not) and peft a FutureWarning on every
    load: noise in CI logs and a second, foreign bar under `gate score`'s own. Silenced for the load only."""
    import warnings

    from transformers.utils import logging as tlog

    was = tlog.is_progress_bar_enabled()
    tlog.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        if was:
            tlog.enable_progress_bar()
