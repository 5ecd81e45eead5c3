"""`gate review`: the hard-case queue a reviewer reads first (issue 34, part 2)."""
