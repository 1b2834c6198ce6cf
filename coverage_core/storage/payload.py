"""A compacted snapshot's detail as one zstd frame of NumPy columns.

Layout of the decompressed frame: ``MAGIC``, a little-endian uint32 header
length, the header (JSON: per table its row count and per column its kind,
encoding and byte lengths), then every column's bytes in header order.
Integer columns are narrowed to the smallest integer type, delta-coded when
that compresses better, and stored as byte planes (all first bytes, then all
second bytes...), which zstd compresses far better than whole values; a
column of long runs (format 2) is its run values (coded so) and run lengths. Text
columns are a dictionary of their distinct values (int64 end offsets and
UTF-8 bytes) plus integer codes; blob columns are offsets and bytes. No
pickle, no JSON per row: decoding is ``np.frombuffer`` and array arithmetic.
Rows keep their stored order, except the named-test observations, which no
reader takes in any order of theirs: they are stored by (file, kind, line,
item, test), where one line's hits under successive tests sit side by side
(on the SQLite snapshot this alone takes a third off the payload). The frame
is compressed at ``ZSTD_LEVEL``.

Integrity: the frame carries zstd's content checksum, and the payload row the
SHA-256 of the decompressed frame (``digest``), which restore checks before
a byte is decoded, so a flipped bit or an edited payload is ``store_damaged``
naming the snapshot, never a different answer. The store may sit in a folder
anyone could have committed to, so decoding also trusts nothing: the frame's size is capped before it is decompressed, the
header must name exactly the tables and columns ``DETAIL`` declares with their
dtypes, and every length must add up to the bytes present.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import zstandard

from ..errors import CoverageError, ErrorCode

if TYPE_CHECKING:
    import numpy as np

FORMAT_VERSION = 2
# Formats this version reads: 1 (no run-length columns) and 2 (run-length "r" integer columns).
READS = (1, 2)
MAGIC = b"CMCPAYL1"
ZSTD_LEVEL = (
    17  # on the SQLite snapshot: 9 gives 11.5-13x, 17 12.9-14.5x at about twice the time, 19 +3% at 4x
)

# The detail tables a payload holds, each with its columns (``snap`` is implied)
# and their kind: a NumPy dtype for numbers, "text" for VARCHAR, "blob" for BLOB.
DETAIL: dict[str, tuple[tuple[str, str], ...]] = {
    "lines": (("file_id", "<i4"), ("line", "<i4"), ("hits", "<i8")),
    "branches": (("file_id", "<i4"), ("line", "<i4"), ("block", "<i4"), ("branch", "text"), ("taken", "<i8")),
    "functions": (
        ("file_id", "<i4"),
        ("name", "text"),
        ("start_line", "<i4"),
        ("end_line", "<i4"),
        ("hits", "<i8"),
    ),
    "regions": (
        ("file_id", "<i4"),
        ("start_line", "<i4"),
        ("start_col", "<i4"),
        ("end_line", "<i4"),
        ("end_col", "<i4"),
        ("hits", "<i8"),
        ("kind", "<i1"),
    ),
    "test_names": (("test_id", "<i4"), ("name", "text")),
    "test_observations": (
        ("test_id", "<i4"),
        ("file_id", "<i4"),
        ("kind", "<i1"),
        ("line", "<i4"),
        ("item", "<i4"),
        ("hits", "<i8"),
    ),
    "file_texts": (("file_id", "<i4"), ("text", "blob")),
}

# Tables keyed by ``snap`` that stay relational when a snapshot is compacted:
# what compact answers read (totals, file summaries, precomputed answers).
KEPT = (
    "snapshot_totals",
    "files",
    "uncovered_ranges",
    "uncovered_targets",
    "test_signatures",
    "snapshot_payloads",
    "excluded_lines",  # a few line numbers per file, read by the file and source answers without a restore
)

Columns = dict[str, "np.ndarray"]

# Tables whose rows a payload stores in its own order (``_regrouped``): no reader depends on theirs.
REGROUPED = ("test_observations",)


class _Damaged(Exception):
    """Raised inside decoding with what is wrong; ``decode`` turns it into the error naming the snapshot."""


def _corrupt(why: str, snapshot: str | None = None) -> CoverageError:
    which = f"snapshot {snapshot}" if snapshot else "a compacted snapshot"
    return CoverageError(
        ErrorCode.STORE_DAMAGED,
        f"the payload of {which} is damaged ({why})",
        "The snapshot's detail cannot be restored; its totals and summaries still answer. Restore the store "
        f"from a backup, or delete the snapshot (`coverage-mcp snapshots rm {snapshot or 'ID'}`) and re-import "
        "its report if you still need its detail.",
        {"reason": "payload_damaged", "snapshot_id": snapshot},
    )


def _newer(version: Any) -> CoverageError:
    return CoverageError(
        ErrorCode.STORE_UNAVAILABLE,
        f"a compacted snapshot's payload is in format {version!r}; this version of coverage-mcp reads formats "
        f"{', '.join(map(str, READS))}",
        "Upgrade coverage-mcp to the version that compacted this store; its totals and summaries still answer.",
        {
            "reason": "payload_format",
            "format_version": version if isinstance(version, int) else None,
            "supported": list(READS),
        },
    )


# Decompressed frames are capped at this multiple of the recorded detail size (and this floor).
_SLACK = 1.01
_FLOOR = 1 << 20

_STORED = ("<i1", "<i2", "<i4", "<i8")


def _narrow(values: np.ndarray) -> np.ndarray:
    """The smallest signed little-endian integer dtype holding every value."""
    import numpy as np

    if not len(values):
        return values.astype("<i1")
    lo, hi = int(values.min()), int(values.max())
    for dtype in _STORED:
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return values.astype(dtype)
    raise ValueError("integer column out of range")


def _shuffle(values: np.ndarray) -> bytes:
    """Byte planes: every value's first byte, then every second byte, ... (zstd finds the runs)."""
    import numpy as np

    return np.ascontiguousarray(values.view(np.uint8).reshape(-1, values.dtype.itemsize).T).tobytes()


