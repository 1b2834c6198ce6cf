"""Compaction: every answer is the same before and after a snapshot's detail becomes a zstd payload.

Real stores, real reports: the bundled sample (coverage.py JSON with named
tests, and its LCOV), and a package measured here by coverage.py with
branches and per-test contexts (tests/realcov.py) at two commits, stored as
JSON and as LCOV with branch records. Every task of coverage_review in every
representation, the gate and diff of CI, and file detail are compared with
their answers before compaction, apart from ``context.stats``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.project import Project
from coverage_core.service import Service
from coverage_core.storage import compaction, payload, payload_tables
from coverage_core.storage.store import snap_tables
from coverage_core.usecases import ci

from .compaction_child import Compactions
from .conftest import SAMPLE
from .gitrepo import commit, make_repo, write
from .realcov import copy_checkout, make_package, measure

TASKS = (
    "insight",
    "change",
    "incremental",
    "history",
    "source",
    "tests",
    "audit",
    "all",
    "snapshots",
    "files",
    "file",
)
REPRESENTED = {"insight", "change", "incremental", "history", "tests", "all", "snapshots", "files"}
WITH_FILE = {"insight", "change", "history", "source", "tests", "audit", "file", "all"}


def _calls(old: str, new: str, path: str) -> list[dict[str, Any]]:
    """Every task, in every representation it takes, on the newest snapshot and on the older one, with the
    whole project and with one file; change and friends against the older snapshot as explicit baseline."""
    calls = []
    for task in TASKS:
        for rep in ("review", "compact", "audit") if task in REPRESENTED else (None,):
            for measured in (None, old):
                for file in (None, path) if task in WITH_FILE else (None,):
                    if task in ("source", "audit", "file") and file is None and task != "audit":
                        continue
                    args: dict[str, Any] = {"task": task}
                    if rep:
                        args["representation"] = rep
                    if measured and task != "snapshots":
                        args["measurement"] = {"snapshot_id": measured}
                    if file:
                        args["file"] = path
                    if task in ("change", "all") and measured is None:
                        args["baseline"] = {"kind": "explicit", "snapshot_id": old}
                    if task == "incremental":
                        # Both sides named, each way round: the task takes no default side.
                        current, base = (new, old) if measured is None else (old, new)
                        args["measurement"] = {"snapshot_id": current}
                        args["baseline"] = {"kind": "explicit", "snapshot_id": base}
                    calls.append(args)
    calls.append({"task": "history", "file": path, "lines": "1-40", "representation": "audit"})
    for rep in ("review", "compact", "audit"):
        for measured in (new, old):
            calls.append(
                {"task": "tests", "file": path, "lines": "1-40", "representation": rep}
                | {"measurement": {"snapshot_id": measured}}
            )
    calls.append({"task": "audit", "limits": {"max_words": 300}})
    return calls


def _answers(project: Project, calls: list[dict[str, Any]], con: Any = None) -> list[Any]:
    service = Service(project)
    out = []
    for args in calls:
        try:
            envelope = service.call("coverage_review", args, con=con)
        except CoverageError as error:
            out.append(("error", error.code.value, error.message))
            continue
        envelope = json.loads(json.dumps(envelope, default=str))
        envelope["context"].pop("stats")
        out.append(envelope)
    return out


def _gates(project: Project, old: str, new: str) -> list[Any]:
    base = {"baseline": {"kind": "explicit", "snapshot_id": old}, "current": {"snapshot_id": new}}
    out = []
    for fn, args in (
        (ci.diff, {**base, "snippets": True}),
        (ci.gate, {**base, "fail_under_patch": 50}),
        (ci.gate, {**base, "ratchet": True}),
    ):
        envelope = json.loads(json.dumps(fn(project, args), default=str))
        envelope["context"].pop("stats", None)
        out.append(envelope)
    return out


def _details(project: Project, ids: list[str], path: str) -> list[dict[str, Any]]:
    out = []
    for snapshot_id in ids:
        d = project.file_detail(snapshot_id, path)
        out.append(
            {
                "tests": d.tests,
                **{
                    f"{t}.{c}": getattr(d, t)[c].tolist()
                    for t in ("lines", "branches", "functions", "regions")
                    for c in getattr(d, t)
                },
            }
        )
    return out


def _relational_rows(project: Project, snapshot_id: str) -> int:
    snap = project.store.snap_key(snapshot_id)
    return sum(
        project.store.con.execute(f"SELECT count(*) FROM {t} WHERE snap = ?", [snap]).fetchall()[0][0]
        for t in payload.DETAIL
    )


def _compact_all(project: Project) -> None:
    """Every snapshot, the protected newest ones included (the mechanism, without the policy)."""
    for snap, sid, suite, created in project.store.con.execute(
        "SELECT snap, snapshot_id, suite, created_at FROM snapshots ORDER BY snap"
    ).fetchall():
        if not project.store.is_compacted(sid):
            assert compaction.compact_snapshot(project.store, compaction.Candidate(snap, sid, suite, created))


def _assert_equivalent(repo: Path, old: str, new: str, path: str, suite_calls: list[dict[str, Any]]) -> None:
    with open_project(repo) as project:
        before = _answers(project, suite_calls)
        gates = _gates(project, old, new)
        details = _details(project, [old, new], path)
        # Mixed: the older snapshot compacted by an ordinary pass, the newest left relational (protected).
        done = project.compact(older_than="0")
        assert [c.snapshot_id for c in done.compacted] == [old]
        assert _relational_rows(project, old) == 0 and _relational_rows(project, new) > 0
        assert _answers(project, suite_calls) == before
        assert _gates(project, old, new) == gates
        assert _details(project, [old, new], path) == details
        # Both sides compacted: a union of several restored snapshots.
        _compact_all(project)
        assert _relational_rows(project, new) == 0
        assert _answers(project, suite_calls) == before
        assert _gates(project, old, new) == gates
    # A fresh process view: restored from the payloads on disk.
    with open_project(repo) as project:
        assert _answers(project, suite_calls) == before
        assert _details(project, [old, new], path) == details
        assert project.compaction_inventory()["compacted"] == 2
    answered = [a for a in before if isinstance(a, dict)]
    assert len(answered) > 0.8 * len(before), [a for a in before if not isinstance(a, dict)]
    # The comparisons with both sides given and the named-test attribution are real answers, not errors
    # equal on both sides of the compaction.
    for task in ("incremental", "tests"):
        of_task = [a for c, a in zip(suite_calls, before, strict=True) if c["task"] == task]
        assert of_task and all(isinstance(a, dict) for a in of_task), (task, of_task)


def _ingest(repo: Path, report: str, **kwargs: Any) -> str:
    with open_project(repo) as project:
        env = Service(project).call("coverage_import", {"report_path": report, **kwargs})
        return env["data"]["snapshot"]["snapshot_id"]


class Stored(NamedTuple):
    """The sample with reports ingested once for the file, and a pristine copy of its checkout and store."""

    repo: Path
    pristine: Path
    ids: list[str]
    before: list[Any]  # with answered=True: every call of _calls(first, newest) before any compaction

    def fresh(self) -> tuple[Path, list[str]]:
        """The pristine checkout and store put back where they were ingested (the store names its worktree
        by path): each test starts from the same relational snapshots, with nothing of the last test."""
        shutil.rmtree(self.repo)
        shutil.copytree(self.pristine, self.repo, symlinks=True)
        return self.repo, self.ids


def _stored(base: Path, *reports: str, answered: bool = False) -> Stored:
    repo = base / "inventory"
    shutil.copytree(SAMPLE / "project", repo)
    make_repo(repo, {})
    for name in ("step3.coverage.lcov", "step3.coverage.json", "step1.coverage.json"):
        shutil.copy(SAMPLE / "reports" / name, repo / name)
    ids = [_ingest(repo, name) for name in reports]
    before = []
    if answered:
        with open_project(repo) as project:
            before = _answers(project, _calls(ids[0], ids[-1], "inventory/pricing.py"))
    shutil.copytree(repo, base / "pristine", symlinks=True)
    return Stored(repo, base / "pristine", ids, before)


@pytest.fixture(scope="module")
def two_snapshots(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    """step1 JSON (eligible for compaction) and step3 JSON (the newest, with named tests)."""
    return _stored(tmp_path_factory.mktemp("two"), "step1.coverage.json", "step3.coverage.json")


@pytest.fixture(scope="module")
def three_snapshots(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    """step1 JSON and step3 LCOV (both eligible) and step3 JSON (the newest), with every call's answer."""
    names = ("step1.coverage.json", "step3.coverage.lcov", "step3.coverage.json")
    return _stored(tmp_path_factory.mktemp("three"), *names, answered=True)


