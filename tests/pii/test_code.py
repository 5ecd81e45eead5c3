"""Code-like spans of chat text (gate.pii.code): what the NER model must not read."""

from __future__ import annotations

import pytest

from gate.pii.code import blank, code_spans


def _code(text: str) -> list[str]:
    return [text[s:e] for s, e in code_spans(text)]


@pytest.mark.parametrize("text", [
    "Schema: users(id, name, email, kind, ts)",
    "Columns: customer_id, amount, kind, ts",
    "SELECT first_name, last_name FROM employees WHERE city = 'Berlin' LIMIT 10;",
    '{"name": "Jordan", "city": "Paris"}',
    "x = compute(a, b)",
    "def greet(name):",
    "  return f'hello {name}'",
    "</div>",
])
def test_whole_code_lines(text: str) -> None:
    assert _code(text) == [text]


@pytest.mark.parametrize("text", [
    "Please select a plan from the list and tell me where you live.",
    "Hi, I am Jane Doe from Seattle and my order ORD-123 has not arrived.",
    "The x = 5 problem, I mean Jordan said it is fine.",
    "Call me: Jane, Bob, Alice.",
    "I moved to Toronto, Canada, last month.",
    "Thanks, Priya Sharma from accounting will follow up tomorrow.",
])
def test_prose_is_not_code(text: str) -> None:
    assert code_spans(text) == []


def test_fences_inline_code_and_mixed_messages() -> None:
    text = ("Priya asked for this:\n```sql\nSELECT name FROM staff\nWHERE city = 'Berlin';\n```\n"
            "Use `user_id` too. She lives in Toronto.")
    assert _code(text) == ["```sql\nSELECT name FROM staff\nWHERE city = 'Berlin';\n```", "`user_id`"]
    unclosed = "see:\n```\nSELECT 1\nno closing fence"
    assert _code(unclosed) == ["```\nSELECT 1\nno closing fence"]


def test_blank_keeps_offsets_and_lines() -> None:
    text = "Ask Jane:\nSELECT x FROM t;\nthanks"
    spans = code_spans(text)
    no_code, only_code = blank(text, spans, keep=False), blank(text, spans, keep=True)
    assert len(no_code) == len(only_code) == len(text)
    assert no_code.split("\n") == ["Ask Jane:", " " * 16, "thanks"]
    assert only_code.split("\n") == [" " * 9, "SELECT x FROM t;", " " * 6]
