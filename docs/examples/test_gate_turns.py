"""Tests of the example plugin, as its own package would have them (docs/extending.md): the check on a few rows, the
scorer on its own and through a whole `gate score` run against gate's fake OpenAI-compatible server (no model, no
GPU, no network). Run them with pytest once the package is installed (`pip install -e .`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from gate_turns.answer_words import AnswerWords
from gate_turns.too_many_turns import TooManyTurns

from gate.contract import load_contract
from gate.data.base import Batch
from gate.engines.types import Response
from gate.score.types import Item
from gate.testing.fake_openai import FakeOpenAI, chat_reply


def test_too_many_turns_flags_the_long_conversation(tmp_path: Path) -> None:
    (tmp_path / "contract.yaml").write_text("name: t\nversion: 1\nchecks:\n  too_many_turns: {max_user_turns: 1}\n")
    check = TooManyTurns(load_contract(tmp_path / "contract.yaml"))
    two = {"id": "a", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                                   {"role": "user", "content": "and?"}, {"role": "assistant", "content": "bye"}]}
    one = {"id": "b", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    check.reduce(check.map(Batch("train", "train.jsonl", [(1, two), (2, one)])))
    result = check.result()
    assert [(f.row, f.row_id, f.rule) for f in result.findings] == [(1, "a", "too_many_turns")]
    assert result.counts["scanned"] == 2 and result.counts["flagged_rows"] == 1


def test_answer_words_scores_one_answer() -> None:
    item = Item(id="q1", category="c", messages=({"role": "user", "content": "hi"},), expected=None)
    score = AnswerWords(max_words=3).score(item, Response(text="one two three four"))
    assert score.value == {"words": 4.0, "within_limit": 0.0}


def test_answer_words_in_a_score_run_against_a_fake_server(tmp_path: Path) -> None:
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(
        {"id": f"q{i}", "category": "c", "messages": [{"role": "user", "content": f"question {i}"}],
         "expected": None}) + "\n" for i in range(4)))
    card = {"name": "words", "version": "1", "suites": [{"name": "s", "path": "suite.jsonl"}],
            "decoding": {"temperature": 0.0, "max_tokens": 16},
            "scorers": [{"name": "brevity", "type": "answer_words", "options": {"max_words": 3}}]}
    (tmp_path / "card.yaml").write_text(yaml.safe_dump(card))
    server = FakeOpenAI().start()
    server.respond = lambda body: chat_reply(body, "short" if body["messages"][-1]["content"] < "question 2"
                                             else "a much longer answer")
    try:
        run = subprocess.run([sys.executable, "-m", "gate", "score", "tiny", "--scorecard",
                              str(tmp_path / "card.yaml"), "--engine", "url", "--base-url", server.url,
                              "--model-hash", "h", "--db", str(tmp_path / "gate.duckdb"),
                              "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    finally:
        server.kill()
    assert run.returncode == 0, run.stdout + run.stderr
    assert server.calls == 4
    outcome = "".join(p.read_text() for p in (tmp_path / "out").rglob("*.json"))
    assert '"within_limit"' in outcome and '"words"' in outcome
