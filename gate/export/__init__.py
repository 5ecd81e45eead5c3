"""`gate export`: a dataset in the format a training runner reads, written atomically with a manifest.

The output directory appears complete or not at all (JSONL per split through `SplitWriter`, or a `datasets`
`save_to_disk` directory), and MANIFEST.json records where it came from and what it holds: the input files and
their sha256, the output files and theirs, rows per split, the contract's hash and the tokenizer when given,
the rows that could not be written (only with `skip_invalid`), and warnings about what the runner will do with
the data. NeMo AutoModel serialises tool-call arguments to JSON strings, which GLM templates cannot render: with
a tokenizer whose template needs objects, the export also writes `chat_template.jinja` (named in the manifest, used
by `gate train` as the recipe's `dataset.chat_template`) that reads the objects the rows keep.
A row the target format cannot represent stops the export with one line naming it, unless `skip_invalid`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gate import __version__
from gate.contract.model import Contract, TokenizerRef
from gate.errors import GateError
from gate.export.formats import (
    ARGS_KEY,
    CONVERTERS,
    DEFAULT_THINK,
    FORMATS,
    Unrepresentable,
    patch_arguments,
    think_form,
)
from gate.io.digest import sha256_file
from gate.io.rows import iter_dataset

#: The chat template a nemo-automodel export writes next to its rows when the model's template needs dict
#: tool-call arguments (the recipe's `dataset.chat_template`; `gate train` picks it up from the manifest).
NEMO_TEMPLATE = "chat_template.jinja"

MANIFEST_KIND = "gate.export/1"


@dataclass
class ExportOutcome:
    out: str
    format: str
    counts: dict[str, int]
    skipped: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)


def _template_facts(contract: Contract | None, tokenizer: TokenizerRef | None) -> tuple[
        dict[str, Any], dict[str, Any] | None, Any]:
    """The template variables training must pass, the tokenizer's identity, and the auditor (or nothing)."""
    if tokenizer is not None:
        base = contract or Contract(path="", name="", version="", sha256="", raw=MappingProxyType({}))
        contract = dataclasses.replace(base, tokenizer=tokenizer)
    if contract is None or contract.tokenizer is None:
        return {}, None, None
    from gate.template.batch import auditor_for

    a = auditor_for(contract)
    return dict(a.kwargs), a.ct.describe(a.stop_ids), a


def _runner_warnings(fmt: str, auditor: Any, n_tool_rows: int, n_reasoning_rows: int,
                     patched: str | None = None) -> list[str]:
    out = []
    if fmt == "ms-swift" and n_reasoning_rows:
        out.append(f"{n_reasoning_rows} row(s) carry reasoning: written inline before the answer, spelt as the chat "
                   f"template renders it, because ms-swift keeps only role, content and loss of a message")
    if fmt != "nemo-automodel" or auditor is None:
        return out
    if n_tool_rows and auditor.ct.needs_dict_arguments and patched is not None:
        out.append(f"{n_tool_rows} row(s) call tools: NeMo AutoModel's ChatDataset passes tool-call arguments as "
                   f"JSON strings, which this chat template cannot render; the rows also carry them as objects "
                   f"(function.{ARGS_KEY}) and {NEMO_TEMPLATE} is the template reading them (it renders what the "
                   f"original renders): point the recipe's dataset.chat_template at it (gate train does)")
    elif n_tool_rows and auditor.ct.needs_dict_arguments:
        out.append(f"{n_tool_rows} row(s) call tools: NeMo AutoModel's ChatDataset passes tool-call arguments as "
                   f"JSON strings (_normalize_tool_calls) and this chat template cannot render them "
                   f"(it needs a dict); those rows will fail in AutoModel")
    if auditor.mode == "prefix" and auditor.turn_end_id is not None:
        tok = auditor.ct.backend.id_to_token(auditor.turn_end_id)
        out.append(f"this template ends a turn only with the next role token ('{tok}'); AutoModel's prefix mask "
                   f"does not train it, so the model does not learn to stop (see the template check, "
                   f"stop_policy: as_rendered)")
    return out


_sha256 = sha256_file


