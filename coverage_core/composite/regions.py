"""The canonical region model every composite counts, and how each format's detail becomes it.

A canonical region is one row of equal-length NumPy columns::

    path, kind, start_line, start_col, end_line, end_col, item, hits

(``path`` is the repository-relative file; logical source and variant are
attached per entry by ``aggregate``). Three kinds:

- ``code``: a piece of executable code. LLVM code regions, Istanbul
  statements and regions-v1 code regions carry their line and column span;
  coverage.py statements (and regions-v1 files with only ``lines``) become
  one-line regions with columns 0.
- ``branch``: one outcome of a decision. LLVM branch regions (true and false
  outcomes), coverage.py arcs, Istanbul branch outcomes: at their line,
  columns 0, ``item`` the outcome's ordinal among the file's outcomes on that
  line in report order; regions-v1 branch regions keep their span.
- ``function``: LLVM, coverage.py and Istanbul functions, from their start to
  end line, ``item`` the ordinal among functions starting on that line.

LLVM gap, skipped and expansion regions are not executable and not counted.
Taken counts of ``-1`` (never evaluated) count as 0 hits. A region's identity
is (logical source, variant, kind, span, item); rows of one identity (several
function instantiations, or the same source under two alias paths) are one
region whose hits are the sum.

``MAPPING_VERSION`` names these rules; composites of different mapping
versions are never compared.
"""

from __future__ import annotations

import numpy as np

from .. import counts
from ..report import REGION_BRANCH, REGION_CODE, NormalizedReport

MAPPING_VERSION = "composite-regions-1"
KIND_CODE, KIND_BRANCH, KIND_FUNCTION = 0, 1, 2
KINDS = {KIND_CODE: "code", KIND_BRANCH: "branch", KIND_FUNCTION: "function"}
# The kinds the combined production percentage counts (functions are summarized beside it: a
# function is also code, and counting both would weigh it twice).
COMBINED_KINDS = (KIND_CODE, KIND_BRANCH)
COLUMNS = {
    "file": np.int32,  # index into the report's files
    "kind": np.int8,
    "start_line": np.int32,
    "start_col": np.int32,
    "end_line": np.int32,
    "end_col": np.int32,
    "item": np.int32,
    "hits": np.int64,
}


def _ordinal(file: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Each row's rank among the rows of its (file, line), in table order."""
    n = len(file)
    if not n:
        return np.zeros(0, np.int32)
    order = np.lexsort((np.arange(n), line, file))
    f, ln = file[order], line[order]
    start = np.ones(n, dtype=bool)
    start[1:] = (f[1:] != f[:-1]) | (ln[1:] != ln[:-1])
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    out = np.empty(n, np.int32)
    out[order] = np.arange(n) - first
    return out


def _block(
    kind: int,
    file: np.ndarray,
    sl: np.ndarray,
    sc: np.ndarray,
    el: np.ndarray,
    ec: np.ndarray,
    item: np.ndarray,
    hits: np.ndarray,
) -> dict[str, np.ndarray]:
    n = len(file)
    return {
        "file": np.asarray(file, np.int32),
        "kind": np.full(n, kind, np.int8),
        "start_line": np.asarray(sl, np.int32),
        "start_col": np.asarray(sc, np.int32),
        "end_line": np.asarray(el, np.int32),
        "end_col": np.asarray(ec, np.int32),
        "item": np.asarray(item, np.int32),
        "hits": np.maximum(np.asarray(hits, np.int64), 0),
    }


def canonical(report: NormalizedReport) -> dict[str, np.ndarray]:
    """The report's canonical regions (``file`` indexes ``report.files``), not yet deduplicated."""
    blocks = []
    r = report.regions
    kind = r["kind"]
    code = kind == REGION_CODE
    has_code = np.zeros(len(report.files), dtype=bool)
    has_code[r["file"][code]] = True
    blocks.append(
        _block(
            KIND_CODE,
            r["file"][code],
            r["start_line"][code],
            r["start_col"][code],
            r["end_line"][code],
            r["end_col"][code],
            np.zeros(int(code.sum())),
            r["hits"][code],
        )
    )
    ln = report.lines
    plain = ~has_code[ln["file"]] if len(ln) else np.zeros(0, bool)
    zeros = np.zeros(int(plain.sum()))
    blocks.append(
        _block(
            KIND_CODE,
            ln["file"][plain],
            ln["line"][plain],
            zeros,
            ln["line"][plain],
            zeros,
            zeros,
            ln["hits"][plain],
        )
    )
    br = report.branches
    zeros = np.zeros(len(br))
    blocks.append(
        _block(
            KIND_BRANCH,
            br["file"],
            br["line"],
            zeros,
            br["line"],
            zeros,
            _ordinal(br["file"], br["line"]),
            br["taken"],
        )
    )
    b = kind == REGION_BRANCH
    blocks.append(
        _block(
            KIND_BRANCH,
            r["file"][b],
            r["start_line"][b],
            r["start_col"][b],
            r["end_line"][b],
            r["end_col"][b],
            np.zeros(int(b.sum())),
            r["hits"][b],
        )
    )
    fn = report.functions
    zeros = np.zeros(len(fn))
    blocks.append(
        _block(
            KIND_FUNCTION,
            fn["file"],
            fn["start_line"],
            zeros,
            fn["end_line"],
            zeros,
            _ordinal(fn["file"], fn["start_line"]),
            fn["hits"],
        )
    )
    return {c: np.concatenate([blk[c] for blk in blocks]).astype(t, copy=False) for c, t in COLUMNS.items()}


def take(cols: dict[str, np.ndarray], index: np.ndarray) -> dict[str, np.ndarray]:
    return {c: v[index] for c, v in cols.items()}


def dedup(key: np.ndarray, cols: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray], bool]:
    """Merge rows of equal identity: ``key`` is an int64 group (entry) per row; the region identity is
    (key, kind, span, item). Returns (key per merged row, merged columns with hits summed, whether a sum
    was clamped at 2^63-1: ``counts``, never a wrapped count that reads as "hit 0")."""
    n = len(key)
    if not n:
        return key, cols, False
    fields = [
        cols["item"],
        cols["end_col"],
        cols["end_line"],
        cols["start_col"],
        cols["start_line"],
        cols["kind"],
        key,
    ]
    order = np.lexsort(fields)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for f in fields:
        s = f[order]
        change[1:] |= s[1:] != s[:-1]
    starts = np.flatnonzero(change)
    first = order[starts]
    merged = {c: v[first] for c, v in cols.items()}
    hits = cols["hits"][order]
    summed, saturated = counts.reduceat(np.maximum(hits, 0), starts)
    merged["hits"] = np.where(np.maximum.reduceat(hits, starts) < 0, -1, summed)
    return key[first], merged, saturated


def tally(kind: np.ndarray, hits: np.ndarray) -> dict[str, dict[str, int]]:
    """Exact found/hit per kind name plus ``combined`` (COMBINED_KINDS)."""
    found = np.bincount(kind, minlength=len(KINDS))
    hit = np.bincount(kind[hits > 0], minlength=len(KINDS))
    out = {name: {"found": int(found[k]), "hit": int(hit[k])} for k, name in KINDS.items()}
    out["combined"] = {
        "found": int(sum(found[k] for k in COMBINED_KINDS)),
        "hit": int(sum(hit[k] for k in COMBINED_KINDS)),
    }
    return out
