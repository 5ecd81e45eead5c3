"""nemo-automodel and ms-swift plans: golden files (cross-checked by hand against AutoModel's
examples/llm_finetune/glm/glm_5.2_lora.yaml and ms-swift 4.6 argument names, see runners-and-serving.md), the keys the
notes require, and, where the trainer venvs exist (.venv-nemo, .venv-swift), the trainers' own parsers."""

import dataclasses
import json
import os

import pytest
import yaml

from gate.train.runners import get_runner
from gate.train.runners.ms_swift import megatron_args, swift_args
from gate.train.runners.nemo_automodel import recipe
from gate.train.spec import load_spec
from tests.conftest import ROOT, run_gate

GOLDEN = ROOT / "tests" / "golden"
NEMO_PY = ROOT / ".venv-nemo" / "bin" / "python"
SWIFT_PY = ROOT / ".venv-swift" / "bin" / "python"
UPDATE = os.environ.get("GATE_UPDATE_GOLDEN") == "1"


def _norm(obj):
    return json.loads(json.dumps(obj).replace(str(ROOT), "<root>"))


def _golden(name, obj):
    path = GOLDEN / name
    if UPDATE:
        path.write_text(json.dumps(_norm(obj), indent=2) + "\n")
    assert _norm(obj) == json.loads(path.read_text()), f"{name} changed; review and GATE_UPDATE_GOLDEN=1"


def _spec(tmp_path, name, **changes):
    spec = load_spec(ROOT / "trainspecs" / name)
    return dataclasses.replace(spec, output_dir=str(tmp_path / "out"), **changes)


def test_nemo_recipe_matches_golden_and_the_notes(tmp_path):
    spec = load_spec(ROOT / "trainspecs" / "glm5-lora-nemo.yaml")
    r = recipe(spec)
    _golden("glm5-lora-nemo.automodel.json", r)
    assert r["recipe"] == "TrainFinetuneRecipeForNextTokenPrediction"
    assert r["seed"] == 1234 and "rng" not in r  # an rng: block is ignored by train_ft.py
    assert r["checkpoint"]["enabled"] is True  # shipped GLM recipes disable it
    assert r["distributed"]["ep_size"] == 128 and "moe" in r["distributed"]
    assert r["peft"]["_target_"] == "nemo_automodel.components._peft.lora.PeftConfig"
    assert "*.mlp.experts" in r["peft"]["target_modules"]
    assert not any("indexer" in t or t.endswith(".gate") for t in r["peft"]["target_modules"])
    assert r["dataset"]["_target_"].endswith("chat_dataset.ChatDataset")
    assert r["loss_fn"]["_target_"].endswith("chunked_ce.ChunkedCrossEntropy")


def test_nemo_dry_run_writes_recipe_slurm_and_torchrun(tmp_path):
    spec = _spec(tmp_path, "glm5-lora-nemo.yaml")
    plan = get_runner("nemo-automodel").plan(spec, tmp_path / "out" / "plan")
    slurm = plan.files["slurm.sub"]
    for needle in ("#SBATCH --nodes=16", "#SBATCH --gpus-per-node=8", "#SBATCH --signal=B:USR1@300",
                   "--rdzv_backend=c10d", "-m nemo_automodel.cli.app", "MASTER_PORT=13742"):
        assert needle in slurm
    assert yaml.safe_load(plan.files["automodel.yaml"]) == recipe(spec)


def test_nemo_recipe_uses_the_chat_template_of_the_export(tmp_path):
    """A nemo-automodel export made with a tokenizer names its chat template in MANIFEST.json (its rows need it):
    the recipe points train and validation ChatDataset at it; the spec's own `chat_template` option wins; two
    exports with different templates cannot feed one run. Without a manifest the recipe has no template key."""
    from gate.errors import GateError

    def export(name, sha):
        d = tmp_path / name
        d.mkdir()
        (d / "train.jsonl").write_text("{}\n")
        (d / "chat_template.jinja").write_text("{{ messages }}")
        (d / "MANIFEST.json").write_text(json.dumps({"format": "nemo-automodel", "chat_template": {
            "file": "chat_template.jinja", "sha256": sha}}))
        return str(d / "train.jsonl")

    a, b = export("a", "1" * 64), export("b", "2" * 64)
    spec = _spec(tmp_path, "glm5-lora-nemo.yaml", train_files=(a,), val_files=(a,))
    r = recipe(spec)
    assert r["dataset"]["chat_template"] == r["validation_dataset"]["chat_template"] == str(tmp_path / "a" /
                                                                                            "chat_template.jinja")
    own = dataclasses.replace(spec, runner_options={"nemo-automodel": {"chat_template": "/x/t.jinja"}})
    assert recipe(own)["dataset"]["chat_template"] == "/x/t.jinja"
    with pytest.raises(GateError, match="different chat templates"):
        recipe(dataclasses.replace(spec, train_files=(a, b)))
    assert "chat_template" not in recipe(load_spec(ROOT / "trainspecs" / "glm5-lora-nemo.yaml"))["dataset"]


