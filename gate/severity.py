"""The severities a finding can have, most serious first: one order for the checks, the reports and the store.

A module of its own (no imports) so the record's SQL (gate.store) and the checks (gate.data) read the same order
rather than each spelling it out.
"""

SEVERITIES = ("error", "warning", "info")


def severity_rank(severity: str) -> int:
    """Where a finding of `severity` stands in anything capped or read top down (report examples, annotations,
    pages): what fails the gate first. In file order alone, a check's first ten findings of a real set were
    warnings and the error that failed the gate was not among them."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)
