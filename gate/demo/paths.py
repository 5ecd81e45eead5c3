"""Where `gate demo` and `gate probe` find their fixtures (datasets, tokenizers, contracts, scorecards, training
specs) and where they may write caches, in a source checkout and in an installed wheel alike.

Why: the defaults used to be resolved against the source tree (`parents[2]`), so from a wheel the demo and the
probe looked for `site-packages/../fixtures` and failed. The wheel now ships the same files under
`gate/demo/assets/` (symlinks to the top-level folders in the checkout, real files once built; see
`[tool.setuptools.package-data]`), laid out like the repository root so the contracts' relative paths
(`../scorecards/suites/...`) hold in both. Built artifacts (the tiny model) never go into site-packages: they go to
the user cache (`$XDG_CACHE_HOME/gate`, else `~/.cache/gate`), or to `.cache/` in a checkout as before.
"""

from __future__ import annotations

import os
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2]
BUNDLED_ROOT = Path(__file__).resolve().parent / "assets"


def _is_checkout(root: Path) -> bool:
    return (root / "pyproject.toml").is_file() and (root / "fixtures" / "datasets").is_dir()


#: the folder holding fixtures/, contracts/, scorecards/ and trainspecs/
ROOT = SOURCE_ROOT if _is_checkout(SOURCE_ROOT) else BUNDLED_ROOT


def cache_dir() -> Path:
    """Where built demo artifacts go: `.cache/` of a checkout, else the user cache (never the installed package)."""
    if ROOT == SOURCE_ROOT:
        return SOURCE_ROOT / ".cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gate"
