"""A model tokenizer and its chat template, loaded once per process, and what the audit needs to know about it.

Rendering goes through transformers' own Jinja environment (the sandbox, `tojson`, `raise_exception`, the
`{% generation %}` tracker) with the same inputs `apply_chat_template` builds, so the text is the text a
trainer gets. What is derived from the template once (the generation prompt, the token that ends a turn, the
keep-thinking switch, the tool-call format, the stop tokens) is computed here, not per row.

Worker processes are forked from the parent after the tokenizer is loaded, so each inherits it; the fast
tokenizer's thread pool is switched off (`TOKENIZERS_PARALLELISM=false` unless set) because a pool used
before a fork deadlocks after it, and the workers already use every core.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from bisect import bisect_right
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from gate.contract.model import TokenizerRef
from gate.errors import GateError
from gate.io.lru import LRU
from gate.template.options import KEEP_THINKING_SWITCHES

#: tokenizers loaded in this process, the most recent few (a long-lived service worker sees many)
_CACHE: LRU[ChatTokenizer] = LRU(4)
_GENERATION_RE = re.compile(r"\{%-?\s*generation\s*-?%\}")


def load_chat_tokenizer(ref: TokenizerRef) -> ChatTokenizer:
    """The tokenizer for `ref`, loaded at most once per process (forked workers inherit the parent's)."""
    return _CACHE.get_or_build((ref.path, ref.revision), lambda: ChatTokenizer(ref, _load_hf(ref)))


def _load_hf(ref: TokenizerRef) -> Any:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise GateError(f"the template audit needs transformers and tokenizers ({exc}); "
                        "install gate with the 'template' extra") from None
    try:
        hf = AutoTokenizer.from_pretrained(ref.path, revision=ref.revision, local_files_only=True)
    except Exception as exc:  # transformers raises OSError, ValueError, KeyError... for unusable directories
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise GateError(f"cannot load the tokenizer: {msg[:300]}", file=ref.path) from None
    if getattr(hf, "_tokenizer", None) is None or not hasattr(hf._tokenizer, "encode_batch"):
        raise GateError("the template audit needs a fast (Rust) tokenizer: tokenizer.json", file=ref.path)
    if not hf.chat_template:
        raise GateError("the tokenizer has no chat template (chat_template.jinja or tokenizer_config.json)",
                        file=ref.path)
    return hf


def _compile(source: str) -> Any:
    """A private compiled copy of the template in transformers' environment (the shared cached one stays untouched,
    because the audit installs a memoising `tojson` on its own copy)."""
    from transformers.utils import chat_template_utils as ctu

    fresh = getattr(ctu, "_cached_compile_jinja_template", None)
    if fresh is None:
        fresh = getattr(ctu._compile_jinja_template, "__wrapped__", None)
    if fresh is None:  # pragma: no cover - older transformers: use the shared instance, without the memo
        return ctu._compile_jinja_template(source), False
    return fresh(source), True


class ChatTokenizer:
    """The audit's view of one tokenizer: render, encode, stop tokens and template features."""

    def __init__(self, ref: TokenizerRef, hf: Any) -> None:
        self.ref = ref
        self.hf = hf
        self.backend = hf._tokenizer
        self.special_kwargs: dict[str, Any] = dict(hf.special_tokens_map)
        self.pad_id: int | None = hf.pad_token_id
        self.eos_id: int | None = hf.eos_token_id
        self.added: dict[str, int] = dict(hf.added_tokens_encoder)
        self.vocab_size = len(hf)
        self._compiled: dict[str, Any] = {}
        self._tools: dict[bytes, list[Any]] = {}
        self._tool_ids: set[int] = set()
        self._memo: dict[tuple[Any, ...], tuple[Any, str]] = {}
        self.generation_eos = self._generation_eos()
        self._pieces: dict[str, tuple[list[int], list[int]]] = {}
        self._pieces_ok: bool | None = None if self.backend.normalizer is None else False
        self._pieces_checked = 0
        toks = sorted(self.added, key=len, reverse=True)
        self._piece_re = re.compile("(" + "|".join(map(re.escape, toks)) + ")") if toks else None
        if any(getattr(t, "lstrip", False) or getattr(t, "rstrip", False) or getattr(t, "single_word", False)
               for t in self.backend.get_added_tokens_decoder().values()):
            self._pieces_ok = False  # added tokens that swallow neighbouring whitespace: pieces are not independent

    # ------------------------------------------------------------------ the template
    def source(self, with_tools: bool = False) -> str:
        """The chat template text (the tool-use variant when the tokenizer has named templates and tools are given)."""
        try:
            return self.hf.get_chat_template(None, [{}] if with_tools else None)
        except Exception as exc:  # transformers raises ValueError when no template fits
            raise GateError(f"no chat template: {exc}", file=self.ref.path) from None

    @cached_property
    def variables(self) -> frozenset[str]:
        import jinja2.meta

        compiled = self.compiled(self.source())
        return frozenset(jinja2.meta.find_undeclared_variables(compiled.environment.parse(self.source())))

    @cached_property
    def keep_switch(self) -> tuple[str, bool] | None:
        """The template's keep-thinking switch and the value that keeps earlier reasoning, if it has one."""
        for name, keep in KEEP_THINKING_SWITCHES.items():
            if name in self.variables:
                return name, keep
        return None

    @cached_property
    def has_generation(self) -> bool:
        return bool(_GENERATION_RE.search(self.source()) or _GENERATION_RE.search(self.source(True)))

    @cached_property
    def needs_dict_arguments(self) -> bool:
        """Whether the template fails on tool-call arguments given as a JSON string (GLM iterates `.items()`)."""
        msgs = [{"role": "user", "content": "a"},
                {"role": "assistant", "tool_calls": [{"type": "function",
                                                      "function": {"name": "f", "arguments": '{"k": "v"}'}}]}]
        try:
            self.render(msgs, None, {})
        except Exception:  # the template's own error on a string
            return True
        return False

    @cached_property
    def tool_format(self) -> str:
        """The serving parser that reads this template's tool calls: glm47 (arg_key/arg_value), hermes (JSON)."""
        src = self.source(True)
        if "<arg_key>" in src:
            return "glm47"
        if "<tool_call>" in src:
            return "hermes"
        return "none"

    @cached_property
    def sha256(self) -> dict[str, str]:
        return {"chat_template": hashlib.sha256(self.source(True).encode()).hexdigest(),
                "tokenizer": hashlib.sha256(self.backend.to_str().encode()).hexdigest()}

    def compiled(self, source: str) -> Any:
        c = self._compiled.get(source)
        if c is None:
            c, private = _compile(source)
            if private:
                self._install_memo(c)
            self._compiled[source] = c
        return c

    def _install_memo(self, compiled: Any) -> None:
        """`tojson` remembers its output for the interned `tools` objects: every prefix render of every row
        serialises the same tool catalogue, which is a quarter of a render's time for a GLM template."""
        env = compiled.environment
        original = env.filters["tojson"]
        memo, tool_ids = self._memo, self._tool_ids

        def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
                   sort_keys: bool = False) -> str:
            if id(x) in tool_ids and not isinstance(separators, list):
                key = (id(x), ensure_ascii, indent, separators, sort_keys)
                hit = memo.get(key)
                if hit is not None and hit[0] is x:
                    return hit[1]
                out = original(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                               sort_keys=sort_keys)
                memo[key] = (x, out)
                return out
            return original(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

        env.filters["tojson"] = tojson

    def intern_tools(self, tools: list[Any] | None) -> list[Any] | None:
        """One shared Python object per distinct tool list (rows usually repeat the same catalogue)."""
        if not tools:
            return tools
        key = orjson.dumps(tools)
        hit = self._tools.get(key)
        if hit is not None:
            return hit
        if len(self._tools) >= 256:
            return tools
        self._tools[key] = tools  # kept alive here, so the ids in the memo stay valid
        self._tool_ids.add(id(tools))
        self._tool_ids.update(id(t) for t in tools)
        return tools

    def render(self, messages: list[dict[str, Any]], tools: list[Any] | None, kwargs: dict[str, Any],
               add_generation_prompt: bool = False) -> str:
        """What `apply_chat_template(..., tokenize=False)` returns for already-normalised messages.

        The same as `Template.render` (a fresh context over the same variables, its output joined), without
        the keyword-argument merging, which is a sixth of a short render."""
        compiled = self.compiled(self.source(bool(tools)))
        variables = {**self.special_kwargs, **kwargs, "messages": messages, "tools": tools or None,
                     "documents": None, "add_generation_prompt": add_generation_prompt}
        return "".join(compiled.root_render_func(compiled.new_context(variables)))

    def render_generation(self, messages: list[dict[str, Any]], tools: list[Any] | None,
                          kwargs: dict[str, Any]) -> tuple[str, list[tuple[int, int]]]:
        """The text and the character spans of its `{% generation %}` blocks (transformers' assistant tracker)."""
        from transformers.utils.chat_template_utils import _render_with_assistant_indices

        compiled = self.compiled(self.source(bool(tools)))
        text, spans = _render_with_assistant_indices(compiled, messages, tools or None, None, False,
                                                     **{**self.special_kwargs, **kwargs})
        return text, [(int(a), int(b)) for a, b in spans]

    # ------------------------------------------------------------------ tokens
    def encode_batch(self, texts: list[str]) -> list[Any]:
        return self.backend.encode_batch(texts, add_special_tokens=False)

    def encode_rendered(self, texts: list[str]) -> list[Any]:
        """Token ids of rendered chats, tokenizing each stretch of text between control tokens once per process.

        A fast tokenizer splits its input at added tokens first and tokenizes the pieces independently, so a
        chat is the concatenation of its pieces' tokens; rendered chats repeat most pieces (the tool catalogue,
        the system prompt, the markup), and tokenizing only the new ones is several times faster. The first
        rows are also tokenized whole and compared; on any difference (a normalizer or pre-tokenizer that looks
        across pieces) the whole-text path is used from then on.
        """
        if self._pieces_ok is False or self._piece_re is None:
            return self.encode_batch(texts)
        split = [self._piece_re.split(t) for t in texts]
        cache = self._pieces
        missing = list({p for parts in split for p in parts[0::2] if p and p not in cache})
        if missing:
            if len(cache) + len(missing) > 200_000:
                cache.clear()
            for piece, enc in zip(missing, self.backend.encode_batch(missing, add_special_tokens=False),
                                  strict=True):
                cache[piece] = (enc.ids, [o[0] for o in enc.offsets])
        added = self.added
        out = [_Pieces(parts, cache, added) for parts in split]
        if self._pieces_ok is None:
            check = min(len(texts), 16 - self._pieces_checked)
            whole = self.encode_batch(texts[:check])
            if any(w.ids != o.ids for w, o in zip(whole, out, strict=False)):
                self._pieces_ok = False
                return self.encode_batch(texts)
            self._pieces_checked += check
            if self._pieces_checked >= 16:
                self._pieces_ok = True
        return out

    def token_id(self, token: str) -> int | None:
        i = self.backend.token_to_id(token)
        return None if i is None else int(i)

    def _generation_eos(self) -> list[int]:
        """`eos_token_id` of generation_config.json next to the tokenizer: the ids serving stops on (GLM: several)."""
        path = Path(self.ref.path)
        cfg = None
        if path.is_dir():
            p = path / "generation_config.json"
            if p.is_file():
                cfg = json.loads(p.read_text(encoding="utf-8"))
        else:
            try:
                from transformers.utils import cached_file

                f = cached_file(self.ref.path, "generation_config.json", revision=self.ref.revision,
                                local_files_only=True, _raise_exceptions_for_missing_entries=False)
                if f:
                    cfg = json.loads(Path(f).read_text(encoding="utf-8"))
            except Exception:  # no cached generation config: the tokenizer's eos alone
                cfg = None
        eos = (cfg or {}).get("eos_token_id")
        if isinstance(eos, int):
            return [eos]
        return [int(x) for x in eos] if isinstance(eos, list) else []

    def stop_ids(self, extra: tuple[str, ...] = ()) -> frozenset[int]:
        ids = set(self.generation_eos)
        if self.eos_id is not None:
            ids.add(int(self.eos_id))
        for t in extra:
            i = self.token_id(t)
            if i is None:
                raise GateError(f"checks.template.stop_tokens: '{t}' is not a token of this tokenizer",
                                file=self.ref.path)
            ids.add(i)
        return frozenset(ids)

    @cached_property
    def whitespace_ids(self) -> frozenset[int]:
        """Ids of tokens that decode to whitespace only (what may trail a stop token untrained)."""
        n = self.backend.get_vocab_size(with_added_tokens=True)
        texts = self.backend.decode_batch([[i] for i in range(n)], skip_special_tokens=False)
        return frozenset(i for i, t in enumerate(texts) if t and not t.strip())

    @cached_property
    def control_re(self) -> re.Pattern[str] | None:
        """Added tokens (role markers, think and tool markup): text containing them is encoded as control tokens."""
        toks = sorted((t for t in self.added if len(t) >= 2), key=len, reverse=True)
        return re.compile("|".join(map(re.escape, toks))) if toks else None

    def describe(self, stop_ids: frozenset[int]) -> dict[str, Any]:
        return {"path": self.ref.path, "revision": self.ref.revision, "class": type(self.hf).__name__,
                "vocab_size": self.vocab_size, "sha256": self.sha256,
                "stop_tokens": sorted(self.backend.id_to_token(i) or str(i) for i in stop_ids),
                "pad_token": self.hf.pad_token, "keep_thinking_switch": self.keep_switch[0] if self.keep_switch
                else None, "tool_format": self.tool_format, "generation_blocks": self.has_generation}


class _Pieces:
    """A tokenized chat assembled from its pieces: `ids` and `char_to_token`, like a tokenizers Encoding."""

    __slots__ = ("_char", "_first", "_starts", "ids")

    def __init__(self, parts: list[str], cache: dict[str, tuple[list[int], list[int]]], added: dict[str, int]):
        ids: list[int] = []
        chars: list[int] = []
        firsts: list[int] = []
        starts: list[list[int] | None] = []
        pos = 0
        for k, part in enumerate(parts):
            if not part:
                continue
            chars.append(pos)
            firsts.append(len(ids))
            if k % 2:
                ids.append(added[part])
                starts.append(None)
            else:
                pids, pstarts = cache[part]
                ids.extend(pids)
                starts.append(pstarts)
            pos += len(part)
        self.ids = ids
        self._char = chars
        self._first = firsts
        self._starts = starts
        self._char.append(pos)

    def char_to_token(self, pos: int) -> int | None:
        if pos < 0 or pos >= self._char[-1]:
            return None
        k = bisect_right(self._char, pos) - 1
        st = self._starts[k]
        if st is None:
            return self._first[k]
        return self._first[k] + bisect_right(st, pos - self._char[k]) - 1