def test_nemo_plan_warns_that_the_exports_template_variables_are_not_applied(tmp_path, tool_contract):
    """A real `gate export --format nemo-automodel` under a contract with template variables records them in
    MANIFEST.json (here keep_thinking -> clear_thinking: false); AutoModel 0.7's ChatDataset has no option for them,
    so the plan says they are not applied (it said nothing, and training rendered the template's defaults)."""
    from gate.contract.model import TokenizerRef
    from gate.export import export_dataset
    from tests.conftest import FIXTURES, write_jsonl

    glm = TokenizerRef(str(FIXTURES.parent / "tokenizers" / "glm-tiny"))
    row = {"id": "r1", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    write_jsonl(tmp_path / "ds" / "train.jsonl", [row])
    for name, options in (("plain", {}), ("thinking", {"template": {"keep_thinking": True}})):
        c = dataclasses.replace(tool_contract, check_options=options)
        export_dataset(str(tmp_path / "ds"), "nemo-automodel", str(tmp_path / name), contract=c, tokenizer=glm)
    runner = get_runner("nemo-automodel")
    for name, warned in (("plain", False), ("thinking", True)):
        spec = _spec(tmp_path, "glm5-lora-nemo.yaml", train_files=(str(tmp_path / name / "train.jsonl"),),
                     val_files=())
        notes = [n for n in runner.plan(spec, tmp_path / "plan").notes if "chat_template_kwargs" in n]
        assert bool(notes) is warned, notes
    (note,) = notes
    assert '{"clear_thinking": false}' in note and "not applied" in note and str(tmp_path / "thinking") in note


def test_nemo_multinode_plan_launches_torchrun_on_every_node(tmp_path):
    """16 nodes x 8 GPUs with ep 128: the `automodel` CLI only spawns one node's ranks (--nproc-per-node), so the
    plan's command is the per-node torchrun script, whose arguments torch's own torchrun parser accepts."""
    import shlex

    from torch.distributed.run import get_args_parser

    spec = _spec(tmp_path, "glm5-lora-nemo.yaml")
    plan_dir = tmp_path / "out" / "plan"
    plan = get_runner("nemo-automodel").plan(spec, plan_dir)
    assert plan.command == ("bash", str(plan_dir / "torchrun.sh"))
    script = plan.files["torchrun.sh"]
    assert 'NODE_RANK="${NODE_RANK:?' in script and 'MASTER_ADDR="${MASTER_ADDR:?' in script
    line = next(ln for ln in script.splitlines() if ln.startswith("torchrun "))
    argv = shlex.split(line.replace("$NODE_RANK", "3").replace("$MASTER_ADDR", "node0"))[1:]
    ns = get_args_parser().parse_args(argv)
    assert (ns.nnodes, ns.nproc_per_node, ns.node_rank) == ("16", "8", 3)
    assert ns.rdzv_endpoint == "node0:13742" and ns.rdzv_backend == "c10d"
    assert (ns.module, ns.training_script, ns.training_script_args) == (
        True, "nemo_automodel.cli.app", [str(plan_dir / "automodel.yaml")])
    one = _spec(tmp_path, "glm5-lora-nemo.yaml", parallelism=dataclasses.replace(
        spec.parallelism, nodes=1, ep=8))
    assert get_runner("nemo-automodel").plan(one, plan_dir).command == (
        "automodel", str(plan_dir / "automodel.yaml"), "--nproc-per-node=8")


def test_swift_args_match_golden_and_use_4x_names(tmp_path):
    spec = load_spec(ROOT / "trainspecs" / "glm5-lora-swift.yaml")
    args = swift_args(spec)
    _golden("glm5-lora-swift.args.json", args)
    assert "--train_type" not in args and args[args.index("--tuner_type") + 1] == "lora"
    i = args.index("--target_parameters")
    assert args[i + 1:i + 3] == ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
    assert args[args.index("--lora_dropout") + 1] == "0"  # target_parameters needs dropout 0
    assert args[args.index("--gradient_accumulation_steps") + 1] == "8"  # 128 / (1 micro x 16 GPUs)


def _arg(args, name):
    return args[args.index(name) + 1]


def test_swift_hf_backend_fixes(tmp_path):
    """Each of these made a real ms-swift 4.6 run fail or train something else than the spec said."""
    spec = load_spec(ROOT / "trainspecs" / "glm5-lora-swift.yaml")
    args = swift_args(spec)
    assert _arg(args, "--torch_dtype") == "bfloat16"  # the default, now from the spec's dtype
    assert _arg(swift_args(dataclasses.replace(spec, dtype="float32")), "--torch_dtype") == "float32"  # CPU runs
    # min_lr reaches the HF scheduler (plain cosine decays to 0)
    assert _arg(args, "--lr_scheduler_type") == "cosine_with_min_lr"
    assert json.loads(_arg(args, "--lr_scheduler_kwargs")) == {"min_lr": 1e-5}
    assert _arg(swift_args(dataclasses.replace(spec, min_lr=0.0)), "--lr_scheduler_type") == "cosine"
    # the best-checkpoint symlink only exists with an eval set (without one ms-swift crashes at the end)
    assert _arg(args, "--create_checkpoint_symlink") == "true"
    assert "--create_checkpoint_symlink" not in swift_args(dataclasses.replace(spec, val_files=()))
    # 2 nodes x 8 GPUs: the model is sharded, not loaded whole on every rank
    assert _arg(args, "--fsdp") == "fsdp2" and "--deepspeed" not in args
    ds = dataclasses.replace(spec, runner_options={"ms-swift": {**spec.options("ms-swift"), "deepspeed": "zero3"}})
    assert _arg(swift_args(ds), "--deepspeed") == "zero3" and "--fsdp" not in swift_args(ds)
    one = dataclasses.replace(spec, parallelism=dataclasses.replace(spec.parallelism, nodes=1, gpus_per_node=1))
    assert "--fsdp" not in swift_args(one) and "--deepspeed" not in swift_args(one)


def test_megatron_uses_4x_names_and_a_complete_recompute(tmp_path):
    spec = load_spec(ROOT / "trainspecs" / "glm5-lora-swift.yaml")
    args = megatron_args(dataclasses.replace(spec, runner_options={"ms-swift": {"backend": "megatron"}}))
    assert "--save_interval" not in args and "--log_interval" not in args  # no ms-swift 4.x accepts them
    assert _arg(args, "--save_steps") == "50" and _arg(args, "--logging_steps") == "1"
    # megatron-core 0.16 refuses recompute_granularity=full without a method and a layer count
    assert (_arg(args, "--recompute_granularity"), _arg(args, "--recompute_method"),
            _arg(args, "--recompute_num_layers")) == ("full", "uniform", "1")


def test_megatron_args_match_golden(tmp_path):
    spec = load_spec(ROOT / "trainspecs" / "glm5-lora-swift.yaml")
    spec = dataclasses.replace(spec, runner_options={"ms-swift": {"backend": "megatron", "template": "glm4_7"}},
                               parallelism=dataclasses.replace(spec.parallelism, ep=16, pp=1))
    args = megatron_args(spec)
    # written by test_megatron_plan_parses_with_megatron_swift_and_megatron_core once ms-swift's parser accepted it
    assert _norm(args) == json.loads((GOLDEN / "glm5-lora-megatron.args.json").read_text())
    assert args[args.index("--expert_model_parallel_size") + 1] == "16"
    i = args.index("--target_modules")
    assert args[i + 1:i + 3] == ["all-linear", "--merge_lora"]  # HF names mean nothing to Megatron
    assert "--target_parameters" not in args  # all-linear covers the grouped experts there


def test_swift_plan_has_multinode_env_and_merge_step(tmp_path):
    spec = _spec(tmp_path, "glm5-lora-swift.yaml")
    plan = get_runner("ms-swift").plan(spec, tmp_path / "plan")
    assert plan.command[:2] == ("swift", "sft")
    assert plan.env == {"NPROC_PER_NODE": "8"}  # per-node values stay in multinode.sh
    multi = plan.files["multinode.sh"]
    for needle in ('export NNODES="2"', 'export NODE_RANK="${NODE_RANK}"', 'export MASTER_PORT="29500"'):
        assert needle in multi
    assert 'swift export --adapters "$CKPT" --merge_lora true' in plan.files["export.sh"]


def test_dry_run_cli_writes_the_plan_atomically(tmp_path):
    src = (ROOT / "trainspecs" / "glm5-lora-swift.yaml").read_text()
    spec = tmp_path / "s.yaml"
    spec.write_text(src.replace("../fixtures", str(ROOT / "fixtures")).replace("../.cache/runs/glm5-lora-swift",
                                                                              str(tmp_path / "run")))
    res = run_gate("train", str(spec), "--runner", "ms-swift", "--dry-run")
    assert res.returncode == 0, res.stderr
    plan_dir = tmp_path / "run" / "plan"
    plan = json.loads((plan_dir / "plan.json").read_text())
    assert plan["command"][:2] == ["swift", "sft"] and plan["spec"]["name"] == "glm5-lora-swift"
    assert (plan_dir / "launch.sh").read_text().count("swift sft") == 1
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["plan"]  # no temp dirs left behind


def test_real_run_without_the_trainer_installed_is_one_line_exit_1(tmp_path):
    src = (ROOT / "trainspecs" / "glm5-lora-nemo.yaml").read_text()
    spec = tmp_path / "s.yaml"
    spec.write_text(src.replace("../fixtures", str(ROOT / "fixtures")).replace("../.cache/runs/glm5-lora-nemo",
                                                                              str(tmp_path / "run")))
    res = run_gate("train", str(spec), "--runner", "nemo-automodel", "--db", str(tmp_path / "g.duckdb"),
                   env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 1
    assert "`torchrun` is not on PATH" in res.stderr and "Traceback" not in res.stderr  # 16 nodes: torchrun.sh


@pytest.mark.skipif(not NEMO_PY.exists(), reason="nemo-automodel venv (.venv-nemo) not installed")
def test_nemo_automodel_own_parsers_accept_the_plan_and_reject_a_typo(tmp_path):
    from gate.commands.train import validate_plans
    from gate.train.plan_launch import write_plan
    from tests.test_train_local import tiny_model

    model = tiny_model()
    spec = _spec(tmp_path, "glm5-lora-nemo.yaml", model=str(model), train_files=(
        str(ROOT / "fixtures/datasets/triage-clean/train.jsonl"),), val_files=())
    _, plan_dir = write_plan(spec, get_runner("nemo-automodel"))
    _, typo_dir = write_plan(dataclasses.replace(spec, output_dir=str(tmp_path / "typo")),
                             get_runner("nemo-automodel"))
    cfg = typo_dir / "automodel.yaml"
    cfg.write_text(cfg.read_text().replace("max_recent_checkpoints", "max_recent_checkpoint"))
    verdict, bad = validate_plans("nemo-automodel", [plan_dir, typo_dir], str(NEMO_PY))
    assert verdict["ok"], verdict
    checks = " ".join(verdict["checks"])
    assert "checkpoint.enabled" in checks and "PeftConfig(dim=32, targets=12)" in checks
    assert "ChatDataset(rows=300" in checks  # AutoModel tokenized the triage rows with the model's template
    assert not bad["ok"] and "max_recent_checkpoint" in bad["error"]


@pytest.mark.skipif(not NEMO_PY.exists(), reason="nemo-automodel venv (.venv-nemo) not installed")
def test_nemo_validation_encodes_every_row_with_the_real_chat_dataset(tmp_path):
    """Row 0 is a plain triage row that AutoModel encodes; the tool-use rows behind it fail in AutoModel 0.7's own
    ChatDataset with a GLM template (it hands tool-call arguments to the template as JSON strings, which the
    template iterates with .items()). Encoding row 0 only said "validated"; every row is encoded now, and the
    failure names the rows, their kind and AutoModel's error. A hub tokenizer is a skipped check, not a pass.
    Exported with the model's tokenizer, the same rows plus multi-turn reasoning rows carry object arguments and a
    chat template that reads them; the plan points ChatDataset at it and every row of every kind encodes."""
    import sys

    from gate.commands.train import validate_plans
    from gate.contract.model import TokenizerRef
    from gate.export import export_dataset
    from gate.train.plan_launch import write_plan

    sys.path.insert(0, str(ROOT / "fixtures"))
    from build_glm_models import build

    model = build()["glm5-tiny"]
    export_dataset(str(ROOT / "fixtures/datasets/tool-use-clean"), "nemo-automodel", str(tmp_path / "tools"))
    triage = (ROOT / "fixtures/datasets/triage-clean/train.jsonl").read_text().splitlines()[:5]
    tools = (tmp_path / "tools" / "train.jsonl").read_text().splitlines()[:40]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join(triage + tools) + "\n")
    spec = _spec(tmp_path, "glm5-lora-nemo.yaml", model=str(model), train_files=(str(mixed),), val_files=())
    _, plan_dir = write_plan(spec, get_runner("nemo-automodel"))
    hub = dataclasses.replace(spec, model="zai-org/GLM-5", output_dir=str(tmp_path / "hub"))
    _, hub_dir = write_plan(hub, get_runner("nemo-automodel"))
    src = tmp_path / "src"
    src.mkdir()
    rows = [json.loads(t) for t in triage] + [json.loads(t) for t in
                                              (ROOT / "fixtures/datasets/tool-use-clean/train.jsonl").read_text()
                                              .splitlines()[:40]]
    reasoning = [json.loads(json.dumps(r)) for r in rows if sum(m["role"] == "user" for m in r["messages"]) == 2]
    for r in reasoning:
        for m in r["messages"]:
            if m["role"] == "assistant":
                m["reasoning_content"] = "decide what to ask or call"
    (src / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows + reasoning))
    export_dataset(str(src), "nemo-automodel", str(tmp_path / "fixed"), tokenizer=TokenizerRef(str(model)))
    fixed = dataclasses.replace(spec, train_files=(str(tmp_path / "fixed" / "train.jsonl"),),
                                output_dir=str(tmp_path / "fixed-run"))
    _, fixed_dir = write_plan(fixed, get_runner("nemo-automodel"))
    template = tmp_path / "fixed" / "chat_template.jinja"
    assert f"chat_template: {template}" in (fixed_dir / "automodel.yaml").read_text()
    verdict, hub_verdict, fixed_verdict = validate_plans("nemo-automodel", [plan_dir, hub_dir, fixed_dir],
                                                         str(NEMO_PY))
    assert fixed_verdict["ok"], fixed_verdict
    ds = next(c for c in fixed_verdict["checks"] if c.startswith("dataset="))
    n = len(rows) + len(reasoning)
    assert reasoning and f"rows={n}, encoded={n}," in ds and "'tool_calls+multi_turn+reasoning': " in ds, ds
    assert not verdict["ok"], verdict
    err = verdict["error"]
    n_tool = sum('"tool_calls"' in t for t in tools)
    assert f"ChatDataset fails on {n_tool} of 45 encoded rows" in err, err
    assert "'str object' has no attribute 'items'" in err and "tool_calls+multi_turn" in err
    assert "(rows 5, " in err  # the first tool row, after the five triage rows that encode
    assert "gate export --format nemo-automodel --tokenizer MODEL" in err  # the way out
    assert hub_verdict["ok"] and any("ChatDataset tokenization" in c for c in hub_verdict["skipped"]), hub_verdict


