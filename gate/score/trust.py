"""A pull request that loosens a release gate is not judged by its own gates: `gate score/decide --base REF`.

The scorecard (suites, scorers, gates) decides PROMOTE or BLOCK, and it lives in the repository a pull request
changes. With `--base REF` the scorecard is compared with its version at REF, key by key, as contracts are
(gate.contract.trust): a loosening (a gate removed or switched to `warn`, a threshold moved the lenient way, a
wider margin or alpha, a suite removed, a suite file that lost items, any change whose direction is not known)
refuses the run with one line naming the file, line and key, unless `--allow-scorecard-change` (a reviewed change).
Tightenings (a new gate, a stricter threshold) apply at once. Lists of named entries (gates, suites, scorers) are
compared by name, so reordering them changes nothing.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from gate import yamlio
from gate.contract.trust import ADD_TIGHT, MAX, MIN, MISSING, NEUTRAL, WALK, Change, Rule, _order, compare
from gate.errors import GateError
from gate.score.scorecard import ScorecardError

_LENIENT_FIRST = (("warn",), ("block",))
_NAMED = ("gates", "suites", "scorers", "rollback_triggers")  # lists of entries with a `name`

#: per key path of a scorecard (gates, suites and scorers keyed by name): which way is stricter. Others: EXACT.
RULES: dict[tuple[str, ...], Rule] = {
    (): Rule(WALK),
    ("name",): Rule(NEUTRAL), ("version",): Rule(NEUTRAL), ("description",): Rule(NEUTRAL),
    ("gates",): Rule(WALK, {}),
    ("gates", "*"): Rule(WALK, MISSING),
    ("gates", "*", "description"): Rule(NEUTRAL),
    ("gates", "*", "threshold_max"): Rule(MAX),  # a lower_is_better metric's ceiling
    ("gates", "*", "threshold_min"): Rule(MIN),  # a higher_is_better metric's floor
    ("gates", "*", "margin"): Rule(MAX),
    ("gates", "*", "alpha"): Rule(MAX),
    ("gates", "*", "severity"): _order(*_LENIENT_FIRST, default="block"),
    ("gates", "*", "on_unmeasured"): _order(*_LENIENT_FIRST, default="block"),
    ("suites",): Rule(WALK, {}),
    ("suites", "*"): Rule(WALK, MISSING),
    ("rollback_triggers",): Rule(WALK, {}),
    ("rollback_triggers", "*"): Rule(WALK, MISSING),
    ("rollback_triggers", "*", "description"): Rule(NEUTRAL),
    ("scorers",): Rule(WALK, {}),
    ("scorers", "*"): Rule(ADD_TIGHT, None),
}


def _keyed(doc: dict[str, Any]) -> dict[str, Any]:
    """The tree with gates, suites and scorers keyed by name, and each gate's `threshold` named by its direction."""
    out = dict(doc)
    for section in _NAMED:
        items = doc.get(section)
        if isinstance(items, list) and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
            out[section] = {i["name"]: {k: v for k, v in i.items() if k != "name"} for i in items}
    for gate in (out.get("gates") or {}).values() if isinstance(out.get("gates"), dict) else ():
        if "threshold" in gate:
            lower = gate.get("direction") == "lower_is_better"
            gate["threshold_max" if lower else "threshold_min"] = gate.pop("threshold")
    return out


def _line(doc: yamlio.YamlDoc, raw: dict[str, Any], path: tuple[str, ...]) -> int | None:
    """The line of a keyed path in the file (a named entry is found by its position in the list)."""
    real: list[Any] = []
    for i, key in enumerate(path):
        if i == 1 and path[0] in _NAMED and isinstance(raw.get(path[0]), list):
            names = [g.get("name") if isinstance(g, dict) else None for g in raw[path[0]]]
            if key not in names:
                break
            real.append(names.index(key))
        else:
            real.append("threshold" if key in ("threshold_max", "threshold_min") else key)
    for k in range(len(real), 0, -1):
        line = doc.line(real[:k])
        if line is not None:
            return line
    return 1


def _suite_changes(base: dict[str, Any], root: Path, commit: str, rel_dir: str) -> list[Change]:
    """Suite files that lost items since the base: the gates would be measured on fewer or other items."""
    out = []
    for name, suite in (base.get("suites") or {}).items():
        p = suite.get("path") if isinstance(suite, dict) else None
        if not isinstance(p, str) or Path(p).is_absolute():
            continue
        rel = (Path(rel_dir) / p).as_posix()
        shown = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=root, capture_output=True, timeout=120)
        if shown.returncode != 0:
            continue
        work = root / rel
        after = Counter(work.read_bytes().splitlines()) if work.is_file() else Counter()
        lost = sum((Counter(shown.stdout.splitlines()) - after).values())
        if lost:
            out.append(Change(("suites", name, "path"), "loosening", rel, f"{lost} item line(s) removed or changed",
                              "lost items"))
    return out


def check_scorecard_change(scorecard_path: str, ref: str, *, allow: bool = False) -> list[Change]:
    """Refuses (one line) a scorecard that loosens its version at `ref`, unless `allow`; returns the changes."""
    from gate.vcs import repo_root

    path = Path(scorecard_path).resolve()
    root = repo_root(path)
    if not path.is_relative_to(root):
        return []
    rel = path.relative_to(root).as_posix()
    rev = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=root,
                         capture_output=True, text=True, timeout=120)
    if rev.returncode != 0:
        raise GateError(f"unknown git ref '{ref}' (the scorecard is read from it)", file=str(root))
    commit = rev.stdout.strip()
    shown = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=root, capture_output=True, timeout=120)
    pr_doc = yamlio.read(path, what="scorecard", error=ScorecardError)
    if shown.returncode != 0:
        if allow:
            return []
        raise GateError(f"the scorecard does not exist at `{ref}`: a new scorecard is reviewed with "
                        "--allow-scorecard-change", file=rel)
    try:
        base_raw = yaml.safe_load(shown.stdout.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError):
        raise GateError(f"the scorecard at `{ref}` is not readable YAML", file=rel) from None
    if not isinstance(base_raw, dict):
        raise GateError(f"the scorecard at `{ref}` is not a mapping", file=rel)
    base = _keyed(base_raw)
    changes = compare(base, _keyed(pr_doc.data), rules=RULES)
    changes += _suite_changes(base, root, commit, Path(rel).parent.as_posix())
    loose = [c for c in changes if c.direction == "loosening"]
    if loose and not allow:
        first = loose[0]
        line = _line(pr_doc, pr_doc.data, first.path)
        more = f" (and {len(loose) - 1} more loosening(s))" if len(loose) > 1 else ""
        raise GateError(f"{first.why}: {first.before!r} at `{ref}` -> {first.after!r}{more}; the release gates "
                        f"come from `{ref}`: a reviewed loosening needs --allow-scorecard-change",
                        file=rel, line=line, field=".".join(first.path).replace("threshold_max", "threshold")
                        .replace("threshold_min", "threshold"))
    return changes
