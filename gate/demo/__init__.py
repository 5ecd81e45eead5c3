"""`gate demo`: the whole loop on the repository's fixtures with embedded defaults (no servers, no GPU)."""
