"""The payload format: every column type comes back exactly, and a frame that is not one is refused clearly.

A compacted snapshot's detail lives only in its payload, so a value that does
not round-trip is lost data; and the store may come from anyone, so a hostile
frame must be refused (``store_damaged``; a newer format ``store_unavailable``) before any column is trusted.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
import zstandard

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.storage import payload, payload_tables, restore, schema

HUGE = 2**62


def _empty() -> dict[str, dict[str, np.ndarray]]:
    return {
        t: {
            c: (np.zeros(0, dtype=object) if k in ("text", "blob") else np.zeros(0, dtype=k)) for c, k in cols
        }
        for t, cols in payload.DETAIL.items()
    }


def _hostile_tables() -> dict[str, dict[str, np.ndarray]]:
    """Every table with values at the edges: -1 branches, counts past 2**31 and 2**32, unicode, binary texts."""
    tables = _empty()
    tables["lines"] = {
        "file_id": np.array([0, 0, 0, 1, 1], np.int32),
        "line": np.array([1, 2, 70000, 1, 2**31 - 1], np.int32),
        "hits": np.array([0, 2**31, 2**32 + 5, HUGE, 1], np.int64),
    }
    tables["branches"] = {
        "file_id": np.array([0, 0, 0, 1], np.int32),
        "line": np.array([2, 2, 2, 9], np.int32),
        "block": np.array([0, 0, 7, 2**20], np.int32),
        "branch": np.array(["0", "1", "jump → ñ", "exception"], dtype=object),
        "taken": np.array([-1, 2**40, 0, -1], np.int64),
    }
    tables["functions"] = {
        "file_id": np.array([0, 1], np.int32),
        "name": np.array(["größe", "名前::λ<T>"], dtype=object),
        "start_line": np.array([1, 5], np.int32),
        "end_line": np.array([9, 5], np.int32),
        "hits": np.array([2**33, 0], np.int64),
    }
    tables["regions"] = {
        "file_id": np.array([1], np.int32),
        "start_line": np.array([3], np.int32),
        "start_col": np.array([1], np.int32),
        "end_line": np.array([4], np.int32),
        "end_col": np.array([80], np.int32),
        "hits": np.array([HUGE], np.int64),
        "kind": np.array([2], np.int8),
    }
    tables["test_names"] = {
        "test_id": np.array([0, 1, 2], np.int32),
        "name": np.array(["tests/test_ü.py::test_ä[🙂]", "", "t " * 300], dtype=object),
    }
    tables["test_observations"] = {
        "test_id": np.array([2, 0, 1, 0, 2], np.int32),
        "file_id": np.array([1, 0, 0, 0, 1], np.int32),
        "kind": np.array([0, 1, 0, 0, 2], np.int8),
        "line": np.array([2, 2, 1, 1, 5], np.int32),
        "item": np.array([0, 1, 0, 0, 0], np.int32),
        "hits": np.array([HUGE, -1, 3, 2**31 + 1, 1], np.int64),
    }
    tables["file_texts"] = {
        "file_id": np.array([0, 1, 2], np.int32),
        "text": np.array(["héllo\n".encode(), b"\xff\xfe\x00binary", b""], dtype=object),
    }
    return tables


def _rows(columns: dict[str, np.ndarray]) -> list[tuple[Any, ...]]:
    return list(zip(*(v.tolist() for v in columns.values())))


def _assert_same(back: dict[str, dict[str, np.ndarray]], tables: dict[str, dict[str, np.ndarray]]) -> None:
    assert list(back) == list(payload.DETAIL)
    for table, columns in payload.DETAIL.items():
        for name, kind in columns:
            if kind not in ("text", "blob"):
                assert back[table][name].dtype == np.dtype(kind), (table, name)
        got, want = _rows(back[table]), _rows(tables[table])
        if table in payload.REGROUPED:  # stored in an order of the payload's own: the same rows
            assert sorted(got) == sorted(want), table
        else:  # every other table keeps its row order (file detail orders ties by it)
            assert got == want, table


def test_every_column_type_round_trips_with_edge_values() -> None:
    tables = _hostile_tables()
    frame, size, rows = payload.encode(tables)
    assert rows == sum(len(next(iter(t.values()))) for t in tables.values())
    _assert_same(payload.decode(frame, max_bytes=size), tables)


def test_an_empty_snapshot_round_trips_to_empty_tables() -> None:
    frame, size, rows = payload.encode(_empty())
    assert rows == 0
    back = payload.decode(frame, max_bytes=size)
    _assert_same(back, _empty())
    assert all(len(v) == 0 for t in back.values() for v in t.values())


def test_a_single_row_per_table_round_trips() -> None:
    tables = {t: {c: v[:1] for c, v in cols.items()} for t, cols in _hostile_tables().items()}
    frame, size, rows = payload.encode(tables)
    assert rows == len(payload.DETAIL)
    _assert_same(payload.decode(frame, max_bytes=size), tables)


def test_long_columns_with_extreme_integers_round_trip_through_delta_and_plain_coding() -> None:
    rng = np.random.default_rng(7)
    n = 20_000
    tables = _empty()
    tables["lines"] = {
        "file_id": np.repeat(np.arange(n // 100, dtype=np.int32), 100),
        "line": np.tile(np.arange(1, 101, dtype=np.int32), n // 100),
        "hits": np.concatenate(
            [[np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0], rng.integers(0, 2, n - 4)]
        ).astype(np.int64),
    }
    tables["test_observations"] = {
        "test_id": rng.integers(0, 50, n).astype(np.int32),
        "file_id": rng.integers(0, 200, n).astype(np.int32),
        "kind": rng.integers(0, 3, n).astype(np.int8),
        "line": rng.integers(1, 10_000, n).astype(np.int32),
        "item": rng.integers(0, 4, n).astype(np.int32),
        "hits": rng.integers(-1, 2**45, n).astype(np.int64),
    }
    frame, size, _rows = payload.encode(tables)
    _assert_same(payload.decode(frame, max_bytes=size), tables)


def test_restored_columns_read_back_through_duckdb_with_the_tables_types(tmp_path: Path) -> None:
    """What the review tasks see: the restored view gives the same rows and SQL types as the relational table."""
    con = duckdb.connect(str(tmp_path / "store.duckdb"))
    schema.migrate(con)
    tables = _hostile_tables()
    frame, size, rows = payload.encode(tables)
    con.execute(
        "INSERT INTO snapshot_payloads (snap, format_version, row_count, detail_bytes, payload_bytes, "
        "created_at, content_sha256, digest_origin) VALUES (7, ?, ?, ?, ?, now(), ?, 'compaction')",
        [payload.FORMAT_VERSION, rows, size, len(frame), payload.digest(frame, max_bytes=size)],
    )
    payload_tables.write(con, 7, frame)
    reader = con.cursor()
    restore.ensure(reader, {7: "s7"}, {7: "s7"})
    for table, columns in payload.DETAIL.items():
        names = [c for c, _k in columns]
        got = reader.execute(f"SELECT snap, {', '.join(names)} FROM {table}").fetchall()
        want = [(7, *r) for r in _rows(tables[table])]
        if table in payload.REGROUPED:
            got, want = sorted(got), sorted(want)
        assert got == want, table
        types = reader.execute(f"SELECT * FROM {table} LIMIT 0").description
        assert [d[1] for d in types] == [
            d[1] for d in con.execute(f"SELECT * FROM main.{table} LIMIT 0").description
        ]
    # Only the asking connection sees them; the store's own tables are untouched.
    assert con.execute("SELECT count(*) FROM lines").fetchall() == [(0,)]
    reader.close()
    con.close()


# -- refusals ------------------------------------------------------------------------------------------


def _frame_with(edit: Callable[[dict[str, Any]], None]) -> tuple[bytes, int]:
    """A valid frame of the edge tables whose header ``edit`` changed (the column bytes left as they were)."""
    frame, _size, _rows = payload.encode(_hostile_tables())
    raw = zstandard.ZstdDecompressor().decompress(frame)
    start = len(payload.MAGIC) + 4
    (head_len,) = struct.unpack_from("<I", raw, len(payload.MAGIC))
    header = json.loads(raw[start : start + head_len])
    edit(header)
    head = json.dumps(header, separators=(",", ":")).encode()
    out = payload.MAGIC + struct.pack("<I", len(head)) + head + raw[start + head_len :]
    return zstandard.ZstdCompressor().compress(out), len(out) + 1024


def _refused(frame: bytes, max_bytes: int) -> CoverageError:
    with pytest.raises(CoverageError) as caught:
        payload.decode(frame, max_bytes=max_bytes)
    damaged = caught.value.details["reason"] == "payload_damaged"
    assert caught.value.code == (ErrorCode.STORE_DAMAGED if damaged else ErrorCode.STORE_UNAVAILABLE)
    return caught.value


def test_a_payload_of_a_newer_format_is_refused_by_name() -> None:
    def newer(header: dict[str, Any]) -> None:
        header["v"] = payload.FORMAT_VERSION + 1

    error = _refused(*_frame_with(newer))
    assert error.details["reason"] == "payload_format"
    assert error.details["format_version"] == payload.FORMAT_VERSION + 1
    assert f"format {payload.FORMAT_VERSION + 1}" in error.message and "Upgrade" in error.suggestion


@pytest.mark.parametrize("version", [None, "1", True, 0.5])
def test_a_payload_without_a_whole_number_format_is_damaged(version: Any) -> None:
    def odd(header: dict[str, Any]) -> None:
        header["v"] = version

    assert _refused(*_frame_with(odd)).details["reason"] == "payload_damaged"


def _column(header: dict[str, Any], table: str, name: str) -> list[Any]:
    return next(c for c in header["tables"][table]["columns"] if c[0] == name)


def _grow(table: str, name: str, part: int, by: int) -> Callable[[dict[str, Any]], None]:
    def edit(header: dict[str, Any]) -> None:
        _column(header, table, name)[3][part] += by

    return edit


def _rows_to(table: str, rows: int) -> Callable[[dict[str, Any]], None]:
    def edit(header: dict[str, Any]) -> None:
        header["tables"][table]["rows"] = rows

    return edit


def _how(table: str, name: str, how: Any) -> Callable[[dict[str, Any]], None]:
    def edit(header: dict[str, Any]) -> None:
        _column(header, table, name)[2] = how

    return edit


def _drop_table(header: dict[str, Any]) -> None:
    del header["tables"]["regions"]


def _rename_column(header: dict[str, Any]) -> None:
    _column(header, "lines", "hits")[0] = "hits2"


@pytest.mark.parametrize(
    "edit, why",
    [
        (_grow("lines", "hits", 0, 8), "bad length"),
        (_grow("file_texts", "text", 1, 8), "runs past the frame"),
        (_grow("lines", "hits", 0, -1), "bad length"),
        (_grow("test_names", "name", 0, 8), "bad offsets"),
        (_grow("functions", "name", 1, -1), "bad offsets"),
        (_rows_to("lines", 6), "bad length"),
        (_rows_to("lines", -1), "bad table entry"),
        (_rows_to("lines", 10**15), "bad length"),
        (_how("lines", "hits", ["d", 3]), "bad encoding"),
        (_how("lines", "hits", ["p", True]), "bad encoding"),
        (_how("functions", "name", [1, "p", 1]), "bad offsets"),
        (_how("functions", "name", ["2", "p", 1]), "bad dictionary"),
        (_drop_table, "unexpected header"),
        (_rename_column, "bad column"),
    ],
)
def test_a_header_whose_lengths_or_encodings_do_not_add_up_is_refused(edit, why: str) -> None:
    error = _refused(*_frame_with(edit))
    assert error.details["reason"] == "payload_damaged"
    assert why in error.message


def test_a_truncated_frame_is_refused() -> None:
    frame, size, _rows = payload.encode(_hostile_tables())
    for cut in (0, 1, len(frame) // 2, len(frame) - 1):
        assert _refused(frame[:cut], size).details["reason"] == "payload_damaged"


def test_a_frame_whose_decompressed_bytes_are_cut_or_padded_is_refused() -> None:
    frame, size, _rows = payload.encode(_hostile_tables())
    raw = zstandard.ZstdDecompressor().decompress(frame)
    for bad, why in (
        (raw[:-3], "runs past the frame"),
        (raw + b"\0", "trailing bytes"),
        (raw[: len(payload.MAGIC) + 2], "not a payload frame"),
        (b"NOTAPAYL" + raw[len(payload.MAGIC) :], "not a payload frame"),
        (
            raw[: len(payload.MAGIC)] + struct.pack("<I", 2**31) + raw[len(payload.MAGIC) + 4 :],
            "unreadable header",
        ),
    ):
        error = _refused(zstandard.ZstdCompressor().compress(bad), size + 64)
        assert error.details["reason"] == "payload_damaged" and why in error.message, why


def test_bytes_that_are_not_zstd_are_refused() -> None:
    for junk in (b"", b"hello", bytes(range(256)) * 4):
        assert _refused(junk, 1 << 20).details["reason"] == "payload_damaged"


def test_text_that_is_not_utf8_is_refused() -> None:
    tables = _hostile_tables()
    frame, size, _rows = payload.encode(tables)
    raw = bytearray(zstandard.ZstdDecompressor().decompress(frame))
    name = "größe".encode()
    at = raw.index(name)
    raw[at : at + 2] = b"\xff\xfe"
    error = _refused(zstandard.ZstdCompressor().compress(bytes(raw)), size + 64)
    assert "not UTF-8" in error.message


def _offset(header: dict[str, Any], table: str, name: str) -> int:
    """Where a column's bytes start, counted from the end of the header (columns follow in header order)."""
    at = 0
    for t, entry in header["tables"].items():
        for column in entry["columns"]:
            if (t, column[0]) == (table, name):
                return at
            at += sum(column[3])
    raise KeyError(name)


