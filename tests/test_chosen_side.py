"""The rule every default side follows (``chosen_side``), against a plain reading of it: a ``subset``
snapshot is never chosen while a ``complete`` one of its suite and commit exists (a missing commit is
the same as a missing commit), whatever else the store holds."""

from __future__ import annotations

import random

import duckdb

from coverage_core.storage.store import chosen_side


def _chosen_by_reading(rows: list[tuple[int, str, str, str | None]]) -> list[int]:
    complete = {(suite, commit) for _snap, suite, scope, commit in rows if scope == "complete"}
    return [
        snap for snap, suite, scope, commit in rows if not (scope == "subset" and (suite, commit) in complete)
    ]


def test_a_subset_is_chosen_exactly_when_no_complete_snapshot_of_its_suite_and_commit_exists() -> None:
    con = duckdb.connect()
    rng = random.Random(22)
    for _table in range(400):
        con.execute(
            "CREATE OR REPLACE TABLE snapshots (snap INTEGER, suite VARCHAR, scope VARCHAR, commit_sha VARCHAR)"
        )
        rows = [
            (
                snap,
                rng.choice(["unit", "e2e"]),
                rng.choice(["subset", "complete"]),
                rng.choice([None, "c1", "c2", ""]),
            )
            for snap in range(rng.randrange(0, 9))
        ]
        if rows:
            con.executemany("INSERT INTO snapshots VALUES (?, ?, ?, ?)", rows)
        want = _chosen_by_reading(rows)
        assert [
            r[0]
            for r in con.execute(f"SELECT snap FROM snapshots WHERE {chosen_side()} ORDER BY snap").fetchall()
        ] == want
        aliased = con.execute(
            f"SELECT s.snap FROM snapshots s WHERE {chosen_side('s')} ORDER BY s.snap"
        ).fetchall()
        assert [r[0] for r in aliased] == want, rows
