"""`gate review`: the hard-case queue a reviewer reads first (model disagreements, conflicts, warnings)."""
