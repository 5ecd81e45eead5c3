"""Shared pieces of the fuzz tests: the case budget and its plan, two runners, the "clear error" oracle, and
generators (hypothesis strategies and plain seeded ones).

Why two lanes. Hypothesis searches with structure and shrinks a failure to a small input, but its engine
costs 5-25 ms of generation per case here, so 100,000 cases through it alone took ~25 min on 2 cores. The
*volume* lane draws cases from a seeded `random.Random` (one seed per case, so any case can be replayed on its
own) with the same oracles, at 0.3-8 ms per case depending on the parser. Together they run
GATE_FUZZ_EXAMPLES cases (default 100,000) in one pass; every case is counted where it really executes and
each target asserts its count, and `tests/test_fuzz_plan.py` asserts that the plan adds up to the budget.

Knobs: GATE_FUZZ_EXAMPLES (total cases), GATE_FUZZ_SEED (volume lane seed, default fixed so CI reproduces),
GATE_FUZZ_RANDOM=1 (new seeds for both lanes), GATE_FUZZ_REPLAY=target:index (run one volume case),
GATE_FUZZ_SUMMARY=path (JSON with cases, outcomes and CPU seconds per target).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from gate.errors import GateError

DEFAULT_TOTAL = 100_000

# Share of the total budget per target. The hypothesis lane gets few cases (it is 20-50x dearer per case and
# its value is search and shrinking, not volume); the volume lane's shares follow each parser's cost so the
# whole run stays within ~3 min of CPU on 2 cores (measured per target: docs/SECURITY-AUDIT.md section 2).
PLAN: dict[str, float] = {
    # hypothesis lane
    "readers.jsonl": 0.0075,
    "readers.compressed": 0.0035,
    "readers.parquet": 0.0025,
    "readers.hf_dict": 0.0010,
    "contract.yaml_text": 0.0030,
    "contract.bytes": 0.0010,
    "contract.documents": 0.0025,
    "contract.mutated": 0.0030,
    "contract.text_mutations": 0.0015,
    "scorecard.yaml_text": 0.0015,
    "scorecard.documents": 0.0010,
    "scorecard.mutated": 0.0020,
    "scorecard.suites": 0.0020,
    # volume lane
    "readers.jsonl.volume": 0.270,
    "readers.compressed.volume": 0.100,
    "readers.parquet.volume": 0.070,
    "readers.hf_dict.volume": 0.020,
    "contract.yaml_text.volume": 0.100,
    "contract.bytes.volume": 0.030,
    "contract.documents.volume": 0.080,
    "contract.mutated.volume": 0.060,
    "contract.text_mutations.volume": 0.025,
    "scorecard.yaml_text.volume": 0.050,
    "scorecard.documents.volume": 0.040,
    "scorecard.mutated.volume": 0.025,
    "scorecard.suites.volume": 0.098,
}
MIN_CASES = 20


def total_examples() -> int:
    return int(os.environ.get("GATE_FUZZ_EXAMPLES", DEFAULT_TOTAL))


def planned(target: str) -> int:
    """Cases this target must run: its share of the budget, rounded up, never below MIN_CASES."""
    share = total_examples() * PLAN[target]
    return max(MIN_CASES, int(share) + (share > int(share)))


def fuzz_settings(max_examples: int) -> settings:
    """Derandomized by default so a CI failure reproduces; GATE_FUZZ_RANDOM=1 explores new ground. No deadline,
    no example database and no health checks: the budget is a case count, and slow-but-valid inputs are wanted."""
    return settings(max_examples=max_examples, deadline=None, database=None,
                    derandomize=not os.environ.get("GATE_FUZZ_RANDOM"), print_blob=True,
                    suppress_health_check=list(HealthCheck))


# ---------------------------------------------------------------------------------------------------------------
# runners and the ledger

REGISTERED: set[str] = set()  # targets some test module runs (imported modules register at import time)


def register(*targets: str) -> None:
    for t in targets:
        assert t in PLAN, f"{t} is not in fuzzkit.PLAN"
        REGISTERED.add(t)


def _record(target: str, lane: str, executed: int, outcomes: Counter, cpu_s: float) -> None:
    """Prints one line per target and, with GATE_FUZZ_SUMMARY, merges it into a JSON summary of the run."""
    entry = {"lane": lane, "planned": planned(target) if target in PLAN else None, "executed": executed,
             "cpu_s": round(cpu_s, 2), "cases_per_cpu_s": round(executed / cpu_s, 1) if cpu_s > 0 else None,
             "outcomes": dict(outcomes)}
    print(f"fuzz {target}: {json.dumps(entry)}")
    out = os.environ.get("GATE_FUZZ_SUMMARY")
    if not out:
        return
    path = Path(out)
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError):
        summary = {"targets": {}}
    summary["targets"][target] = entry
    planned_targets = [e for t, e in summary["targets"].items() if t in PLAN]
    summary.update(budget=total_examples(), seed=_seed(),
                   executed_in_process=sum(e["executed"] for e in planned_targets),
                   cpu_s_in_process=round(sum(e["cpu_s"] for e in planned_targets), 1),
                   targets_run=f"{len(planned_targets)} of {len(PLAN)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def hypothesis_test(target: str, examples: int | None = None) -> Callable[[Any], Callable[[], None]]:
    """Turns a @given function into a plain test that runs it for the target's planned number of examples
    (or `examples`, for a target outside the plan) and counts the bodies that really completed (hypothesis
    stops early on an exhausted search space)."""
    if examples is None:
        register(target)

    def decorate(given_fn: Any) -> Callable[[], None]:
        n = planned(target) if examples is None else examples
        given_fn = fuzz_settings(n)(given_fn)
        inner = given_fn.hypothesis.inner_test
        count = 0

        def counted(*args: Any, **kwargs: Any) -> None:
            nonlocal count
            inner(*args, **kwargs)
            count += 1

        def test() -> None:
            nonlocal count
            count = 0
            given_fn.hypothesis.inner_test = counted
            cpu = time.process_time()
            try:
                given_fn()
            finally:
                given_fn.hypothesis.inner_test = inner
            _record(target, "hypothesis", count, Counter(), time.process_time() - cpu)
            assert count >= n, f"{target}: {count} of {n} planned cases ran"

        test.__name__ = test.__qualname__ = given_fn.__name__
        test.__doc__, test.__module__ = given_fn.__doc__, given_fn.__module__
        return test

    return decorate


T = TypeVar("T")
FAILURES = Path(tempfile.gettempdir()) / "gate-fuzz-failures"


def _seed() -> str:
    if os.environ.get("GATE_FUZZ_RANDOM"):
        return os.environ.setdefault("GATE_FUZZ_SEED", os.urandom(6).hex())
    return os.environ.get("GATE_FUZZ_SEED", "gate-2026")


def run_volume(target: str, make_case: Callable[[random.Random], T], check: Callable[[T], str],
               require: tuple[str, ...] = ()) -> Counter:
    """Runs the target's planned cases: case i comes from Random(f"{seed}:{target}:{i}"), `check` returns its
    outcome ("read", "refused", ...) or raises. A failure names the case and how to replay it, and the input
    is saved under $TMPDIR/gate-fuzz-failures. Each outcome in `require` must occur (the generator still
    reaches both sides of the parser)."""
    register(target)
    seed = _seed()
    replay = os.environ.get("GATE_FUZZ_REPLAY", "")
    indices: range | list[int] = range(planned(target))
    if replay:
        name, _, index = replay.rpartition(":")
        indices = [int(index)] if name == target else []
    outcomes: Counter = Counter()
    cpu = time.process_time()
    for i in indices:
        case = make_case(random.Random(f"{seed}:{target}:{i}"))
        try:
            outcomes[check(case)] += 1
        except Exception as exc:
            FAILURES.mkdir(exist_ok=True)
            saved = FAILURES / f"{target}-{i}.txt"
            saved.write_text(repr(case), encoding="utf-8", errors="backslashreplace")
            raise AssertionError(f"{target} case {i} failed: {type(exc).__name__}: {str(exc)[:500]}\n"
                                 f"replay: GATE_FUZZ_SEED={seed} GATE_FUZZ_REPLAY={target}:{i}; "
                                 f"input: {saved}") from exc
    executed = sum(outcomes.values())
    _record(target, "volume", executed, outcomes, time.process_time() - cpu)
    if not replay:
        assert executed == planned(target), f"{target}: {executed} of {planned(target)} planned cases ran"
        for label in require:
            assert outcomes[label] > 0, f"{target}: no case ended as {label!r} ({dict(outcomes)})"
    return outcomes


# ---------------------------------------------------------------------------------------------------------------
# the oracle

def assert_clear_error(exc: BaseException, path: Path | str, max_len: int = 400) -> None:
    """A clear error: a GateError naming the file, one line, short, no Python internals."""
    assert isinstance(exc, GateError), f"{type(exc).__name__}: {exc}"
    text = str(exc)
    assert text.strip(), "empty message"
    assert "\n" not in text and "\r" not in text, f"multi-line message: {text!r}"
    assert len(text) <= max_len, f"message too long ({len(text)} chars): {text[:200]!r}"
    assert exc.file is not None and str(exc.file) == str(path), f"message does not name {path}: {text!r}"
    assert text.startswith(str(path)), text
    assert "Traceback" not in text and "object at 0x" not in text, text
    if exc.line is not None:
        assert exc.line >= 1, text


# ---------------------------------------------------------------------------------------------------------------
# hypothesis strategies

# JSON-like values, as a dataset row or a YAML document can hold them (integers within orjson's 64-bit range:
# orjson reads a smaller negative integer as a float, a known limit noted in docs/SECURITY-AUDIT.md)
json_scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda c: st.lists(c, max_size=3)
                           | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=6)

# YAML scalars beyond JSON: keys and values of other types (ints, bools, nulls, dates) as people write them
yaml_scalars = json_scalars | st.dates() | st.datetimes() | st.binary(max_size=8)
yaml_keys = st.text(max_size=12) | st.integers(-5, 5) | st.booleans() | st.none() | st.floats(allow_nan=False)
yaml_values = st.recursive(yaml_scalars, lambda c: st.lists(c, max_size=3)
                           | st.dictionaries(yaml_keys, c, max_size=3), max_leaves=6)

# pieces of YAML syntax that exercise the parser itself (anchors, aliases, tags, flow and block styles)
YAML_TOKENS = ["name", "version", "fields", "type", "string", "required", "true", "null", "~", ":", ": ", "-", "- ",
               "\n", "\n  ", "\n    ", "\t", "{", "}", "[", "]", ",", "?", "? ", "&a ", "*a", "*b", "&b ", "!!str ",
               "!!binary ", "!!python/object:os.system ", "!!set ", "!!omap ", "!!timestamp ", "'", '"', "|", ">",
               "#", "---", "...", "%YAML 1.1", "<<: *a", "0x1F", "1e9", ".inf", ".nan", "2026-01-01", "\\u0000",
               "\x00", "\ufeff", "é", "\U0001f600", "\ud800", "pattern", "'(unclosed'", "catalogue", "parameters",
               "messages", "roles", "output", "schema", "suites", "scorers", "gates", "path"]
yaml_token_text = st.lists(st.sampled_from(YAML_TOKENS) | st.text(max_size=4), max_size=40).map("".join)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


_ODD_VALUES = ["(unclosed", "[a-", "*", "", None, -1, 0, 2**40, {"type": "nope"}, {"$ref": "#/nowhere"}]


def mutate(doc: Any, data: st.DataObject, known_keys: list[str]) -> Any:
    """Up to three random edits of a parsed YAML document: delete, replace, add, rename or wrap a node."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        op = data.draw(st.sampled_from(["delete", "replace", "replace", "add_key", "rename", "wrap"]))
        if op == "delete":
            del parent[last]
        elif op == "replace":
            parent[last] = data.draw(yaml_values | st.sampled_from(_ODD_VALUES))
        elif op == "add_key" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(known_keys) | st.text(max_size=6))] = data.draw(yaml_values)
        elif op == "rename" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(known_keys) | st.integers(0, 3))] = parent.pop(last)
        elif op == "wrap":
            parent[last] = data.draw(st.sampled_from([[parent[last]], {"x": parent[last]}]))
    return doc


