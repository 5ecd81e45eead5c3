"""gate: the data door and the release door of a fine-tuning programme."""

__version__ = "0.1.0"
