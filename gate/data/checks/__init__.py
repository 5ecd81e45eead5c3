"""Data checks, one module each; `registry.py` lists which run and in what order."""