# -- equivalence ---------------------------------------------------------------------------------


def test_every_task_and_representation_of_the_sample_answers_the_same_after_compaction(
    two_snapshots: Stored,
) -> None:
    """Seed: "Query paths transparently restore the payload when a detailed view is requested." and
    "Relational detail and the zstd compacted payload are equivalent sources for the projection;
    neither path invokes a test runner or reparses a report." and "If an ordinary child snapshot is
    compacted, named-test attribution restores its observations from the same payload used by incremental
    review." Every task, ``incremental`` with both sides named each way round and ``tests`` on both
    snapshots among them."""
    sample_repo, [old, new] = two_snapshots.fresh()
    with open_project(sample_repo) as project:
        assert project.snapshot(new).tests > 0  # named tests are part of what must survive
    _assert_equivalent(
        sample_repo, old, new, "inventory/pricing.py", _calls(old, new, "inventory/pricing.py")
    )


@pytest.fixture(scope="module")
def measured_package(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, Path], dict[str, Path]]:
    """The realcov package measured by coverage.py (branches, per-test contexts) at c0 with two tests and
    at c1 (an edit plus a new tested function) with the whole suite: JSON and LCOV of both."""
    root = tmp_path_factory.mktemp("compaction")
    repo = make_package(root / "repo")
    first = measure(
        repo, "tests/test_cart.py::test_total_sums_prices", "tests/test_cart.py::test_half_coupon"
    )
    c0 = {k: Path(shutil.copy(p, root / f"c0.{p.name}")) for k, p in first.items()}
    write(
        repo,
        {
            "shop/cart.py": (repo / "shop/cart.py").read_text()
            + "\n\ndef tax(amount):\n    return amount * 2\n",
            "tests/test_tax.py": "def test_tax():\n    from shop.cart import tax\n    assert tax(1) == 2\n",
        },
    )
    commit(repo, "tax")
    second = measure(repo)
    c1 = {k: Path(shutil.copy(p, root / f"c1.{p.name}")) for k, p in second.items()}
    return repo, c0, c1