# ---------------------------------------------------------------------------------------------------------------
# plain seeded generators for the volume lane (the same shapes as the strategies above, ~50x cheaper)

# characters that break naive code: controls, NUL, DEL, NEL and the Unicode line/paragraph separators (line
# breaks to YAML and str.splitlines), a BOM, bidi overrides, non-BMP, combining marks
ODD_CHARS = "\x00\x01\x07\x08\t\n\r\x0b\x0c\x1b\x7f\x85\xa0\u2028\u2029\ufeff\u202e\u200b\u0301é中\U0001f600"
PLAIN_CHARS = "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 _-.:,;/'\"{}[]#&*!|>%@`?\\"
EDGE_INTS = [0, 1, -1, 7, 2**31 - 1, -(2**31), 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1]
EDGE_FLOATS = [0.0, -0.0, 0.5, 1e-300, 5e-324, 1.7976931348623157e308, -2.5e15, 3.141592653589793]


def rtext(rng: random.Random, max_len: int = 12, surrogates: bool = False) -> str:
    """A short string, mostly plain, sometimes with odd characters (and lone surrogates, when the caller can
    write them: only bytes written with errors='surrogatepass' or an escaped JSON string carry one)."""
    n = rng.randrange(max_len + 1)
    if rng.random() < 0.6:
        return "".join(rng.choice(PLAIN_CHARS) for _ in range(n))
    pool = PLAIN_CHARS + ODD_CHARS * 2 + ("\ud800\udfff" if surrogates else "")
    return "".join(rng.choice(pool) for _ in range(n))


