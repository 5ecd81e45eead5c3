"""Stable check names: reports, FAULTS.json, thresholds and dashboards all key on these strings."""

CHECK_NAMES: tuple[str, ...] = (
    "contract",
    "exact_duplicate",
    "near_duplicate",
    "semantic_duplicate",
    "pii",
    "secret",
    "leakage",
    "contamination",
    "group_split",
    "template",
    "length",
    "boilerplate",
)