def test_codes_outside_the_dictionary_are_refused() -> None:
    tables = _empty()
    tables["test_names"] = {
        "test_id": np.arange(100, dtype=np.int32),
        "name": np.array([f"t{i % 3}" for i in range(100)], dtype=object),
    }
    frame, size, _rows = payload.encode(tables)
    raw = zstandard.ZstdDecompressor().decompress(frame)
    start = len(payload.MAGIC) + 4
    (head_len,) = struct.unpack_from("<I", raw, len(payload.MAGIC))
    header = json.loads(raw[start : start + head_len])
    body = bytearray(raw[start + head_len :])
    # Cut the dictionary to its first two words (consistently) while the codes still reach the third.
    spec = _column(header, "test_names", "name")
    at, (ends_len, text_len, _codes_len) = _offset(header, "test_names", "name"), spec[3]
    ends = np.frombuffer(bytes(body[at : at + ends_len]), dtype="<i8")
    assert spec[2][0] == len(ends) == 3
    kept_ends, kept_text = ends[:2].tobytes(), bytes(body[at + ends_len : at + ends_len + int(ends[1])])
    body[at : at + ends_len + text_len] = kept_ends + kept_text
    spec[2][0], spec[3][0], spec[3][1] = 2, len(kept_ends), len(kept_text)
    head = json.dumps(header, separators=(",", ":")).encode()
    bad = payload.MAGIC + struct.pack("<I", len(head)) + head + bytes(body)
    error = _refused(zstandard.ZstdCompressor().compress(bad), size + 64)
    assert error.details["reason"] == "payload_damaged" and "bad codes" in error.message


