"""Names the checks and reports import for masking; the one implementation is `gate.pii.redact`.

Why only names here: there used to be a second snippet function in this module, with its own (weaker) masking,
so a value quoted by the contract check was masked differently from a PII snippet. `mask` is the log/message
masker (e-mails, long digit runs, opaque tokens; readable text stays), `snippet` the high-recall masker for a
value a check quotes (every name-like word, digit run, e-mail and URL shape; see `gate.pii.redact`).
"""

from __future__ import annotations

from gate.pii.redact import mask_context, mask_loose, value_snippet

mask = mask_loose
snippet = value_snippet

__all__ = ["mask", "mask_context", "snippet"]
