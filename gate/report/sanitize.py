"""The one pass every `gate check` output goes through: identifiers one line and masked, snippets guarded.

Why: a pull request controls its file names, split names, row ids, contract field names and contract name. Each
of these reaches report.md/json, junit.xml, the GitHub step summary and annotations, the terminal, the DuckDB
record (and so the service API, the dashboard and the HTML pages). Escaping them in each renderer misses one
sooner or later (a split file named `train\\n::add-mask::...` printed workflow commands;
a row id `jane.roe.leak@example.org` was stored raw). So the use case (gate.data.usecase) passes the run through
`sanitize_run` once, after the verdict and before anything is written or printed, and every renderer reads the
sanitized run: every identifier and message goes through `gate.pii.redact.mask_ident` (one line, personal data
and secrets redacted), every snippet too (it was masked by allowlist when made; this is the last guard for a
third-party check's snippet).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from gate.data.base import Finding
from gate.data.runner import CheckRun
from gate.pii.redact import mask_ident as _mask_ident

#: The same split, field and message text recur across findings: each is masked once per process.
mask_ident = functools.lru_cache(maxsize=1 << 16)(_mask_ident)

#: Finding fields that hold text from the data or the contract; `message` and `snippet` are gate's own sentences,
#: whose numbers (offsets, counts) are left as written (a snippet's were masked when it was made).
_ID_FIELDS = ("split", "field", "row_id", "partner_id", "cluster_id")
_TEXT_FIELDS = ("message", "snippet")


def _clean(obj: Any) -> Any:
    """Every string (and every dict key) of a nested structure gate wrote through `mask_ident` (numbers as
    written: counts, offsets and timings are no phone numbers)."""
    if isinstance(obj, str):
        return mask_ident(obj, numbers=False)
    if isinstance(obj, dict):
        return {(_clean(k) if isinstance(k, str) else k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_clean(v) for v in obj)
    return obj


def sanitize_finding(f: Finding) -> Finding:
    """`f` with every text field through `mask_ident` (the same object when nothing changes)."""
    changes: dict[str, str] = {}
    for name in (*_ID_FIELDS, *_TEXT_FIELDS):
        value = getattr(f, name)
        if isinstance(value, str):
            shown = mask_ident(value, numbers=name in _ID_FIELDS)
            if shown != value:
                changes[name] = shown
    return dataclasses.replace(f, **changes) if changes else f


def sanitize_run(run: CheckRun) -> None:
    """Masks, in place, every identifier and message of `run` that a report, the record or the terminal shows."""
    run.dataset = mask_ident(run.dataset)
    c = run.contract
    shown = {k: mask_ident(getattr(c, k)) for k in ("name", "version", "path")}
    if any(v != getattr(c, k) for k, v in shown.items()):
        run.contract = dataclasses.replace(c, **shown)
    if isinstance(run.options.get("novelty"), dict):  # why the run checked what it did: it names changed files
        run.options["novelty"] = _clean(run.options["novelty"])
    for s in run.splits:
        s.split, s.file = mask_ident(s.split), mask_ident(s.file)
    for res in run.results:
        res.summary = mask_ident(res.summary, numbers=False)
        res.findings[:] = [sanitize_finding(f) for f in res.findings]
        res.details = _clean(res.details)