def test_a_frame_larger_than_its_recorded_size_is_refused_without_decompressing_it_whole() -> None:
    frame, size, _rows = payload.encode(_hostile_tables())
    error = _refused(frame, size - 1)
    assert error.details["reason"] == "payload_damaged"


def test_mismatched_column_lengths_are_refused_when_encoding() -> None:
    tables = _hostile_tables()
    tables["lines"]["hits"] = tables["lines"]["hits"][:-1]
    with pytest.raises(ValueError, match=r"lines\.hits"):
        payload.encode(tables)


# -- run-length columns (format 2) and format 1 ------------------------------------------------------


def _observed(n_lines: int = 400, n_tests: int = 30) -> dict[str, dict[str, np.ndarray]]:
    """Observations as a suite leaves them: every test over the same lines, so the key columns are runs."""
    tables = _empty()
    lines = np.arange(1, n_lines + 1, dtype=np.int32)
    tables["test_observations"] = {
        "test_id": np.repeat(np.arange(n_tests, dtype=np.int32), n_lines),
        "file_id": np.zeros(n_lines * n_tests, np.int32),
        "kind": np.zeros(n_lines * n_tests, np.int8),
        "line": np.tile(lines, n_tests),
        "item": np.zeros(n_lines * n_tests, np.int32),
        "hits": np.tile(np.where(lines % 7 == 0, 2**35, 1), n_tests).astype(np.int64),
    }
    return tables


