"""Masking a trainer's log line: secrets and personal data go, file paths stay.

Trainers print sample rows (personal data) and sometimes tokens, so `train.log` is masked line by line. The loose
masker alone also treats a long path as an opaque token (`/tmp/pytest-of-root/pytest-3/...` became `/tmp***`), which
destroys the one thing a failed run's log is read for: which file broke. So real secret formats are found first (gate's
own key patterns, which also match inside paths and URLs), then paths are kept whole except for e-mail addresses in
them, and only the text between paths goes through the loose masker (e-mails, digit runs, opaque tokens).
"""

from __future__ import annotations

import functools
import re
from typing import Any

#: An absolute, home or dot-relative path (`/a/b.py`, `~/x`, `./y/z`) or a `file:` URL; stops at spaces and quotes.
_PATH = re.compile(r"(?<![\w/])(?:file://)?(?:~|\.{1,2})?/[\w.\-+@%=,:/]*[\w/]")
_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")


@functools.lru_cache(maxsize=1)
def _secret_config() -> Any:
    from gate.pii.config import SecretConfig

    # detect-secrets' per-line plugins turn every long word into a "high entropy string"; the own patterns are the
    # vendor key formats, cheap enough for every line of a long log
    return SecretConfig(detect_secrets=False)


def mask_log_line(line: str) -> str:
    """`line` with secrets and personal data masked and paths intact (see the module docstring)."""
    from gate.pii.redact import mask_loose as mask
    from gate.pii.redact import redact_value
    from gate.pii.secrets import scan_secrets

    out: list[str] = []
    pos = 0
    def segment(text: str) -> str:
        parts: list[str] = []
        at = 0
        for m in _PATH.finditer(text):
            parts.append(mask(text[at:m.start()]))
            parts.append(_EMAIL.sub(lambda e: redact_value(e.group(0), "EMAIL_ADDRESS"), m.group(0)))
            at = m.end()
        parts.append(mask(text[at:]))
        return "".join(parts)

    for hit in scan_secrets(line, _secret_config()):
        out.append(segment(line[pos:hit.start]))
        out.append(redact_value(line[hit.start:hit.end], hit.kind))
        pos = hit.end
    out.append(segment(line[pos:]))
    return "".join(out)
