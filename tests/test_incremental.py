"""coverage_review(task="incremental"): a targeted run against a fixed baseline, as a union projection."""

from __future__ import annotations

from pathlib import Path

import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.service import Service

from .gitrepo import commit, lcov, make_repo, write

SRC = {"m.c": "".join(f"m {i}\n" for i in range(1, 11)), "n.c": "n\n" * 4, ".gitignore": "*.info\n*.xml\n"}
BASE = {"m.c": {1: 1, 2: 1, 3: 0, 4: 0, 5: 1}, "n.c": {1: 1, 2: 0}}


@pytest.fixture
def svc(tmp_path: Path):
    repo = make_repo(tmp_path / "r", SRC)
    with open_project(repo) as project:
        yield Service(project)


def put(svc: Service, report: str, name: str = "r.info", **args) -> str:
    path = svc.project.checkout.worktree_path / name
    path.write_text(report)
    return svc.call("coverage_import", {"report_path": name, **args})["data"]["snapshot"]["snapshot_id"]


def incremental(svc: Service, current: str | list[str], base: str, **args) -> dict:
    measurement = {"snapshot_ids": current} if isinstance(current, list) else {"snapshot_id": current}
    return svc.call(
        "coverage_review",
        {
            "task": "incremental",
            "measurement": measurement,
            "baseline": {"kind": "explicit", "snapshot_id": base},
            **args,
        },
    )["data"]


def test_the_answer_is_the_union_of_baseline_and_current_with_grouped_lines(svc: Service) -> None:
    """Seed: "The standalone review tool remains independent of execution." and "MCP
    `coverage_review(task="incremental")` is a standalone stored-detail projection." and "The primary
    ordinary result is the deduplicated baseline-union-current projection; its nested `diff` is a
    separate replacement-style diagnostic." """
    base = put(svc, lcov(BASE), suite="full")
    # A targeted run of one file: it reaches line 3 for the first time and misses line 2.
    run = put(svc, lcov({"m.c": {1: 1, 2: 0, 3: 2, 4: 0, 5: 1, 6: 1}}), suite="case-42", scope="subset")
    data = incremental(svc, run, base, representation="review")
    assert data["projection"] == "baseline_union_current"
    groups = {k: v for k, v in data["categories"].items() if v}
    # n.c was not run at all: its baseline lines stay in the union as not_observed.
    assert groups == {"kept": 2, "gained": 1, "not_observed": 3, "uncovered": 1, "added_covered": 1}
    assert data["lines"]["baseline"] == [4, 7] and data["lines"]["current"] == [4, 6]
    assert data["lines"]["union"] == [6, 8] and data["lines"]["delta_union"] == [2, 1]
    assert data["regression"] == {"status": "not_observed", "lines": 1}
    assert data["baseline"]["suites"] == ["full"] and data["current"]["suites"] == ["case-42"]
    assert data["diff"]["replacement"] is True and data["diff"]["categories"]["LBC"] == 0
    assert data["diff"]["categories"]["not_observed"] == 1  # a subset's LBC is not_observed, never a loss


def test_absence_in_a_subset_run_is_not_observed_and_only_a_complete_run_claims_a_regression(
    svc: Service,
) -> None:
    """Seed: "Selected-subset absence is `not_observed`, not regression; only `complete_snapshot` supports
    regression claims." """
    base = put(svc, lcov(BASE))
    lost = {"m.c": {1: 1, 2: 0, 3: 0, 4: 0, 5: 1}, "n.c": {1: 1, 2: 0}}
    subset = put(svc, lcov(lost, test="subset"), scope="subset")
    complete = put(svc, lcov(lost, test="complete"))
    sub, full = incremental(svc, subset, base), incremental(svc, complete, base)
    assert sub["categories"]["not_observed"] == 1 and sub["categories"]["lost"] == 0
    assert sub["regression"]["status"] == "not_observed"
    assert full["categories"]["lost"] == 1 and full["categories"]["not_observed"] == 0
    assert full["regression"] == {"status": "regression", "lines": 1}
    assert sub["ranges"][0] == ["m.c", "not_observed", 2, 2, 1]
    assert full["ranges"][0] == ["m.c", "lost", 2, 2, 1]


def test_several_current_snapshots_are_unioned(svc: Service) -> None:
    """Seed: "When a run produced several ordinary artifacts, all selected ordinary IDs are merged." """
    base = put(svc, lcov(BASE))
    a = put(svc, lcov({"m.c": {3: 1}}), name="a.info", scope="subset")
    b = put(svc, lcov({"m.c": {4: 1}}), name="b.info", scope="subset")
    data = incremental(svc, [a, b], base)
    assert data["categories"]["gained"] == 2 and data["current"]["snapshot_ids"] == [a, b]