@pytest.mark.parametrize("kind", ["json", "lcov"])
def test_a_measured_package_with_named_tests_and_branches_answers_the_same_after_compaction(
    measured_package, tmp_path: Path, kind: str
) -> None:
    source, c0, c1 = measured_package
    repo = copy_checkout(source, tmp_path)
    shutil.copy(c0[kind], repo / "old.report")
    shutil.copy(c1[kind], repo / "new.report")
    old = _ingest(repo, "old.report", commit="HEAD~1")
    new = _ingest(repo, "new.report")
    with open_project(repo) as project:
        counts = {
            t: project.store.con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in payload.DETAIL
        }
        assert counts["branches"] > 0  # the LCOV has BRDA records, the JSON its arcs
        if kind == "json":
            assert counts["test_observations"] > 0 and counts["test_names"] > 0
    _assert_equivalent(repo, old, new, "shop/cart.py", _calls(old, new, "shop/cart.py"))


def test_duplicate_test_signatures_stay_relational_and_agree_with_the_restored_observations(
    two_snapshots: Stored,
) -> None:
    """Seed: "Restored compacted payloads use the same exact signature semantics." """
    sample_repo, [_, new] = two_snapshots.fresh()
    with open_project(sample_repo) as project:
        before = project.store.con.execute("SELECT * FROM test_signatures ORDER BY ALL").fetchall()
        _compact_all(project)
        assert project.store.con.execute("SELECT * FROM test_signatures ORDER BY ALL").fetchall() == before
        # Recomputing the signatures from the restored observations gives the stored ones.
        con = project.store.cursor()
        snap = project.store.snap_key(new, con)
        project.store.materialize(con)
        con.execute("CREATE TEMP TABLE test_signatures AS SELECT * FROM main.test_signatures LIMIT 0")
        project.store._store_signatures(con, snap)
        again = con.execute("SELECT * FROM temp.main.test_signatures ORDER BY ALL").fetchall()
        assert again == [r for r in before if r[0] == snap] and again
        con.close()


