"""The demo's "planted found" column on the triage fixture: reworded copies count only when the semantic checks ran."""

from types import SimpleNamespace

from gate.demo.data_door import _planted_found
from tests.conftest import FIXTURES


def _run(found, ran):
    return SimpleNamespace(results=[SimpleNamespace(name=n, status="pass", findings=[
        SimpleNamespace(check=c, split=s, row=r) for c, s, r in found if c == n]) for n in ran])


def test_reworded_copies_count_only_with_the_semantic_checks():
    import json

    path = FIXTURES / "triage-faulty" / "FAULTS.json"
    faults = json.loads(path.read_text())
    leaks = [(f["check"], f["split"], f["row"]) for f in faults if f["check"] == "leakage"]
    plain = [x for x, f in zip(leaks, [f for f in faults if f["check"] == "leakage"], strict=True)
             if "reworded copy" not in f["note"]]
    assert len(plain) == 2 and len(leaks) == 3
    assert _planted_found(_run(plain, ["leakage"]), path) == "2/2"  # semantic off: the rewording is not expected
    sem = [(f["check"], f["split"], f["row"]) for f in faults if f["check"] == "semantic_duplicate"]
    assert _planted_found(_run(leaks + sem, ["leakage", "semantic_duplicate"]), path) == "4/4"


def test_the_data_door_shows_the_planted_conflicting_pair(triage_contract):
    from gate.data.runner import run_checks
    from gate.demo.data_door import conflict_lines

    run = run_checks(str(FIXTURES / "triage-faulty"), triage_contract, checks=["conflicting_answers"],
                     progress=False, workers=1)
    assert conflict_lines(run) == [
        "conflicting answers: train row 172 (id tri-127196): same prompt as row 83 (id tri-036774) (prompt Jaccard "
        "0.85) but a different next_action (next_action reply_with_kb here, escalate_engineering there)"]
