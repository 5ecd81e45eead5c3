"""jsonschema's RFC 3987 grammar is built when an `iri` format is first checked, not on every import.

Building it (an Earley parser, on import of `rfc3987_syntax`, which jsonschema imports) took 1.4 of the ~3.5 CPU
seconds of a small `gate check`. gate.io.lazy_iri defers it; the formats are checked exactly as before (the JSON
Schema test suite's `iri` and `iri-reference` cases run in tests/score/test_jsonschema_suite.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import CONTRACTS, ROOT

_CODE = """
import json, sys
from gate.contract.model import load_contract
from gate.contract.schemas import format_checker
from jsonschema import Draft202012Validator

load_contract(sys.argv[1])
built_before = "rfc3987_syntax.syntax_helpers" in sys.modules
v = Draft202012Validator({"type": "string", "format": "iri"}, format_checker=format_checker(["iri", "iri-reference"]))
bad = [e.message for e in v.iter_errors("http://exa mple.com/")]
good = [e.message for e in v.iter_errors("http://\\u4f8b\\u3048.jp/\\u30d1\\u30b9?q=1")]
import rfc3987_syntax
print(json.dumps({"built_before": built_before, "bad": bad, "good": good,
                  "built_after": "rfc3987_syntax.syntax_helpers" in sys.modules,
                  "parser": rfc3987_syntax.RFC3987_SYNTAX_PARSER_TYPE}))
"""


def test_loading_a_contract_does_not_build_the_iri_grammar_and_iri_is_still_checked() -> None:
    out = subprocess.run([sys.executable, "-c", _CODE, str(CONTRACTS / "triage.yaml")], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["built_before"] is False
    assert got["bad"] == ["'http://exa mple.com/' is not a 'iri'"] and got["good"] == []
    assert got["built_after"] is True and got["parser"] == "earley"
