"""Word and byte budgets, limits and their defaults.

A word is a maximal run of characters other than whitespace and the JSON
punctuation ``{ } [ ] , : "`` in the compact JSON text of ``data``. Budgets
bound the whole ``data`` object; answers shrink their pages to fit and fail
with ``budget_too_small`` only when the fixed part alone does not fit.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import CoverageError, ErrorCode

DEFAULT_MAX_WORDS, MIN_WORDS, MAX_WORDS = 600, 40, 50_000
DEFAULT_MAX_BYTES, MIN_BYTES, MAX_BYTES = 16_384, 512, 2_000_000
DEFAULT_MAX_FILES, MAX_FILES_CAP = 3, 200
DEFAULT_MAX_REGIONS, MAX_REGIONS_CAP = 5, 500
# The defensive record cap: no single answer carries more records than this.
RECORD_CAP = 1000
# Records per page of a listing (snapshots, files): the default and the most a call may ask for.
DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE = 20, 200

_WORD = re.compile(r'[^\s{}\[\],:"]+')


def compact_json(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def words(data: Any) -> int:
    return len(_WORD.findall(compact_json(data)))


def size(data: Any) -> tuple[int, int]:
    text = compact_json(data)
    return len(_WORD.findall(text)), len(text.encode())


class Budget:
    def __init__(self, limits: dict[str, Any] | None, *, max_words: int | None = None) -> None:
        limits = limits or {}
        self.max_words = int(max_words or limits.get("max_words") or DEFAULT_MAX_WORDS)
        self.max_bytes = int(limits.get("max_bytes") or DEFAULT_MAX_BYTES)
        self.max_files = int(limits.get("max_files") or DEFAULT_MAX_FILES)
        self.max_regions = int(limits.get("max_regions") or DEFAULT_MAX_REGIONS)

    def fits(self, data: Any) -> bool:
        w, b = size(data)
        return w <= self.max_words and b <= self.max_bytes

    def too_small(self, needed_words: int, needed_bytes: int) -> CoverageError:
        """The error for a page that cannot be answered. The figures are what the
        page needs to make progress (its fixed part, and its first record when
        records remain), so they exceed the budget in words or in bytes."""
        return CoverageError(
            ErrorCode.BUDGET_TOO_SMALL,
            f"this page needs {needed_words} words and {needed_bytes} bytes; the budget is {self.max_words} words and {self.max_bytes} bytes",
            f"Raise limits.max_words to at least {needed_words} (and max_bytes to {needed_bytes}), "
            "or narrow the question (file, lines).",
            {"needed_words": needed_words, "needed_bytes": needed_bytes},
        )

    def fit_list(self, data: dict[str, Any], key: str, items: list[Any], *, whole: Any = None) -> int:
        """Put as many leading ``items`` under ``data[key]`` as the budget allows; return the count.

        ``whole`` is the object the budget applies to when ``data`` is nested in it.
        """
        whole = data if whole is None else whole
        data[key] = []
        w, b = size(whole)
        if w > self.max_words or b > self.max_bytes:
            # What a page needs is its fixed part and one record: measured so, a remedy works at once.
            data[key] = items[:1]
            need = size(whole)
            data[key] = []
            raise self.too_small(*need)
        # Binary search on the prefix length: sizes grow monotonically with it.
        lo, hi = 0, len(items)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            data[key] = items[:mid]
            if self.fits(whole):
                lo = mid
            else:
                hi = mid - 1
        if lo > RECORD_CAP:
            # The budget would allow it, but no answer carries more records than
            # the cap: fail loudly rather than hand back a partial collection.
            raise record_cap_exceeded(key, lo)
        data[key] = items[:lo]
        return lo

    def fit_page(self, data: dict[str, Any], key: str, items: list[Any], *, whole: Any = None) -> int:
        """``fit_list`` for the records a cursor pages over: a page that shows
        none of the records still to come would never advance, so it fails with
        what one record more truly needs."""
        shown = self.fit_list(data, key, items, whole=whole)
        if items and not shown:
            data[key] = items[:1]
            need = size(data if whole is None else whole)
            data[key] = []
            raise self.too_small(*need)
        return shown


def record_cap_exceeded(what: str, count: int, suggestion: str = "") -> CoverageError:
    return CoverageError(
        ErrorCode.RECORD_CAP_EXCEEDED,
        f"{what} would carry {count} records; one answer carries at most {RECORD_CAP}",
        suggestion
        or "Ask for a smaller page (limits.max_files / max_regions / max_words) and continue "
        "with page.next_cursor.",
        {"records": count, "cap": RECORD_CAP},
    )