def test_lines_are_followed_across_commits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", SRC)
    with open_project(repo) as project:
        svc = Service(project)
        base = put(svc, lcov(BASE))
        write(repo, {"m.c": "header\n" + SRC["m.c"]})  # every line moves down by one
        commit(repo, "header")
        run = put(svc, lcov({"m.c": {2: 1, 3: 1, 4: 1}}), scope="subset")
        data = incremental(svc, run, base)
    assert data["categories"]["kept"] == 2 and data["categories"]["gained"] == 1  # m 3 was uncovered


def test_suites_may_differ_but_the_format_must_match(svc: Service) -> None:
    """Seed: "Incremental comparisons are the explicit exception for suite identity: they require the same
    repository and format, but may compare different suites and case-specific execution arguments." and
    "Ordinary comparisons require the same repository and normalized format" """
    base = put(svc, lcov(BASE), suite="unit")
    xml = (
        '<?xml version="1.0" ?><coverage version="7" line-rate="1"><packages><package name="p"><classes>'
        '<class name="m" filename="m.c"><methods/><lines><line number="1" hits="1"/></lines></class>'
        "</classes></package></packages></coverage>"
    )
    other = put(svc, xml, name="c.xml", suite="integration")
    with pytest.raises(CoverageError) as err:
        incremental(svc, other, base)
    assert err.value.code is ErrorCode.INCOMPATIBLE_SNAPSHOTS and "cobertura" in err.value.message


def test_incremental_needs_explicit_sides_and_never_mixes_composites_with_snapshots(svc: Service) -> None:
    """Seed: "It requires an explicit current measurement and `baseline.kind="explicit"` with matching
    ordinary snapshot IDs or composite snapshot IDs." """
    base = put(svc, lcov(BASE))
    cases = [
        (
            {"task": "incremental", "baseline": {"kind": "explicit", "snapshot_id": base}},
            ErrorCode.INVALID_ARGUMENT,
        ),
        (
            {
                "task": "incremental",
                "measurement": {"snapshot_id": base},
                "baseline": {"kind": "previous_snapshot"},
            },
            ErrorCode.INVALID_ARGUMENT,
        ),
        (
            {
                "task": "incremental",
                "measurement": {"snapshot_id": base},
                "baseline": {"kind": "explicit", "composite_snapshot_id": "comp-1"},
            },
            ErrorCode.INCOMPATIBLE_SNAPSHOTS,
        ),
        (
            {
                "task": "incremental",
                "measurement": {"composite_snapshot_id": "comp-1"},
                "baseline": {"kind": "explicit", "snapshot_id": base},
            },
            ErrorCode.NOT_FOUND,
        ),
    ]
    for args, code in cases:
        with pytest.raises(CoverageError) as err:
            svc.call("coverage_review", args)
        assert err.value.code is code and err.value.suggestion


def _named(tests: dict[str, dict[int, int]]) -> str:
    return "".join(lcov({"m.c": lines}, test=name) for name, lines in tests.items())


def test_test_differences_name_each_test_beside_its_stable_id_bounded_and_counted(svc: Service) -> None:
    """Seed: "Both return grouped line categories, aggregate metric deltas, bounded opaque `test_id` set
    differences, and attribution status." and "Suite, branch, commit, command, cwd, and execution case
    are provenance, not test identity." """
    base = put(svc, _named({f"base_{i}": {1: 1} for i in range(3)} | {"shared": {2: 1}}))
    run = put(
        svc, _named({f"new_test_{i:02d}": {3: 1} for i in range(14)} | {"shared": {2: 1}}), scope="subset"
    )
    data = incremental(svc, run, base)
    tests = data["tests"]
    assert (tests["baseline"], tests["current"], tests["common"]) == (4, 15, 1)
    only = tests["only_current"]
    assert only["count"] == 14 and only["names"] == [f"new_test_{i:02d}" for i in range(10)]
    assert len(only["ids"]) == 10 and only["truncated"] is True
    assert tests["only_baseline"] == {
        **tests["only_baseline"],
        "count": 3,
        "names": ["base_0", "base_1", "base_2"],
    }
    again = incremental(svc, run, base)["tests"]["only_current"]
    assert again["ids"] == only["ids"] and all(i.startswith("t-") for i in again["ids"])  # stable ids
    attribution = data["attribution"]
    assert attribution["status"] == "available"
    assert attribution["newly_hit_lines"] == 1 and attribution["attributed_lines"] == 1  # line 3
    assert attribution["tests"]["count"] == 14 and attribution["tests"]["names"] == only["names"]
    assert attribution["tests"]["ids"] == only["ids"]  # the same test, the same id, in both lists


def test_attribution_is_unavailable_without_named_tests(svc: Service) -> None:
    base = put(svc, lcov(BASE))
    run = put(svc, lcov({"m.c": {3: 1}}), scope="subset")
    data = incremental(svc, run, base)
    assert data["attribution"]["status"] == "unavailable" and data["tests"]["current"] == 0
