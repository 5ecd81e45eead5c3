"""The committed tiny tokenizers: rebuilt byte for byte by their script, loadable, and what the audit assumes."""

from __future__ import annotations

import filecmp
import importlib.util
import subprocess
import sys

from tests.template.conftest import TOKENIZERS

BUILD = TOKENIZERS.parent / "build_tokenizers.py"


def test_build_script_reproduces_the_committed_tokenizers(tmp_path):
    spec = importlib.util.spec_from_file_location("build_tokenizers", BUILD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.build_all(tmp_path)
    for name in ("glm-tiny", "chatml-tiny"):
        files = sorted(p.name for p in (TOKENIZERS / name).iterdir())
        assert files == sorted(p.name for p in (tmp_path / name).iterdir())
        for f in files:
            assert filecmp.cmp(TOKENIZERS / name / f, tmp_path / name / f, shallow=False), \
                f"{name}/{f} is stale: run python fixtures/build_tokenizers.py"


def test_tokenizer_features(glm, chatml):
    assert 1000 <= glm.vocab_size <= 1020 and 1000 <= chatml.vocab_size <= 1020
    assert glm.keep_switch == ("clear_thinking", False) and chatml.keep_switch is None
    assert glm.tool_format == "glm47" and chatml.tool_format == "hermes"
    assert not glm.has_generation and chatml.has_generation
    assert glm.stop_ids() == {glm.token_id(t) for t in ("<|endoftext|>", "<|user|>", "<|observation|>")}
    assert chatml.stop_ids() == {chatml.token_id(t) for t in ("<|im_end|>", "<|endoftext|>")}
    for t in ("<tool_call>", "<arg_key>", "<|assistant|>", "[gMASK]", "<sop>", "<think>"):
        assert len(glm.encode_batch([t])[0].ids) == 1, t  # the markup is single tokens, as vLLM's parsers require
    text = "héllo wörld ✓ 日本"  # byte-level: any text round-trips
    assert glm.backend.decode(glm.encode_batch([text])[0].ids) == text


def test_importing_the_cli_and_checks_stays_light():
    heavy = ("transformers", "tokenizers", "matplotlib", "jinja2", "datasets")
    code = ("import sys, gate.cli, gate.data.registry, gate.commands.export; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