def _unshuffle(data: bytes | memoryview, dtype: str, n: int) -> np.ndarray:
    import numpy as np

    size = np.dtype(dtype).itemsize
    planes = np.frombuffer(data, dtype=np.uint8).reshape(size, n)
    return np.ascontiguousarray(planes.T).view(dtype).reshape(n)


def _numbers(values: np.ndarray) -> tuple[list[Any], bytes]:
    """([mode, stored dtype], bytes) of an integer column: plain or delta ("d", running differences),
    narrowed and byte-shuffled, whichever zstd compresses smaller."""
    import numpy as np

    wide = np.asarray(values).astype(np.int64)
    plain = _narrow(wide)
    delta = _narrow(np.diff(wide, prepend=np.int64(0))) if len(wide) else plain
    fast = zstandard.ZstdCompressor(level=1)
    a, b = _shuffle(plain), _shuffle(delta)
    if len(wide) > 64 and len(fast.compress(b)) < len(fast.compress(a)):
        return ["d", delta.dtype.itemsize], b
    return ["p", plain.dtype.itemsize], a


def _column(values: np.ndarray) -> tuple[list[Any], list[bytes]]:
    """(how, parts) of an integer column: ``_numbers``, or as runs when that compresses smaller:
    ["r", runs, <the run values' mode and size>, <the run lengths' size>] and [values, lengths]
    (sorted key columns, like the observations' file, kind, line and item, are long runs)."""
    import numpy as np

    mode, packed = _numbers(values)
    n = len(values)
    if n <= 64:
        return mode, [packed]
    wide = values.astype(np.int64)
    starts = np.flatnonzero(np.concatenate([[True], wide[1:] != wide[:-1]]))
    if len(starts) > n // 4:
        return mode, [packed]
    run_mode, run_values = _numbers(wide[starts])
    lengths = _narrow(np.diff(np.append(starts, n)))
    parts = [run_values, _shuffle(lengths)]
    fast = zstandard.ZstdCompressor(level=1)
    if len(fast.compress(b"".join(parts))) < len(fast.compress(packed)):
        return ["r", len(starts), *run_mode, lengths.dtype.itemsize], parts
    return mode, [packed]


def _strings(items: list[bytes]) -> list[bytes]:
    """int64 end offsets, then the concatenated bytes."""
    import numpy as np

    ends = np.cumsum([len(b) for b in items], dtype=np.int64) if items else np.zeros(0, np.int64)
    return [ends.astype("<i8").tobytes(), b"".join(items)]


def _regrouped(data: Columns) -> Columns:
    """Named-test observations in (file, kind, line, item, test) order.

    Every reader of observations aggregates them (or orders them itself), so their order carries
    no meaning; in this one the key columns are long runs and one line's hits under successive
    tests sit side by side (a third less payload on the SQLite snapshot)."""
    import numpy as np

    order = np.lexsort([np.asarray(data[c]) for c in ("test_id", "item", "line", "kind", "file_id")])
    return {c: np.asarray(v)[order] for c, v in data.items()}


