"""The one registry of checks and scorers (gate.plugins, issue 20 items 1 and 2): every check and scorer declares
itself in its own file, the source declarations are what the classes say, the scorers' declared metric keys are
the keys they emit, and no run leaves state in a module for the next one."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys

import pytest

import gate.data.checks
import gate.score.scorers
from gate.data.base import EVIDENCE_FIELDS, Batch, Check
from gate.data.registry import CHECKS, instantiate
from gate.names import CHECK_NAMES
from gate.plugins import declarations
from gate.score.scorers import KEYS, REGISTRY, SCORERS
from tests.conftest import CONTRACTS, FIXTURES, ROOT, triage_row

# the order checks run in and reports list them: a change here is a change of every report
REPORT_ORDER = ("contract", "exact_duplicate", "near_duplicate", "conflicting_answers", "semantic_duplicate",
                "leakage", "pii", "secret", "contamination", "group_split", "template", "length", "boilerplate")


def _defined_in(package) -> dict[str, type]:
    """Every public class with its own declared name in the package's modules, found by importing them."""
    attr = "name" if package is gate.data.checks else "type"
    out = {}
    for mod in pkgutil.iter_modules(package.__path__):
        m = importlib.import_module(f"{package.__name__}.{mod.name}")
        for obj in vars(m).values():
            if inspect.isclass(obj) and obj.__module__ == m.__name__ and isinstance(obj.__dict__.get(attr), str):
                out[obj.__dict__[attr]] = obj
    return out


def test_the_source_declarations_are_the_classes():
    """The names, orders, incremental modes and keys read without importing equal the imported classes'."""
    for kind, package in (("check", gate.data.checks), ("scorer", gate.score.scorers)):
        decls = {d.name: d for d in declarations(kind)}
        classes = _defined_in(package)
        assert set(decls) == set(classes), kind  # scanning finds every one, and nothing else
        for name, d in decls.items():
            cls = d.load()
            assert cls is classes[name]
            for attr, value in d.literals.items():
                assert getattr(cls, attr) == value, (name, attr)


def test_check_names_come_from_the_registry_in_report_order():
    assert CHECK_NAMES == tuple(CHECKS) == REPORT_ORDER
    orders = [CHECKS[n].order for n in CHECK_NAMES]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)


def test_every_check_declares_its_incremental_mode():
    modes = {n: CHECKS[n].incremental for n in CHECKS}
    assert {n for n, m in modes.items() if m == "per_row"} == {"contract", "pii", "secret", "template", "length"}
    assert {n for n, m in modes.items() if m == "against_index"} == {"exact_duplicate", "near_duplicate", "leakage"}
    assert set(modes.values()) == {"per_row", "against_index", "full"}
    for n, m in modes.items():  # an against-index check says itself how its findings are kept
        if m == "against_index":
            assert CHECKS[n].incremental_result is not Check.incremental_result, n


def test_checks_fill_only_the_finding_fields_they_declare():
    from gate.contract import load_contract
    from gate.data.runner import run_checks

    names = ["contract", "exact_duplicate", "near_duplicate", "leakage", "group_split", "length", "boilerplate"]
    run = run_checks(str(FIXTURES / "triage-faulty"), load_contract(CONTRACTS / "triage.yaml"), checks=names,
                     workers=1, progress=False)
    filled: dict[str, set[str]] = {}
    rules: dict[str, set[str]] = {}
    for r in run.results:
        for f in r.findings:
            filled.setdefault(r.name, set()).update(k for k in EVIDENCE_FIELDS if getattr(f, k) is not None)
            rules.setdefault(r.name, set()).add(f.rule)
    for name, fields in filled.items():
        assert fields <= set(CHECKS[name].finding_fields), name
    assert filled["near_duplicate"] == set(EVIDENCE_FIELDS)  # the declaration is not merely wide
    # every rule a check reports is one it declares: `scrub.operators` keys are checked against the declarations
    for name, found in rules.items():
        assert found <= set(CHECKS[name].rules), (name, found - set(CHECKS[name].rules))
    assert len(rules["contract"]) > 5


def test_one_run_shares_one_fresh_context_and_no_module_memo(triage_contract):
    """near_duplicate and leakage share the clustering through the run's context (not a module memo): a second
    run in the same process computes its own."""
    from gate.data import neardup
    from gate.data.runner import run_checks

    assert not [k for k, v in vars(neardup).items() if k.isupper() and isinstance(v, dict) and k.startswith("_")]
    a, b = instantiate(["near_duplicate", "leakage"], triage_contract)
    assert a.context is b.context and a.peers == b.peers == frozenset({"near_duplicate", "leakage"})
    c, = instantiate(["near_duplicate"], triage_contract)
    assert c.context is not a.context
    rows = [(i + 1, triage_row(i, "the invoice shows a double charge for march again" + " please" * (i % 2)))
            for i in range(6)]
    for check in (a, b, c):
        check.reduce(check.map(Batch("train", "train.jsonl", rows)))
        check.finish()
    assert a._clustering is b._clustering and a._clustering.result.clusters  # clustered once for the run
    assert c._clustering is not a._clustering  # another run: its own
    data = str(FIXTURES / "triage-faulty")
    first = run_checks(data, triage_contract, checks=["near_duplicate", "leakage"], workers=1, progress=False)
    second = run_checks(data, triage_contract, checks=["near_duplicate", "leakage"], workers=1, progress=False)
    assert [r.findings for r in first.results] == [r.findings for r in second.results]
    assert any(r.findings for r in first.results)


