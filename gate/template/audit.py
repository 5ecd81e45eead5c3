"""Render, tokenize and mask rows the way trainers do, and say where training would see something wrong.

Per batch of rows: each row is normalised as `apply_chat_template` does it (keys whose value is null dropped,
reasoning aliases filled) plus, where the template needs it, the conversion serving engines make (tool-call
arguments from JSON strings to dicts: GLM templates iterate them), rendered with the tokenizer's own template,
and all rendered texts are tokenized in one call that tokenizes each new stretch of text once. Arguments stay
JSON strings for templates that render them as they are (what trainers that pass rows through do).

The loss mask is what a trainer computes (the role header aside: AutoModel trains it, ms-swift does not):

- `prefix` (templates without `{% generation %}`, like GLM's; NeMo AutoModel's ChatDataset, ms-swift): an
  assistant message trains the text between the render of the messages before it (plus the generation prompt,
  the role header the model is given) and the render that includes it. Only the prefixes that bound an
  assistant message are rendered, and each must be a prefix of the full render (AutoModel raises otherwise).
  A span that does not end in a stop token takes the next token when that is one (GLM ends a turn only with
  the next role token), and a final turn gets the template's turn-end token appended (what ms-swift does);
  `stop_policy: as_rendered` trains exactly the rendered span, as AutoModel does.
- `generation`: the character spans of the template's `{% generation %}` blocks.

The mask is then held against where each message's text actually lies in the rendering: no trained token
inside system, user or tool-result text, every token of assistant text trained.
"""

from __future__ import annotations

import gc
import json
import os.path
from dataclasses import dataclass, field
from typing import Any

import orjson

from gate.contract.model import Contract, thaw
from gate.template import toolcalls
from gate.template.options import TemplateOptions
from gate.template.tokenizer import ChatTokenizer

_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")  # as transformers aliases them
_THINK_TAGS = ("<think>", "</think>")  # inline reasoning in assistant content is a convention templates parse


@dataclass(slots=True)
class Issue:
    rule: str
    field: str | None
    message: str


@dataclass(slots=True)
class RowAudit:
    """The outcome for one row. `n_tokens` counts what the trainer feeds (appended stop token included)."""

    line: int
    rid: str | None
    status: str  # ok | error | skipped
    n_tokens: int | None = None
    n_loss: int | None = None
    issues: list[Issue] = field(default_factory=list)
    trained_stops: tuple[int, ...] = ()
    ids: list[int] | None = None
    mask: list[int] | None = None
    text: str | None = None


@dataclass(slots=True)
class _Prepared:
    line: int
    rid: str | None
    messages: list[dict[str, Any]]
    tools: list[Any] | None
    text: str = ""
    regions: list[tuple[int, int, int]] = field(default_factory=list)  # (message index, char start, char end)
    bounds: dict[int, int] = field(default_factory=dict)
    unstable: int | None = None
    issues: list[Issue] = field(default_factory=list)
    calls: dict[int, list[tuple[Any, dict[str, Any]]]] = field(default_factory=dict)  # message -> (name, args)