def encode(tables: dict[str, Columns], *, level: int | None = None) -> tuple[bytes, int, int]:
    """(zstd frame, uncompressed bytes, rows) of the detail ``tables`` (every table of ``DETAIL``).

    Integer columns are narrowed, optionally delta-coded and byte-shuffled; text columns are a
    dictionary (its distinct values) and the narrowed codes; blobs are offsets and bytes. The rows
    keep their order, except the named-test observations (``_regrouped``)."""
    import numpy as np

    header: dict[str, Any] = {"v": FORMAT_VERSION, "tables": {}}
    chunks: list[bytes] = []
    rows = 0
    for table, columns in DETAIL.items():
        data = tables[table]
        if table in REGROUPED:
            data = _regrouped(data)
        n = len(data[columns[0][0]]) if columns else 0
        rows += n
        spec = []
        for name, kind in columns:
            values = data[name]
            if len(values) != n:
                raise ValueError(f"{table}.{name} has {len(values)} values, not {n}")
            if kind == "text":
                uniques, codes = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
                mode, packed = _numbers(codes.reshape(-1))
                parts = [*_strings([u.encode("utf-8") for u in uniques.tolist()]), packed]
                how: list[Any] = [len(uniques), *mode]
            elif kind == "blob":
                parts, how = _strings([bytes(v) for v in values]), []
            else:
                how, parts = _column(np.asarray(values))
            spec.append([name, kind, how, [len(p) for p in parts]])
            chunks.extend(parts)
        header["tables"][table] = {"rows": n, "columns": spec}
    head = json.dumps(header, separators=(",", ":")).encode()
    raw = b"".join([MAGIC, struct.pack("<I", len(head)), head, *chunks])
    frame = zstandard.ZstdCompressor(
        level=ZSTD_LEVEL if level is None else level, write_content_size=True, write_checksum=True
    ).compress(raw)
    return frame, len(raw), rows


def _decompress(frame: bytes, max_bytes: int, snapshot: str | None) -> bytes:
    try:
        return zstandard.ZstdDecompressor().decompress(frame, max_output_size=max_bytes)
    except zstandard.ZstdError as error:
        raise _corrupt(f"zstd: {error}", snapshot) from None


def digest(frame: bytes, *, max_bytes: int) -> str:
    """The SHA-256 (hex) of the decompressed ``frame``: what its payload row records and restore checks.

    Taken of the decompressed bytes, not the frame, so it vouches for exactly what ``decode`` reads; a frame
    that does not decompress is ``store_damaged``."""
    return hashlib.sha256(_decompress(frame, max_bytes, None)).hexdigest()


def _decode_strings(view: memoryview, pos: int, sizes: list[int], n: int, where: str) -> list[bytes]:
    import numpy as np

    if sizes[0] != 8 * n:
        raise _Damaged(f"bad offsets of {where}")
    ends = np.frombuffer(view[pos : pos + sizes[0]], dtype="<i8")
    data = bytes(view[pos + sizes[0] : pos + sizes[0] + sizes[1]])
    if n and (ends[-1] != sizes[1] or ends[0] < 0 or np.any(np.diff(ends) < 0)):
        raise _Damaged(f"bad offsets of {where}")
    starts = [0, *ends[:-1].tolist()] if n else []
    return [data[a:b] for a, b in zip(starts, ends.tolist())]


def _decode_numbers(
    view: memoryview, pos: int, size: int, how: Any, n: int, kind: str, where: str
) -> np.ndarray:
    import numpy as np

    if not (
        isinstance(how, list)
        and len(how) == 2
        and how[0] in ("p", "d")
        and how[1] in (1, 2, 4, 8)
        and not isinstance(how[1], bool)
    ):
        raise _Damaged(f"bad encoding of {where}")
    if size != n * how[1]:
        raise _Damaged(f"bad length of {where}")
    values = _unshuffle(view[pos : pos + size], f"<i{how[1]}", n)
    if how[0] == "d":
        values = np.cumsum(values, dtype=np.int64)
    return values.astype(kind, copy=False)


def _decode_runs(
    view: memoryview, pos: int, sizes: list[int], how: list[Any], n: int, kind: str, where: str
) -> np.ndarray:
    import numpy as np

    if not (len(how) == 5 and isinstance(how[1], int) and not isinstance(how[1], bool) and 0 <= how[1] <= n):
        raise _Damaged(f"bad runs of {where}")
    values = _decode_numbers(view, pos, sizes[0], how[2:4], how[1], "<i8", where)
    lengths = _decode_numbers(view, pos + sizes[0], sizes[1], ["p", how[4]], how[1], "<i8", where)
    if (how[1] and (lengths.min() < 1 or lengths.max() > n or int(lengths.sum()) != n)) or (not how[1] and n):
        raise _Damaged(f"bad runs of {where}")
    return np.repeat(values, lengths).astype(kind, copy=False)


