"""Scorecards, suites and scorers: the release door's evidence."""
