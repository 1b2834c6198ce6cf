"""Reads keep what a snapshot's content fixes (a file's id, its marks, its detail) for the store's life:
what a page shows is still the stored snapshot's after snapshots are deleted and a key is reused, and
every page of a walk agrees with one whole read."""

from __future__ import annotations

from pathlib import Path

from coverage_core import open_project
from coverage_core.service import Service

from .gitrepo import make_repo

SOURCE = "".join(f"def f{i}():\n    return {i}\n" for i in range(5))  # 10 lines


def _lcov(hit_lines: set[int]) -> str:
    body = "".join(f"DA:{n},{int(n in hit_lines)}\n" for n in range(1, 11))
    return f"TN:\nSF:m.py\n{body}end_of_record\n"


def _marks(svc: Service, snapshot_id: str) -> list[str]:
    env = svc.call(
        "coverage_review",
        {"task": "source", "file": "m.py", "lines": "1-10", "measurement": {"snapshot_id": snapshot_id}},
    )
    return [line[1] for r in env["data"]["ranges"] for line in r["lines"]]


def _hits(svc: Service, snapshot_id: str) -> list[int]:
    env = svc.call(
        "coverage_review", {"task": "file", "file": "m.py", "measurement": {"snapshot_id": snapshot_id}}
    )
    return env["data"]["lines"]["hits"]


def test_a_snapshot_stored_under_the_key_of_a_deleted_one_is_read_as_itself(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"m.py": SOURCE})
    (repo / "first.info").write_text(_lcov(set(range(1, 11))))
    (repo / "second.info").write_text(_lcov(set()))
    with open_project(repo) as project:
        svc = Service(project)
        first = svc.call("coverage_import", {"report_path": "first.info"})["data"]["snapshot"]["snapshot_id"]
        assert _marks(svc, first) == ["c"] * 10 and _hits(svc, first) == [1] * 10
        key = project.store.snap_key(first)
        project.store.delete_snapshots([first], force=True)
        second = svc.call("coverage_import", {"report_path": "second.info"})["data"]["snapshot"][
            "snapshot_id"
        ]
        assert project.store.snap_key(second) == key  # the deleted snapshot's key, stored again
        assert _marks(svc, second) == ["u"] * 10 and _hits(svc, second) == [0] * 10


def test_line_windows_of_one_file_read_the_same_rows_as_the_whole_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"m.py": SOURCE})
    (repo / "r.info").write_text(_lcov({2, 3, 5, 7}))
    with open_project(repo) as project:
        svc = Service(project)
        snapshot_id = svc.call("coverage_import", {"report_path": "r.info"})["data"]["snapshot"][
            "snapshot_id"
        ]
        whole = project.store.file_detail(snapshot_id, "m.py")
        for low, high in [(1, 10), (3, 6), (10, 10), (11, 20)]:
            window = project.store.file_detail(snapshot_id, "m.py", lines=(low, high))
            keep = [
                (int(n), int(h)) for n, h in zip(whole.lines["line"], whole.lines["hits"]) if low <= n <= high
            ]
            assert list(zip(window.lines["line"].tolist(), window.lines["hits"].tolist())) == keep
        assert [int(h) for h in whole.lines["hits"]] == [0, 1, 1, 0, 1, 0, 1, 0, 0, 0]