def test_a_snapshot_key_reused_after_deleting_a_compacted_snapshot_never_mixes_restored_rows(
    two_snapshots: Stored,
) -> None:
    sample_repo, [_, compacted] = two_snapshots.fresh()
    with open_project(sample_repo) as project:
        _compact_all(project)
        con = project.store.cursor()  # one connection across the whole story, as a pooled one is
        key = project.store.snap_key(compacted)
        first = _answers(project, [{"task": "audit"}], con)
        assert first[0]["data"]["snapshot_id"] == compacted
        project.delete_snapshots([compacted], force=True)
        fresh = Service(project).call("coverage_import", {"report_path": "step3.coverage.lcov"})["data"][
            "snapshot"
        ]
        assert project.store.snap_key(fresh["snapshot_id"]) == key  # the key is reused: the hazard is real
        calls = [{"task": "audit"}, {"task": "file", "file": "inventory/pricing.py"}]
        assert _answers(project, calls, con) == _answers(project, calls)  # the pooled view equals a fresh one
        con.close()


def test_every_snapshot_keyed_table_is_either_in_the_payload_or_kept_relational(sample_repo: Path) -> None:
    """Seed: "Compaction includes both named-test tables in the zstd detail payload and deletes their
    relational rows in the same transaction as file and line detail." """
    with open_project(sample_repo) as project:
        tables = set(snap_tables(project.store.con))
    assert tables == set(payload.DETAIL) | set(payload.KEPT)


def test_the_inventory_names_a_compacted_snapshot_that_still_has_relational_detail_and_only_it(
    two_snapshots: Stored,
) -> None:
    repo, (old, new) = two_snapshots.fresh()
    with open_project(repo) as project:
        assert project.compaction_inventory()["inconsistent"] == [], "nothing compacted, nothing inconsistent"
        _compact_all(project)
        assert project.compaction_inventory()["inconsistent"] == []
        snaps = {sid: project.store.snap_key(sid) for sid in (old, new)}
        # Relational rows put back under each compacted snapshot: a line for one, an observation for the other.
        project.store.con.execute(
            "INSERT INTO lines (snap, file_id, line, hits) VALUES (?, 1, 9999, 1)", [snaps[old]]
        )
        assert project.compaction_inventory()["inconsistent"] == [old]
        observation = project.store.con.execute("SELECT * FROM test_observations LIMIT 0").description
        columns = [c[0] for c in observation]
        values = [snaps[new] if c == "snap" else 0 for c in columns]
        project.store.con.execute(
            f"INSERT INTO test_observations ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            values,
        )
        assert project.compaction_inventory()["inconsistent"] == [old, new]


@pytest.mark.parametrize("table", sorted(payload.DETAIL))
def test_the_inventory_names_a_compacted_snapshot_with_relational_rows_in_any_detail_table(
    two_snapshots: Stored, table: str
) -> None:
    """Seed: "The dashboard's compaction inventory ... marks payload inventory inconsistencies explicitly."
    A row left in any of the payload's tables under a compacted snapshot marks that snapshot."""
    repo, (old, _new) = two_snapshots.fresh()
    with open_project(repo) as project:
        _compact_all(project)
        columns = [c[0] for c in project.store.con.execute(f"SELECT * FROM {table} LIMIT 0").description]
        kinds = {"snap": project.store.snap_key(old), **dict(payload.DETAIL[table])}
        made = {"text": "x", "blob": b"x"}
        values = [kinds["snap"] if c == "snap" else made.get(kinds.get(c, ""), 0) for c in columns]
        project.store.con.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", values
        )
        assert project.compaction_inventory()["inconsistent"] == [old]


def test_the_inventory_names_a_payload_whose_snapshot_is_gone(two_snapshots: Stored) -> None:
    """Seed: "marks payload inventory inconsistencies explicitly": a payload no snapshot owns is listed by
    its key, and nothing else is."""
    repo, (old, _new) = two_snapshots.fresh()
    with open_project(repo) as project:
        _compact_all(project)
        assert project.compaction_inventory()["orphan_payloads"] == []
        key = project.store.snap_key(old)
        con = project.store.con
        con.execute("UPDATE snapshot_payloads SET snap = 9999 WHERE snap = ?", [key])
        inventory = project.compaction_inventory()
        assert inventory["orphan_payloads"] == [9999] and inventory["inconsistent"] == []


def test_the_inventory_names_a_frame_table_left_without_its_payload_description(
    two_snapshots: Stored,
) -> None:
    repo, (old, _new) = two_snapshots.fresh()
    with open_project(repo) as project:
        _compact_all(project)
        key = project.store.snap_key(old)
        project.store.con.execute("DELETE FROM snapshot_payloads WHERE snap = ?", [key])
        inventory = project.compaction_inventory()
        assert inventory["orphan_payloads"] == [key] and inventory["inconsistent"] == []


