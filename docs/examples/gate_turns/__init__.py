"""A third-party package for gate: one check and one scorer (docs/extending.md walks through both)."""
