"""The record: every run, dataset version and finding in one DuckDB file that dashboards read."""
