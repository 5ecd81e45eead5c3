"""gate's loss masks against the trainers' own encoders, token by token (issue 17 items 8 and 9).

50 rows of each fixture kind (triage, tool use) and 20 reasoning rows, exported for ms-swift with the tiny GLM
tokenizer, are encoded by ms-swift 4.6's own `glm4_7` template in training mode (`template.encode`) and by gate's
template audit (the checkpoint's jinja template, prefix masks, the next role token trained as the stop). Every
difference is asserted as what it is:

- triage rows: identical ids, identical labels.
- tool rows: identical ids and labels from the first `<|user|>` on, nothing trained before it by either; the system
  prompt differs because ms-swift's Python agent template spells the tools preamble its own way (`<|system|># Tools`
  without the jinja template's newline, and a second example argument). Documented trainer behaviour: with
  `template_backend: swift` (ms-swift's default) training sees another tools preamble than a jinja-served model;
  `template_backend: jinja` is no way out in ms-swift 4.6: it trains every token of the sequence (last test).
- reasoning rows: identical ids now that the export spells reasoning as the template renders it (`<think>R</think>A`;
  it used to write `<think>\\nR\\n</think>\\n\\n`, which ms-swift keeps literally); ms-swift also trains the opening
  `<think>`, which gate leaves to the generation prompt (`<|assistant|><think>`) the model is given at inference.
"""

import itertools
import json
import subprocess

import pytest

from tests.conftest import ROOT

SWIFT_PY = ROOT / ".venv-swift" / "bin" / "python"
GLM = ROOT / "fixtures" / "tokenizers" / "glm-tiny"
pytestmark = pytest.mark.skipif(not SWIFT_PY.exists(),
                                reason="ms-swift venv (.venv-swift) not installed: make test builds it")


_KIND_ROWS: dict = {}


def _kind_rows(kind):
    return _KIND_ROWS[kind]


def _rows(path, n):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in itertools.islice(f, n)]


@pytest.fixture(scope="module")
def encoded(tmp_path_factory):
    import sys

    from gate.contract.model import TokenizerRef
    from gate.export import export_dataset
    from gate.template.audit import Auditor
    from gate.template.tokenizer import load_chat_tokenizer

    sys.path.insert(0, str(ROOT / "fixtures"))
    from build_glm_models import build

    model = build()["glm5-tiny"]
    tmp = tmp_path_factory.mktemp("labels")
    kinds = {"triage": _rows(ROOT / "fixtures/datasets/triage-clean/train.jsonl", 50),
             "tools": _rows(ROOT / "fixtures/datasets/tool-use-clean/train.jsonl", 50)}
    reasoning = _rows(ROOT / "fixtures/datasets/triage-clean/train.jsonl", 20)
    for i, row in enumerate(reasoning):
        for m in row["messages"]:
            if m["role"] == "assistant":
                m["reasoning_content"] = f"Ticket {i}: the outage decides the severity."
    kinds["reasoning"] = reasoning
    _KIND_ROWS.update(kinds)
    ct = load_chat_tokenizer(TokenizerRef(str(GLM)))
    auditor = Auditor(ct)
    out = {}
    for kind, rows in kinds.items():
        src = tmp / kind
        src.mkdir()
        (src / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        export_dataset(str(src), "ms-swift", str(tmp / f"{kind}-swift"), tokenizer=TokenizerRef(str(GLM)))
        proc = subprocess.run([str(SWIFT_PY), str(ROOT / "tests/train/trainer_scripts/swift_encode.py"), str(model),
                               "glm_moe_dsa", "glm4_7", "glm4_7", str(tmp / f"{kind}-swift" / "train.jsonl")],
                              capture_output=True, text=True, timeout=600, cwd=tmp,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp), "HF_HUB_OFFLINE": "1",
                                   "MODELSCOPE_CACHE": str(tmp / "ms"), "HF_HOME": str(tmp / "hf")})
        assert proc.returncode == 0, proc.stderr[-2000:]
        swift = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        gate = auditor.audit(list(enumerate(rows, 1)), keep=True)
        assert len(swift) == len(gate) == len(rows)
        assert not [s for s in swift if "error" in s], swift
        out[kind] = list(zip(gate, swift, strict=True))
    return ct, out


def test_triage_rows_identical_ids_and_labels(encoded):
    _, out = encoded
    for g, s in out["triage"]:
        assert g.ids == s["ids"], g.rid
        assert g.mask == s["trained"], g.rid


def test_tool_rows_identical_from_the_first_user_turn(encoded):
    ct, out = encoded
    user = ct.backend.token_to_id("<|user|>")
    for g, s in out["tools"]:
        gi, si = g.ids.index(user), s["ids"].index(user)
        assert g.ids[gi:] == s["ids"][si:], g.rid
        assert g.mask[gi:] == s["trained"][si:], g.rid
        assert not any(g.mask[:gi]) and not any(s["trained"][:si])
        assert g.ids[:gi] != s["ids"][:si]  # the documented preamble difference; if it goes, update the docstring
        assert sum(g.mask) > 0