class Auditor:
    """One tokenizer and one set of options; `audit(rows)` does a batch."""

    def __init__(self, ct: ChatTokenizer, opts: TemplateOptions | None = None, contract: Contract | None = None):
        self.ct = ct
        self.opts = opts or TemplateOptions()
        o = self.opts
        self.mode = o.mask if o.mask != "auto" else ("generation" if ct.has_generation else "prefix")
        if self.mode == "generation" and not ct.has_generation:
            from gate.errors import GateError

            raise GateError("checks.template.mask is 'generation' but the chat template has no "
                            "{% generation %} block", file=ct.ref.path)
        self.stop_policy = o.stop_policy if o.stop_policy != "auto" else (
            "next_role" if self.mode == "prefix" else "as_rendered")
        self.kwargs = dict(o.chat_template_kwargs)
        if o.keep_thinking and ct.keep_switch:
            name, keep = ct.keep_switch
            self.kwargs.setdefault(name, keep)
        self.stop_ids = ct.stop_ids(o.stop_tokens)
        self.dict_arguments = ct.needs_dict_arguments
        self.tool_format = ct.tool_format if o.tool_parser == "auto" else o.tool_parser
        self.ws = ct.whitespace_ids
        self.gen_prompt = self._generation_prompt()
        self.turn_end_id = self._turn_end()
        self._row_ok = _structure_check(contract)
        self._catalogue = {t.name: t for t in contract.tools} if contract is not None else {}
        self._validators: dict[str, Any] = {}
        self._schemas: dict[int, tuple[Any, dict[str, dict[str, Any]]]] = {}

    # ------------------------------------------------------------------ derived once
    def _generation_prompt(self) -> str:
        """What `add_generation_prompt` appends: the header a trainer does not train (the model is given it)."""
        msgs = [{"role": "user", "content": "ping"}]
        try:
            a = self.ct.render(msgs, None, self.kwargs, add_generation_prompt=False)
            b = self.ct.render(msgs, None, self.kwargs, add_generation_prompt=True)
        except Exception:  # a template that cannot render a lone user message: no header known
            return ""
        return b[len(a):] if b.startswith(a) else ""

    def _turn_end(self) -> int | None:
        """The stop token that closes an assistant turn when the next turn starts (GLM: `<|user|>`), if the
        template ends turns that way rather than with its own end-of-turn token."""
        one = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        two = [*one, {"role": "user", "content": "c"}]
        try:
            a = self.ct.render(one, None, self.kwargs)
            b = self.ct.render(two, None, self.kwargs)
        except Exception:
            return None
        if not b.startswith(a) or len(b) == len(a):
            return None
        ids = self.ct.encode_batch([b[len(a):]])[0].ids
        enc = self.ct.encode_batch([a])[0].ids
        if ids and ids[0] in self.stop_ids and not (enc and enc[-1] in self.stop_ids):
            return int(ids[0])
        return None

    # ------------------------------------------------------------------ the batch
    def audit(self, rows: list[tuple[int, dict[str, Any]]], keep: bool = False) -> list[RowAudit]:
        """Audits rows (line number, row); with `keep`, each result carries its ids, mask and text.

        The cyclic garbage collector is paused for the batch: rendering allocates a great many small acyclic
        objects, and the collections they trigger cost as much as the rendering itself.
        """
        was = gc.isenabled()
        gc.disable()
        try:
            return self._audit(rows, keep)
        finally:
            if was:
                gc.enable()

    def _audit(self, rows: list[tuple[int, dict[str, Any]]], keep: bool) -> list[RowAudit]:
        out: list[RowAudit | None] = []
        todo: list[tuple[int, _Prepared]] = []
        for line, row in rows:
            rid = row.get("id") if isinstance(row, dict) and isinstance(row.get("id"), str) else None
            prep = self._prepare(line, rid, row)
            if prep is None:
                out.append(RowAudit(line, rid, "skipped"))
                continue
            self._render(prep)
            if not prep.text:
                out.append(RowAudit(line, rid, "error", issues=prep.issues))
                continue
            out.append(None)
            todo.append((len(out) - 1, prep))
        if todo:
            encs = self.ct.encode_rendered([p.text for _, p in todo])
            for (k, prep), enc in zip(todo, encs, strict=True):
                out[k] = self._analyse(prep, enc, keep)
        return out  # type: ignore[return-value]

    def _prepare(self, line: int, rid: str | None, row: Any) -> _Prepared | None:
        """Normalised messages and tools, or None for rows the contract check rejects (its findings, not ours)."""
        if not isinstance(row, dict) or not self._row_ok(row):
            return None
        msgs: list[dict[str, Any]] = []
        calls_of: dict[int, list[tuple[Any, dict[str, Any]]]] = {}
        for m in row["messages"]:
            d = {k: v for k, v in m.items() if v is not None}
            calls = d.get("tool_calls")
            if calls:
                conv, parsed = [], []
                for tc in calls:
                    fn = tc.get("function") if isinstance(tc, dict) else None
                    if not isinstance(fn, dict):
                        return None
                    args = fn.get("arguments")
                    if isinstance(args, str):
                        try:
                            args = orjson.loads(args) if args.strip() else {}
                        except orjson.JSONDecodeError:
                            return None
                    if not isinstance(args, dict):
                        return None
                    parsed.append((fn.get("name"), args))
                    if self.dict_arguments or not isinstance(fn.get("arguments"), str):
                        conv.append({**tc, "function": {**fn, "arguments": args}})
                    else:
                        conv.append(tc)
                d["tool_calls"] = conv
                calls_of[len(msgs)] = parsed
            if "reasoning_content" in d or "thinking" in d or "reasoning" in d:
                reasoning = next(d[k] for k in _REASONING_FIELDS if k in d)
                d = {"thinking": reasoning, **d, "reasoning_content": reasoning}
            msgs.append(d)
        tools = row.get("tools")
        if isinstance(tools, str):
            try:
                tools = orjson.loads(tools)
            except orjson.JSONDecodeError:
                return None
        if tools is not None and not isinstance(tools, list):
            return None
        return _Prepared(line, rid, msgs, self.ct.intern_tools(tools), calls=calls_of)

    def _render(self, p: _Prepared) -> None:
        ct, kw, msgs = self.ct, self.kwargs, p.messages
        try:
            if self.mode == "generation":
                p.text, spans = ct.render_generation(msgs, p.tools, kw)
                asst = [i for i, m in enumerate(msgs) if m.get("role") == "assistant"]
                if len(spans) == len(asst):
                    p.regions = [(i, a, b) for i, (a, b) in zip(asst, spans, strict=True)]
                else:  # blocks do not map one to one onto assistant messages: masks still come from the spans
                    p.regions = [(-1, a, b) for a, b in spans]
                return
            p.text = ct.render(msgs, p.tools, kw)
        except Exception as exc:
            p.text = ""
            p.issues.append(Issue("template.render_error", "messages", _error_text(exc)))
            return
        n = len(msgs)
        asst = [i for i, m in enumerate(msgs) if m.get("role") == "assistant"]
        need = sorted({i for i in asst} | {i + 1 for i in asst if i + 1 < n})
        p.bounds[n] = len(p.text)
        for k in need:
            try:
                prefix = ct.render(msgs[:k], p.tools, kw)
            except Exception as exc:
                if k == 0:
                    p.bounds[0] = 0
                    continue
                p.issues.append(Issue("template.render_error", f"messages[{k - 1}]",
                                      f"rendering the first {k} message(s) fails: {_error_text(exc)}"))
                p.text = ""
                return
            if not p.text.startswith(prefix):
                p.unstable = k
                break
            p.bounds[k] = len(prefix)
        for i in asst:
            if i in p.bounds and i + 1 in p.bounds:
                p.regions.append((i, p.bounds[i], p.bounds[i + 1]))

    # ------------------------------------------------------------------ one row
    def _analyse(self, p: _Prepared, enc: Any, keep: bool) -> RowAudit:
        ids: list[int] = enc.ids
        n = len(ids)
        text = p.text
        issues = p.issues
        spans: list[tuple[int, int]] = []
        appended: list[int] = []
        stops: list[int] = []
        region_text: dict[int, str] = {}
        dropped = self._reasoning_dropped(p, issues)
        if p.unstable is not None and not dropped:
            k = p.unstable
            issues.append(Issue("template.mask", f"messages[{k - 1}]",
                                f"the chat template rewrites earlier turns once message {k - 1} is added: "
                                f"a prefix-by-prefix masker (NeMo AutoModel) raises, others mask the wrong tokens"))
        last_region = len(p.regions) - 1
        for r, (i, c0, c1) in enumerate(p.regions):
            if self.mode == "prefix":
                hs = c0 + len(os.path.commonprefix([text[c0:c1], self.gen_prompt]))
                t0 = enc.char_to_token(hs) if hs < c1 else None
                t1 = enc.char_to_token(c1) if c1 < len(text) else n
                if t1 is None:
                    t1 = n
                if c1 < len(text) and c1 > c0 and enc.char_to_token(c1 - 1) == t1:
                    issues.append(Issue("template.mask", f"messages[{i}]", "a token straddles the end of the "
                                        "assistant turn: trainers that tokenize prefixes separately get other ids"))
                    t1 += 1
                if t0 is None:
                    t0 = t1
            else:
                t0 = enc.char_to_token(c0) if c0 < len(text) else n
                t1 = (enc.char_to_token(c1 - 1) + 1) if c1 > c0 else t0
            region_text[i] = text[c0:c1]
            j = t1 - 1
            while j >= t0 and ids[j] in self.ws:
                j -= 1
            if j >= t0 and ids[j] in self.stop_ids:
                spans.append((t0, j + 1))
                stops.append(ids[j])
                continue
            gap_ws = all(ids[x] in self.ws for x in range(j + 1, t1))
            if self.stop_policy == "next_role" and t1 < n and ids[t1] in self.stop_ids and gap_ws:
                spans.append((t0, t1 + 1))
                stops.append(ids[t1])
                continue
            if (self.stop_policy == "next_role" and t1 >= n and r == last_region and self.turn_end_id is not None
                    and not dropped):
                spans.append((t0, t1))
                appended.append(self.turn_end_id)
                stops.append(self.turn_end_id)
                continue
            spans.append((t0, t1))
            if p.unstable is None and not dropped:
                nxt = self.ct.backend.id_to_token(ids[t1]) if t1 < n else None
                if nxt is None:
                    why = "it ends the sequence and nothing is appended"
                elif ids[t1] in self.stop_ids:
                    why = f"it ends just before the stop token '{nxt}', which carries no loss ({self.stop_policy})"
                else:
                    why = f"it is followed by '{nxt}', which is not a stop token the model is served with"
                issues.append(Issue("template.stop", f"messages[{i}]" if i >= 0 else "messages",
                                    f"the trained span of this assistant turn has no stop token: {why}"))
        spans = [(a, b) for a, b in spans if b > a]
        if p.unstable is None and not dropped:
            self._check_text_placement(p, enc, spans, issues)
        if self.opts.control_tokens:
            self._check_control_tokens(p, issues)
        if self.opts.roundtrip and self.tool_format != "none":
            self._check_roundtrip(p, region_text, issues)
        n_loss = sum(b - a for a, b in spans) + len(appended)
        res = RowAudit(p.line, p.rid, "ok", n + len(appended), n_loss, issues, tuple(stops))
        if keep:
            mask = [0] * n
            for a, b in spans:
                mask[a:b] = [1] * (b - a)
            res.ids = list(ids) + appended
            res.mask = mask + [1] * len(appended)
            res.text = text
        return res

    def _reasoning_dropped(self, p: _Prepared, issues: list[Issue]) -> bool:
        """Reasoning of an assistant message that the rendering does not contain (first such message only)."""
        for i, m in enumerate(p.messages):
            if m.get("role") != "assistant":
                continue
            r = m.get("reasoning_content")
            if not isinstance(r, str):
                c = m.get("content")
                r = c.split("</think>")[0].split("<think>")[-1] if isinstance(c, str) and "</think>" in c else ""
            r = r.strip()
            if not r:
                continue
            lo = p.bounds.get(i, 0)
            if p.text.find(r, lo) >= 0:
                continue
            sw = self.ct.keep_switch
            if sw and self.kwargs.get(sw[0]) == sw[1]:
                why = f"even with the template's keep-thinking switch ({sw[0]}={json.dumps(sw[1])})"
            elif sw:
                why = (f"the template keeps reasoning only after the last user message unless its keep-thinking "
                       f"switch is set: set checks.template.keep_thinking: true and train with "
                       f"{sw[0]}={json.dumps(sw[1])}")
            else:
                why = ("the template has no keep-thinking switch: cut the conversation after the turn whose "
                       "reasoning must be learnt, or mask the earlier turns")
            issues.append(Issue("template.reasoning_dropped", f"messages[{i}].reasoning_content",
                                f"the reasoning of this assistant turn is not in the rendered text; {why}"))
            return True
        return False

    def _check_text_placement(self, p: _Prepared, enc: Any, spans: list[tuple[int, int]],
                              issues: list[Issue]) -> None:
        """Where each message's text lies in the rendering, against the mask: loss only on assistant text."""
        text, cursor = p.text, 0
        for i, m in enumerate(p.messages):
            body = _visible(m.get("content"))
            if m.get("role") == "assistant" and "</think>" in body:
                body = body.split("</think>")[-1]  # inline reasoning: templates parse it out of the answer
            body = body.strip()
            if not body:
                continue
            pos = text.find(body, cursor)
            if pos < 0:
                continue
            cursor = pos + len(body)
            a = enc.char_to_token(pos)
            b = enc.char_to_token(pos + len(body) - 1)
            if a is None or b is None:
                continue
            trained = sum(max(0, min(b + 1, y) - max(a, x)) for x, y in spans)
            role = m.get("role")
            if role != "assistant" and trained:
                issues.append(Issue("template.mask", f"messages[{i}].content",
                                    f"{trained} token(s) of {role} text carry loss"))
                return
            if role == "assistant" and trained < b + 1 - a:
                issues.append(Issue("template.mask", f"messages[{i}].content",
                                    f"{b + 1 - a - trained} token(s) of this assistant text carry no loss"))
                return

    def _check_control_tokens(self, p: _Prepared, issues: list[Issue]) -> None:
        rx = self.ct.control_re
        if rx is None:
            return
        for i, m in enumerate(p.messages):
            for key in ("content", "reasoning_content"):
                inline_think = key == "content" and m.get("role") == "assistant"
                hit = next((h for h in rx.finditer(_visible(m.get(key)))
                            if not (inline_think and h.group(0) in _THINK_TAGS)), None)
                if hit:
                    issues.append(Issue("template.control_tokens", f"messages[{i}].{key}",
                                        f"the text contains '{hit.group(0)}', which the tokenizer encodes as a "
                                        f"control token: the model sees a turn or markup boundary that is not there "
                                        f"(escape it, or render with sanitize_control_tokens)"))
                    return
            for j, tc in enumerate(m.get("tool_calls") or ()):
                hit = rx.search(orjson.dumps(tc["function"].get("arguments")).decode())
                if hit:
                    issues.append(Issue("template.control_tokens", f"messages[{i}].tool_calls[{j}].function.arguments",
                                        f"the arguments contain '{hit.group(0)}', which the tokenizer encodes as a "
                                        f"control token"))
                    return

    def _check_roundtrip(self, p: _Prepared, region_text: dict[int, str], issues: list[Issue]) -> None:
        key = id(p.tools)
        hit = self._schemas.get(key)
        if hit is None or hit[0] is not p.tools:
            hit = self._schemas[key] = (p.tools, toolcalls.schemas_of(p.tools))
            if len(self._schemas) > 512:
                self._schemas.clear()
        schemas = hit[1]
        for i, want in p.calls.items():
            if i not in region_text:
                continue
            got = toolcalls.parse(self.tool_format, region_text[i], schemas or self._catalogue_schemas())
            diff = toolcalls.first_difference(want, got)
            if diff and all(self._contract_accepts(name, args) for name, args in want):
                # calls the contract rejects (unknown tool, arguments off schema) are its findings, not ours
                issues.append(Issue("template.tool_roundtrip", f"messages[{i}].tool_calls",
                                    f"rendered by the template and read back by the {self.tool_format} parser, "
                                    f"{diff}"))
                return

    def _catalogue_schemas(self) -> dict[str, dict[str, Any]]:
        return {name: thaw(t.parameters) for name, t in self._catalogue.items()}

    def _contract_accepts(self, name: Any, args: Any) -> bool:
        if not self._catalogue:
            return True
        spec = self._catalogue.get(name)
        if spec is None:
            return False
        v = self._validators.get(name)
        if v is None:
            from gate.contract.schemas import validator

            v = self._validators[name] = validator(thaw(spec.parameters), assert_formats=False)
        return bool(v.is_valid(args))


