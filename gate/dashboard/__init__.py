"""The release dashboard: read-only pages over the DuckDB record, charts drawn by the bundled plotly.js.

Why a face with no logic: every number comes from the tables `gate check`, `gate score` and `gate decide` write, so
the dashboard, the static release report and the CLI can never disagree.
"""
