"""``coverage_review(task="source")``: numbered source lines, marked by coverage.

The text is the measured text: the one each file's recorded content identity
names (the git blob of the text the report measured). For a report made with
uncommitted edits that is the working-tree text kept at ingest, never the
commit's text under the working tree's line numbers; otherwise the commit's
blob (never today's working tree, which may have moved on). Where the measured
text is not available (a dirty-tree snapshot whose text was not recorded, or a
text the report's own line numbers contradict: a measured line past its end,
or on a blank line for coverage.py) the answer says so for the file and shows
no lines rather than annotating other text.

Each line is ``c`` covered, ``u`` uncovered, ``p`` partial (executed with an
untaken branch) or ``-`` not code. Up to ten ranges of any length; with none
given, windows around the top insight target's gaps of ``file`` (or of the
snapshot), which the answer says (``next``: how to ask for other lines); the
page's ``total`` is the file's length in lines. A page carries at most ``MAX_LINES_PER_PAGE`` lines and what
the budget allows: lines left out are flagged (``lines_truncated``) and
continue with ``page.next_cursor``, never dropped. A file the snapshot does not
measure but git has at that commit is ``not_measured``; a path neither knows is
``not_found``, naming the nearest measured paths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import zstandard

from ..errors import CoverageError, ErrorCode
from ..memo import Memo
from ..model import Snapshot
from . import cursors
from .budget import RECORD_CAP, Budget, size
from .call import Call
from .context import claim_for_file, claim_for_selection
from .insight import RANGES_PER_TARGET, ranked_files, targets_for
from .selection import Selection, file_id, line_range, unknown_file
from .textlines import TextLines

if TYPE_CHECKING:
    import numpy as np

MAX_RANGES = 10
# The record cap bounds a page; a longer range continues on the next page (the cursor).
MAX_LINES_PER_PAGE = RECORD_CAP
MAX_LINE_CHARS = 160
CONTEXT_LINES = 2
MARKS = {"c": "covered", "u": "uncovered", "p": "partial", "x": "excluded", "-": "not code"}
# Formats whose executable lines are statement lines, so never blank; region
# and block formats (llvm, go, regions-v1) spread a count over every line of a
# block, blank ones included.
_STATEMENT_LINES = frozenset({"coveragepy"})
# Sources by (repository, what names the text): a blob or a commit's file never changes. Each is kept as
# its bytes and line offsets (``TextLines``), decoded a window at a time: splitting a 9 MB file into
# strings cost more than the rest of an answer, and broke lines where coverage tools do not.
_TEXTS: Memo[TextLines | None] = Memo(8)


def _cached(key: tuple[str, ...], load: Callable[[], bytes | None]) -> TextLines | None:
    def decoded() -> TextLines | None:
        data = load()
        return None if data is None else TextLines(data)

    return _TEXTS.get(key, decoded)


def source_lines(call: Call, commit: str, path: str) -> Sequence[str] | None:
    """The lines of ``path`` at ``commit``, or None when git has no such file."""
    return _cached(
        (call.project.checkout.repo_key, "commit", commit, path),
        lambda: call.project.git.read_file(commit, path),
    )


def measured_lines(
    call: Call, snap_key: int, fid: int, primary: Snapshot, path: str
) -> tuple[Sequence[str] | None, str | None]:
    """(lines, note) of the text file ``fid`` of ``snap`` was measured on, or (None, why it is unavailable).

    The note says where the text came from when it is not the commit's. A text found (or proven not the
    measured one) stays so for the snapshot's life; a text git lacks today may be committed tomorrow.
    """
    key = ("measured_lines", primary.snapshot_id, snap_key, fid, path)
    derived = call.project.store.whole_files
    lines, note, lasting = derived.get(key, lambda: _measured_lines(call, snap_key, fid, primary, path))
    if not lasting:
        derived.drop(key)
    return lines, note


def _measured_lines(
    call: Call, snap_key: int, fid: int, primary: Snapshot, path: str
) -> tuple[Sequence[str] | None, str | None, bool]:
    """measured_lines' answer, and whether it lasts (False: git lacks a text it may have tomorrow)."""
    repo = call.project.checkout.repo_key
    blob, packed = call.project.store.measured_text(snap_key, fid, call.con)
    call.rows_scanned += 1
    commit = (primary.commit or "none")[:12]
    note = None
    lines: Sequence[str] | None
    if packed is not None:
        # Its own kind of key: git's answer for the same blob id may be a cached None (not in git).
        lines = _cached(
            (repo, "kept", blob or f"{primary.snapshot_id}:{fid}"),
            lambda: zstandard.ZstdDecompressor().decompress(packed),
        )
        note = (
            f"{path}: shown as measured, the working-tree text kept at ingest (uncommitted edits, "
            f"blob {(blob or '?')[:12]}), not the text of commit {commit}"
        )
    elif blob is not None:
        lines = _cached((repo, "blob", blob), lambda: call.project.git.read_blob(blob))
        if lines is None:
            return (
                None,
                f"its measured text (blob {blob[:12]}) was neither committed nor kept at ingest",
                False,
            )
    elif primary.dirty:
        return None, "it was measured on a tree with uncommitted edits and its text was not recorded", True
    else:  # identity not recorded (a snapshot stored before content identities): the commit's text
        lines = source_lines(call, primary.commit, path) if primary.commit else None
        if lines is None:
            return None, f"git has no file {path!r} at commit {commit}", False
    assert lines is not None  # every branch without a text returned; a kept text always decompresses
    misfit = _contradiction(call, snap_key, fid, primary, lines)
    return (None, misfit, True) if misfit else (lines, note, True)


