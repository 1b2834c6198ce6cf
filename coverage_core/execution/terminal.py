"""How a run ends: the one precedence rule for its terminal state, and the ends not yet written to the store.

The rule (``settle``): a run stopped by its timeout or a cancel keeps ``timed_out``
or ``cancelled``, and any failure met afterwards (capturing its output, draining
its pipes, persisting its artifacts or its state) is recorded in its detail; any
such failure of a run that ended on its own (``succeeded`` or ``failed``), or
of its setup, makes it ``failed`` with the failure as its reason.

An end is known before it is written: the worker remembers it here first
(``remember``), so a read of the run (``queue.row``) says how it ended even
while the store refuses writes (a full disk), and the worker keeps trying the
write until it succeeds (``forget`` then). A run whose process is gone never
reads ``running``.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

STOPS = ("timed_out", "cancelled")


@attrs.frozen
class Ended:
    """A run's terminal state, its reason, and the detail its last event records."""

    state: str
    reason: str | None
    detail: str | None


def settle(state: str, reason: str | None, failures: list[str]) -> Ended:
    """The terminal state of a run that ended as ``state`` (for ``reason``) and then met ``failures``."""
    failures = [f for f in failures if f]
    if not failures:
        return Ended(state, reason, reason)
    later = "; ".join(failures)
    if state in STOPS:
        return Ended(state, reason, f"{reason}; then {later}")
    why = later if state == "succeeded" or not reason else f"{reason}; {later}"
    return Ended("failed", why, why)


_LOCK = threading.Lock()
_UNWRITTEN: dict[str, dict[str, Any]] = {}  # run id -> the columns of its end, until the store has them


def remember(run_id: str, columns: dict[str, Any]) -> None:
    with _LOCK:
        _UNWRITTEN[run_id] = dict(columns)


def forget(run_id: str) -> None:
    with _LOCK:
        _UNWRITTEN.pop(run_id, None)


def unwritten(run_id: str) -> dict[str, Any] | None:
    """The end of a run that is known and not yet written, if any."""
    with _LOCK:
        found = _UNWRITTEN.get(run_id)
        return None if found is None else dict(found)