def test_a_template_audit_lives_in_its_batch():
    """The audit shared by `template` and `length` is kept in the batch's cache, not in a module's last value."""
    import gate.template.batch as tb

    assert not hasattr(tb, "_LAST") and not hasattr(tb, "release")


def test_names_and_metric_keys_need_no_check_or_scorer_import():
    code = ("import sys; from gate.names import CHECK_NAMES; from gate.score.scorers import KEYS; "
            "import gate.score.scorecard_schema; keys = {t: KEYS[t] for t in KEYS}; "
            "print([m for m in ('jsonschema', 'gate.score.sandbox', 'gate.data.checks.contract', 'numpy') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_every_scorer_declares_its_options_as_its_constructor_takes_them():
    for name in SCORERS:
        cls = SCORERS[name]
        schema = cls.options_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        params = [p.name for p in inspect.signature(cls.__init__).parameters.values()
                  if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]  # object.__init__
        assert sorted(schema["properties"]) == sorted(params), name
    assert set(REGISTRY) == set(KEYS) == set(SCORERS)


# keys a scorer declares that come from elsewhere than its `score` (gate.score.run samples the process)
NOT_PER_ANSWER = {("operations", "peak_rss_mb")}


def _responses(item):
    from gate.engines.types import Response, ToolCall

    exp = item.expected
    out = [Response(text="", error="HTTP 503"), Response(text='{"a": ', finish_reason="length"),
           Response(text="I can't help with that.")]
    gold = exp.get("answer", exp) if isinstance(exp, dict) and isinstance(exp.get("answer"), str) else exp
    if isinstance(exp, dict) and exp.get("tool_calls"):
        out.append(Response(text="", tool_calls=tuple(ToolCall(c["name"], json.dumps(c.get("arguments", {})))
                                                      for c in exp["tool_calls"])))
    out.append(Response(text=gold if isinstance(gold, str) else json.dumps(gold), latency_s=1.0, ttft_s=0.1,
                        completion_tokens=10))
    if item.extra.get("choices"):
        n = len(item.extra["choices"])
        out.append(Response(text=item.extra["choices"][0], raw={"choice_logprobs": [-1.0 - i for i in range(n)]}))
    return out


def test_each_scorer_emits_exactly_its_declared_keys():
    """Every shipped scorecard's scorers on right, wrong, failed and truncated answers: the keys they emit are
    the keys they declare (gates are checked against the declaration), no more and, over the cases, no fewer."""
    from gate.score.scorecard import load_scorecard
    from gate.score.scorers.task import ExactMatch
    from gate.score.types import Item

    seen: dict[str, set[str]] = {}
    for card_name in ("triage", "tool-use", "regression", "operations"):
        card = load_scorecard(ROOT / "scorecards" / f"{card_name}.yaml")
        for spec in card.scorers:
            scorer = spec.build()
            for suite in card.suites:
                if spec.suites and suite.name not in spec.suites:
                    continue
                for item in suite.items[:6 if spec.type == "tool_execution" else 80]:  # the sandbox is slower
                    for resp in _responses(item):
                        seen.setdefault(spec.type, set()).update(scorer.score(item, resp).value)
    em = ExactMatch()
    item = Item("x", "c", ({"role": "user", "content": "q"},), "Paris")
    seen["exact_match"] = {k for r in _responses(item) for k in em.score(item, r).value}
    assert set(seen) == set(KEYS)
    for name, keys in seen.items():
        declared = set(KEYS[name]) - {k for t, k in NOT_PER_ANSWER if t == name}
        assert keys == declared, name


@pytest.mark.parametrize("kind", ["check", "scorer"])
def test_a_plugin_never_replaces_a_builtin(tmp_path, kind):
    group = "gate.checks" if kind == "check" else "gate.scorers"
    name = "pii" if kind == "check" else "format"
    site = tmp_path / "site"
    (site / "evil-0.1.dist-info").mkdir(parents=True)
    (site / "evil-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 0.1\n")
    (site / "evil-0.1.dist-info" / "entry_points.txt").write_text(f"[{group}]\n{name} = evil:Nope\n")
    code = (f"import warnings; warnings.simplefilter('always'); from gate.plugins import declarations; "
            f"print([d.target for d in declarations({kind!r}) if d.name == {name!r}])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert "evil" not in out.stdout and f"'{name}' is already declared" in out.stderr