@pytest.mark.skipif(not SWIFT_PY.exists(), reason="ms-swift venv (.venv-swift) not installed")
def test_ms_swift_own_parser_accepts_the_plan_and_rejects_3x_names(tmp_path):
    from gate.commands.train import validate_plans
    from gate.train.plan_launch import write_plan

    spec = _spec(tmp_path, "glm5-lora-swift.yaml")
    _, plan_dir = write_plan(spec, get_runner("ms-swift"))
    _, old_dir = write_plan(dataclasses.replace(spec, output_dir=str(tmp_path / "old")), get_runner("ms-swift"))
    f = old_dir / "swift_sft.args.json"
    f.write_text(f.read_text().replace('"--tuner_type"', '"--train_type"'))
    verdict, bad = validate_plans("ms-swift", [plan_dir, old_dir], str(SWIFT_PY))
    assert verdict["ok"], verdict
    checks = " ".join(verdict["checks"])
    assert "swift sft arguments" in checks and "merge_lora" in checks and "dataset rows=300" in checks
    assert not bad["ok"] and "--train_type" in bad["error"]
    # what was not checked says so: the hub model is not here, and this machine has no GPU for bf16
    assert any("post-parse checks" in c and "zai-org/GLM-5" in c for c in verdict["skipped"]), verdict
    # peft 0.20's MoE conversion, run for real on GLM-5's layout: the dense MLP and shared experts get no LoRA
    assert "effective LoRA" in checks and "modules=['kv_a_proj_with_mqa', 'kv_b_proj', 'o_proj'" in checks
    dropped = {w.split(":")[0] for w in verdict["warnings"]}
    assert dropped == {"LoRA target gate_proj", "LoRA target up_proj", "LoRA target down_proj"}, verdict


