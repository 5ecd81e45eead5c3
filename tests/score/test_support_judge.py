"""The factual-support judge against a real OpenAI-compatible HTTP server on 127.0.0.1.

The server is the suite's stdlib fake (`gate/testing/fake_openai.py`) speaking the chat-completions protocol (a tiny
model cannot judge well, so the test is about the protocol, the versioned prompt, the cache keyed by the judge's
identity and the parsing of the verdicts, not about the judge's wisdom). It answers from a script and records every
request and its headers.
"""

from __future__ import annotations

import json

import pytest

from gate.engines.types import Response
from gate.score.scorers.support import JUDGE_PROMPT, JUDGE_PROMPT_VERSION, FactualSupport, parse_verdicts
from gate.score.types import Item
from gate.testing.fake_openai import FakeOpenAI, chat_reply

PASSAGE = "Returns are accepted within 30 days of delivery. Refunds take 5 business days."


class Judge(FakeOpenAI):
    """The fake server scripted as a judge: `reply` is the assistant text, `status` the HTTP status of every answer."""

    def __init__(self) -> None:
        super().__init__()
        self.models = [{"id": "judge-model", "object": "model"}]
        self.version = "scripted-1"
        self.reply = "1: SUPPORTED\n2: CONTRADICTED"
        self.status = 200
        self.respond = lambda body: chat_reply(body, self.reply)
        self.fail_when = lambda body: self.status != 200

    @property
    def status(self) -> int:
        return self.fail_status

    @status.setter
    def status(self, code: int) -> None:
        self.fail_status = code

    @property
    def requests(self) -> list[dict]:
        return self.bodies


@pytest.fixture()
def judge():
    j = Judge().start()
    yield j
    j.kill()


def item(n=1):
    return Item(f"kb-{n}", "returns", ({"role": "user", "content": "?"},), {}, line=n, extra={"passages": [PASSAGE]})


def scorer(judge, tmp_path, **opts):
    return FactualSupport(method="judge", judge={"base_url": judge.url, "model": "judge-model",
                                                 "cache": str(tmp_path / "judge.duckdb"), **opts})


ANSWER = "Returns are accepted within 30 days of delivery. Refunds take 9 business days."


def test_protocol_prompt_version_and_verdicts(judge, tmp_path):
    s = scorer(judge, tmp_path).score(item(), Response(text=ANSWER))
    assert s.value == {"supported": 0.0, "support_rate": 0.5, "contradiction": 1.0}
    assert s.error == "contradiction" and "claim 2: judge: CONTRADICTED" in s.explanation
    assert s.metadata["judge"]["prompt_version"] == JUDGE_PROMPT_VERSION
    (req,) = judge.requests
    assert req["model"] == "judge-model" and req["temperature"] == 0.0
    assert req["messages"][0] == {"role": "system", "content": JUDGE_PROMPT}
    user = req["messages"][1]["content"]
    assert PASSAGE in user and "1. Returns are accepted within 30 days of delivery." in user
    assert "2. Refunds take 9 business days." in user


def test_verdicts_are_cached_by_judge_identity(judge, tmp_path):
    scorer(judge, tmp_path).score(item(), Response(text=ANSWER))
    again = scorer(judge, tmp_path).score(item(), Response(text=ANSWER))  # a new scorer, the same cache file
    assert len(judge.requests) == 1 and again.metadata["judge"]["cached"] is True
    assert again.value["support_rate"] == 0.5
    # another judge model (pinned hash) at the same URL is asked afresh
    scorer(judge, tmp_path, model_hash="sha256:other").score(item(), Response(text=ANSWER))
    assert len(judge.requests) == 2


def test_unparseable_or_failed_judge_never_supports(judge, tmp_path, monkeypatch):
    judge.reply = "I think they are mostly fine."
    s = scorer(judge, tmp_path).score(item(), Response(text=ANSWER))
    assert s.value["supported"] == 0.0 and "judge gave no verdict" in s.explanation
    assert s.metadata["judge"]["unparsed"] == 2
    judge.status = 400
    bad = scorer(judge, tmp_path).score(item(2), Response(text="Refunds take 5 business days."))
    assert bad.value["supported"] == 0.0 and bad.error == "judge_error"
    judge.status = 200
    judge.reply = "1: SUPPORTED"
    monkeypatch.setenv("JUDGE_KEY", "sk-test-123")
    keyed = scorer(judge, tmp_path, api_key_env="JUDGE_KEY")
    ok = keyed.score(item(2), Response(text="Refunds take 5 business days."))
    assert ok.value["supported"] == 1.0
    assert judge.headers[-1].get("Authorization") == "Bearer sk-test-123"


def test_parse_verdicts():
    assert parse_verdicts("1: SUPPORTED\n2. unsupported\n**3) CONTRADICTED**", 3) == [
        "SUPPORTED", "UNSUPPORTED", "CONTRADICTED"]
    assert parse_verdicts("1: SUPPORTED\n1: CONTRADICTED", 2) == [None, None]  # two answers for one claim


def test_options_are_checked():
    with pytest.raises(ValueError):
        FactualSupport(method="judge")
    with pytest.raises(ValueError):
        FactualSupport(method="judge", judge={"base_url": "http://127.0.0.1:9", "model": "m", "key": "x"})
    with pytest.raises(ValueError):
        FactualSupport(judge={"base_url": "http://127.0.0.1:9", "model": "m"})
    with pytest.raises(ValueError):
        FactualSupport(method="vibes")


def test_a_judge_that_is_down_stops_before_any_generation(tmp_path):
    import socket

    from gate.errors import GateError

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sc = FactualSupport(method="judge", judge={"base_url": f"http://127.0.0.1:{port}", "model": "m",
                                               "cache": str(tmp_path / "j.duckdb")})
    with pytest.raises(GateError) as ei:
        sc.validate_item(item())
    assert "no OpenAI-compatible server" in str(ei.value)
    s = sc.score(item(), Response(text=ANSWER))  # asked once: later items fail at once, as judge errors
    assert s.error == "judge_error" and s.value["supported"] == 0.0


@pytest.mark.parametrize("options,key", [
    ("{method: vibes}", "method"),
    ("{method: judge, judge: {base_url: 'http://127.0.0.1:9', model: m, key: x}}", "judge"),
    ("{min_coverage: 0}", "min_coverage"),
])
def test_bad_support_options_are_refused_at_load_with_the_line(tmp_path, options, key):
    from gate.score.scorecard import ScorecardError, load_scorecard

    (tmp_path / "s.jsonl").write_text(json.dumps({"id": "a", "category": "c", "expected": None, "passages": "p",
                                                  "messages": [{"role": "user", "content": "q"}]}) + "\n")
    card = tmp_path / "card.yaml"
    card.write_text("name: t\nversion: '1'\nsuites: [{name: s, path: s.jsonl}]\n"
                    "decoding: {temperature: 0, max_tokens: 8}\n"
                    f"scorers:\n  - name: support\n    type: factual_support\n    options: {options}\n")
    with pytest.raises(ScorecardError) as ei:
        load_scorecard(card)
    assert ei.value.line == 8 and f"options.{key}" in str(ei.value), str(ei.value)
