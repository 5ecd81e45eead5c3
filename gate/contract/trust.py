"""A pull request must not decide its own verdict: the contract a change is judged by comes from the base.

Why: `gate check --changed-since REF` / `--base REF` is the CI gate on dataset pull requests, and the contract file
lives in the same repository as the data. Judged by its own contract, a pull request that raises
`thresholds.max_findings.secret` and adds a row holding an AWS key passes. So under a base ref the rules come from
the contract *as it is at REF* (read from git's objects, never from the work tree), and the pull request's contract
is compared with it key by key:

- a change that only makes the gate stricter (a lower threshold, a new required field, a smaller allowed set, an
  added PII entity) applies at once: the pull request's contract is used;
- a change that makes it more lenient (a raised threshold, a removed check option, a widened allowed set, a dropped
  entity or evaluation set, a removed pattern, any change to a key whose direction is not known) is a
  `contract_change` finding naming the file, line and key; it fails the gate and the base's contract judges the
  data. A reviewed loosening passes only through `--allow-contract-change`, which the CI workflow sets only when a
  maintainer has approved it (docs/security.md): the findings then stay in the report as warnings.

The comparison is generic: both YAML trees are walked with a table (`RULES`) that says, per key, which direction is
stricter. A key the table does not know is compared exactly: any change to it counts as loosening, so an option
added later is never loosened unseen. Which is "the base": the ref itself (the target branch's tip), not the
merge-base: a pull request chooses its merge-base, and one branched from an old commit with a lax contract must not
be judged by that contract.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate import yamlio
from gate.contract.model import Contract, load_contract
from gate.errors import ContractError, GateError
from gate.pii.config import QUASI_ENTITIES  # stdlib only: the default the contract documents

CHECK = "contract_change"
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "absent"})()  # a key that is not there, default unknown

# kinds of key: which way is stricter
NEUTRAL = "neutral"  # never changes a verdict (names, descriptions)
EXACT = "exact"  # any change is loosening (patterns, schemas, keys whose direction is not known)
ADD_TIGHT = "add_tight"  # adding it where there was none is tightening; changing or removing it loosens
MAX = "max"  # an upper bound: higher is more lenient (None: no bound)
MIN = "min"  # a lower bound: lower is more lenient (None: no bound)
ALLOWED = "allowed"  # an allowed set: more members is more lenient (None: anything allowed)
REQUIRED = "required"  # a set of things looked for: fewer members is more lenient
TRUE_STRICT = "true_strict"  # a switch whose `true` is the stricter setting
FALSE_STRICT = "false_strict"  # a switch whose `false` is the stricter setting
WALK = "walk"  # a mapping: compare key by key


@dataclass(frozen=True)
class Rule:
    kind: str
    default: Any = MISSING  # the value the loader uses when the key is absent
    order: tuple[tuple[Any, ...], ...] = ()  # enums: groups of values from most lenient to strictest


def _order(*groups: tuple[Any, ...], default: Any = MISSING) -> Rule:
    return Rule("order", default, groups)


_ROLES = ("system", "user", "assistant", "tool")

#: per key path ("*" matches any key): the direction of every contract key the gate knows. Keys not listed are EXACT.
RULES: dict[tuple[str, ...], Rule] = {
    (): Rule(WALK),
    ("name",): Rule(NEUTRAL), ("version",): Rule(NEUTRAL), ("description",): Rule(NEUTRAL),
    ("fields",): Rule(WALK, {}),
    ("fields", "*"): Rule(WALK, MISSING),  # added / removed fields: see _field_added
    ("fields", "*", "type"): Rule(EXACT),
    ("fields", "*", "description"): Rule(NEUTRAL),
    ("fields", "*", "required"): Rule(TRUE_STRICT, False),
    ("fields", "*", "unique"): Rule(TRUE_STRICT, False),
    ("fields", "*", "pattern"): Rule(ADD_TIGHT, None),
    ("fields", "*", "allowed"): Rule(ALLOWED, None),
    ("fields", "*", "min_length"): Rule(MIN, None),
    ("fields", "*", "max_length"): Rule(MAX, None),
    ("fields", "*", "max_null_rate"): Rule(MAX, None),
    ("allow_extra_fields",): Rule(FALSE_STRICT, True),
    ("sources",): Rule(ALLOWED, None),
    ("languages",): Rule(ALLOWED, None),
    ("messages",): Rule(WALK, {}),
    ("messages", "roles"): Rule(ALLOWED, _ROLES),
    ("messages", "system_prompt"): _order(("optional",), ("required", "forbidden"), default="optional"),
    ("messages", "min_messages"): Rule(MIN, 1),
    ("messages", "max_messages"): Rule(MAX, None),
    ("messages", "final_role"): _order(("any",), ("assistant",), default="assistant"),
    ("messages", "allow_empty_assistant"): Rule(FALSE_STRICT, False),
    ("output",): Rule(WALK, {}),
    ("output", "format"): _order(("text",), ("json",)),
    ("output", "applies_to"): _order(("final_assistant",), ("all_assistant",), default="final_assistant"),
    ("output", "schema"): Rule(ADD_TIGHT, None),
    ("tools",): Rule(WALK, {}),
    ("tools", "catalogue"): Rule(ADD_TIGHT, None),
    ("tools", "on_missing_required"): _order(("allow",), ("ask_user",), default="ask_user"),
    ("tools", "require_row_tools"): Rule(TRUE_STRICT, False),
    ("refusal",): Rule(WALK, {}),
    ("refusal", "description"): Rule(NEUTRAL),
    ("refusal", "when_user_matches"): Rule(REQUIRED, ()),
    ("refusal", "expect_output"): Rule(ADD_TIGHT, None),
    ("refusal", "expect_text_matches"): Rule(ADD_TIGHT, None),
    ("refusal", "forbid_tool_calls"): Rule(TRUE_STRICT, False),
    ("missing_information",): Rule(WALK, {}),
    ("missing_information", "description"): Rule(NEUTRAL),
    ("missing_information", "placeholder"): Rule(ADD_TIGHT, None),
    ("missing_information", "fields"): Rule(REQUIRED, ()),
    ("missing_information", "expect_output"): Rule(ADD_TIGHT, None),
    ("group_key",): Rule(ADD_TIGHT, None),
    ("group_fallback_key",): Rule(ADD_TIGHT, None),
    ("text",): Rule(WALK, {}),
    ("text", "roles"): Rule(REQUIRED, ("user", "assistant")),
    ("text", "include_tool_calls"): Rule(TRUE_STRICT, True),
    ("limits",): Rule(WALK, {}),
    ("limits", "*"): Rule(MAX, None),
    ("thresholds",): Rule(WALK, {}),
    ("thresholds", "max_duplicate_rate"): Rule(MAX, 0.0),
    ("thresholds", "max_findings"): Rule(WALK, {}),
    ("thresholds", "max_findings", "*"): Rule(MAX, 0),
    ("evaluation_sets",): Rule(REQUIRED, ()),
    ("splits",): Rule(EXACT, None),  # moving a file from train to val takes it out of contamination's reach
    ("rules",): Rule(NEUTRAL),  # labelling rules reviewers cite in corrections (`gate apply`), never a check's verdict
    ("scrub",): Rule(NEUTRAL),  # read by `gate scrub` only, never by a check's verdict
    ("checks",): Rule(WALK, {}),
    ("checks", "*"): Rule(WALK, {}),
    ("checks", "contamination", "ngram"): Rule(MAX, 13),
    ("checks", "contamination", "min_shared"): Rule(MAX, 1),
    ("checks", "contamination", "short_ngram"): Rule(MAX, 8),
    ("checks", "contamination", "min_containment"): Rule(MAX, 1.0),
    ("checks", "contamination", "min_words"): Rule(MAX, 5),
    ("checks", "contamination", "eval_splits"): Rule(REQUIRED, ("test",)),
    ("checks", "contamination", "train_splits"): Rule(REQUIRED, ("train", "training")),
    ("checks", "contamination", "semantic"): Rule(TRUE_STRICT, False),
    ("checks", "near_duplicate", "threshold"): Rule(MAX, 0.8),
    ("checks", "leakage", "semantic"): Rule(TRUE_STRICT, False),
    ("checks", "pii", "entities"): Rule(REQUIRED),
    ("checks", "pii", "ner_entities"): Rule(REQUIRED),
    ("checks", "pii", "use_ner"): Rule(TRUE_STRICT),
    ("checks", "pii", "default_threshold"): Rule(MAX, 0.4),
    ("checks", "pii", "thresholds"): Rule(WALK, {}),
    ("checks", "pii", "thresholds", "*"): Rule(MAX),
    ("checks", "pii", "roles"): Rule(REQUIRED),
    # more quasi-identifiers: more entity types that fail the gate only beside a direct identifier
    ("checks", "pii", "quasi_identifiers"): Rule(ALLOWED, QUASI_ENTITIES),
    # what the row's own words call an example, a placeholder or a listing: a warning, or (stricter) an error
    ("checks", "pii", "stand_ins"): _order(("warning",), ("error",), default="warning"),
    ("checks", "secret", "detect_secrets"): Rule(TRUE_STRICT),
    ("checks", "secret", "own_patterns"): Rule(TRUE_STRICT),
    ("checks", "secret", "plugins"): Rule(REQUIRED),
    ("checks", "secret", "base64_limit"): Rule(MAX),
    ("checks", "secret", "hex_limit"): Rule(MAX),
    ("checks", "secret", "roles"): Rule(REQUIRED),
    ("checks", "semantic_duplicate", "enabled"): Rule(TRUE_STRICT, False),
    ("checks", "semantic_duplicate", "threshold"): Rule(MAX),
    ("checks", "boilerplate", "min_rows"): Rule(MAX),
    ("checks", "boilerplate", "min_share"): Rule(MAX),
    ("checks", "boilerplate", "min_chars"): Rule(MAX),
    ("checks", "boilerplate", "min_row_chars"): Rule(MAX),
    ("checks", "boilerplate", "force"): Rule(TRUE_STRICT, False),
    ("checks", "length", "histogram"): Rule(NEUTRAL),
    ("checks", "template", "roundtrip"): Rule(TRUE_STRICT),
    ("checks", "template", "control_tokens"): Rule(TRUE_STRICT),
}


def rule_for(path: tuple[str, ...], rules: dict[tuple[str, ...], Rule] | None = None) -> Rule:
    """The most specific rule whose pattern matches `path` (a literal key beats `*`); EXACT when none does."""
    best: tuple[int, Rule] | None = None
    for pattern, rule in (RULES if rules is None else rules).items():
        if len(pattern) != len(path) or not all(p in ("*", k) for p, k in zip(pattern, path, strict=True)):
            continue
        literal = sum(p != "*" for p in pattern)
        if best is None or literal > best[0]:
            best = (literal, rule)
    return best[1] if best else Rule(EXACT)


@dataclass(frozen=True)
class Change:
    """One difference between the base's contract and the pull request's, and which way it moves the gate."""

    path: tuple[str, ...]
    direction: str  # "loosening" | "tightening"
    before: Any
    after: Any
    why: str


def _set(v: Any) -> frozenset[str] | None:
    if v is None or v is MISSING:
        return None if v is None else frozenset()
    if isinstance(v, list | tuple):
        return frozenset(repr(x) for x in v)
    return frozenset({repr(v)})


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _classify(rule: Rule, before: Any, after: Any) -> tuple[str, str] | None:
    """('loosening' | 'tightening', why) for one changed value under its rule; None when it does not matter."""
    b = rule.default if before is MISSING else before
    a = rule.default if after is MISSING else after
    if b == a and b is not MISSING:
        return None
    if rule.kind == NEUTRAL:
        return None
    loose, tight = ("loosening", "tightening")
    if b is MISSING or a is MISSING:  # present on one side only and the loader's default is not known here
        if rule.kind == ADD_TIGHT and before is MISSING:
            return tight, "added"
        return loose, "removed" if after is MISSING else "added where the base had none (its effect is not known)"
    if rule.kind in (MAX, MIN):
        if a is None or b is None:  # None: no bound
            return (loose, "bound removed") if a is None else (tight, "bound added")
        nb, na = _num(b), _num(a)
        if nb is None or na is None:
            return loose, "changed"
        if na == nb:
            return None
        if rule.kind == MAX:
            return (loose, "raised") if na > nb else (tight, "lowered")
        return (loose, "lowered") if na < nb else (tight, "raised")
    if rule.kind in (ALLOWED, REQUIRED):
        sb, sa = _set(b), _set(a)
        if sa == sb:  # the same members in another order
            return None
        if rule.kind == ALLOWED:
            if sa is None:
                return loose, "restriction removed"
            if sb is None or sa < sb:
                return tight, "narrowed"
            return loose, "widened (" + ", ".join(sorted(sa - sb)) + ")"
        sb, sa = sb or frozenset(), sa or frozenset()
        if sb - sa:
            return loose, "dropped " + ", ".join(sorted(sb - sa))
        return tight, "extended"
    if rule.kind in (TRUE_STRICT, FALSE_STRICT):
        strict = rule.kind == TRUE_STRICT
        if not isinstance(a, bool) or not isinstance(b, bool):
            return loose, "changed"
        return (tight, "switched on" if strict else "switched off") if a == strict else \
            (loose, "switched off" if strict else "switched on")
    if rule.kind == "order":
        rank = {v: i for i, group in enumerate(rule.order) for v in group}
        if a in rank and b in rank and rank[a] != rank[b]:
            return (tight, "made stricter") if rank[a] > rank[b] else (loose, "made more lenient")
        return loose, "changed"
    if rule.kind == ADD_TIGHT and b is None:
        return tight, "added"
    return loose, "removed" if a is None else "changed"


def compare(base: Any, pr: Any, path: tuple[str, ...] = (), *, extra_ok: bool = True,
            rules: dict[tuple[str, ...], Rule] | None = None) -> list[Change]:
    """Every difference between two trees that moves the gate, in key order (walked per `rules`, default the
    contract's RULES); `extra_ok`: whether the base accepts undeclared fields (then declaring one is tightening)."""
    if base is MISSING and pr is MISSING:
        return []
    rule = rule_for(path, rules)
    if rule.kind == NEUTRAL:
        return []
    if rule.kind == WALK and (isinstance(base, dict) or base is MISSING) and (isinstance(pr, dict) or pr is MISSING) \
            and not (base is MISSING and pr is MISSING):
        if rules is None and path[:1] == ("fields",) and len(path) == 2 and (base is MISSING or pr is MISSING):
            return _field_added_or_removed(path, base, pr, extra_ok)
        b = {} if base is MISSING else base
        p = {} if pr is MISSING else pr
        out: list[Change] = []
        for key in [*b, *(k for k in p if k not in b)]:
            out.extend(compare(b.get(key, MISSING), p.get(key, MISSING), (*path, str(key)), extra_ok=extra_ok,
                               rules=rules))
        return out
    if rule.kind == WALK:  # a mapping replaced by something else (or the other way round)
        return [] if base == pr else [Change(path, "loosening", base, pr, "changed")]
    got = _classify(rule, base, pr)
    if got is None:
        return []
    shown = rule.default if base is MISSING and rule.default is not MISSING else base  # "0 at main", not "absent"
    return [Change(path, got[0], shown, pr, got[1])]


def _field_added_or_removed(path: tuple[str, ...], base: Any, pr: Any, extra_ok: bool) -> list[Change]:
    """A removed field spec drops its rules (loosening). An added one adds rules for a column that was free to be
    anything, unless the base refuses undeclared fields: then declaring it allows a new column (loosening)."""
    if pr is MISSING:
        return [Change(path, "loosening", base, pr, "field removed")]
    if extra_ok:
        return [Change(path, "tightening", base, pr, "field declared")]
    return [Change(path, "loosening", base, pr, "field declared (allow_extra_fields is false at the base)")]


def compare_contracts(base: dict[str, Any], pr: dict[str, Any]) -> list[Change]:
    """The changes from the base's contract tree to the pull request's (both as loaded from YAML)."""
    return compare(base, pr, extra_ok=bool(base.get("allow_extra_fields", True)))


@dataclass
class Trusted:
    """The contract a change is judged by, and the `contract_change` result (None when nothing changed)."""

    contract: Contract
    result: Any = None  # gate.data.base.CheckResult
    changes: tuple[Change, ...] = ()


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, timeout=120)
    except FileNotFoundError:
        raise GateError("git is not installed; a base ref needs it") from None


