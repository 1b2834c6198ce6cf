"""A bounded, thread-safe memo of values that never change for their key."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    """The last ``size`` values by key, least recently used dropped first.

    Only for values a key fixes for good (a stored snapshot's content, a git blob): a hit is never checked
    against its source again. Two threads missing the same key may both compute it; the values are equal.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = compute()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self._size:
                self._values.popitem(last=False)
        return value

    def peek(self, key: Hashable) -> V | None:
        """The value kept for ``key``, or None: for a caller that decides after computing whether to keep it."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        return None

    def drop(self, key: Hashable) -> None:
        with self._lock:
            self._values.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
