"""The per-dataset index behind incremental checks: what every indexed row looks like to the dedup checks.

A pull request adds a few thousand rows to a corpus of millions; checking only those rows, against an index of
everything else, turns a full scan into a lookup. See `store` (the files), `build` (from scratch),
`incremental` (`gate check --base REF`).
"""
