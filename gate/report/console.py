"""One console for every command: wide enough for tables in CI logs, plain when not on a terminal."""

from __future__ import annotations

from rich.console import Console


def make_console() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = 140
    return console