def test_reasoning_rows_identical_ids_and_ms_swift_also_trains_the_opening_think(encoded):
    ct, out = encoded
    think = ct.backend.token_to_id("<think>")
    for g, s in out["reasoning"]:
        assert g.ids == s["ids"], g.rid  # the old export's "<think>\n...\n</think>\n\n" gave other tokens
        diff = [i for i, (a, b) in enumerate(zip(g.mask, s["trained"], strict=True)) if a != b]
        assert diff and all(g.ids[i] == think and s["trained"][i] == 1 and g.mask[i] == 0 for i in diff), g.rid


NEMO_PY = ROOT / ".venv-nemo" / "bin" / "python"


@pytest.mark.skipif(not NEMO_PY.exists(), reason="nemo-automodel venv (.venv-nemo) not installed: make test builds it")
def test_automodel_chat_dataset_labels_against_gate(encoded, tmp_path):
    """The same rows through AutoModel 0.7's own ChatDataset (nemo-automodel export). Its labels are shifted (input
    ids = sequence[:-1], labels = sequence[1:]); realigned, the sequence equals gate's render with `stop_policy:
    as_rendered` (AutoModel appends no stop token, so the model is never taught to end a GLM turn: gate's export
    warns). The only label differences are the generation-prompt tokens AutoModel trains and gate does not (the
    `<|assistant|>` header, and `<think>` opening a reasoning turn). Tool rows included: they used to fail in
    ChatDataset itself (string arguments into a GLM template); the export's chat_template.jinja, which the recipe
    passes as dataset.chat_template, reads the arguments it keeps as objects, and the ids are gate's."""
    from gate.contract.model import TokenizerRef
    from gate.export import export_dataset
    from gate.template.audit import Auditor
    from gate.template.options import TemplateOptions

    ct, out = encoded
    auditor = Auditor(ct, TemplateOptions(stop_policy="as_rendered"))
    allowed = {ct.backend.token_to_id("<|assistant|>"), ct.backend.token_to_id("<think>")}
    model = ROOT / "fixtures" / "models" / "glm5-tiny"
    for kind in out:
        rows = _kind_rows(kind)
        src = tmp_path / kind
        src.mkdir()
        (src / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        export_dataset(str(src), "nemo-automodel", str(tmp_path / f"{kind}-nemo"), tokenizer=TokenizerRef(str(GLM)))
        template = tmp_path / f"{kind}-nemo" / "chat_template.jinja"  # written when the rows call tools
        proc = subprocess.run([str(NEMO_PY), str(ROOT / "tests/train/trainer_scripts/automodel_encode.py"), str(model),
                               str(tmp_path / f"{kind}-nemo" / "train.jsonl")] + ([str(template)] * template.exists()),
                              capture_output=True, text=True,
                              timeout=600, cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                                              "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")})
        assert proc.returncode == 0, proc.stderr[-2000:]
        am = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        assert len(am) == len(rows)
        gate = auditor.audit(list(enumerate(rows, 1)), keep=True)
        for g, a in zip(gate, am, strict=True):
            assert "error" not in a, a
            full = a["ids"] + [a["labels"][-1]]
            trained = [0] + [int(t != -100) for t in a["labels"]]
            assert g.ids == full, g.rid
            diff = [i for i, (x, y) in enumerate(zip(g.mask, trained, strict=True)) if x != y]
            assert diff and all(trained[i] == 1 and g.ids[i] in allowed for i in diff), (g.rid, diff)


def test_ms_swift_jinja_backend_trains_the_whole_sequence(encoded, tmp_path):
    """Why the ms-swift plan keeps `template_backend: swift` although its tools preamble differs from the jinja
    template's (test_tool_rows_identical_from_the_first_user_turn): ms-swift 4.6's `_jinja_encode` returns the whole
    rendered conversation as one context with loss scale 1, so in training mode every token but the first carries
    a label (system prompt, tool catalogue, user turns and tool results included), not the assistant turns."""
    from gate.contract.model import TokenizerRef
    from gate.export import export_dataset

    model = ROOT / "fixtures" / "models" / "glm5-tiny"  # built by the `encoded` fixture
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _kind_rows("tools")[:5]))
    export_dataset(str(src), "ms-swift", str(tmp_path / "out"), tokenizer=TokenizerRef(str(GLM)))
    proc = subprocess.run([str(SWIFT_PY), str(ROOT / "tests/train/trainer_scripts/swift_encode.py"), str(model),
                           "glm_moe_dsa", "glm4_7", "glm4_7", str(tmp_path / "out" / "train.jsonl"), "jinja"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
                               "MODELSCOPE_CACHE": str(tmp_path / "ms"), "HF_HOME": str(tmp_path / "hf")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    jinja = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    _, out = encoded
    assert len(jinja) == 5 and not [j for j in jinja if "error" in j], jinja
    for j, (g, _) in zip(jinja, out["tools"], strict=False):
        assert sum(j["trained"]) == len(j["ids"]) - 1, j["id"]  # everything after the first token
        assert sum(g.mask) < len(g.ids) // 4  # gate (and ms-swift's own backend) train the assistant turns only