def _header(frame: bytes) -> dict[str, Any]:
    raw = zstandard.ZstdDecompressor().decompress(frame)
    (head_len,) = struct.unpack_from("<I", raw, len(payload.MAGIC))
    return json.loads(raw[len(payload.MAGIC) + 4 : len(payload.MAGIC) + 4 + head_len])


def test_sorted_key_columns_are_stored_as_runs_and_come_back_whole() -> None:
    tables = _observed()
    frame, size, _rows = payload.encode(tables)
    header = _header(frame)
    assert header["v"] == payload.FORMAT_VERSION == 2
    assert _column(header, "test_observations", "line")[2][0] == "r"
    _assert_same(payload.decode(frame, max_bytes=size), tables)


def _runs_to(count: int) -> Callable[[dict[str, Any]], None]:
    def edit(header: dict[str, Any]) -> None:
        _column(header, "test_observations", "line")[2][1] = count

    return edit


def test_runs_that_do_not_cover_the_rows_are_refused() -> None:
    def frame_with(edit: Callable[[dict[str, Any]], None]) -> tuple[bytes, int]:
        frame, _size, _rows = payload.encode(_observed())
        raw = zstandard.ZstdDecompressor().decompress(frame)
        header = _header(frame)
        edit(header)
        start = len(payload.MAGIC) + 4 + struct.unpack_from("<I", raw, len(payload.MAGIC))[0]
        head = json.dumps(header, separators=(",", ":")).encode()
        out = payload.MAGIC + struct.pack("<I", len(head)) + head + raw[start:]
        return zstandard.ZstdCompressor().compress(out), len(out) + 64

    runs = _column(_header(payload.encode(_observed())[0]), "test_observations", "line")[2][1]
    assert runs == 400  # the 400 lines, each a run of the 30 tests
    for edit in (_runs_to(runs + 1), _runs_to(-1), _runs_to(10**9), _runs_to(0)):
        error = _refused(*frame_with(edit))
        assert error.details["reason"] == "payload_damaged"
        assert "test_observations.line" in error.message


