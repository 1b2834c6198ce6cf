"""Integrity of compacted payloads: a changed byte is ``store_damaged`` naming the snapshot, never another answer.

Every flip is written through DuckDB into a real store's payload row and read
back by restore on a fresh connection, as the review tasks read it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import duckdb
import pytest
import zstandard

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.service import Service
from coverage_core.storage import payload, payload_tables, restore, schema


def _compacted(repo: Path) -> tuple[Path, str, int]:
    """(store path, snapshot id, snap) of the sample's older snapshot, compacted."""
    with open_project(repo) as project:
        service = Service(project)
        old = service.call("coverage_import", {"report_path": "step1.coverage.json"})
        service.call("coverage_import", {"report_path": "step3.coverage.json"})
        project.compact(older_than="0")
        snapshot_id = old["data"]["snapshot"]["snapshot_id"]
        snap = project.store.con.execute(
            "SELECT snap FROM snapshots WHERE snapshot_id = ?", [snapshot_id]
        ).fetchall()[0][0]
        return project.store.path, snapshot_id, snap


def _restored(
    con: duckdb.DuckDBPyConnection, snap: int, snapshot_id: str
) -> dict[str, list[tuple[Any, ...]]]:
    """Every detail table of the snapshot as restore gives it, on a connection of its own."""
    reader = con.cursor()
    try:
        restore.ensure(reader, {snap: snapshot_id}, {snap: snapshot_id})
        return {
            table: sorted(reader.execute(f"SELECT * FROM {table} WHERE snap = ?", [snap]).fetchall())
            for table in payload.DETAIL
        }
    finally:
        reader.close()


def test_every_random_bit_flip_of_a_payload_is_refused_naming_the_snapshot_or_changes_nothing(
    sample_repo: Path,
) -> None:
    path, snapshot_id, snap = _compacted(sample_repo)
    con = duckdb.connect(str(path))
    try:
        frame = payload_tables.frames(con, [snap])[snap]
        want = _restored(con, snap, snapshot_id)
        assert want["lines"], "the compacted snapshot has line detail to protect"
        rng = random.Random(27)
        refused = identical = 0
        for _trial in range(300):
            bit = rng.randrange(len(frame) * 8)
            flipped = bytearray(frame)
            flipped[bit // 8] ^= 1 << (bit % 8)
            con.execute(f"UPDATE {payload_tables.name(snap)} SET frame = ?", [bytes(flipped)])
            try:
                got = _restored(con, snap, snapshot_id)
            except CoverageError as error:
                assert error.code is ErrorCode.STORE_DAMAGED, (bit, error)
                assert error.details == {"reason": "payload_damaged", "snapshot_id": snapshot_id}
                assert snapshot_id in error.message
                refused += 1
            else:
                assert got == want, f"bit {bit} changed the answer without an error"
                identical += 1
        assert refused + identical == 300 and refused > 250
    finally:
        con.close()


def test_a_crafted_payload_marking_an_uncovered_line_hit_is_refused_by_its_digest(sample_repo: Path) -> None:
    path, snapshot_id, snap = _compacted(sample_repo)
    con = duckdb.connect(str(path))
    try:
        size = con.execute("SELECT detail_bytes FROM snapshot_payloads WHERE snap = ?", [snap]).fetchall()[0][
            0
        ]
        frame = payload_tables.frames(con, [snap])[snap]
        tables = payload.decode(frame, max_bytes=size)
        hits = tables["lines"]["hits"]
        uncovered = int((hits == 0).nonzero()[0][0])
        hits[uncovered] = 7
        forged, forged_size, _rows = payload.encode(tables)
        con.execute("UPDATE snapshot_payloads SET detail_bytes = ? WHERE snap = ?", [forged_size, snap])
        con.execute(f"UPDATE {payload_tables.name(snap)} SET frame = ?", [forged])
        with pytest.raises(CoverageError) as caught:
            _restored(con, snap, snapshot_id)
        assert caught.value.code is ErrorCode.STORE_DAMAGED and "digest" in caught.value.message
        assert caught.value.details["snapshot_id"] == snapshot_id
    finally:
        con.close()


def test_a_compacted_payload_carries_zstds_frame_checksum_and_a_digest_written_by_the_compaction(
    sample_repo: Path,
) -> None:
    path, _snapshot_id, snap = _compacted(sample_repo)
    con = duckdb.connect(str(path))
    try:
        size, digest, origin = con.execute(
            "SELECT detail_bytes, content_sha256, digest_origin FROM snapshot_payloads WHERE snap = ?", [snap]
        ).fetchall()[0]
        frame = payload_tables.frames(con, [snap])[snap]
    finally:
        con.close()
    assert zstandard.get_frame_parameters(frame).has_checksum
    assert origin == "compaction" and digest == payload.digest(frame, max_bytes=size)


def _revision_8_store(tmp_path: Path, frame: bytes, size: int, rows: int) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(tmp_path / "old.duckdb"))
    schema.migrate(con, target=8)
    con.execute(
        "INSERT INTO snapshot_payloads VALUES (7, ?, ?, ?, ?, now(), ?)",
        [payload.FORMAT_VERSION, rows, size, len(frame), frame],
    )
    return con


def _sample_tables() -> dict[str, Any]:
    import numpy as np

    tables = {
        t: {
            c: (np.zeros(0, dtype=object) if k in ("text", "blob") else np.zeros(0, dtype=k)) for c, k in cols
        }
        for t, cols in payload.DETAIL.items()
    }
    tables["lines"] = {
        "file_id": np.array([0, 0, 1], np.int32),
        "line": np.array([31, 32, 4], np.int32),
        "hits": np.array([0, 5, 2], np.int64),
    }
    return tables


def test_a_payload_compacted_before_digests_gets_one_at_migration_marked_as_computed_then(
    tmp_path: Path,
) -> None:
    # An old frame: no checksum flag, as revision 8's compaction wrote it.
    frame, size, rows = payload.encode(_sample_tables())
    raw = zstandard.ZstdDecompressor().decompress(frame)
    old = zstandard.ZstdCompressor(level=3, write_content_size=True).compress(raw)
    con = _revision_8_store(tmp_path, old, size, rows)
    try:
        assert schema.migrate(con) == schema.SCHEMA_REVISION
        digest, origin = con.execute(
            "SELECT content_sha256, digest_origin FROM snapshot_payloads WHERE snap = 7"
        ).fetchall()[0]
        assert origin == "migration" and digest == payload.digest(old, max_bytes=size)
        # revision 12 moved the frame, as it was, to a table of its own
        assert payload_tables.frames(con, [7]) == {7: old}
        columns = {r[0] for r in con.execute("DESCRIBE snapshot_payloads").fetchall()}
        assert "payload" not in columns
        assert _restored(con, 7, "s7")["lines"] == [(7, 0, 31, 0), (7, 0, 32, 5), (7, 1, 4, 2)]
    finally:
        con.close()


def test_a_payload_already_unreadable_at_migration_stays_refused_after_it(tmp_path: Path) -> None:
    frame, size, rows = payload.encode(_sample_tables())
    con = _revision_8_store(tmp_path, frame[: len(frame) // 2], size, rows)
    try:
        schema.migrate(con)
        assert con.execute("SELECT content_sha256, digest_origin FROM snapshot_payloads").fetchall() == [
            (None, "migration")
        ]
        with pytest.raises(CoverageError) as caught:
            _restored(con, 7, "s7")
        assert caught.value.code is ErrorCode.STORE_DAMAGED and caught.value.details["snapshot_id"] == "s7"
    finally:
        con.close()
