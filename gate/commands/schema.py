"""`gate schema contract|scorecard|trainspec [-o FILE]`: the JSON Schema an editor checks a hand-written file with."""

from __future__ import annotations

import os
import sys

from gate.errors import ExitCode, GateError


def run_schema_command(*, kind: str, out: str | None) -> int:
    """Prints the schema, or writes it atomically to `out` (the same bytes as the copy shipped in the wheel)."""
    from gate.schema import dumps

    text = dumps(kind)
    if out is None:
        sys.stdout.write(text)
        return int(ExitCode.PASS)
    from gate.io.atomic import atomic_write_text

    try:
        atomic_write_text(out, text)
        os.chmod(out, 0o644)  # a schema is public: editors and other users read it
    except OSError as exc:
        raise GateError(f"cannot write the schema ({exc.strerror})", file=out) from None
    print(f"wrote {out}", file=sys.stderr)
    return int(ExitCode.PASS)