@pytest.mark.skipif(not SWIFT_PY.exists(), reason="ms-swift venv (.venv-swift) not installed")
def test_megatron_plan_parses_with_megatron_swift_and_megatron_core(tmp_path):
    """ms-swift's real MegatronSftArguments parser (megatron-core 0.16.1 and mcore-bridge installed without their
    GPU dependencies; only transformer-engine and triton stubbed) accepts the plan, and megatron-core's own
    TransformerConfig accepts its recompute settings. The old names (`--save_interval`, the former golden file) and
    `full` recompute without a method are refused by the same code. The golden file is written from here, after the
    real parser accepted it (GATE_UPDATE_GOLDEN=1)."""
    from gate.commands.train import validate_plans
    from gate.train.plan_launch import write_plan

    base = load_spec(ROOT / "trainspecs" / "glm5-lora-swift.yaml")
    spec = dataclasses.replace(base, runner_options={"ms-swift": {"backend": "megatron", "template": "glm4_7"}},
                               parallelism=dataclasses.replace(base.parallelism, ep=16, pp=1))
    dirs = []
    no_method = '"--recompute_method",\n    "uniform",\n    "--recompute_num_layers",\n    "1",\n'
    for name, edit in (("good", None), ("old-names", ('"--save_steps"', '"--save_interval"')),
                       ("no-method", (no_method, ""))):
        _, d = write_plan(dataclasses.replace(spec, output_dir=str(tmp_path / name)), get_runner("ms-swift"))
        if edit:
            f = d / "megatron_sft.args.json"
            assert edit[0] in f.read_text()
            f.write_text(f.read_text().replace(*edit))
        dirs.append(d)
    good, old, no_method = validate_plans("ms-swift", dirs, str(SWIFT_PY))
    assert good["ok"], good
    assert "megatron sft arguments" in good["checks"]
    assert "megatron-core TransformerConfig(recompute=full/uniform/1)" in good["checks"]
    assert any("MegatronSftArguments post-parse" in c for c in good["skipped"])  # said, not hidden
    assert not old["ok"] and "--save_interval" in old["error"], old
    assert not no_method["ok"] and "recompute_method must be" in no_method["error"], no_method
    if UPDATE:
        args = json.loads((dirs[0] / "megatron_sft.args.json").read_text())["args"]
        (GOLDEN / "glm5-lora-megatron.args.json").write_text(json.dumps(_norm(args), indent=2) + "\n")