def text_of(call: Call, sel: Selection, path: str) -> Sequence[str] | None:
    """The lines task=source would show for ``path`` in the selection's primary snapshot: the measured
    text when the snapshot has the file, else the commit's; None when neither is available. For
    checks of line numbers against a file (a dirty-tree snapshot's text is longer or shorter than the
    commit's)."""
    primary = sel.primary
    try:
        fid = file_id(call, sel.snaps[0], path, primary.snapshot_id)[0]
    except CoverageError:
        return source_lines(call, primary.commit, path) if primary.commit else None
    return measured_lines(call, sel.snaps[0], fid, primary, path)[0]


def _contradiction(
    call: Call, snap_key: int, fid: int, primary: Snapshot, lines: Sequence[str]
) -> str | None:
    """Why the report's own line numbers prove ``lines`` is not the text it measured, or None."""
    measured = call.numpy(
        "SELECT line FROM lines WHERE snap = ? AND file_id = ?", [snap_key, fid], detail=("lines",)
    )["line"]
    if not len(measured):
        return None
    last = int(measured.max())
    if last > len(lines):
        return f"the report measures line {last} but the text has {len(lines)} lines"
    if primary.format in _STATEMENT_LINES:
        blank = [int(n) for n in measured if not lines[int(n) - 1].strip()]
        if blank:
            return f"the report has code on {len(blank)} blank lines of the text (first: line {blank[0]})"
    return None


# Mark codes of line_marks, in the order its query numbers them.
_MARK_OF = "ucpx"


def line_marks(call: Call, snap_key: int, fid: int, snapshot_id: str) -> tuple[np.ndarray, np.ndarray]:
    """(line numbers ascending, their mark codes in ``_MARK_OF``) of every line of the file the snapshot
    measured or the tool excluded; a measured line's mark wins over excluded. Kept for the snapshot's life,
    so the pages of one file read it once."""

    import numpy as np

    def load() -> tuple[np.ndarray, np.ndarray]:
        measured = call.numpy(
            """SELECT l.line, CASE WHEN l.hits = 0 THEN 0 WHEN bool_or(u.start_line IS NOT NULL) THEN 2
                                   ELSE 1 END AS code
               FROM lines l LEFT JOIN uncovered_ranges u
                 ON u.snap = l.snap AND u.file_id = l.file_id AND u.kind = 1 AND u.start_line = l.line
               WHERE l.snap = ? AND l.file_id = ? GROUP BY l.line, l.hits""",
            [snap_key, fid],
            detail=("lines",),
        )
        # Lines the tool excluded (coverage.py's "# pragma: no cover"): not code it counts, and said so.
        excluded = call.numpy(
            "SELECT DISTINCT line FROM excluded_lines WHERE snap = ? AND file_id = ?", [snap_key, fid]
        )["line"]
        excluded = np.setdiff1d(excluded, measured["line"])
        lines_at = np.concatenate([measured["line"], excluded]).astype(np.int64)
        codes = np.concatenate([measured["code"], np.full(len(excluded), 3)]).astype(np.int8)
        order = np.argsort(lines_at, kind="stable")
        return lines_at[order], codes[order]

    marks: tuple[np.ndarray, np.ndarray] = call.project.store.whole_files.get(
        ("line_marks", snapshot_id, snap_key, fid), load
    )
    return marks


