"""A compacted snapshot's detail as one zstd frame of NumPy columns.

Layout of the decompressed frame: ``MAGIC``, a little-endian uint32 header
length, the header (JSON: per table its row count and per column its kind,
dtype and byte length), then every column's bytes in header order. Numbers
are raw little-endian arrays; text and blob columns are int64 end offsets
followed by the concatenated bytes (UTF-8 for text). No pickle, no JSON per
row: decoding is ``np.frombuffer`` plus one slice per string.

The store may sit in a folder anyone could have committed to, so decoding
trusts nothing: the frame's size is capped before it is decompressed, the
header must name exactly the tables and columns ``DETAIL`` declares with their
dtypes, and every length must add up to the bytes present.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import zstandard

from ..errors import CoverageError, ErrorCode

FORMAT_VERSION = 1
MAGIC = b"CMCPAYL1"
ZSTD_LEVEL = 9

# The detail tables a payload holds, each with its columns (``snap`` is implied)
# and their kind: a NumPy dtype for numbers, "text" for VARCHAR, "blob" for BLOB.
DETAIL: dict[str, tuple[tuple[str, str], ...]] = {
    "lines": (("file_id", "<i4"), ("line", "<i4"), ("hits", "<i8")),
    "branches": (("file_id", "<i4"), ("line", "<i4"), ("block", "<i4"), ("branch", "text"), ("taken", "<i8")),
    "functions": (("file_id", "<i4"), ("name", "text"), ("start_line", "<i4"), ("end_line", "<i4"),
                  ("hits", "<i8")),
    "regions": (("file_id", "<i4"), ("start_line", "<i4"), ("start_col", "<i4"), ("end_line", "<i4"),
                ("end_col", "<i4"), ("hits", "<i8"), ("kind", "<i1")),
    "test_names": (("test_id", "<i4"), ("name", "text")),
    "test_observations": (("test_id", "<i4"), ("file_id", "<i4"), ("kind", "<i1"), ("line", "<i4"),
                          ("item", "<i4"), ("hits", "<i8")),
    "file_texts": (("file_id", "<i4"), ("text", "blob")),
}

# Tables keyed by ``snap`` that stay relational when a snapshot is compacted:
# what compact answers read (totals, file summaries, precomputed answers).
KEPT = ("snapshot_totals", "files", "uncovered_ranges", "uncovered_targets", "test_signatures",
        "snapshot_payloads")

Columns = dict[str, np.ndarray]


def _corrupt(why: str) -> CoverageError:
    return CoverageError(
        ErrorCode.STORE_UNAVAILABLE, f"a compacted snapshot's payload is damaged ({why})",
        "The snapshot's detail cannot be restored; its totals and summaries still answer. Delete the "
        "snapshot (`coverage-mcp snapshots rm ID`) and re-import its report if you still need its detail.",
        {"reason": "payload_damaged"},
    )


def encode(tables: dict[str, Columns]) -> tuple[bytes, int, int]:
    """(zstd frame, uncompressed bytes, rows) of the detail ``tables`` (every table of ``DETAIL``)."""
    header: dict[str, Any] = {"v": FORMAT_VERSION, "tables": {}}
    chunks: list[bytes] = []
    rows = 0
    for table, columns in DETAIL.items():
        data = tables[table]
        n = len(data[columns[0][0]]) if columns else 0
        rows += n
        spec = []
        for name, kind in columns:
            values = data[name]
            if len(values) != n:
                raise ValueError(f"{table}.{name} has {len(values)} values, not {n}")
            if kind in ("text", "blob"):
                items = [v.encode("utf-8") if kind == "text" else bytes(v) for v in values]
                ends = np.cumsum([len(b) for b in items], dtype=np.int64) if items else np.zeros(0, np.int64)
                parts = [ends.astype("<i8").tobytes(), b"".join(items)]
            else:
                parts = [np.ascontiguousarray(values, dtype=kind).tobytes()]
            spec.append([name, kind, [len(p) for p in parts]])
            chunks.extend(parts)
        header["tables"][table] = {"rows": n, "columns": spec}
    head = json.dumps(header, separators=(",", ":")).encode()
    raw = b"".join([MAGIC, struct.pack("<I", len(head)), head, *chunks])
    frame = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True).compress(raw)
    return frame, len(raw), rows


def decode(frame: bytes, *, max_bytes: int) -> dict[str, Columns]:
    """The detail tables of a payload frame; ``store_unavailable`` (payload_damaged) when it is not one.
    ``max_bytes`` caps the decompressed size (the payload row's recorded detail bytes)."""
    try:
        raw = zstandard.ZstdDecompressor().decompress(frame, max_output_size=max_bytes)
    except zstandard.ZstdError as error:
        raise _corrupt(f"zstd: {error}") from None
    if len(raw) > max_bytes or not raw.startswith(MAGIC) or len(raw) < len(MAGIC) + 4:
        raise _corrupt("not a payload frame")
    (head_len,) = struct.unpack_from("<I", raw, len(MAGIC))
    pos = len(MAGIC) + 4
    try:
        header = json.loads(raw[pos:pos + head_len])
        tables = header["tables"]
    except (ValueError, TypeError, KeyError):
        raise _corrupt("unreadable header") from None
    pos += head_len
    if header.get("v") != FORMAT_VERSION or not isinstance(tables, dict) or set(tables) != set(DETAIL):
        raise _corrupt("unexpected header")
    view = memoryview(raw)
    out: dict[str, Columns] = {}
    for table, columns in DETAIL.items():
        entry = tables[table]
        n = entry.get("rows") if isinstance(entry, dict) else None
        spec = entry.get("columns") if isinstance(entry, dict) else None
        if not isinstance(n, int) or n < 0 or not isinstance(spec, list) or len(spec) != len(columns):
            raise _corrupt(f"bad table entry {table}")
        cols: Columns = {}
        for (name, kind), given in zip(columns, spec):
            if not isinstance(given, list) or given[:2] != [name, kind] or not isinstance(given[2], list):
                raise _corrupt(f"bad column {table}.{name}")
            sizes = given[2]
            if not all(isinstance(s, int) and s >= 0 for s in sizes) or pos + sum(sizes) > len(raw):
                raise _corrupt(f"column {table}.{name} runs past the frame")
            if kind in ("text", "blob"):
                if len(sizes) != 2 or sizes[0] != 8 * n:
                    raise _corrupt(f"bad offsets of {table}.{name}")
                ends = np.frombuffer(view[pos:pos + sizes[0]], dtype="<i8")
                data = bytes(view[pos + sizes[0]:pos + sizes[0] + sizes[1]])
                if n and (ends[-1] != sizes[1] or np.any(np.diff(ends) < 0) or ends[0] < 0):
                    raise _corrupt(f"bad offsets of {table}.{name}")
                starts = np.concatenate([[0], ends[:-1]]) if n else ends
                if kind == "text":
                    try:
                        items = [data[a:b].decode("utf-8") for a, b in zip(starts.tolist(), ends.tolist())]
                    except UnicodeDecodeError:
                        raise _corrupt(f"{table}.{name} is not UTF-8") from None
                else:
                    items = [data[a:b] for a, b in zip(starts.tolist(), ends.tolist())]
                values = np.empty(n, dtype=object)
                values[:] = items
            else:
                if len(sizes) != 1 or sizes[0] != n * np.dtype(kind).itemsize:
                    raise _corrupt(f"bad length of {table}.{name}")
                values = np.frombuffer(view[pos:pos + sizes[0]], dtype=kind)
            pos += sum(sizes)
            cols[name] = values
        out[table] = cols
    if pos != len(raw):
        raise _corrupt("trailing bytes")
    return out
