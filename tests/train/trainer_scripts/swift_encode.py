"""Runs inside .venv-swift: encodes rows (ms-swift export format) with ms-swift's own template encoder in training
mode and prints, per row, the input ids and which positions carry a label. Usage:
python swift_encode.py MODEL_DIR MODEL_TYPE TEMPLATE AGENT_TEMPLATE ROWS.jsonl [TEMPLATE_BACKEND]  -> one JSON line
per row (TEMPLATE_BACKEND: swift, ms-swift's default, or jinja)"""

import json
import sys

from swift import get_processor, get_template

model, model_type, template_type, agent, rows = sys.argv[1:6]
processor = get_processor(model, model_type=model_type, use_hf=True)
backend = sys.argv[6] if len(sys.argv) > 6 else "swift"
template = get_template(processor, template_type=template_type, agent_template=agent, max_length=None,
                        template_backend=backend)
template.set_mode("train")
for line in open(rows, encoding="utf-8"):
    row = json.loads(line)
    try:
        enc = template.encode(row)
    except Exception as exc:  # reported, not fatal: a row the trainer refuses is a finding
        print(json.dumps({"id": row.get("id"), "error": f"{type(exc).__name__}: {exc}"[:300]}))
        continue
    print(json.dumps({"id": row.get("id"), "ids": list(enc["input_ids"]),
                      "trained": [int(t != -100) for t in enc["labels"]]}))
