"""Issue 27 item 6: nothing a pull request names (contract references, scorecard references, dataset files and
symlinks, a Hugging Face state.json) makes gate read outside the repository; one line naming the file and where it
points, exit 1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from gate.errors import GateError
from tests.conftest import CONTRACTS, ROOT, gate_inprocess, triage_row, write_jsonl

SECRET = {"id": "SECRET-EVAL-0", "messages": [{"role": "user", "content": "outside secret question"}],
          "expected": "outside"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree (a `.git` entry marks it) with a dataset, and a directory outside it with secrets."""
    r = tmp_path / "repo"
    (r / ".git").mkdir(parents=True)
    write_jsonl(r / "data" / "train.jsonl", [triage_row(i) for i in range(3)])
    write_jsonl(tmp_path / "outside" / "eval.jsonl", [SECRET])
    write_jsonl(tmp_path / "outside" / "train.jsonl", [triage_row(9, id="SECRET-ROW-0")])
    (r / "contracts").mkdir()
    return r


def _contract(repo: Path, **changes: object) -> Path:
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["evaluation_sets"] = []
    raw.update(changes)
    p = repo / "contracts" / "c.yaml"
    p.write_text(yaml.safe_dump(raw))
    return p


def _refused(load, *needles: str) -> str:
    with pytest.raises(GateError) as exc:
        load()
    msg = str(exc.value)
    assert "\n" not in msg and "outside the repository" in msg, msg
    for n in needles:
        assert n in msg, msg
    return msg


@pytest.mark.parametrize("ref", ["/etc/passwd", "../../outside/eval.jsonl", "link.jsonl"])
def test_contract_evaluation_sets_stay_inside(repo: Path, ref: str) -> None:
    from gate.contract import load_contract

    (repo / "contracts" / "link.jsonl").symlink_to(repo.parent / "outside" / "eval.jsonl")
    p = _contract(repo, evaluation_sets=[ref])
    msg = _refused(lambda: load_contract(p), str(p), "evaluation_sets[0]")
    assert ("/etc/passwd" if ref.startswith("/") else str(repo.parent / "outside" / "eval.jsonl")) in msg


def test_contract_evaluation_set_inside_is_read(repo: Path) -> None:
    from gate.contract import load_contract

    write_jsonl(repo / "evals" / "e.jsonl", [SECRET])
    (repo / "contracts" / "in.jsonl").symlink_to(repo / "evals" / "e.jsonl")  # a symlink within is fine
    c = load_contract(_contract(repo, evaluation_sets=["../evals/e.jsonl", "in.jsonl"]))
    assert c.evaluation_sets == (str((repo / "evals" / "e.jsonl").resolve()),) * 2


@pytest.mark.parametrize("ref", ["/etc", "../../outside"])
def test_contract_tokenizer_path_stays_inside(repo: Path, ref: str) -> None:
    from gate.contract import load_contract

    p = _contract(repo, tokenizer={"path": ref})
    _refused(lambda: load_contract(p), "tokenizer.path")


def test_contract_tokenizer_hub_id_is_not_a_path(repo: Path) -> None:
    from gate.contract import load_contract

    assert load_contract(_contract(repo, tokenizer={"path": "org/model"})).tokenizer.path == "org/model"


def _scorecard(repo: Path, suite_path: str, **prompt: object) -> Path:
    raw = yaml.safe_load((ROOT / "scorecards" / "triage.yaml").read_text())
    raw["suites"][0]["path"] = suite_path
    raw["suites"][0].pop("sha256", None)
    raw["prompt"].update(prompt)
    (repo / "scorecards" / "suites").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "scorecards" / "suites" / "triage-heldout.jsonl", repo / "scorecards" / "suites")
    shutil.copy(CONTRACTS / "triage.yaml", repo / "contracts" / "triage.yaml")
    p = repo / "scorecards" / "s.yaml"
    p.write_text(yaml.safe_dump(raw))
    return p


@pytest.mark.parametrize("ref", ["/etc/passwd", "../../outside/eval.jsonl", "suites/link.jsonl"])
def test_scorecard_suite_path_stays_inside(repo: Path, ref: str) -> None:
    from gate.score.scorecard import load_scorecard

    p = _scorecard(repo, ref)
    (repo / "scorecards" / "suites" / "link.jsonl").symlink_to(repo.parent / "outside" / "eval.jsonl")
    _refused(lambda: load_scorecard(p), str(p), "suites[0].path")


