"""Turning trainer log lines into metric records, one line at a time, so metrics reach DuckDB while the run is live.

Three line shapes cover the runners: NeMo AutoModel's stdout (`step 4 | epoch 0 | loss 1.55 | grad_norm ... | lr ...
| mem 12.50 GiB | tps 1234.56(154.32/gpu)`, also printed by the local worker), its validation line (`[val] name
"default" | step 20 | ... | loss ...`, one per validation set), and ms-swift's
log records (a Python dict on stdout, a JSON object in `logging.jsonl`). AutoModel's own `training.jsonl` is buffered
100 records deep, which is why stdout, not the file, is parsed for liveness.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import asdict, dataclass
from typing import Any

#: `key value` between pipes; AutoModel 0.7 adds a unit (`mem 12.50 GiB`) and a per-GPU figure
#: (`tps 1234.56(154.32/gpu)`); both are read, or tokens/s would be lost.
_NUM = r"[-+0-9.eE]+|nan|inf"
_PIPE = re.compile(rf"(?:^|\|)\s*([A-Za-z_/()]+)\s+({_NUM})(?:\s*\(\s*({_NUM})\s*/gpu\))?(?:\s+[A-Za-z]+)?\s*(?=\||$)")
_AM_LINE = re.compile(r"(?<![\w.])step\s+\d+\s*\|")
_SWIFT_KEYS = {"loss", "grad_norm", "learning_rate", "eval_loss", "global_step/max_steps"}


@dataclass(frozen=True)
class Metric:
    step: int
    kind: str  # train | val
    loss: float | None = None
    grad_norm: float | None = None
    lr: float | None = None
    tokens_per_s: float | None = None
    epoch: float | None = None
    extra: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _num(v: Any) -> float | None:
    try:
        return float(v)  # nan/inf kept: a diverging loss is evidence, not noise
    except (TypeError, ValueError):
        return None


def _automodel(line: str) -> Metric | None:
    m = _AM_LINE.search(line)
    if not m:
        return None
    # AutoModel 0.7 prints `[val] name "default" | step 20 | ...`: the marker is not next to `step`
    kind = "val" if "[val]" in line[:m.start()] else "train"
    body = line[m.start():]
    found = _PIPE.findall(body)
    vals = {k: v for k, v, _ in found}
    if "step" not in vals:
        return None
    known = {"step", "epoch", "loss", "grad_norm", "lr", "tps"}
    extra = {k: f for k, v in vals.items() if k not in known and (f := _num(v)) is not None}
    extra.update({f"{k}_per_gpu": f for k, _, g in found if g and (f := _num(g)) is not None})
    return Metric(step=int(float(vals["step"])), kind=kind, loss=_num(vals.get("loss")),
                  grad_norm=_num(vals.get("grad_norm")), lr=_num(vals.get("lr")), tokens_per_s=_num(vals.get("tps")),
                  epoch=_num(vals.get("epoch")), extra=extra or None)


def _swift_record(rec: dict[str, Any]) -> Metric | None:
    if not _SWIFT_KEYS & rec.keys():
        return None
    gs = str(rec.get("global_step/max_steps", ""))
    step = int(gs.split("/")[0]) if gs.split("/")[0].isdigit() else int(_num(rec.get("step")) or 0)
    if "eval_loss" in rec and "loss" not in rec:
        return Metric(step=step, kind="val", loss=_num(rec["eval_loss"]), epoch=_num(rec.get("epoch")))
    if "loss" not in rec:
        return None
    speed = _num(rec.get("train_speed(s/it)"))
    extra = {k: f for k in ("memory(GiB)", "train_speed(s/it)") if (f := _num(rec.get(k))) is not None}
    return Metric(step=step, kind="train", loss=_num(rec.get("loss")), grad_norm=_num(rec.get("grad_norm")),
                  lr=_num(rec.get("learning_rate")), tokens_per_s=None, epoch=_num(rec.get("epoch")),
                  extra=extra or ({"s_per_it": speed} if speed else None))


def parse_line(line: str) -> Metric | None:
    """One metric from one log line, or None for every other line (warnings, progress bars, banners)."""
    s = line.strip()
    if not s:
        return None
    brace = s.find("{")
    if brace >= 0 and s.endswith("}"):
        text = s[brace:]
        rec: Any = None
        try:
            rec = json.loads(text)
        except ValueError:
            try:
                rec = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                rec = None
        if isinstance(rec, dict):
            return _swift_record(rec)
    return _automodel(s)
