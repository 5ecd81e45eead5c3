"""Training specs: the examples load, and every mistake is one line naming file, line and key (exit 1)."""

from pathlib import Path

import pytest

from gate.train.spec import SpecError, load_spec
from tests.conftest import ROOT, run_gate

SPECS = ROOT / "trainspecs"

GOOD = """\
name: t
base_model: {path: ./model}
method: {type: lora, rank: 4, alpha: 8, targets: [q_proj]}
data: {train: data}
steps: 5
output_dir: out
"""


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "train.jsonl").write_text('{"messages": []}\n')
    p = tmp_path / "spec.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("name", ["triage-local.yaml", "glm5-lora-nemo.yaml", "glm5-lora-swift.yaml"])
def test_example_specs_load(name):
    spec = load_spec(SPECS / name)
    assert spec.train_files and all(Path(f).is_file() for f in spec.train_files)
    assert Path(spec.output_dir).is_absolute()


def test_paths_resolve_against_the_spec_and_split_dirs_are_read(tmp_path):
    spec = load_spec(_write(tmp_path, GOOD))
    assert spec.train_files == (str(tmp_path / "data" / "train.jsonl"),)
    assert spec.output_dir == str(tmp_path / "out")
    assert spec.method == "lora" and spec.targets == ("q_proj",) and spec.lora_alpha == 8


@pytest.mark.parametrize(("text", "line", "needle"), [
    (GOOD.replace("steps: 5", "stepz: 5"), 5, "unknown key 'stepz' (did you mean 'steps'?)"),
    (GOOD.replace("steps: 5", "steps: many"), 5, "'many' is not of type 'integer'"),
    (GOOD.replace("type: lora, rank: 4", "type: lora, rank: 0"), 3, "less than the minimum"),
    (GOOD.replace(", targets: [q_proj]", ""), 3, "needs targets"),
    (GOOD.replace("data: {train: data}", "data: {train: nowhere}"), 4, "no training data at nowhere"),
    (GOOD + "steps: 6\n", 7, "duplicate key 'steps'"),
    (GOOD + "batch: {micro: 3, global: 8}\n", 7, "not a multiple of the micro batch"),
    (GOOD + "parallelism: {nodes: 1, gpus_per_node: 8, ep: 3}\n", 7, "ep 3 does not divide"),
])
def test_mistakes_point_at_their_line(tmp_path, text, line, needle):
    p = _write(tmp_path, text)
    with pytest.raises(SpecError) as err:
        load_spec(p)
    assert err.value.line == line, str(err.value)
    assert needle in str(err.value)
    assert str(err.value).startswith(f"{p}:{line}: ")


def test_cli_reports_a_bad_spec_in_one_line_with_exit_1(tmp_path):
    p = _write(tmp_path, GOOD.replace("steps: 5", "stepz: 5"))
    res = run_gate("train", str(p), "--runner", "local", "--dry-run")
    assert res.returncode == 1
    assert res.stderr.strip().count("\n") == 0 and "Traceback" not in res.stderr
    assert f"{p}:5: stepz: unknown key 'stepz'" in res.stderr
    assert not (tmp_path / "out").exists()