def _visible(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _error_text(exc: BaseException) -> str:
    from gate.pii.redact import mask_loose as mask

    msg = " ".join(str(exc).split())[:240]
    return f"{type(exc).__name__}: {mask(msg)}" if msg else type(exc).__name__


def _structure_check(contract: Contract | None) -> Any:
    """Rows the contract rejects as structure are the contract check's findings; the audit leaves them alone."""
    if contract is None:
        def ok(row: dict[str, Any]) -> bool:
            msgs = row.get("messages")
            return isinstance(msgs, list) and bool(msgs) and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) for m in msgs)
        return ok
    from gate.contract.rows import fast_row_check, row_schema
    from gate.contract.schemas import validator

    fast = fast_row_check(contract)
    slow = validator(row_schema(contract), assert_formats=False)

    def check(row: dict[str, Any]) -> bool:
        return bool(fast(row) or slow.is_valid(row))
    return check


def encode_conversation(ct: ChatTokenizer, messages: list[dict[str, Any]], tools: list[Any] | None = None,
                        opts: TemplateOptions | None = None) -> RowAudit:
    """One conversation, with its token ids, mask and text: for tests, exports and debugging."""
    row: dict[str, Any] = {"messages": messages}
    if tools is not None:
        row["tools"] = tools
    return Auditor(ct, opts).audit([(1, row)], keep=True)[0]
