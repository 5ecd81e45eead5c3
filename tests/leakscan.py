"""The leak scanner the tests use is the one `gate demo` ends with (gate/demo/leakscan.py): one implementation.

The service's reads and the dashboard's pages are scanned by tests/test_no_leaks.py: their bodies go in as
`texts` (JSON answers also as `strings_of(...)`, since escapes would hide a value from a plain search).
"""

from gate.demo.leakscan import PATTERNS, Leak, Planted, planted_values, scan, strings_of

__all__ = ["PATTERNS", "Leak", "Planted", "planted_values", "scan", "strings_of"]
