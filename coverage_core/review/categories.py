"""lcov's twelve differential categories, computed columnar from two measurements and a diff.

Every executable line of the current and the baseline measurement lands in
exactly one category (genhtml ``--differential`` semantics):

====  ===========================  ===================================================
UNC   uncovered new code           added or changed by the diff, not hit
LBC   lost baseline coverage       unchanged, hit in the baseline, not now
UIC   uncovered included code      unchanged, not executable in the baseline, not hit
UBC   uncovered baseline code      unchanged, hit in neither
GBC   gained baseline coverage     unchanged, not hit in the baseline, hit now
GIC   gained included code         unchanged, not executable in the baseline, hit
GNC   gained new code              added or changed by the diff, hit
CBC   covered baseline code        unchanged, hit in both
EUB   excluded uncovered baseline  unchanged, executable only in the baseline, not hit
ECB   excluded covered baseline    unchanged, executable only in the baseline, hit
DUB   deleted uncovered baseline   removed by the diff, not hit in the baseline
DCB   deleted covered baseline     removed by the diff, hit in the baseline
====  ===========================  ===================================================

"Unchanged" means the diff carries the line over (possibly moved by edits
above it, possibly into a renamed file): ``diffmap.forward`` gives each
baseline line its current position, so a line keeps its identity. Deleted and
excluded lines exist only in the baseline and never read as a regression.
Branches and functions (by file and name; new when their first line is new)
get the same treatment as counts. A branch keeps its identity the way a line
does: its source line moves with the diff, its block is ranked within the
line, and a target line in its id (coverage.py's "jump to line N") moves with
the same mapping, so a pure move or rename leaves every branch CBC or UBC in
every format (``_branch_categories``).

A measurement is a ``Side``: NumPy columns keyed ``path index << 32 | line``,
loaded from stored snapshots (several unioned: hit when any hit) or built from
an unstored report. Nothing here creates a Python object per line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import duckdb
import numpy as np

from ..diffmap import KEY_SHIFT, LINE_MASK, DiffMap, FileChange, Hunks, added, forward
from ..report import NormalizedReport

CATEGORIES: tuple[str, ...] = (
    "UNC",
    "LBC",
    "UIC",
    "UBC",
    "GBC",
    "GIC",
    "GNC",
    "CBC",
    "EUB",
    "ECB",
    "DUB",
    "DCB",
)
UNC, LBC, UIC, UBC, GBC, GIC, GNC, CBC, EUB, ECB, DUB, DCB = range(12)
NAMES = {
    "UNC": "uncovered new code",
    "LBC": "lost baseline coverage",
    "UIC": "uncovered included code",
    "UBC": "uncovered baseline code",
    "GBC": "gained baseline coverage",
    "GIC": "gained included code",
    "GNC": "gained new code",
    "CBC": "covered baseline code",
    "EUB": "excluded uncovered baseline",
    "ECB": "excluded covered baseline",
    "DUB": "deleted uncovered baseline",
    "DCB": "deleted covered baseline",
}
# A subset side's LBC: lines the baseline covered that a run of fewer tests did not reach. Not a loss:
# answers from a subset side report them under this name, and LBC as 0.
NOT_OBSERVED = "not_observed"


def named_counts(values: np.ndarray, *, every: bool, subset: bool = False) -> dict[str, int]:
    """Category name -> count (zeros too with ``every``); from a ``subset`` side LBC is ``not_observed``."""
    counts = {name: int(v) for name, v in zip(CATEGORIES, values) if every or v}
    if subset and values[LBC]:
        counts[NOT_OBSERVED] = int(values[LBC])
        if every:
            counts["LBC"] = 0
        else:
            del counts["LBC"]
    return counts


def category_name(cat: int, *, subset: bool = False) -> str:
    return NOT_OBSERVED if subset and cat == LBC else CATEGORIES[cat]


# Categories whose lines exist only in the baseline (their line numbers are the baseline's).
BASELINE_ONLY = frozenset({EUB, ECB, DUB, DCB})
N = len(CATEGORIES)


@attrs.frozen(eq=False)
class Side:
    """One measurement as columns. ``keys`` are sorted and unique; ``paths[key >> 32]`` names the file."""

    paths: tuple[str, ...]
    keys: np.ndarray  # int64
    hits: np.ndarray  # int64
    branches: dict[str, np.ndarray]  # pid, line, block, branch (str), taken
    functions: dict[str, np.ndarray]  # pid, name (str), start_line, hits

    @property
    def lines_found(self) -> int:
        return len(self.keys)

    @property
    def lines_hit(self) -> int:
        return int(np.count_nonzero(self.hits > 0))


def path_ids(
    con: duckdb.DuckDBPyConnection, snaps: Sequence[int]
) -> tuple[tuple[str, ...], dict[str, np.ndarray]]:
    """The sorted paths of stored snapshots, and columns (snap, file_id, pid) giving each file its path's index."""
    ids = ",".join(str(int(s)) for s in snaps)
    files = con.execute(f"SELECT snap, file_id, path FROM files WHERE snap IN ({ids})").fetchnumpy()
    paths, pid = np.unique(files["path"], return_inverse=True)
    return tuple(str(p) for p in paths), {
        "snap": files["snap"],
        "file_id": files["file_id"],
        "pid": pid.astype(np.int64),
    }


