"""The release decision: align paired items, test them, evaluate the scorecard's gates, decide PROMOTE or BLOCK."""