def test_deleting_a_compacted_snapshot_deletes_its_payload(two_snapshots: Stored) -> None:
    sample_repo, [old, _] = two_snapshots.fresh()
    with open_project(sample_repo) as project:
        project.compact(older_than="0")
        assert project.compaction_inventory()["compacted"] == 1
        assert len(payload_tables.stored(project.store.con)) == 1
        gone = project.delete_snapshots([old])
        assert gone.rows["snapshot_payloads"] == 1
        assert project.store.con.execute("SELECT count(*) FROM snapshot_payloads").fetchall()[0][0] == 0
        assert payload_tables.stored(project.store.con) == [], "its frame's table is dropped with it"


def test_a_payload_whose_frame_table_is_gone_is_a_damaged_store_naming_the_snapshot(
    two_snapshots: Stored,
) -> None:
    sample_repo, [old, _] = two_snapshots.fresh()
    with open_project(sample_repo) as project:
        project.compact(older_than="0")
        [snap] = payload_tables.stored(project.store.con)
        project.store.con.execute(f"DROP TABLE {payload_tables.name(snap)}")
        with pytest.raises(CoverageError) as caught:
            Service(project).call(
                "coverage_review",
                {"task": "audit", "file": "inventory/pricing.py", "measurement": {"snapshot_id": old}},
            )
        assert caught.value.code is ErrorCode.STORE_DAMAGED
        assert caught.value.details == {"reason": "payload_damaged", "snapshot_id": old}


