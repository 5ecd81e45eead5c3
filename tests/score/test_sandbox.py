"""Hostile tool implementations and arguments: every one is contained, and reported as such."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.engines.types import Response, ToolCall
from gate.score.sandbox import Limits, run_calls
from gate.score.scorers.tools import ToolExecution
from gate.score.types import Item

HOSTILE = Path(__file__).with_name("hostile_tools.py")
FAST = Limits(cpu_s=1, wall_s=2, memory_mb=256, output_bytes=1 << 20)
PWNED = Path("/tmp/gate-sbx-pwned")


@pytest.mark.parametrize("name,args,status,detail", [
    ("read_file", {"path": "/etc/passwd"}, "sandbox_violation", "read outside"),
    ("read_file", {"path": "../../../../../etc/passwd"}, "sandbox_violation", "read outside"),
    ("write_file", {"path": str(PWNED)}, "sandbox_violation", "write outside"),
    ("write_file", {"path": "../escape.txt"}, "sandbox_violation", "write outside"),
    ("open_socket", {}, "sandbox_violation", "socket"),
    ("raw_socket", {}, "sandbox_violation", "_socket"),
    ("fork_bomb", {}, "sandbox_violation", "os.fork"),
    ("posix_subprocess", {}, "sandbox_violation", "_posixsubprocess"),
    ("spin", {}, "timeout", "CPU"),
    ("sleep_forever", {}, "timeout", "wall-clock"),
    ("flood_stdout", {}, "sandbox_violation", "file size"),
    ("huge_result", {}, "sandbox_violation", "file size"),
    ("flood_disk", {}, "sandbox_violation", "file size"),
    ("eat_memory", {}, "sandbox_violation", "memory"),
    ("shell", {}, "sandbox_violation", "os.system"),
    ("call_ctypes", {}, "sandbox_violation", "ctypes"),
    ("patch_exit_then_read", {}, "sandbox_violation", "outside"),
    ("list_root", {}, "sandbox_violation", "listdir"),
])
def test_hostile_is_contained(name, args, status, detail):
    ex = run_calls(HOSTILE, [(name, args)], limits=FAST)
    assert ex.status == status, ex
    assert detail in ex.detail
    assert ex.wall_s < 4
    assert not PWNED.exists()
    assert not (Path(__file__).parent / "escape.txt").exists()


def test_own_directory_is_writable_and_errors_are_evidence():
    ok = run_calls(HOSTILE, [("write_here", {"name": "a.txt"})], limits=FAST)
    assert ok.status == "ok" and ok.results[0] == {"result": "ok"}
    bad = run_calls(HOSTILE, [("raise_error", {}), ("write_here", {"name": "b.txt"})], limits=FAST)
    assert bad.status == "execution_error" and "ValueError" in bad.detail and bad.results[1] == {"result": "ok"}


def test_only_the_table_is_dispatched():
    ex = run_calls(HOSTILE, [("__import__", {"name": "os"})], limits=FAST)
    assert ex.status == "execution_error" and ex.results[0]["error"] == "UnknownTool"


def test_hostile_call_through_the_scorer():
    """A model call whose argument is a path outside the sandbox ends as sandbox_violation, not as a pass."""
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
    scorer = ToolExecution(tools, HOSTILE, limits={"cpu_s": 1, "wall_s": 2}, normalize="none")
    item = Item("h-1", "hostile", ({"role": "user", "content": "x"},),
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "/etc/passwd"}}]})
    resp = Response(text="", tool_calls=(ToolCall("read_file", json.dumps({"path": "/etc/passwd"})),))
    s = scorer.score(item, resp)
    assert s.error == "sandbox_violation" and s.value["correct"] == 0.0
