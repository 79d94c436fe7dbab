"""Progress for long work in a terminal (rich): a spinner with what is being waited for.
Nothing is drawn when stderr is not a terminal (logs and scripts stay clean)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from rich.console import Console

_console = Console(stderr=True)


@contextlib.contextmanager
def working(what: str) -> Iterator[None]:
    """Show ``what`` with a spinner and the elapsed time while the block runs."""
    if not _console.is_terminal:
        yield
        return
    with _console.status(what):
        yield