def test_scorecard_schema_from_contract_stays_inside(repo: Path) -> None:
    from gate.score.scorecard import load_scorecard

    shutil.copy(CONTRACTS / "triage.yaml", repo.parent / "outside" / "c.yaml")
    p = _scorecard(repo, "suites/triage-heldout.jsonl",
                   response_format={"type": "json_schema", "schema_from_contract": str(repo.parent / "outside" /
                                                                                          "c.yaml")})
    _refused(lambda: load_scorecard(p), "schema_from_contract")


def test_scorecard_inside_loads(repo: Path) -> None:
    from gate.score.scorecard import load_scorecard

    assert load_scorecard(_scorecard(repo, "suites/triage-heldout.jsonl")).suites[0].items


@pytest.mark.parametrize("target", ["/etc/passwd", "outside"])
def test_split_file_symlinked_outside_is_refused_by_check(repo: Path, target: str, tmp_path: Path) -> None:
    """`gate check` exits 1 with one line naming the split and where it points; no report names an outside id."""
    dest = Path("/etc/passwd") if target == "/etc/passwd" else repo.parent / "outside" / "train.jsonl"
    (repo / "data" / "test.jsonl").symlink_to(dest)
    out = tmp_path / "rep"
    code, text = gate_inprocess("check", str(repo / "data"), "-c", str(_contract(repo)), "--checks", "contract",
                                "--no-db", "-o", str(out), "-q")
    assert code == 1, text
    lines = text.strip().splitlines()
    assert len(lines) == 1 and str(repo / "data" / "test.jsonl") in lines[0] and str(dest.resolve()) in lines[0]
    assert not out.exists() or "SECRET" not in "".join(p.read_text() for p in out.iterdir())


def test_dataset_dir_symlinked_outside_is_refused(repo: Path) -> None:
    from gate.io.dataset import discover

    (repo / "ds").symlink_to(repo.parent / "outside")
    _refused(lambda: discover(repo / "ds"), "ds")


def test_hf_state_json_data_files_outside_are_refused(repo: Path) -> None:
    """A state.json naming `../../outside/x.arrow` (beside a dummy .arrow so the directory looks complete)."""
    from gate.io.dataset import SplitStats, discover, iter_chunks

    ds = repo / "hf"
    ds.mkdir()
    (ds / "data-00000-of-00001.arrow").write_bytes(b"")
    (repo.parent / "outside" / "x.arrow").write_bytes(b"")
    (ds / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../../outside/x.arrow"}],
                                               "_fingerprint": "f", "_format_type": None}))
    (ds / "dataset_info.json").write_text("{}")
    src = discover(ds)[0]
    msg = _refused(lambda: list(iter_chunks(src, SplitStats(src.split, src.display, src.format))),
                   "state.json", str(repo.parent / "outside" / "x.arrow"))
    assert "\n" not in msg


def test_root_override_by_environment(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GATE_ROOT names the root explicitly (documented in docs/security.md)."""
    from gate.contract import load_contract

    p = _contract(repo, evaluation_sets=["../../outside/eval.jsonl"])
    monkeypatch.setenv("GATE_ROOT", str(repo.parent))
    assert load_contract(p).evaluation_sets == (str((repo.parent / "outside" / "eval.jsonl").resolve()),)


@pytest.mark.slow  # the job runs in the service's worker process, which imports the check stack first
def test_service_job_reads_no_symlink_below_the_top_level(tmp_path: Path) -> None:
    """`gate serve`: the dataset directory is under a root, but a split inside it links outside; the job fails
    with the one line, and nothing of the outside file reaches the record."""
    from gate.service.config import ServiceConfig
    from gate.service.jobs import run_one, submit
    from gate.store import service as store

    root = tmp_path / "root"
    write_jsonl(root / "ds" / "train.jsonl", [triage_row(i) for i in range(3)])
    write_jsonl(tmp_path / "outside" / "test.jsonl", [triage_row(9, id="SECRET-ROW-0")])
    (root / "ds" / "test.jsonl").symlink_to(tmp_path / "outside" / "test.jsonl")
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["evaluation_sets"] = []
    (root / "c.yaml").write_text(yaml.safe_dump(raw))
    cfg = ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state", run_jobs=False)
    job = submit(cfg, "check", {"dataset": str(root / "ds"), "contract": str(root / "c.yaml"),
                                "checks": ["contract"]}, "t")
    run_one(cfg, store.get_job(cfg.db, job["job_id"]))
    done = store.get_job(cfg.db, job["job_id"])
    assert done["status"] == "failed" and "outside the repository" in done["error"], done
    assert str(tmp_path / "outside" / "test.jsonl") in done["error"] and "\n" not in done["error"]
