"""Standalone scripts run by a trainer's own Python (its venv), checking a written plan with the trainer's parsers.

They import nothing from `gate` (the trainer venv does not have it) and print one JSON object on their last line.
"""