def test_run_lengths_that_wrap_around_to_the_row_count_are_refused() -> None:
    tables = _empty()
    tables["lines"] = {
        "file_id": np.zeros(200, np.int32),
        "line": np.arange(200, dtype=np.int32),
        "hits": np.repeat(np.arange(4, dtype=np.int64), 50),
    }
    frame, _size, _rows = payload.encode(tables)
    raw = zstandard.ZstdDecompressor().decompress(frame)
    header = _header(frame)
    spec = _column(header, "lines", "hits")
    assert spec[2][0] == "r" and spec[2][1] == 4
    start = len(payload.MAGIC) + 4 + struct.unpack_from("<I", raw, len(payload.MAGIC))[0]
    body = bytearray(raw[start:])
    # Four runs of about 2**62 rows each: their int64 sum wraps around to 200 (8-byte lengths, shuffled).
    lengths = np.array([2**62, 2**62, 2**62, 2**62 + 200], dtype="<i8")
    at = _offset(header, "lines", "hits") + spec[3][0]
    body[at : at + spec[3][1]] = np.ascontiguousarray(lengths.view(np.uint8).reshape(-1, 8).T).tobytes()
    spec[2][4], spec[3][1] = 8, 32
    head = json.dumps(header, separators=(",", ":")).encode()
    bad = payload.MAGIC + struct.pack("<I", len(head)) + head + bytes(body)
    error = _refused(zstandard.ZstdCompressor().compress(bad), len(bad) + 64)
    assert "bad runs of lines.hits" in error.message


def test_a_format_1_payload_still_reads_and_may_not_hold_runs() -> None:
    tables = _hostile_tables()  # too short for runs: a valid format 1 frame once labelled so

    def one(header: dict[str, Any]) -> None:
        header["v"] = 1

    frame, size = _frame_with(one)
    _assert_same(payload.decode(frame, max_bytes=size), tables)
    frame, size, _rows = payload.encode(_observed())
    raw = zstandard.ZstdDecompressor().decompress(frame)
    header = _header(frame)
    header["v"] = 1
    start = len(payload.MAGIC) + 4 + struct.unpack_from("<I", raw, len(payload.MAGIC))[0]
    head = json.dumps(header, separators=(",", ":")).encode()
    out = payload.MAGIC + struct.pack("<I", len(head)) + head + raw[start:]
    error = _refused(zstandard.ZstdCompressor().compress(out), len(out) + 64)
    assert error.details["reason"] == "payload_damaged"