def decode(
    frame: bytes,
    *,
    max_bytes: int,
    only: Iterable[str] | None = None,
    expect: str | None = None,
    snapshot: str | None = None,
) -> dict[str, Columns]:
    """The detail tables of a payload frame (``only``: just these, the others' bytes still checked);
    ``store_damaged`` (payload_damaged, naming ``snapshot``) when it is not one or its content's SHA-256 is not
    ``expect`` (checked first, when given), ``store_unavailable`` (payload_format) when a newer version wrote
    it. ``max_bytes`` caps the decompressed size (the payload row's recorded detail bytes)."""
    wanted = set(DETAIL if only is None else only)
    raw = _decompress(frame, max_bytes, snapshot)
    if expect is not None and hashlib.sha256(raw).hexdigest() != expect:
        raise _corrupt("its content does not match the digest recorded when it was written", snapshot)
    try:
        return _decoded(raw, max_bytes, wanted)
    except _Damaged as damage:
        raise _corrupt(str(damage), snapshot) from None


def _decoded(raw: bytes, max_bytes: int, wanted: set[str]) -> dict[str, Columns]:
    import numpy as np

    if len(raw) > max_bytes or not raw.startswith(MAGIC) or len(raw) < len(MAGIC) + 4:
        raise _Damaged("not a payload frame")
    (head_len,) = struct.unpack_from("<I", raw, len(MAGIC))
    pos = len(MAGIC) + 4
    try:
        header = json.loads(raw[pos : pos + head_len])
        tables = header["tables"]
    except (ValueError, TypeError, KeyError):
        raise _Damaged("unreadable header") from None
    pos += head_len
    if not isinstance(header, dict) or not isinstance(header.get("v"), int) or isinstance(header["v"], bool):
        raise _Damaged("unexpected header")
    if header["v"] not in READS:
        raise _newer(header["v"])
    if not isinstance(tables, dict) or set(tables) != set(DETAIL):
        raise _Damaged("unexpected header")
    view = memoryview(raw)
    out: dict[str, Columns] = {}
    for table, columns in DETAIL.items():
        entry = tables[table]
        n = entry.get("rows") if isinstance(entry, dict) else None
        spec = entry.get("columns") if isinstance(entry, dict) else None
        if not isinstance(n, int) or n < 0 or not isinstance(spec, list) or len(spec) != len(columns):
            raise _Damaged(f"bad table entry {table}")
        cols: Columns = {}
        for (name, kind), given in zip(columns, spec):
            where = f"{table}.{name}"
            if not (
                isinstance(given, list)
                and len(given) == 4
                and given[:2] == [name, kind]
                and isinstance(given[3], list)
            ):
                raise _Damaged(f"bad column {where}")
            how, sizes = given[2], given[3]
            runs = (
                kind not in ("text", "blob")
                and isinstance(how, list)
                and how[:1] == ["r"]
                and header["v"] >= 2
            )
            expected = 3 if kind == "text" else 2 if kind == "blob" or runs else 1
            if (
                len(sizes) != expected
                or not all(isinstance(x, int) and x >= 0 for x in sizes)
                or pos + sum(sizes) > len(raw)
            ):
                raise _Damaged(f"column {where} runs past the frame")
            if table in wanted:
                if kind == "text":
                    if not (
                        isinstance(how, list) and len(how) == 3 and isinstance(how[0], int) and how[0] >= 0
                    ):
                        raise _Damaged(f"bad dictionary of {where}")
                    try:
                        uniques = np.array(
                            [u.decode("utf-8") for u in _decode_strings(view, pos, sizes[:2], how[0], where)]
                            + [""],
                            dtype=object,
                        )
                    except UnicodeDecodeError:
                        raise _Damaged(f"{where} is not UTF-8") from None
                    codes = _decode_numbers(
                        view, pos + sizes[0] + sizes[1], sizes[2], how[1:], n, "<i8", where
                    )
                    if n and (codes.min() < 0 or codes.max() >= how[0]):
                        raise _Damaged(f"bad codes of {where}")
                    values = uniques[codes]
                elif kind == "blob":
                    values = np.empty(n, dtype=object)
                    values[:] = _decode_strings(view, pos, sizes, n, where)
                elif runs:
                    values = _decode_runs(view, pos, sizes, how, n, kind, where)
                else:
                    values = _decode_numbers(view, pos, sizes[0], how, n, kind, where)
                cols[name] = values
            pos += sum(sizes)
        if table in wanted:
            out[table] = cols
    if pos != len(raw):
        raise _Damaged("trailing bytes")
    return out