# The detail tables ``load_side`` reads: its caller restores them on the connection first (``Call.restore``).
SIDE_READS = ("lines", "branches", "functions")


def load_side(con: duckdb.DuckDBPyConnection, snaps: Sequence[int]) -> Side:
    """The lines, branches and functions of stored snapshots, unioned by repository path."""
    ids = ",".join(str(int(s)) for s in snaps)
    # Integer joins only: (snap, file_id) -> pid, never a path string per row.
    paths, mapping = path_ids(con, snaps)
    parts = []
    for snap in snaps:
        mine = mapping["snap"] == snap
        lut = np.zeros(int(mapping["file_id"][mine].max(initial=-1)) + 1, dtype=np.int64)
        lut[mapping["file_id"][mine]] = mapping["pid"][mine]
        rows = con.execute(
            f"SELECT (file_id::BIGINT << {KEY_SHIFT}) | line AS key, hits FROM lines WHERE snap = ?",
            [int(snap)],
        ).fetchnumpy()
        parts.append(
            (_relabel(np.asarray(rows["key"], dtype=np.int64), lut), np.asarray(rows["hits"], dtype=np.int64))
        )
    keys, hits = _sorted_union([k for k, _ in parts], [h for _, h in parts])
    con.register("_side_files", mapping)
    try:
        group = "GROUP BY ALL" if len(snaps) > 1 else ""
        join = "JOIN _side_files m ON m.snap = t.snap AND m.file_id = t.file_id"
        branches = con.execute(
            f"""SELECT m.pid, t.line, t.block, t.branch, {"max(t.taken)" if group else "t.taken"} AS taken
                FROM branches t {join} WHERE t.snap IN ({ids}) {group}"""
        ).fetchnumpy()
        functions = con.execute(
            f"""SELECT m.pid, t.name, {"min(t.start_line)" if group else "t.start_line"} AS start_line,
                       {"max(t.hits)" if group else "t.hits"} AS hits
                FROM functions t {join} WHERE t.snap IN ({ids}) {"GROUP BY m.pid, t.name" if group else ""}"""
        ).fetchnumpy()
    finally:
        con.unregister("_side_files")
    return Side(paths, keys, hits, branches, functions)