def annotated_lines(
    call: Call, primary: Snapshot, snap_key: int, fid: int | None, path: str, start: int, end: int
) -> list[dict[str, Any]] | None:
    """Lines ``start``-``end`` of ``path`` as task=source marks them (its text, its marks: the measured text
    when the snapshot has the file, else the commit's, every line not code), whole and unbudgeted, for a
    caller that bounds its own window (the dashboard); None when task=source would show no text."""
    if fid is None:
        text = source_lines(call, primary.commit, path) if primary.commit else None
        marks: dict[int, str] = {}
    else:
        import numpy as np

        text = measured_lines(call, snap_key, fid, primary, path)[0]
        lines_at, codes = line_marks(call, snap_key, fid, primary.snapshot_id)
        i, j = np.searchsorted(lines_at, [start, end + 1])
        marks = {int(n): _MARK_OF[int(c)] for n, c in zip(lines_at[i:j], codes[i:j])}
    if text is None:
        return None
    return [
        {"line": n, "status": MARKS[marks.get(n, "-")], "text": text[n - 1]}
        for n in range(start, min(end, len(text)) + 1)
    ]


def _default_target(
    call: Call, sel: Selection, path: str | None
) -> tuple[str, list[tuple[int, int]], int] | None:
    """(path, ranges with context, file_id) of the top insight target, of ``path`` or of the snapshot."""
    if path is None:
        files, _ = ranked_files(call, sel, 0, 1)
        if not files:
            return None
        f = files[0]
    else:
        fid, real = file_id(call, sel.snaps[0], path, sel.primary.snapshot_id)
        f = {"file_id": fid, "path": real}
    targets = targets_for(call, sel, [f], limit=1, per_target=RANGES_PER_TARGET)
    if not targets:
        return f["path"], [], f["file_id"]
    ranges = sorted((r[0], r[1]) for r in targets[0]["ranges"])
    return f["path"], [(max(1, a - CONTEXT_LINES), b + CONTEXT_LINES) for a, b in ranges], f["file_id"]


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def source(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    import numpy as np

    representation = call.args.get("representation", "compact")
    snap, primary = sel.snaps[0], sel.primary
    path = call.args.get("file")
    # The schema's pattern admits no empty range, so line_range never answers None here.
    asked = [r for r in map(line_range, call.args.get("ranges") or []) if r]
    lines = line_range(call.args.get("lines"))
    if lines:
        asked.append(lines)
    if asked and path is None:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "ranges and lines need file",
            "Name the file (repository-relative) with the lines.",
        )
    if len(asked) > MAX_RANGES:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"at most {MAX_RANGES} ranges per answer",
            "Ask for the rest in a second call.",
        )
    data: dict[str, Any] = {
        "task": "source",
        "snapshot_id": primary.snapshot_id,
        "commit": (primary.commit or "")[:12],
    }
    windows = not asked
    if windows:
        target = _default_target(call, sel, path)
        if target is None:
            data.update(claim_for_selection(call, sel))
            data.update({"file": None, "ranges": [], "note": "no uncovered code in this snapshot"})
            return {"data": data, "page": None}
        path, asked, known_id = target
    else:
        known_id = None
    assert path is not None  # named beside the ranges (checked above) or the default target's
    data["file"] = path
    claim = claim_for_selection(call, sel)
    try:
        fid = known_id if known_id is not None else file_id(call, snap, path, primary.snapshot_id)[0]
    except CoverageError:
        fid = None
    if fid is None:
        # Not in the snapshot: the commit's text, every line not code, and the claim says so; a path git
        # does not have either is a mistyped one.
        src = source_lines(call, primary.commit, path) if primary.commit else None
        if src is None:
            raise unknown_file(call, snap, path, primary.snapshot_id)
        why = ""
        note = None
        claim = {
            "claim_status": "not_measured",
            "reasons": [f"snapshot {primary.snapshot_id} has no coverage for {path!r}"] + claim["reasons"],
        }
    else:
        src, note = measured_lines(call, snap, fid, primary, path)
        why = f"measured text unavailable for {path}: {note}"
        claim = claim_for_file(call, primary, path, claim)
    if src is None:
        data.update({"claim_status": "not_measured", "reasons": [why] + claim["reasons"], "ranges": []})
        return {"data": data, "page": None}
    if note:
        claim = {**claim, "reasons": claim["reasons"] + [note]}
    if windows:  # not the whole file: say so, so a reader never takes the windows for all of it
        data["next"] = (
            f"these are windows around the top insight target's gaps; lines=A-B (1-{len(src)}) shows others"
        )

    def page(following: int | None) -> dict[str, Any]:
        return {
            "total": len(src),
            "next_cursor": None if following is None else cursors.encode(call, "source", scope, following),
        }

    ranges = _merge([(a, min(b, len(src))) for a, b in asked if a <= len(src)])
    marks: dict[int, str] = {}
    # A cursor continues the same ranges from the line after the last one shown.
    scope = f"{primary.snapshot_id}:{path}"
    resume = cursors.decode(call, "source", scope, call.args.get("cursor"))
    ranges = [(max(a, resume), b) for a, b in ranges if b >= resume]
    # A page holds at most MAX_LINES_PER_PAGE lines: the first ones of the ranges left. Every line record
    # has a word (its number), so no more lines than the budget has words can fit: none more are built.
    room, page_ranges = min(MAX_LINES_PER_PAGE, budget.max_words), []
    for a, b in ranges:
        if room == 0:
            break
        page_ranges.append((a, min(b, a + room - 1)))
        room -= page_ranges[-1][1] - a + 1
    more_after = sum(b - a + 1 for a, b in ranges) > sum(b - a + 1 for a, b in page_ranges)
    if fid is not None and page_ranges:
        lines_at, codes = line_marks(call, snap, fid, primary.snapshot_id)
        lo, hi = page_ranges[0][0], page_ranges[-1][1]
        i, j = np.searchsorted(lines_at, [lo, hi + 1])
        marks = {int(n): _MARK_OF[int(c)] for n, c in zip(lines_at[i:j], codes[i:j])}
    data.update(claim)
    if representation == "compact":
        data["legend"] = {"lines": "[number, mark, text]", "marks": MARKS}
    out_ranges: list[dict[str, Any]] = []
    for a, b in page_ranges:
        rows: list[list[Any] | dict[str, Any]] = []
        for n in range(a, b + 1):
            line = src[n - 1][:MAX_LINE_CHARS]
            mark = marks.get(n, "-")
            rows.append(
                [n, mark, line]
                if representation == "compact"
                else {"line": n, "status": MARKS[mark], "text": line}
            )
        out_ranges.append({"start": a, "end": b, "lines": rows})
    data["ranges"] = []
    # "false" is no shorter than "true": whatever it ends as, the fit holds.
    data["lines_truncated"] = False
    if out_ranges:
        # The fixed part and one line: what a page needs to make progress.
        first = out_ranges[0]
        data["ranges"] = [{"start": first["start"], "end": first["end"], "lines": first["lines"][:1]}]
        if not budget.fits(data):
            raise budget.too_small(*size(data))
        data["ranges"] = []
    # Fill ranges in order, cutting the last one to what the budget allows.
    for r in out_ranges:
        # "end" starts at its largest value so shrinking it later keeps the fit.
        entry = {"start": r["start"], "end": r["end"], "lines": []}
        data["ranges"].append(entry)
        kept = budget.fit_list(entry, "lines", r["lines"], whole=data)
        if kept == 0:
            data["ranges"].pop()
        else:
            entry["end"] = r["start"] + kept - 1
        if kept < len(r["lines"]):
            following = r["start"] + kept
            data["lines_truncated"] = True
            return {"data": data, "page": page(following)}
    data["lines_truncated"] = more_after
    return {"data": data, "page": page(page_ranges[-1][1] + 1 if more_after else None)}
