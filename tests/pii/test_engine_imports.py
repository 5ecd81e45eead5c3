"""The PII engine is built without loading torch or transformers (seconds of every `gate check` with PII), and
hiding them while presidio imports leaves them importable for the rest of the process."""

import subprocess
import sys

CODE = """
import sys
from gate.pii import PiiConfig, scan_texts
hits = scan_texts(["Call John Smith at john.smith@example.com"], PiiConfig(), workers=1)[0]
print(sorted(h.entity_type for h in hits))
print("torch" in sys.modules, "transformers" in sys.modules)
import transformers, torch
print(torch.tensor([1, 2]).sum().item())
"""


def test_pii_engine_builds_without_torch_and_leaves_it_importable():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    entities, loaded, total = out.stdout.splitlines()[-3:]
    assert "EMAIL_ADDRESS" in entities and "PERSON" in entities  # NER ran without torch
    assert loaded == "False False"
    assert total == "3"
