"""Run every benchmark in turn (each writes its own bench/results/<name>.{json,md}); `make bench` calls this."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHES = ["check_throughput.py", "neardup.py", "pii_scan.py", "template_throughput.py", "service_load.py"]


def main() -> int:
    failed = []
    for name in sys.argv[1:] or BENCHES:
        print(f"== {name}", flush=True)
        if subprocess.run([sys.executable, str(ROOT / "bench" / name)], cwd=ROOT).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