def export_dataset(dataset: str, fmt: str, out: str, *, contract: Contract | None = None,
                   tokenizer: TokenizerRef | None = None, skip_invalid: bool = False) -> ExportOutcome:
    """Converts every row of every split of `dataset` to `fmt` and writes it to `out` (replacing it atomically).

    `tokenizer` (else the contract's) lets the rows carry the template variables training needs and the manifest
    warn about what the runner will do with them."""
    if fmt not in FORMATS:
        raise GateError(f"unknown export format '{fmt}' (one of {', '.join(FORMATS)})")
    convert = CONVERTERS[fmt]
    kwargs, tok_facts, auditor = _template_facts(contract, tokenizer)
    think = DEFAULT_THINK
    if fmt == "ms-swift" and auditor is not None:
        think = think_form(lambda msgs: auditor.ct.render(msgs, None, dict(kwargs)))
    patched: str | None = None
    nemo: dict[str, Any] = {}
    if fmt == "nemo-automodel" and auditor is not None:
        # AutoModel renders with the tokenizer's template and no template variables: so does the reasoning probe
        nemo["render"] = lambda msgs, tools: auditor.ct.render(msgs, tools, {})
        if auditor.ct.needs_dict_arguments:
            patched = patch_arguments(auditor.ct.source(True))
            nemo["dict_arguments"] = patched is not None
    inputs: dict[str, Any] = {}
    read: dict[str, int] = {}
    counts: dict[str, int] = {}
    skipped: list[dict[str, Any]] = []
    seen = {"tools": 0, "reasoning": 0}

    def converted() -> Any:
        for split, line, row, stats in iter_dataset(dataset):
            inputs[split] = stats
            read[split] = read.get(split, 0) + 1
            try:
                new = (convert(row, kwargs, think) if fmt == "ms-swift" else convert(row, **nemo)
                       if fmt == "nemo-automodel" else convert(row))
            except Unrepresentable as exc:
                if not skip_invalid:
                    raise GateError(f"cannot be written as {fmt}: {exc} (--skip-invalid leaves such rows out)",
                                    file=stats.file, line=line) from None
                rid = row.get("id") if isinstance(row, dict) and isinstance(row.get("id"), str) else None
                skipped.append({"split": split, "row": line, "id": rid, "reason": str(exc)})
                continue
            msgs = [m for m in row.get("messages") or [] if isinstance(m, dict)]
            seen["tools"] += any(m.get("tool_calls") for m in msgs)
            seen["reasoning"] += any(m.get("role") == "assistant" and any(
                m.get(k) for k in ("reasoning_content", "reasoning", "thinking")) for m in msgs)
            counts[split] = counts.get(split, 0) + 1
            yield split, new

    def body() -> dict[str, Any]:
        """Everything but the output files; called once every row has been read (input hashes are final)."""
        return {
            "kind": MANIFEST_KIND, "gate_version": __version__, "format": fmt,
            "input": {"path": str(dataset), "splits": [{"split": s.split, "file": s.file, "format": s.format,
                                                        "rows": read.get(s.split, 0), "sha256": s.sha256}
                                                       for s in inputs.values()]},
            "contract": {"path": contract.path, "name": contract.name, "version": contract.version,
                         "sha256": contract.sha256} if contract is not None else None,
            "tokenizer": tok_facts, "chat_template_kwargs": kwargs or None,
            "counts": dict(counts), "skipped": skipped,
            "warnings": _runner_warnings(fmt, auditor, seen["tools"], seen["reasoning"], patched),
            **({"chat_template": {"file": NEMO_TEMPLATE, "sha256": hashlib.sha256(patched.encode()).hexdigest(),
                                  "patched_from": auditor.ct.sha256["chat_template"]}} if patched else {}),
        }

    if fmt == "hf":
        manifest = _write_hf(out, converted(), body)
    else:
        from gate.io.writer import SplitWriter

        writer = SplitWriter(out)
        with writer:
            for split, new in converted():
                writer.write(split, new)
            if patched is not None:
                assert writer._tmp is not None
                (writer._tmp / NEMO_TEMPLATE).write_text(patched)
            writer.manifest = body()
        manifest = writer.manifest
    return ExportOutcome(out=str(out), format=fmt, counts=counts, skipped=skipped,
                         warnings=manifest["warnings"], manifest=manifest)


def _write_hf(out: str, rows: Any, body: Any) -> dict[str, Any]:
    import os

    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from datasets import Dataset, DatasetDict, disable_progress_bars
    except ImportError:  # pragma: no cover - depends on the installed extras
        raise GateError("the hf export needs the 'datasets' package (gate's 'hf' extra)") from None
    from gate.io.atomic import atomic_dir

    disable_progress_bars()
    per: dict[str, list[dict[str, Any]]] = {}
    for split, new in rows:
        per.setdefault(split, []).append(new)
    with atomic_dir(out) as tmp:
        try:
            DatasetDict({s: Dataset.from_list(r) for s, r in per.items()}).save_to_disk(str(tmp))
        except Exception as exc:  # Arrow cannot find one type for a column: say which
            raise GateError(f"cannot write the hf dataset: {str(exc).splitlines()[0][:300]}") from None
        manifest = body()
        manifest["files"] = [{"file": p.relative_to(tmp).as_posix(), "bytes": p.stat().st_size, "sha256": _sha256(p)}
                             for p in sorted(tmp.rglob("*")) if p.is_file()]
        (tmp / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return manifest
