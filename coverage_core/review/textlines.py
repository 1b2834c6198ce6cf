"""A source text's lines, read once and decoded a window at a time.

Coverage tools number lines by ``\\n`` (gcov, llvm-cov, Go, Istanbul and coverage.py alike; a ``\\r``
before it belongs to the break). Python's ``str.splitlines`` also breaks at form feeds, vertical tabs,
``\\x1c``-``\\x1e``, NEL and U+2028/2029, which C and Python sources do contain (a form feed between
sections): every line after one would be annotated with its neighbour's coverage. ``TextLines`` keeps the
text's bytes and the offset of every line break (one NumPy scan, no Python object per line) and decodes
only the lines asked for, so the SQLite amalgamation's 269,442 lines cost one scan, not a list of
269,442 strings, and a window of 500 lines decodes 500.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

_NL, _CR = 0x0A, 0x0D


class TextLines(Sequence[str]):
    """The lines of one text (``bytes``), as a read-only sequence of ``str`` decoded on access (UTF-8,
    undecodable bytes replaced: a multi-byte character never spans a line break, so a line decodes alone
    as it would within the whole text). A final line break ends the last line rather than starting an
    empty one; ``\\r\\n`` ends a line as ``\\n`` does."""

    __slots__ = ("_data", "_ends", "_starts")

    def __init__(self, data: bytes) -> None:
        import numpy as np  # when a text is read, not when the module is (a CLI read need not load NumPy)

        self._data = data
        breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NL)
        starts = np.concatenate((np.zeros(1, np.int64), breaks + 1))
        ends = np.concatenate((breaks, np.array([len(data)], np.int64)))
        if starts[-1] == len(data):  # nothing after the last break (or an empty text): no line there
            starts, ends = starts[:-1], ends[:-1]
        self._starts, self._ends = starts, ends

    @property
    def nbytes(self) -> int:
        return len(self._data) + self._starts.nbytes + self._ends.nbytes

    def __len__(self) -> int:
        return len(self._starts)

    def _line(self, index: int) -> str:
        a, b = int(self._starts[index]), int(self._ends[index])
        if b > a and self._data[b - 1] == _CR:
            b -= 1
        return self._data[a:b].decode("utf-8", "replace")

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._line(i) for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("line index out of range")
        return self._line(index)

    def __iter__(self) -> Iterator[str]:
        return (self._line(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        """Equal to a list, tuple or ``TextLines`` of the same lines (as ``str.splitlines``' list was)."""
        if isinstance(other, TextLines):
            return self._data == other._data or list(self) == list(other)
        if isinstance(other, list | tuple):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
