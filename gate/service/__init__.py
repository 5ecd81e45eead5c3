"""`gate serve`: the same core as the CLI, shared by a team over HTTP (jobs, tokens, confined paths)."""