def rjson(rng: random.Random, depth: int = 0, big_ints: bool = True) -> Any:
    """A JSON value: scalars with edge cases, lists and objects up to three levels deep."""
    r = rng.random()
    if depth < 3 and r < 0.25:
        if rng.random() < 0.5:
            return [rjson(rng, depth + 1, big_ints) for _ in range(rng.randrange(4))]
        return {rtext(rng, 6): rjson(rng, depth + 1, big_ints) for _ in range(rng.randrange(4))}
    r = rng.random()
    if r < 0.15:
        return None
    if r < 0.25:
        return rng.random() < 0.5
    if r < 0.45:
        value = rng.choice(EDGE_INTS) if rng.random() < 0.5 else rng.randrange(-1000, 1000)
        return value if big_ints or -(2**63) <= value < 2**63 else 0
    if r < 0.55:
        return rng.choice(EDGE_FLOATS) if rng.random() < 0.5 else rng.uniform(-1e6, 1e6)
    return rtext(rng, 20)


def ryaml(rng: random.Random, depth: int = 0) -> Any:
    """A value PyYAML can dump: JSON values plus dates, datetimes, bytes and non-string keys."""
    r = rng.random()
    if depth < 3 and r < 0.25:
        if rng.random() < 0.5:
            return [ryaml(rng, depth + 1) for _ in range(rng.randrange(4))]
        return {ryaml_key(rng): ryaml(rng, depth + 1) for _ in range(rng.randrange(4))}
    r = rng.random()
    if r < 0.05:
        return dt.date(rng.randrange(1, 9999), rng.randrange(1, 13), rng.randrange(1, 29))
    if r < 0.08:
        return dt.datetime(rng.randrange(1, 9999), 1, 1, rng.randrange(24), rng.randrange(60))
    if r < 0.11:
        return rng.randbytes(rng.randrange(9))
    return rjson(rng, 3)


