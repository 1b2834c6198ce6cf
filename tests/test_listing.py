"""Store reads as operations: coverage_review task=snapshots, files and file, paged, budgeted, exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.model import converter, snapshot_to_dict
from coverage_core.service import Service

from . import corpus
from .gitrepo import commit, write


@pytest.fixture
def service(sample_repo: Path):
    with open_project(sample_repo) as project:
        svc = Service(project)
        svc.call("coverage_import", {"report_path": "step1.coverage.json", "suite": "unit"})
        write(sample_repo, {"inventory/extra.py": "x = 1\n"})
        commit(sample_repo, "second")
        svc.call("coverage_import", {"report_path": "step3.coverage.json", "suite": "unit"})
        svc.call("coverage_import", {"report_path": "step3.coverage.lcov", "suite": "lcov"})
        yield svc


def review(svc: Service, **args) -> dict:
    return svc.call("coverage_review", args)


def walk(svc: Service, key: str, **args) -> list:
    """Every record of a paged listing, following page.next_cursor to the end."""
    seen, cursor = [], None
    for _ in range(1000):
        env = review(svc, **args, **({"cursor": cursor} if cursor else {}))
        seen += env["data"][key]
        cursor = env["page"]["next_cursor"]
        if cursor is None:
            return seen
    raise AssertionError("the cursor never ended")


def test_snapshots_are_listed_newest_first_as_the_library_records_them(service: Service) -> None:
    env = review(service, task="snapshots", representation="review")
    # Each record is the library's, with its run (None for an import: these are all imports).
    expected = [{**snapshot_to_dict(s), "run": None} for s in service.project.snapshots()]
    assert env["data"]["snapshots"] == expected and len(expected) == 3
    assert env["data"]["claim_status"] == "supported" and env["page"]["next_cursor"] is None


def test_snapshot_filters_select_by_suite_branch_and_commit_prefix(service: Service) -> None:
    everything = service.project.snapshots()
    lcov = review(service, task="snapshots", filter={"suite": "lcov"})["data"]["snapshots"]
    assert [row[0] for row in lcov] == [s.snapshot_id for s in everything if s.suite == "lcov"]
    first = everything[-1]
    by_commit = review(service, task="snapshots", filter={"commit": first.commit[:7]})["data"]["snapshots"]
    assert [row[0] for row in by_commit] == [s.snapshot_id for s in everything if s.commit == first.commit]
    one = review(
        service, task="snapshots", filter={"snapshot_id": first.snapshot_id}, representation="review"
    )
    assert one["data"]["snapshots"] == [{**snapshot_to_dict(first), "run": None}]
    none = review(service, task="snapshots", filter={"branch": "no-such-branch"})
    assert none["data"]["snapshots"] == [] and none["page"]["next_cursor"] is None


def test_a_snapshot_page_continues_with_its_cursor_without_gaps_or_repeats(service: Service) -> None:
    rows = walk(service, "snapshots", task="snapshots", page_size=1)
    assert [r[0] for r in rows] == [s.snapshot_id for s in service.project.snapshots()]
    legend = review(service, task="snapshots")["data"]["legend"]["snapshots"]
    assert legend.startswith("[snapshot_id, created_at, suite")


def test_files_list_one_snapshot_in_the_order_asked_and_page_through_all_of_them(service: Service) -> None:
    snap = service.project.latest("unit")
    page = service.project.files(snap.snapshot_id, order="uncovered")
    listed = walk(
        service,
        "files",
        task="files",
        measurement={"snapshot_id": snap.snapshot_id},
        order="uncovered",
        page_size=2,
    )
    assert [row[0] for row in listed] == [f.path for f in page.files]
    full = review(
        service, task="files", measurement={"snapshot_id": snap.snapshot_id}, representation="review"
    )
    assert full["data"]["files"] == [
        converter.unstructure(f) for f in service.project.files(snap.snapshot_id).files
    ]
    assert full["data"]["total"] == page.total


def test_one_files_detail_pages_by_line_window_and_reassembles_to_the_stored_detail(service: Service) -> None:
    snap = service.project.latest("lcov")
    path = "inventory/pricing.py"
    stored = service.project.file_detail(snap.snapshot_id, path)
    pages = []
    cursor = None
    while True:
        env = review(
            service,
            task="file",
            measurement={"snapshot_id": snap.snapshot_id},
            file=path,
            limits={"max_words": 120},
            **({"cursor": cursor} if cursor else {}),
        )
        pages.append(env["data"])
        cursor = env["page"]["next_cursor"]
        if cursor is None:
            break
    assert len(pages) > 1  # a small budget really pages
    for table in ("lines", "branches", "functions", "regions"):
        for column, values in stored_table(stored, table).items():
            assert [v for p in pages for v in p[table][column]] == values, (table, column)
    assert pages[0]["summary"] == converter.unstructure(stored.summary)
    assert pages[0]["tests"] == list(stored.tests)


def stored_table(detail, name: str) -> dict[str, list]:
    return {column: values.tolist() for column, values in getattr(detail, name).items()}


def test_a_file_detail_window_is_exactly_the_lines_asked(service: Service) -> None:
    snap = service.project.latest("lcov")
    data = review(
        service,
        task="file",
        measurement={"snapshot_id": snap.snapshot_id},
        file="inventory/pricing.py",
        lines="10-20",
        limits={"max_words": 5000},
    )["data"]
    assert data["lines"]["line"] and all(10 <= n <= 20 for n in data["lines"]["line"])


def test_file_needs_a_path_and_an_unknown_one_is_not_found(service: Service) -> None:
    with pytest.raises(CoverageError) as caught:
        review(service, task="file")
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT and "file" in caught.value.suggestion
    with pytest.raises(CoverageError) as caught:
        review(service, task="file", file="no/such.py")
    assert caught.value.code == ErrorCode.NOT_FOUND


def test_a_forged_or_foreign_cursor_never_gives_a_wrong_page(service: Service) -> None:
    """Seed: "Collections use bounded fetches, word budgets, and opaque query-scoped cursors." """
    cursor = review(service, task="snapshots", page_size=1)["page"]["next_cursor"]
    with pytest.raises(CoverageError) as caught:
        review(service, task="snapshots", page_size=1, filter={"suite": "unit"}, cursor=cursor)
    assert caught.value.code == ErrorCode.INVALID_CURSOR


def test_bad_listing_arguments_are_refused_with_what_is_allowed(service: Service) -> None:
    for args, word in (
        ({"page_size": 0}, "between"),
        ({"order": "size"}, "uncovered"),
        ({"filter": {"colour": "x"}}, "suite"),
        ({"filter": {"commit": "HEAD"}}, "pattern"),
    ):
        with pytest.raises(CoverageError) as caught:
            review(service, task="files", **args)
        assert caught.value.code == ErrorCode.INVALID_ARGUMENT
        assert word in caught.value.suggestion + caught.value.message, (args, caught.value.message)


def test_a_large_real_file_respects_the_record_cap_page_by_page(sample_repo: Path, tmp_path: Path) -> None:
    """Seed: "A defensive record cap fails explicitly instead of silently losing data." """
    report = corpus.decompressed("lcov/cmark-gfm-0.29.0.gfm.13.gcov-9tests.lcov", tmp_path)
    with open_project(sample_repo) as project:
        svc = Service(project)
        snap = project.ingest(report, suite="cmark")
        biggest = project.files(snap.snapshot_id, order="uncovered", limit=1).files[0]
        data = review(
            svc,
            task="file",
            measurement={"snapshot_id": snap.snapshot_id},
            file=biggest.path,
            limits={"max_words": 50_000, "max_bytes": 2_000_000},
        )
        records = sum(
            len(data["data"][t][c])
            for t, c in (
                ("lines", "line"),
                ("branches", "line"),
                ("functions", "name"),
                ("regions", "start_line"),
            )
        )
        assert 0 < records <= 1000 and data["page"]["next_cursor"] is not None
