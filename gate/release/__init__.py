"""Releases: the pinned record behind a decision, the "current" pointer (promote, rollback) and production watch."""