@pytest.mark.skipif(not SWIFT_PY.exists(), reason="ms-swift venv (.venv-swift) not installed")
def test_validation_that_skipped_or_warned_is_not_called_validated_and_strict_fails(tmp_path):
    """A local tiny GLM-5: ms-swift's SftArguments post-parse checks run (the model's config is here); bf16 cannot be
    checked on a CPU machine and LoRA misses the dense MLP, so the CLI warns, and --strict exits 1."""
    src = (ROOT / "trainspecs" / "glm5-lora-swift.yaml").read_text()
    spec = tmp_path / "s.yaml"
    model = ROOT / "fixtures" / "models" / "glm5-tiny"
    import sys

    sys.path.insert(0, str(ROOT / "fixtures"))
    from build_glm_models import build

    build()
    spec.write_text(src.replace("../fixtures", str(ROOT / "fixtures")).replace(
        "../.cache/runs/glm5-lora-swift", str(tmp_path / "run")).replace("path: zai-org/GLM-5", f"path: {model}"))
    res = run_gate("train", str(spec), "--runner", "ms-swift", "--dry-run", "--validate-with", str(SWIFT_PY),
                   timeout=600)
    assert res.returncode == 0, res.stderr
    assert "gate: warning: not validated: bfloat16 support" in res.stderr
    assert "gate: warning: LoRA target gate_proj: 2 of 2 module(s) get no adapter" in res.stderr
    assert "ok  SftArguments post-parse checks" in res.stdout
    assert "partly validated (1 check(s) skipped)" in res.stdout and "\nvalidated" not in res.stdout
    strict = run_gate("train", str(spec), "--runner", "ms-swift", "--dry-run", "--validate-with", str(SWIFT_PY),
                      "--strict", timeout=600)
    assert strict.returncode == 1 and "--strict: 1 check(s) skipped and 3 warning(s)" in strict.stderr
    assert "Traceback" not in strict.stderr