def _relabel(keys: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Keys ``a << 32 | line`` as ``lut[a] << 32 | line`` (file ids to path ids, path ids to files)."""
    if not len(keys):
        return keys
    relabelled: np.ndarray = (lut[keys >> KEY_SHIFT] << KEY_SHIFT) | (keys & LINE_MASK)
    return relabelled


def _sorted_union(keys: list[np.ndarray], hits: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Keys sorted and unique; a key several snapshots carry keeps its largest hit count."""
    k = np.concatenate(keys) if keys else np.empty(0, dtype=np.int64)
    h = np.concatenate(hits) if hits else np.empty(0, dtype=np.int64)
    if len(k) > 1 and not np.all(k[1:] > k[:-1]):
        # Stored rows come in file_id order, which is usually path order: sorting is then cheap.
        order = np.argsort(k, kind="stable")
        k, h = k[order], h[order]
        first = np.concatenate(([True], k[1:] != k[:-1]))
        starts = np.flatnonzero(first)
        k, h = k[starts], np.maximum.reduceat(h, starts)
    return k, h


def side_from_report(report: NormalizedReport, paths: Sequence[str]) -> Side:
    """A side from a parsed report whose file ``i`` maps to ``paths[i]`` (nothing is stored)."""
    unique = sorted(set(paths))
    index = {p: i for i, p in enumerate(unique)}
    pid_of = np.array([index[p] for p in paths], dtype=np.int64)
    lines = report.lines
    keys = (pid_of[lines["file"]] << KEY_SHIFT) | lines["line"].astype(np.int64)
    order = np.argsort(keys, kind="stable")
    br, fn = report.branches, report.functions
    return Side(
        tuple(unique),
        keys[order],
        lines["hits"].astype(np.int64)[order],
        {
            "pid": pid_of[br["file"]],
            "line": br["line"],
            "block": br["block"],
            "branch": br["branch"],
            "taken": br["taken"],
        },
        {"pid": pid_of[fn["file"]], "name": fn["name"], "start_line": fn["start_line"], "hits": fn["hits"]},
    )


@attrs.frozen(eq=False)
class Comparison:
    """Every line's category, per identity file (the current path; the old path of a deleted file)."""

    paths: tuple[str, ...]
    status: tuple[str, ...]  # added | modified | renamed | deleted | unchanged (git's view)
    previous: tuple[str | None, ...]  # the baseline path of a renamed file
    in_current: np.ndarray  # bool per file: the current measurement has lines of it
    in_baseline: np.ndarray  # bool per file
    reported: np.ndarray  # bool per file: the current measurement lists it (with or without lines)
    changed: np.ndarray  # bool per file: git's status is not unchanged (answers rank by it on every call)
    cur_file: np.ndarray  # per current line (sorted by file, line)
    cur_line: np.ndarray
    cur_cat: np.ndarray
    base_file: np.ndarray  # per baseline-only line (sorted by file, then baseline position)
    base_line: np.ndarray  # its line number in the baseline version
    base_pos: np.ndarray  # its index among the baseline's lines (consecutive = adjacent code)
    base_cat: np.ndarray
    per_file: np.ndarray  # (files, 12) line counts
    totals: np.ndarray  # (12,) line counts: per_file summed once (answers read it several times a call)
    branches: np.ndarray  # (12,) counts
    functions: np.ndarray  # (12,) counts


# Category of a current line by (new, matched, hit in the baseline, hit now), as 8*new + 4*m + 2*b + c.
_CURRENT = np.array(
    [UIC, GIC, UIC, GIC, UBC, GBC, LBC, CBC] + [UNC, GNC] * 4,
    dtype=np.uint8,
)
# Category of a baseline-only line by (removed, hit), as 2*removed + hit.
_BASELINE = np.array([EUB, ECB, DUB, DCB], dtype=np.uint8)


def _follow(keys: np.ndarray, hunks: Hunks, files: _Files) -> tuple[np.ndarray, np.ndarray]:
    """Baseline keys moved into the current version, and whether the diff removed each line."""
    moved, removed = keys.copy(), np.zeros(len(keys), dtype=bool)
    # Only lines of touched files can move: the rest of a big tree is skipped.
    at = np.flatnonzero(files.touched[keys >> KEY_SHIFT]) if len(keys) else np.empty(0, dtype=np.int64)
    if len(at):
        moved[at], removed[at] = forward(keys[at], hunks)
        removed[at] |= files.gone[keys[at] >> KEY_SHIFT]
    return moved, removed


def _new(keys: np.ndarray, hunks: Hunks, files: _Files) -> np.ndarray:
    """Whether the diff added or changed each current line."""
    new = np.zeros(len(keys), dtype=bool)
    at = np.flatnonzero(files.touched[keys >> KEY_SHIFT]) if len(keys) else np.empty(0, dtype=np.int64)
    if len(at):
        new[at] = added(keys[at], hunks) | files.fresh[keys[at] >> KEY_SHIFT]
    return new


def _match(moved: np.ndarray, removed: np.ndarray, c_keys: np.ndarray, new: np.ndarray) -> np.ndarray:
    """For each current line, the index of the baseline line carried over to it, or -1."""
    kept = np.flatnonzero(~removed)
    targets = moved[kept]
    if len(targets) > 1 and not np.all(targets[1:] > targets[:-1]):  # a rename can reorder files
        order = np.argsort(targets, kind="stable")
        kept, targets = kept[order], targets[order]
    if not len(targets):
        return np.full(len(c_keys), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(targets, c_keys), len(targets) - 1)
    matched = ~new & (targets[at] == c_keys)
    return np.where(matched, kept[at], -1)


def compare(base: Side, cur: Side, diff: DiffMap, con: duckdb.DuckDBPyConnection | None = None) -> Comparison:
    """Categorize every line of ``base`` and ``cur`` across ``diff`` (baseline commit -> current).

    Branches and functions are paired in DuckDB on a cursor of ``con`` (the store's, when the caller has
    it open) or, without one, of an in-memory database of their own: creating a database costs 15-40 ms,
    a cursor of an open one about 1 ms, and the comparison needs nothing of the store's tables.
    """
    files = _Files(base, cur, diff)
    hunks = Hunks.collect(diff.changes, files.hunk_file)
    b_keys = _relabel(base.keys, files.base_pid)
    c_keys = _relabel(cur.keys, files.cur_pid)
    moved, removed = _follow(b_keys, hunks, files)
    new = _new(c_keys, hunks, files)
    base_index = _match(moved, removed, c_keys, new)
    matched = base_index >= 0
    base_hits = np.where(matched, base.hits[np.maximum(base_index, 0)] if len(base.hits) else 0, -1)
    cur_cat = _CURRENT[new * 8 + matched * 4 + (base_hits > 0) * 2 + (cur.hits > 0)]

    # Baseline lines no current line carried over: deleted or excluded.
    used = np.zeros(len(b_keys), dtype=bool)
    used[base_index[matched]] = True
    only = np.flatnonzero(~used)
    base_cat = _BASELINE[removed[only] * 2 + (base.hits[only] > 0)]
    base_file = b_keys[only] >> KEY_SHIFT
    by_file = np.argsort(base_file, kind="stable")
    only, base_file, base_cat = only[by_file], base_file[by_file], base_cat[by_file]

    cur_file = c_keys >> KEY_SHIFT
    n = len(files.paths)
    per_file = (
        np.bincount(cur_file * N + cur_cat, minlength=n * N)
        + np.bincount(base_file * N + base_cat, minlength=n * N)
    ).reshape(n, N)
    return Comparison(
        paths=files.paths,
        status=files.status,
        previous=files.previous,
        in_current=np.bincount(cur_file, minlength=n) > 0,
        in_baseline=np.bincount(b_keys >> KEY_SHIFT, minlength=n) > 0,
        reported=np.bincount(files.cur_pid, minlength=n) > 0,
        changed=files.fresh | files.gone | np.array([s != "unchanged" for s in files.status], dtype=bool),
        # int32 halves what a cached comparison holds; files and lines both fit.
        cur_file=cur_file.astype(np.int32),
        cur_line=(c_keys & LINE_MASK).astype(np.int32),
        cur_cat=cur_cat,
        base_file=base_file,
        base_line=b_keys[only] & LINE_MASK,
        base_pos=only,
        base_cat=base_cat,
        per_file=per_file,
        totals=per_file.sum(axis=0),
        branches=_branch_categories(base, cur, files, hunks, con),
        functions=_function_categories(base, cur, files, hunks, con),
    )


def _scratch(con: duckdb.DuckDBPyConnection | None) -> duckdb.DuckDBPyConnection:
    """A connection whose registered arrays nobody else sees (a cursor is a connection of its own)."""
    return con.cursor() if con is not None else duckdb.connect()


class _Files:
    """The identity file space: current paths, renamed baseline paths, and every path the diff names."""

    def __init__(self, base: Side, cur: Side, diff: DiffMap) -> None:
        by_old: dict[str, FileChange] = {c.old_path: c for c in diff.changes if c.old_path is not None}
        by_new: dict[str, FileChange] = {c.new_path: c for c in diff.changes if c.new_path is not None}
        renamed = {
            old: c.new_path for old, c in by_old.items() if c.status == "renamed" and c.new_path is not None
        }
        self.ident_of_base = [renamed.get(p, p) for p in base.paths]
        self.paths = tuple(sorted(set(cur.paths) | set(self.ident_of_base) | {c.path for c in diff.changes}))
        index = {p: i for i, p in enumerate(self.paths)}
        self.index = index
        self.base_pid = np.array([index[p] for p in self.ident_of_base], dtype=np.int64)
        self.cur_pid = np.array([index[p] for p in cur.paths], dtype=np.int64)
        of_path = [by_new.get(p) or by_old.get(p) for p in self.paths]
        self.status = tuple(c.status if c is not None else "unchanged" for c in of_path)
        self.previous = tuple(
            c.old_path if c is not None and c.status == "renamed" else None for c in of_path
        )
        # Every current line of an added file is new; no baseline line of a deleted one survives.
        self.fresh = np.array([s == "added" for s in self.status], dtype=bool)
        self.gone = np.array([s == "deleted" for s in self.status], dtype=bool)
        self.touched = self.fresh | self.gone
        for change in diff.changes:
            if len(change.hunks):
                self.touched[index[change.path]] = True

    def hunk_file(self, change: FileChange) -> int | None:
        return self.index.get(change.path)


def _rekey_lines(pid: np.ndarray, line: np.ndarray, pid_to_file: np.ndarray) -> np.ndarray:
    pid = np.asarray(pid, dtype=np.int64)
    if not len(pid):
        return np.empty(0, dtype=np.int64)
    keys: np.ndarray = (pid_to_file[pid] << KEY_SHIFT) | np.asarray(line, dtype=np.int64)
    return keys


_CATEGORY_SQL = f"""
    CASE
      WHEN c.k IS NULL THEN CASE WHEN b.gone THEN (CASE WHEN b.hit THEN {DCB} ELSE {DUB} END)
                                 ELSE (CASE WHEN b.hit THEN {ECB} ELSE {EUB} END) END
      WHEN c.new THEN (CASE WHEN c.hit THEN {GNC} ELSE {UNC} END)
      WHEN b.k IS NULL THEN (CASE WHEN c.hit THEN {GIC} ELSE {UIC} END)
      WHEN c.hit THEN (CASE WHEN b.hit THEN {CBC} ELSE {GBC} END)
      ELSE (CASE WHEN b.hit THEN {LBC} ELSE {UBC} END)
    END
"""


def _count_categories(
    base: dict[str, np.ndarray], cur: dict[str, np.ndarray], on: str, con: duckdb.DuckDBPyConnection | None
) -> np.ndarray:
    """Counts per category of a full outer join of two item sets (functions; branches pair in ``_BRANCH_SQL``).

    ``k`` is an item's (moved) line key, ``gone``/``new`` whether the diff removed
    or added its line; removed and added items never match anything.
    """
    scratch = _scratch(con)
    try:
        scratch.register("b", base)
        scratch.register("c", cur)
        rows = scratch.execute(
            f"""SELECT {_CATEGORY_SQL} AS cat, count(*) FROM b FULL OUTER JOIN c
                ON {on} AND NOT b.gone AND NOT c.new GROUP BY cat"""
        ).fetchall()
    finally:
        scratch.close()
    return _per_category(rows)


def _per_category(rows: list[tuple[Any, ...]]) -> np.ndarray:
    """``(category, count)`` rows as one count per category (absent ones zero)."""
    out = np.zeros(N, dtype=np.int64)
    for cat, count in rows:
        out[int(cat)] = int(count)
    return out


# A coverage.py arc's id names its target line (JSON arcs, and the BRDA ids
# coverage.py's LCOV writer uses): "jump to line N".
_JUMP_SQL = f"""
    SELECT coalesce(CASE WHEN n <= {LINE_MASK} THEN n END, 0) AS n FROM (
      SELECT TRY_CAST(regexp_extract(label, '^jump to line ([1-9][0-9]{{0,9}})$', 1) AS BIGINT) AS n FROM _labels
    )
"""
_NO_TARGET = 0  # the branch id names no line (numeric ids, "exit", "true"/"false", ...)
_TARGET_GONE = -1  # the diff removed the line the baseline branch jumped to


def _targets(con: duckdb.DuckDBPyConnection, labels: np.ndarray) -> np.ndarray:
    """The line each branch id names ("jump to line N"), or ``_NO_TARGET`` (in order: one scan, no per-row Python)."""
    labels = np.asarray(labels, dtype=object)
    if not len(labels):
        return np.empty(0, dtype=np.int64)
    con.register("_labels", {"label": labels})
    try:
        return np.asarray(con.execute(_JUMP_SQL).fetchnumpy()["n"], dtype=np.int64)
    finally:
        con.unregister("_labels")


def _outcomes(
    con: duckdb.DuckDBPyConnection, keys: np.ndarray, labels: np.ndarray, hunks: Hunks | None, files: _Files
) -> dict[str, np.ndarray]:
    """A branch's outcome across edits: its target line, carried into the current version.

    ``keys`` are the branches' (unmoved) line keys. For the baseline
    (``hunks`` given) a target line moves with the diff exactly as a source line
    does; a target the diff removed is ``_TARGET_GONE``. ``order`` places the
    outcomes of one decision as coverage.py lists them (jumps by target, then
    the others); ``label`` is the id itself when it names no line, else empty.
    """
    target = _targets(con, labels)
    named = target != _NO_TARGET
    order = np.where(named, 0, LINE_MASK + 1)
    at = np.flatnonzero(named)
    if len(at):
        tkeys = ((keys[at] >> KEY_SHIFT) << KEY_SHIFT) | target[at]
        removed = np.zeros(len(at), dtype=bool)
        if hunks is not None:
            tkeys, removed = _follow(tkeys, hunks, files)
        order[at] = tkeys & LINE_MASK
        target[at] = np.where(removed, _TARGET_GONE, tkeys & LINE_MASK)
    label = np.where(named, "", np.asarray(labels, dtype=object))
    return {"target": target, "order": order, "label": label}


def _branch_categories(
    base: Side, cur: Side, files: _Files, hunks: Hunks, scratch: duckdb.DuckDBPyConnection | None
) -> np.ndarray:
    """Branch counts per category; a branch is identified across the diff by what survives edits.

    Identity: the source line (moved by the diff), the block's rank among the
    line's blocks (Istanbul and llvm number blocks across the whole file, and
    those numbers shift when a branch is added above), and the outcome: the
    target line moved by the same mapping (coverage.py arcs), else the id.
    An outcome whose target is no longer where it was (code inserted or removed
    at the target, "exit" that now jumps to new code) is still that decision's
    outcome: the unmatched outcomes of a carried-over decision pair up in
    coverage.py's order. See ``_BRANCH_SQL``.
    """
    bb, cb = base.branches, cur.branches
    b_line = _rekey_lines(bb["pid"], bb["line"], files.base_pid)
    c_keys = _rekey_lines(cb["pid"], cb["line"], files.cur_pid)
    if not len(b_line) and not len(c_keys):
        return np.zeros(N, dtype=np.int64)
    moved, removed = _follow(b_line, hunks, files)
    new = _new(c_keys, hunks, files)
    con = _scratch(scratch)
    try:
        b = {
            "i": np.arange(len(moved), dtype=np.int64),
            "k": moved,
            "block": np.asarray(bb["block"], dtype=np.int64),
            **_outcomes(con, b_line, bb["branch"], hunks, files),
            "hit": np.asarray(bb["taken"]) > 0,
            "gone": removed,
        }
        c = {
            "i": np.arange(len(c_keys), dtype=np.int64),
            "k": c_keys,
            "block": np.asarray(cb["block"], dtype=np.int64),
            **_outcomes(con, c_keys, cb["branch"], None, files),
            "hit": np.asarray(cb["taken"]) > 0,
            "new": new,
        }
        con.register("b_in", b)
        con.register("c_in", c)
        rows = con.execute(_BRANCH_SQL).fetchall()
    finally:
        con.close()
    return _per_category(rows)


# Branches of each side get their block's rank on the line and an occurrence
# number among identical identities (so duplicates pair one to one, never as a
# cross product). Pairs: first every identical identity; then, per carried-over
# decision (line, block rank), the outcomes neither side matched, in order.
# Removed (gone) and added (new) branches never pair.
_BRANCH_SQL = f"""
    WITH b AS (
      SELECT *, dense_rank() OVER (PARTITION BY k ORDER BY block) AS blk FROM b_in
    ), c AS (
      SELECT *, dense_rank() OVER (PARTITION BY k ORDER BY block) AS blk FROM c_in
    ), bd AS (
      SELECT *, row_number() OVER (PARTITION BY k, blk, target, label ORDER BY i) AS dup FROM b WHERE NOT gone
    ), cd AS (
      SELECT *, row_number() OVER (PARTITION BY k, blk, target, label ORDER BY i) AS dup FROM c WHERE NOT new
    ), exact AS (
      SELECT bd.i AS bi, cd.i AS ci FROM bd JOIN cd
        ON bd.k = cd.k AND bd.blk = cd.blk AND bd.target = cd.target AND bd.label = cd.label AND bd.dup = cd.dup
    ), bl AS (
      SELECT i, k, blk, row_number() OVER (PARTITION BY k, blk ORDER BY "order", label, i) AS n
      FROM bd ANTI JOIN exact ON bd.i = exact.bi
    ), cl AS (
      SELECT i, k, blk, row_number() OVER (PARTITION BY k, blk ORDER BY "order", label, i) AS n
      FROM cd ANTI JOIN exact ON cd.i = exact.ci
    ), pairs AS (
      SELECT bi, ci FROM exact
      UNION ALL SELECT bl.i, cl.i FROM bl JOIN cl ON bl.k = cl.k AND bl.blk = cl.blk AND bl.n = cl.n
    )
    SELECT cat, count(*) FROM (
      SELECT CASE WHEN c.hit THEN (CASE WHEN b.hit THEN {CBC} ELSE {GBC} END)
                  ELSE (CASE WHEN b.hit THEN {LBC} ELSE {UBC} END) END AS cat
        FROM pairs JOIN b ON b.i = pairs.bi JOIN c ON c.i = pairs.ci
      UNION ALL
      SELECT CASE WHEN b.gone THEN (CASE WHEN b.hit THEN {DCB} ELSE {DUB} END)
                  ELSE (CASE WHEN b.hit THEN {ECB} ELSE {EUB} END) END
        FROM b ANTI JOIN pairs ON b.i = pairs.bi
      UNION ALL
      SELECT CASE WHEN c.new THEN (CASE WHEN c.hit THEN {GNC} ELSE {UNC} END)
                  ELSE (CASE WHEN c.hit THEN {GIC} ELSE {UIC} END) END
        FROM c ANTI JOIN pairs ON c.i = pairs.ci
    ) GROUP BY cat
"""


def _function_categories(
    base: Side, cur: Side, files: _Files, hunks: Hunks, con: duckdb.DuckDBPyConnection | None
) -> np.ndarray:
    bf, cf = base.functions, cur.functions
    b_keys = _rekey_lines(bf["pid"], bf["start_line"], files.base_pid)
    c_keys = _rekey_lines(cf["pid"], cf["start_line"], files.cur_pid)
    if not len(b_keys) and not len(c_keys):
        return np.zeros(N, dtype=np.int64)
    _moved, removed = _follow(b_keys, hunks, files)
    new = _new(c_keys, hunks, files)
    # Functions match by file and name; "k" carries the file only.
    return _count_categories(
        {"k": b_keys >> KEY_SHIFT, "name": bf["name"], "hit": bf["hits"] > 0, "gone": removed},
        {"k": c_keys >> KEY_SHIFT, "name": cf["name"], "hit": cf["hits"] > 0, "new": new},
        "b.k = c.k AND b.name = c.name",
        con,
    )


def runs(positions: np.ndarray, files: np.ndarray, lines: np.ndarray) -> list[tuple[int, int, int]]:
    """Group lines into (start, end, line_count) runs of adjacent executable lines of one file.

    ``positions`` are the lines' indices among their side's executable lines:
    adjacent code has consecutive positions, whatever blank lines lie between.
    """
    if not len(positions):
        return []
    brk = np.flatnonzero((np.diff(positions) != 1) | (np.diff(files) != 0)) + 1
    starts = np.concatenate(([0], brk))
    ends = np.concatenate((brk, [len(positions)])) - 1
    return [(int(lines[s]), int(lines[e]), int(e - s + 1)) for s, e in zip(starts, ends)]


def file_runs(
    c: Comparison, f: int, cur_code: np.ndarray, base_code: np.ndarray, order: Sequence[int]
) -> list[tuple[int, int, int, int]]:
    """(code, start, end, line_count) runs of one file, ``order`` first, then by line.

    ``cur_code`` / ``base_code`` map each category to the code a run is grouped
    by (several categories may share one); a code outside ``order`` is not listed.
    """
    s, e = np.searchsorted(c.cur_file, [f, f + 1])
    bs, be = np.searchsorted(c.base_file, [f, f + 1])
    cur = cur_code[c.cur_cat[s:e]]
    base = base_code[c.base_cat[bs:be]]
    out: list[tuple[int, int, int, int]] = []
    for code in order:
        at = s + np.flatnonzero(cur == code)
        out += [(code, a, b, n) for a, b, n in runs(at, c.cur_file[at], c.cur_line[at])]
        at = bs + np.flatnonzero(base == code)
        out += [(code, a, b, n) for a, b, n in runs(c.base_pos[at], c.base_file[at], c.base_line[at])]
    return out