def _short(v: Any) -> str:
    text = "absent" if v is MISSING else repr(v)
    return text if len(text) <= 60 else text[:59] + "…"


def _result(changes: list[Change], contract_rel: str, doc: yamlio.YamlDoc | None, ref: str, allowed: bool,
            note: str = "") -> Any:
    from gate.data.base import CheckResult, Finding

    findings = []
    tightenings = [f"{'.'.join(ch.path)} {ch.why}" for ch in changes if ch.direction != "loosening"]
    for ch in changes:
        if ch.direction != "loosening":  # applied, listed in the details: not a finding to fix
            continue
        line = None
        if doc is not None:
            for k in range(len(ch.path), -1, -1):  # the key itself, else its nearest parent still in the file
                line = doc.line(list(ch.path[:k]), None) if k else 1
                if line is not None:
                    break
        where = ".".join(ch.path) or "(contract)"
        findings.append(Finding(CHECK, contract_rel, line, where, f"{CHECK}.{ch.direction}",
                                "warning" if allowed else "error",
                                f"{where} {ch.why}: {_short(ch.before)} at `{ref}` -> {_short(ch.after)}"
                                + (" (allowed by --allow-contract-change)" if allowed else "")))
    errors = sum(f.severity == "error" for f in findings)
    loosenings = sum(ch.direction == "loosening" for ch in changes)
    status = "fail" if errors else ("warn" if loosenings else "pass")
    if errors:
        summary = (f"{loosenings} loosening(s) of the contract since `{ref}`: the data is judged by the contract at "
                   f"`{ref}`; a reviewed loosening needs --allow-contract-change")
    elif loosenings:
        summary = f"{loosenings} loosening(s) of the contract since `{ref}`, allowed by --allow-contract-change"
    else:
        summary = f"{len(changes)} tightening(s) of the contract since `{ref}`, applied"
    if note:
        summary = f"{note}; {summary}"
    return CheckResult(CHECK, "1", status, {"scanned": 1, "findings": len(findings), "errors": errors,
                                            "loosenings": loosenings, "tightenings": len(changes) - loosenings},
                       findings, 0.0, summary, {"ref": ref, "tightenings": tightenings})


