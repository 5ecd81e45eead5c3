"""`template`: what training will actually see, rendered with the model's own chat template.

Active only when a tokenizer is configured (the contract's `tokenizer:` section or `gate check --tokenizer`);
otherwise skipped. Each row is rendered, tokenized and masked the way trainers do (gate/template/audit.py),
and one finding per row names the first problem:

- `template.render_error`: the template cannot render the row (with the template's own error);
- `template.mask`: loss on system, user or tool-result text, assistant text without loss, or a template that
  rewrites earlier turns (a prefix-by-prefix masker such as NeMo AutoModel's raises on it);
- `template.stop`: a trained span that does not end in a stop token the model is served with (GLM ends a
  turn only through the next role token, so that token is the stop);
- `template.reasoning_dropped`: reasoning of a turn that the rendering silently drops;
- `template.control_tokens`: text that contains a control token (a role marker, think or tool markup);
- `template.tool_roundtrip`: a tool call that the serving engine's parser does not read back as written.

Rows that the contract check rejects as structure (or whose tool arguments are not JSON objects) are left to
it: one problem, one finding.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from gate.contract import Contract
from gate.contract.file_schema import check_options
from gate.data.base import Batch, Check, CheckResult, Finding


class TemplateCheck(Check):
    name = "template"
    rules = ("template.render_error", "template.mask", "template.stop", "template.reasoning_dropped",
             "template.control_tokens", "template.tool_roundtrip")
    order = 100
    incremental = "per_row"
    version = "1"
    # how the trainer renders and masks; gate/template/options.py says what each key means
    options_schema = check_options({
        "mask": {"enum": ["auto", "prefix", "generation"], "default": "auto", "description":
                 "How the loss mask is computed: as NeMo AutoModel does (prefix: render growing prefixes), from "
                 "the template's generation markers (as ms-swift), or auto (generation markers when present)."},
        "stop_policy": {"enum": ["auto", "next_role", "as_rendered"], "default": "auto", "description":
                        "Which stop token a trained turn must end with: the one the next role's header implies, "
                        "or the one rendered; auto: next_role for prefix masks, as_rendered for generation masks."},
        "keep_thinking": {"type": "boolean", "default": False, "description":
                          "Render with the template's keep-thinking switch (train with it too)."},
        "chat_template_kwargs": {"type": "object", "default": {}, "description":
                                 "Extra template variables the trainer passes to the chat template."},
        "tool_parser": {"enum": ["auto", "glm47", "glm45", "hermes", "none"], "default": "auto", "description":
                        "The serving engine's tool-call parser the rendered calls must read back with (auto: "
                        "from the template; none: not checked)."},
        "stop_tokens": {"type": "array", "items": {"type": "string"}, "default": [], "description":
                        "Extra stop tokens, besides the tokenizer's eos and generation_config.json's eos_token_id."},
        "roundtrip": {"type": "boolean", "default": True, "description":
                      "Check that tool calls read back through the parser as written."},
        "control_tokens": {"type": "boolean", "default": True, "description":
                           "Flag control tokens (special tokens) written inside message text."},
    })

    @classmethod
    def skip_reason(cls, contract: Contract) -> str | None:
        if contract.tokenizer is None:
            return "no tokenizer configured (the contract's `tokenizer:` or `--tokenizer PATH`)"
        return None

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        self._auditor: Any = None
        self._trained_stops: Counter[int] = Counter()
        if contract.tokenizer is not None:
            from gate.template.batch import auditor_for

            self._auditor = auditor_for(contract)  # loads here, before workers fork; raises GateError if unusable

    def map(self, batch: Batch) -> Any:
        if self._auditor is None:
            return [], Counter(), Counter()
        from gate.template.batch import audit_batch

        findings: list[Finding] = []
        counts: Counter[str] = Counter()
        stops: Counter[int] = Counter()
        for res in audit_batch(batch, self.contract):
            counts["scanned"] += 1
            if res.status == "skipped":
                counts["left_to_contract"] += 1
                continue
            if res.status == "ok":
                counts["rendered"] += 1
                counts["tokens"] += res.n_tokens or 0
                counts["loss_tokens"] += res.n_loss or 0
                stops.update(res.trained_stops)
            if res.issues:
                issue = res.issues[0]
                findings.append(Finding("template", batch.split, res.line, issue.field, issue.rule, "error",
                                        issue.message, None, res.rid))
        return findings, counts, stops

    def reduce(self, partial: Any) -> None:
        findings, counts, stops = partial
        self.findings.extend(findings)
        self.counts.update(counts)
        self._trained_stops.update(stops)

    def finish(self) -> None:
        self.counts.update(Counter(f.rule for f in self.findings))
        a = self._auditor
        if a is None:
            return
        pad = a.ct.pad_id
        if pad is not None and pad in self._trained_stops:
            tok = a.ct.backend.id_to_token(pad)
            self.findings.append(Finding(
                "template", "*", None, None, "template.stop", "error",
                f"the trained stop token '{tok}' is also the padding token: collators that drop the loss of padding "
                f"by id drop it too, and the model never learns to stop ({self._trained_stops[pad]} turn(s))"))

    def details(self) -> dict[str, Any]:
        a = self._auditor
        if a is None:
            return {}
        ct = a.ct
        tok = ct.describe(a.stop_ids)
        name = ct.ref.path.rstrip("/").split("/")[-1]
        stop_names = ", ".join(f"`{t}`" for t in tok["stop_tokens"])
        lines = [f"rendered {self.counts.get('rendered', 0):,} row(s) with `{name}` (chat template "
                 f"`{tok['sha256']['chat_template'][:12]}`), loss mask "
                 + ("from its {% generation %} blocks" if a.mode == "generation" else "rendered prefix by prefix")
                 + f", stop tokens {stop_names}"]
        if a.mode == "prefix" and a.stop_policy == "next_role" and a.turn_end_id is not None:
            lines.append(f"turns end with the next role token; a final turn is trained with "
                         f"`{ct.backend.id_to_token(a.turn_end_id)}` appended (as ms-swift does; NeMo AutoModel "
                         f"adds none: `stop_policy: as_rendered`)")
        sw = ct.keep_switch
        if sw and sw[0] not in a.kwargs:
            lines.append(f"the template has a keep-thinking switch (`{sw[0]}`); rendered with its default: "
                         f"`checks.template.keep_thinking: true` renders (and must train) with "
                         f"`{sw[0]}={json.dumps(sw[1])}`")
        elif sw:
            lines.append(f"rendered with `{sw[0]}={json.dumps(a.kwargs[sw[0]])}`: train with the same template "
                         f"variable")
        if self.counts.get("left_to_contract"):
            lines.append(f"{self.counts['left_to_contract']} row(s) not rendered: their structure or tool arguments "
                         f"fail the contract (see `contract`)")
        rendered = self.counts.get("tokens", 0)
        return {"tokenizer": tok, "mask": a.mode, "stop_policy": a.stop_policy, "template_kwargs": a.kwargs,
                "tool_parser": a.tool_format, "generation_prompt": a.gen_prompt,
                "loss_share": round(self.counts.get("loss_tokens", 0) / rendered, 4) if rendered else None,
                "rules": dict(Counter(f.rule for f in self.findings)), "report_lines": lines}

    def result(self) -> CheckResult:
        res = super().result()
        reason = self.skip_reason(self.contract)
        if reason:
            res.status = "skipped"
            res.summary = reason
        else:
            res.summary = (f"{res.errors} finding(s) in {self.flagged_rows()} of {self.counts.get('scanned', 0)} "
                           f"rows (allowed: {self.contract.threshold(self.name)}); "
                           f"{self.counts.get('rendered', 0)} rendered")
        return res
