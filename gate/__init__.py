"""gate: the data door and the release door of a fine-tuning programme."""

__version__ = "0.1.0"

# The distribution's name on the package index. The import package and the console script are `gate`, but the
# PyPI name `gate` belongs to an unrelated project (a typosquatting risk for anyone who follows an install hint).
DISTRIBUTION = "finetune-gate"


def install_hint(extra: str) -> str:
    """The one install command every "needs the X extra" message names, so no message can drift to a wrong name."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def _defer_heavy_imports() -> None:
    """jsonschema's IRI grammar is built on first use, not on import (gate.io.lazy_iri says why)."""
    from gate.io.lazy_iri import defer

    defer()


_defer_heavy_imports()
