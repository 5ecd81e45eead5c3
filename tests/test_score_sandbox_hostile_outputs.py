"""Hostile tool OUTPUTS (the implementation behaves, its result does not): gigabytes, control characters and
escape sequences, objects JSON cannot hold, NaN, cycles, deep nesting. Each is contained by the sandbox and
reported as one printable line; nothing unbounded reaches the parent. Hostile calls and implementations are
in tests/score/test_sandbox.py.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from gate.score.sandbox import Limits, run_calls

FAST = Limits(cpu_s=2, wall_s=4, memory_mb=256, output_bytes=1 << 20)

TOOLS = textwrap.dedent('''
    import math

    def gigabytes():
        return "x" * (3 << 30)

    def many_megabytes():
        return ["y" * 1000] * 5000

    def control_chars():
        return "ok\\x00\\x1b[31mRED\\x1b[0m\\r\\nSANDBOX: fake\\u202e\\x07"

    def raise_control():
        raise ValueError("bad\\n\\x1b[2J\\x00SANDBOX: forged line")

    def non_json():
        return {1, 2, 3}

    def bytes_result():
        return b"\\xff\\xfe"

    def custom_object():
        class Evil:
            def __repr__(self):
                raise RuntimeError("repr bomb\\n\\x1b[2J")
        return Evil()

    def nan_result():
        return {"x": math.nan, "y": math.inf}

    def circular():
        d = {}
        d["self"] = d
        return d

    def deep():
        v = []
        for _ in range(100000):
            v = [v]
        return v

    def big_int():
        return 10 ** 5000

    def print_flood():
        print("z" * (4 << 20))
        return "done"

    TOOLS = {f.__name__: f for f in (gigabytes, many_megabytes, control_chars, raise_control, non_json,
                                     bytes_result, custom_object, nan_result, circular, deep, big_int, print_flood)}
''')


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile-outputs") / "outputs.py"
    path.write_text(TOOLS)
    return path


@pytest.mark.parametrize("name,status,detail", [
    ("gigabytes", "sandbox_violation", "memory limit"),
    ("many_megabytes", "sandbox_violation", "file size limit"),
    ("print_flood", "sandbox_violation", "file size limit"),
    ("raise_control", "execution_error", "ValueError"),
    ("custom_object", "crashed", "repr bomb"),
    ("nan_result", "crashed", "not strict JSON"),
    ("circular", "crashed", "Circular reference"),
    ("deep", "crashed", "RecursionError"),
    ("big_int", "crashed", "ValueError"),
])
def test_hostile_output_is_contained_and_reported_in_one_line(module, name, status, detail):
    ex = run_calls(module, [(name, {})], limits=FAST)
    assert ex.status == status, ex
    assert detail in ex.detail
    assert ex.detail.isprintable() and len(ex.detail) < 400, repr(ex.detail)
    assert ex.wall_s < 4


def test_control_characters_stay_data_inside_a_result(module):
    """A result is the tool's data, returned exactly; it is JSON, so quoting it anywhere escapes it."""
    ex = run_calls(module, [("control_chars", {})], limits=FAST)
    assert ex.status == "ok"
    assert ex.results[0]["result"].startswith("ok\x00\x1b[31m")
    assert "\n" not in json.dumps(ex.results[0])


def test_objects_json_cannot_hold_come_back_as_their_repr(module):
    ex = run_calls(module, [("non_json", {}), ("bytes_result", {})], limits=FAST)
    assert ex.status == "ok"
    assert ex.results[0]["result"] == "{1, 2, 3}" and ex.results[1]["result"] == "b'\\xff\\xfe'"


def test_forged_sandbox_line_in_an_error_is_escaped(module):
    ex = run_calls(module, [("raise_control", {})], limits=FAST)
    assert "\\n" in ex.detail and "\\x1b" in ex.detail and "\n" not in ex.detail


def test_repo_has_the_hostile_call_suite():
    """The issue's list of hostile calls (passwd, write outside, socket, fork bomb, infinite loop, gigabytes of
    output, os.system, ctypes) lives in tests/score/test_sandbox.py: keep it there."""
    text = (Path(__file__).parent / "score" / "test_sandbox.py").read_text()
    for case in ("/etc/passwd", "write_file", "open_socket", "fork_bomb", "spin", "flood_stdout", "shell",
                 "call_ctypes"):
        assert case in text