def test_a_damaged_payload_is_a_clear_error_and_compact_answers_still_work(two_snapshots: Stored) -> None:
    sample_repo, [old, _] = two_snapshots.fresh()
    with open_project(sample_repo) as project:
        project.compact(older_than="0")
        [snap] = payload_tables.stored(project.store.con)
        frame = payload_tables.frames(project.store.con, [snap])[snap]
        project.store.con.execute(
            f"UPDATE {payload_tables.name(snap)} SET frame = ?", [frame[: len(frame) // 2]]
        )
        service = Service(project)
        totals = service.call("coverage_review", {"task": "files", "measurement": {"snapshot_id": old}})
        assert totals["data"]["files"]
        with pytest.raises(CoverageError) as caught:
            service.call(
                "coverage_review",
                {"task": "audit", "file": "inventory/pricing.py", "measurement": {"snapshot_id": old}},
            )
        assert caught.value.code is ErrorCode.STORE_DAMAGED
        assert caught.value.details == {"reason": "payload_damaged", "snapshot_id": old}
        assert old in caught.value.message


@pytest.mark.parametrize(
    "mangle",
    [
        lambda raw: raw[:-1],
        lambda raw: raw.replace(b'"rows":', b'"rows":9', 1),
        lambda raw: raw.replace(b"<i4", b"|O1", 1),
        lambda raw: raw[:8] + b"\xff\xff\xff\x7f" + raw[12:],
        lambda raw: raw.replace(b'["p",1]', b'["p",3]', 1),
        lambda raw: raw.replace(b'["p",1]', b'["x",1]', 1),
        lambda raw: raw.replace(b'[2,"p",1]', b'[1,"p",1]', 1),
    ],
)
def test_a_payload_frame_is_checked_before_any_column_is_trusted(mangle) -> None:
    import zstandard

    tables = {
        t: {
            c: (
                np.array(["a", "bé"], dtype=object)
                if k == "text"
                else np.array([b"x", b""], dtype=object)
                if k == "blob"
                else np.array([1, 2], dtype=k)
            )
            for c, k in cols
        }
        for t, cols in payload.DETAIL.items()
    }
    frame, size, rows = payload.encode(tables)
    assert rows == 2 * len(payload.DETAIL)
    back = payload.decode(frame, max_bytes=size)
    assert back["test_names"]["name"].tolist() == ["a", "bé"] and back["file_texts"]["text"].tolist() == [
        b"x",
        b"",
    ]
    raw = zstandard.ZstdDecompressor().decompress(frame)
    bad = zstandard.ZstdCompressor().compress(mangle(raw))
    with pytest.raises(CoverageError) as caught:
        payload.decode(bad, max_bytes=size + 64)
    assert caught.value.details["reason"] == "payload_damaged"


def test_a_frame_larger_than_its_recorded_size_is_refused_before_it_is_decompressed() -> None:
    import zstandard

    bomb = zstandard.ZstdCompressor().compress(b"\0" * (4 << 20))
    with pytest.raises(CoverageError) as caught:
        payload.decode(bomb, max_bytes=1 << 20)
    assert caught.value.details["reason"] == "payload_damaged"


# -- crash safety ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compactions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compactions]:
    """The kill -9 cases' compactions, each a fork of one server that imported the product once
    (tests/compaction_child.py). OpenBLAS (NumPy's) is asked for no thread: the server forks with none."""
    errors = tmp_path_factory.mktemp("compactions") / "stderr"
    with Compactions(errors, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}) as server:
        yield server


def _state(repo: Path, ids: list[str]) -> dict[str, str]:
    """Per snapshot: 'relational' (all its detail rows, no payload) or 'compacted' (a payload, no rows)."""
    with open_project(repo) as project:
        out = {}
        for sid in ids:
            snap = project.store.snap_key(sid)
            has_payload = project.store.con.execute(
                "SELECT count(*) FROM snapshot_payloads WHERE snap = ?", [snap]
            ).fetchall()[0][0]
            rows = _relational_rows(project, sid)
            assert (has_payload, rows > 0) in ((0, True), (1, False)), (sid, has_payload, rows)
            out[sid] = "compacted" if has_payload else "relational"
        return out


@pytest.mark.parametrize("stage", compaction.STAGES)
@pytest.mark.parametrize("nth", [1, 2])
def test_kill_9_at_any_stage_leaves_each_snapshot_fully_relational_or_fully_compacted(
    three_snapshots: Stored, compactions: Compactions, stage: str, nth: int
) -> None:
    """Seed: "Compaction includes both named-test tables in the zstd detail payload and deletes their
    relational rows in the same transaction as file and line detail." and "The original detail rows are
    removed only after the compressed payload is durable." """
    sample_repo, [*ids, newest] = three_snapshots.fresh()
    calls, before = _calls(ids[0], newest, "inventory/pricing.py"), three_snapshots.before
    try:
        heard, pid = compactions.until_paused(sample_repo, stage, nth)
        assert heard[-1] == "paused", (heard, compactions.errors())
        assert compactions.kill(pid) == -9  # SIGKILL: no handler, no cleanup, no rollback in the child
    finally:
        compactions.gone()
    state = _state(sample_repo, ids + [newest])
    done = nth - 1 + (stage == "committed")  # snapshots whose commit went through before the kill
    assert state == {
        ids[0]: "compacted" if done >= 1 else "relational",
        ids[1]: "compacted" if done >= 2 else "relational",
        newest: "relational",
    }
    with open_project(sample_repo) as project:
        assert _answers(project, calls) == before
        # The next pass finishes the work.
        project.compact(older_than="0")
    assert set(_state(sample_repo, ids).values()) == {"compacted"}


def test_integer_columns_round_trip_through_every_encoding_exactly() -> None:
    rng = np.random.default_rng(14)
    n = 5000
    columns = {
        "file_id": np.sort(rng.integers(0, 300, n)).astype(np.int32),  # sorted: delta-coded
        "line": rng.integers(-(2**31), 2**31 - 1, n).astype(np.int32),  # noise: plain, 4 bytes
        "block": np.zeros(n, dtype=np.int32),
        "branch": np.array([str(i % 7) for i in range(n)], dtype=object),
        "taken": np.concatenate([[-1, 2**62, -(2**62)], rng.integers(-1, 3, n - 3)]).astype(np.int64),
    }
    tables = {
        t: {
            c: (np.zeros(0, dtype=object) if k in ("text", "blob") else np.zeros(0, dtype=k)) for c, k in cols
        }
        for t, cols in payload.DETAIL.items()
    }
    tables["branches"] = columns
    frame, size, _rows = payload.encode(tables)
    back = payload.decode(frame, max_bytes=size)["branches"]
    for name, values in columns.items():
        assert back[name].tolist() == values.tolist()
        assert back[name].dtype == values.dtype
    assert list(payload.decode(frame, max_bytes=size, only=["branches"])) == ["branches"]


def test_reads_running_while_snapshots_are_compacted_always_see_the_whole_detail(
    three_snapshots: Stored,
) -> None:
    import threading

    sample_repo, [old, lcov, new] = three_snapshots.fresh()
    calls = [
        {"task": "audit", "file": "inventory/pricing.py", "measurement": {"snapshot_id": sid}}
        for sid in (old, lcov)
    ]
    calls += [
        {
            "task": "change",
            "measurement": {"snapshot_id": new},
            "baseline": {"kind": "explicit", "snapshot_id": old},
        },
        {"task": "tests", "file": "inventory/pricing.py", "measurement": {"snapshot_id": old}},
    ]
    with open_project(sample_repo) as project:
        expected = _answers(project, calls)
        stop = threading.Event()
        seen: list[Any] = []
        failures: list[BaseException] = []

        def read() -> None:
            try:
                while not stop.is_set():
                    seen.append(_answers(project, calls))  # each call on its own new read connection
            except BaseException as error:
                failures.append(error)

        readers = [threading.Thread(target=read) for _ in range(2)]
        for r in readers:
            r.start()
        try:
            while len(seen) < 2:
                time.sleep(0.01)
            done = project.compact(older_than="0")
            after = len(seen)
            while len(seen) < after + 4:  # reads that started after the commit, too
                time.sleep(0.01)
        finally:
            stop.set()
            for r in readers:
                r.join(timeout=120)
    assert not failures, failures
    assert [c.snapshot_id for c in done.compacted] == [old, lcov]
    assert all(answers == expected for answers in seen)


def test_a_compaction_waiting_for_the_read_gate_gets_it_while_readers_keep_overlapping() -> None:
    """Two readers that always overlap (one enters before the other leaves) never leave the gate empty: a
    waiting compaction still gets it, between two reads, instead of giving up and skipping its snapshot."""
    import threading

    from coverage_core.storage.restore import ReadGate

    gate, stop = ReadGate(), threading.Event()
    reads = [0, 0]

    def reader(i: int) -> None:
        while not stop.is_set():
            with gate.reading():
                reads[i] += 1
                sum(range(2000))  # a read's work, inside the gate

    readers = [threading.Thread(target=reader, args=(i,)) for i in range(2)]
    for r in readers:
        r.start()
    try:
        got = gate.acquire_alone(compaction.GATE_TIMEOUT_S)
        if got:
            gate.release_alone()
    finally:
        stop.set()
        for r in readers:
            r.join(timeout=60)
    assert got
    assert all(reads)  # the readers did read meanwhile


def test_a_read_nested_in_a_read_goes_on_while_a_compaction_waits_and_a_new_reader_waits_behind_it() -> None:
    import threading

    from coverage_core.storage.restore import ReadGate

    gate, order = ReadGate(), []
    inside, go_on = threading.Event(), threading.Event()

    def outer() -> None:
        with gate.reading():
            inside.set()
            go_on.wait(60)
            with gate.reading():  # a read inside a read, while the compaction waits: never its own deadlock
                order.append("nested")

    def writer() -> None:
        if gate.acquire_alone(60):
            order.append("writer")
            gate.release_alone()

    def newcomer() -> None:
        with gate.reading():
            order.append("newcomer")

    first = threading.Thread(target=outer)
    first.start()
    assert inside.wait(60)
    compaction_thread = threading.Thread(target=writer)
    compaction_thread.start()
    give_up = time.monotonic() + 60
    while not gate.writer_waiting:
        assert time.monotonic() < give_up, "the compaction never waited for the gate"
        time.sleep(0.001)
    late = threading.Thread(target=newcomer)
    late.start()
    go_on.set()
    for thread in (first, compaction_thread, late):
        thread.join(60)
    assert order == ["nested", "writer", "newcomer"]


# -- disk ---------------------------------------------------------------------------------------------


def _disk(store_file: Path) -> int:
    """What the store takes on disk: the database file and its write-ahead log."""
    wal = store_file.with_name(store_file.name + ".wal")
    return store_file.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def test_a_pass_leaves_the_store_no_larger_on_disk_than_it_found_it(three_snapshots: Stored) -> None:
    repo, ids = three_snapshots.fresh()
    store_file = repo / ".coverage-mcp" / "coverage.duckdb"
    with open_project(repo) as project:
        before = _disk(store_file)
        done = project.compact(older_than="0")
        assert [c.snapshot_id for c in done.compacted] == ids[:2]
        assert all(_relational_rows(project, sid) == 0 for sid in ids[:2])
        # Measured with the store still open, as a daemon holds it: nothing of the pass waits in the WAL.
        assert _disk(store_file) <= before
    assert _disk(store_file) <= before