def _eval_set_changes(base_contract: Contract, root: Path, commit: str, scratch: Path) -> list[Change]:
    """An evaluation set the base compares against that lost items in the work tree: contamination would no longer
    look for them, a loosening the contract file alone does not show."""
    from collections import Counter

    out = []
    inside = scratch.resolve()
    for p in base_contract.evaluation_sets:
        bp = Path(p)
        if not bp.is_relative_to(inside):
            continue
        rel = bp.relative_to(inside)
        work = root / rel
        try:
            before = Counter(bp.read_bytes().splitlines())
            after = Counter(work.read_bytes().splitlines()) if work.is_file() else Counter()
        except OSError:
            continue
        lost = sum((before - after).values())
        if lost:
            out.append(Change(("evaluation_sets", rel.as_posix()), "loosening", f"{sum(before.values())} lines",
                              f"{lost} removed or changed", "lost items"))
    return out


@contextmanager
def trusted_contract(contract_path: str, dataset: str, ref: str, *, allow_change: bool = False,
                     tokenizer: str | None = None) -> Iterator[Trusted]:
    """The contract to judge a change since `ref` by (see the module doc). Files it reads from the base live in a
    scratch folder for as long as the context is open: hold it open while the checks run."""
    import dataclasses

    from gate.contract.model import TokenizerRef
    from gate.data.novelty import _base_contract
    from gate.vcs import repo_root

    current = load_contract(contract_path)
    if tokenizer:
        current = dataclasses.replace(current, tokenizer=TokenizerRef(tokenizer))
    root = repo_root(Path(dataset))
    cpath = Path(contract_path).resolve()
    if not cpath.is_relative_to(root):  # the contract is not part of the repository: the pull request cannot edit it
        yield Trusted(current)
        return
    rel = cpath.relative_to(root).as_posix()
    rev = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if rev.returncode != 0:
        raise GateError(f"unknown git ref '{ref}' (the contract is read from it)", file=str(root))
    commit = rev.stdout.decode().strip()
    pr_doc = yamlio.read(cpath, what="contract", error=ContractError)
    if _git(root, "cat-file", "-e", f"{commit}:{rel}").returncode != 0:
        change = Change((), "loosening", MISSING, rel, f"contract is new since `{ref}` (nothing to compare it to)")
        result = _result([change], rel, pr_doc, ref, allow_change)
        if not allow_change:
            raise GateError(f"the contract does not exist at `{ref}`: a new contract is reviewed with "
                            "--allow-contract-change", file=rel)
        yield Trusted(current, result, (change,))
        return
    with tempfile.TemporaryDirectory(prefix="gate-trust-") as tmp:
        scratch = Path(tmp)
        base = _base_contract(cpath, root, commit, scratch, current, tokenizer)
        base_doc = yamlio.read(scratch / rel, what="contract", error=ContractError)
        changes = compare_contracts(base_doc.data, pr_doc.data) + _eval_set_changes(base, root, commit, scratch)
        if not changes:
            yield Trusted(current)
            return
        loose = any(c.direction == "loosening" for c in changes)
        result = _result(changes, rel, pr_doc, ref, allow_change)
        yield Trusted(base if loose and not allow_change else current, result, tuple(changes))