def ryaml_key(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.75:
        return rtext(rng, 12)
    return rng.choice([0, 1, -5, True, False, None, 1.5, dt.date(2026, 1, 1)])


def rtokens(rng: random.Random, tokens: list[str] = YAML_TOKENS, max_tokens: int = 40) -> str:
    """YAML-ish text: syntax tokens and key words glued with short random strings."""
    parts = []
    for _ in range(rng.randrange(max_tokens + 1)):
        parts.append(rng.choice(tokens) if rng.random() < 0.7 else rtext(rng, 4, surrogates=True))
    return "".join(parts)


def rmutate_doc(doc: Any, rng: random.Random, known_keys: list[str], json_only: bool = False) -> Any:
    """`mutate` for the volume lane: up to three tree edits of a parsed YAML (or, json_only, JSON) document."""
    value = (lambda: rjson(rng, 1)) if json_only else (lambda: ryaml(rng))
    key = (lambda: rtext(rng, 8)) if json_only else (lambda: ryaml_key(rng))
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = rng.choice(paths)
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        op = rng.choice(["delete", "replace", "replace", "add_key", "rename", "wrap", "duplicate"])
        if op == "delete":
            del parent[last]
        elif op == "replace":
            parent[last] = copy.deepcopy(rng.choice(_ODD_VALUES)) if rng.random() < 0.3 else value()
        elif op == "add_key" and isinstance(parent, dict):
            parent[rng.choice(known_keys) if rng.random() < 0.7 else key()] = value()
        elif op == "rename" and isinstance(parent, dict):
            parent[rng.choice(known_keys) if rng.random() < 0.8 else rng.randrange(4)] = parent.pop(last)
        elif op == "wrap":
            parent[last] = rng.choice([[parent[last]], {"x": parent[last]}])
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
    return doc


def rprune(doc: dict, rng: random.Random, keep: tuple[str, ...] = ("name", "version")) -> dict:
    """A smaller document: a random subset of the top-level sections (parsing cost grows with size)."""
    return {k: v for k, v in doc.items() if k in keep or rng.random() < 0.5}


TEXT_PIECES = [":", " ", "\n", "\t", "-", "{", "[", "'", '"', "&x", "*x", "!!binary", "\x00", "#", "?", "\u2028",
               "\x85", "- ", ": {", "!!python/name:os.system", "<<: *x", "\\", "%"]


def rmutate_text(text: str, rng: random.Random, max_edits: int = 4) -> str:
    """Character-level damage: deleted, inserted, replaced or duplicated spans anywhere in the text."""
    for _ in range(rng.randint(1, max_edits)):
        pos = rng.randrange(len(text) + 1)
        piece = rng.choice(TEXT_PIECES) if rng.random() < 0.7 else rtext(rng, 3, surrogates=True)
        op = rng.choice(["delete", "insert", "replace", "duplicate"])
        if op == "delete":
            text = text[:pos] + text[pos + rng.randint(1, 20):]
        elif op == "insert":
            text = text[:pos] + piece + text[pos:]
        elif op == "replace":
            text = text[:pos] + piece + text[pos + len(piece):]
        else:
            end = pos + rng.randint(1, 60)
            text = text[:end] + text[pos:end] + text[end:]
    return text


def rmutate_bytes(raw: bytes, rng: random.Random, max_edits: int = 4) -> bytes:
    """Byte-level damage: flipped bits, random bytes, deleted or repeated spans, a truncated tail."""
    data = bytearray(raw)
    for _ in range(rng.randint(1, max_edits)):
        op = rng.choice(["flip", "byte", "delete", "repeat", "truncate"])
        pos = rng.randrange(len(data) + 1)
        if op == "flip" and pos < len(data):
            data[pos] ^= 1 << rng.randrange(8)
        elif op == "byte" and pos < len(data):
            data[pos] = rng.randrange(256)
        elif op == "delete":
            del data[pos:pos + rng.randint(1, 16)]
        elif op == "repeat":
            data[pos:pos] = data[pos:pos + rng.randint(1, 16)]
        elif op == "truncate":
            del data[pos:]
    return bytes(data)


def write_text(path: Path, text: str) -> Path:
    """Writes text as UTF-8, lone surrogates included as their (invalid) UTF-8 bytes."""
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path
