"""Issue 30 item 3: the snippet work of the `pii` and `secret` checks is only done when it is used, and the
timings labelled CPU are CPU.

- `use_ner: false` loads no NER model at all (the snippet recall scan loaded and ran it regardless);
- `--snippets none` builds no snippet (no window, no recall scan, no context masking; it built them all and
  threw them away);
- `timings.map_cpu` and `checks[].seconds` are CPU seconds (they were wall time summed over workers).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, gate_inprocess, triage_row, write_jsonl

pytest.importorskip("presidio_analyzer")

PATTERN_ONLY = """name: pattern-only
version: 1
messages:
  roles: [system, user, assistant]
checks:
  pii:
    use_ner: false
"""

TEXTS = ["Hi, this is naomi ryan from Acme, reach me at naomi.ryan@example.com or +44 20 7946 0958.",
         "Jodi Mijail lives at Ziegelgasse 19, Höfn; key AKIAIOSFODNN7EXAMPLQ, mail jodi@example.org."]


def _dataset(tmp_path: Path) -> tuple[Path, Path]:
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(i, t) for i, t in enumerate(TEXTS)])
    (tmp_path / "c.yaml").write_text(PATTERN_ONLY)
    return tmp_path / "ds", tmp_path / "c.yaml"


def test_pattern_only_check_loads_no_ner_model(tmp_path: Path) -> None:
    """The whole `gate check --checks pii,secret` in a fresh interpreter, snippets on: the spaCy model's package is
    never imported (spaCy itself may be: presidio imports it, and the blank tokenizer is spaCy's)."""
    from gate.pii import PiiConfig, ner_available

    model = PiiConfig().ner_model
    if not ner_available(PiiConfig()):
        pytest.skip(f"the NER model {model} is not installed: nothing that could be loaded")
    ds, contract = _dataset(tmp_path)
    out = tmp_path / "out"
    code = ("import runpy, sys\n"
            f"sys.argv = ['gate', 'check', {str(ds)!r}, '-c', {str(contract)!r}, '-o', {str(out)!r}, '--no-db',"
            " '--checks', 'pii,secret', '--workers', '1']\n"
            "try:\n    runpy.run_module('gate', run_name='__main__')\nexcept SystemExit as e:\n    code = e.code\n"
            f"print('EXIT', code, 'MODEL', {model!r} in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "EXIT 100 MODEL False" in proc.stdout, (proc.stdout[-2000:], proc.stderr[-2000:])
    report = json.loads((out / "report.json").read_text())
    snippets = [f["snippet"] for f in report["findings"]]
    assert snippets and all(snippets)  # the snippets are still there, masked by the allowlist alone
    assert not any(w in s for s in snippets for w in ("naomi", "ryan", "Jodi", "Ziegelgasse", "Höfn"))


def test_snippets_none_does_no_snippet_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--snippets none`: the checks call none of the snippet makers (the real ones, counted on the way through)."""
    import gate.pii

    calls: dict[str, int] = {}
    for name in ("snippet", "snippet_window", "recall_spans_texts"):
        real = getattr(gate.pii, name)

        def counted(*a, _real=real, _name=name, **kw):  # type: ignore[no-untyped-def]
            calls[_name] = calls.get(_name, 0) + 1
            return _real(*a, **kw)

        monkeypatch.setattr(gate.pii, name, counted)
    ds, contract = _dataset(tmp_path)
    code, out = gate_inprocess("check", str(ds), "-c", str(contract), "-o", str(tmp_path / "none"), "--no-db",
                               "--checks", "pii,secret", "--snippets", "none")
    assert code == 100, out
    report = json.loads((tmp_path / "none" / "report.json").read_text())
    assert {f["check"] for f in report["findings"]} == {"pii", "secret"}
    assert all(f["snippet"] is None for f in report["findings"])
    assert calls == {}, calls
    code, out = gate_inprocess("check", str(ds), "-c", str(contract), "-o", str(tmp_path / "masked"), "--no-db",
                               "--checks", "pii,secret")  # the default still makes them
    assert code == 100, out
    assert calls.get("snippet", 0) >= len(report["findings"]), calls


@pytest.mark.parametrize("workers", [1, 2])
def test_cpu_timings_are_cpu_not_wall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, triage_contract,
                                      workers: int) -> None:
    """A check whose map waits 0.4 s (wall, no CPU) in this process or in a forked worker: its `seconds` and the
    run's `map_cpu` stay near zero, the wall `read_and_map` holds the wait."""
    from gate.data.checks.length import LengthCheck
    from gate.data.runner import run_checks

    real = LengthCheck.map

    def waiting(self, batch):  # type: ignore[no-untyped-def]
        time.sleep(0.4)
        return real(self, batch)

    monkeypatch.setattr(LengthCheck, "map", waiting)
    write_jsonl(tmp_path / "train.jsonl", [triage_row(i) for i in range(20)])
    run = run_checks(str(tmp_path), triage_contract, checks=["length"], workers=workers, progress=False,
                     min_parallel_bytes=0 if workers > 1 else 8 << 20)
    assert run.timings["read_and_map"] >= 0.4, run.timings
    assert run.timings["map_cpu"] < 0.2, run.timings
    assert run.results[0].seconds < 0.2, run.results[0].seconds


def test_prose_snippets_reuse_the_scans_own_model_spans(tmp_path: Path, monkeypatch) -> None:
    """With NER on, the scan already ran the model over every prose field: its spans mask the snippets' context, and
    the recall scan (the model over each finding's window a second time: 7 of the pii command's 87 CPU seconds on
    15,000 texts, bench/results/pii_command.md) runs only for fields the scan did not read whole (a code span was
    blanked before the model saw it). A name the findings leave out is still masked in the snippet."""
    import gate.pii
    from gate.contract import load_contract
    from gate.data.runner import run_checks
    from gate.pii import PiiConfig, ner_available

    if not ner_available(PiiConfig()):
        pytest.skip("the NER model is not installed")
    recalled: list[str] = []
    real = gate.pii.recall_spans_texts

    def spy(texts, config=None):
        recalled.extend(texts)
        return real(texts, config)

    monkeypatch.setattr(gate.pii, "recall_spans_texts", spy)
    prose = "Ask my neighbour Will White in Berlin, or mail jane.doe@example.com before Friday."
    code = "Run `send --to jane.doe@example.com` and tell my neighbour Will White in Berlin."
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(0, prose), triage_row(1, code)])
    contract = load_contract(ROOT / "contracts" / "triage.yaml")
    run = run_checks(str(tmp_path / "ds"), contract, checks=["pii"], workers=1, progress=False)
    emails = [f for f in run.results[0].findings if f.rule == "pii.EMAIL_ADDRESS"]
    assert {f.row_id for f in emails} == {"tri-000000", "tri-000001"}, emails
    for f in emails:
        assert "jane" not in f.snippet and "White" not in f.snippet and "Berlin" not in f.snippet, f.snippet
    assert recalled and all("send --to" in t for t in recalled), recalled  # only the field with a code span


def test_a_field_with_many_hits_is_checked_in_linear_time(tmp_path: Path) -> None:
    """A pull request writes the rows, so one message can hold thousands of addresses. Each hit's snippet merged
    all the field's hits again and the overlap resolution compared each hit with every kept one: quadratic, 31 CPU
    seconds for one 100 KB message of 3,000 addresses. Four times the hits now cost about four times the time (a
    quadratic step would cost ~16x), and every hit still gets its own masked snippet."""
    from gate.contract import load_contract
    from gate.data.runner import run_checks

    (tmp_path / "c.yaml").write_text(PATTERN_ONLY)
    contract = load_contract(str(tmp_path / "c.yaml"))
    costs = []
    for n in (1000, 4000):
        text = " ".join(f"Option {i} is at {100 + i} Maple Street." for i in range(n))
        write_jsonl(tmp_path / f"d{n}" / "train.jsonl", [triage_row(0, text)])
        t0 = time.process_time()
        run = run_checks(str(tmp_path / f"d{n}"), contract, checks=["pii"], workers=1, progress=False)
        costs.append(time.process_time() - t0)
        found = [f for f in run.results[0].findings if f.rule == "pii.ADDRESS"]
        assert len(found) >= n - 1 and all(f.snippet and "Maple Street" not in f.snippet for f in found)
    assert costs[1] < 8 * max(costs[0], 0.25), costs
