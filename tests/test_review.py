"""Agent-facing answers: envelopes, budgets, cursors, claims and every review task."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.model import snapshot_to_dict
from coverage_core.operations.review_task_table import ARGUMENTS
from coverage_core.operations.table import OPERATIONS
from coverage_core.review.budget import words
from coverage_core.service import Service

from . import commandline, corpus
from .conftest import make_sample_repo
from .gitrepo import commit, lcov, make_repo, write


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The sample with its LCOV report stored, once for the module: for the tests that only read it (no
    import, no change to the checkout, no closing). A test that writes takes ``own_service``."""
    repo = make_sample_repo(tmp_path_factory.mktemp("review") / "inventory")
    with open_project(repo) as project:
        svc = Service(project)
        svc.call("coverage_import", {"report_path": "step3.coverage.lcov"})
        yield svc


@pytest.fixture
def own_service(sample_repo: Path) -> Iterator[Service]:
    """The sample with its LCOV report stored, for one test that writes (``sample_repo`` is its checkout)."""
    with open_project(sample_repo) as project:
        svc = Service(project)
        svc.call("coverage_import", {"report_path": "step3.coverage.lcov"})
        yield svc


def review(svc: Service, **args) -> dict:
    return svc.call("coverage_review", args)


def test_every_answer_is_one_envelope_with_context_data_and_page(service: Service) -> None:
    for task in ("insight", "history", "source", "tests", "audit", "all"):
        env = review(service, task=task)
        assert set(env) == {"context", "data", "page"}
        ctx = env["context"]
        assert {"repo_key", "checkout_path", "suite", "schema_revision", "stats"} <= set(ctx)
        assert ctx["stats"]["elapsed_ms"] >= 0 and isinstance(ctx["stats"]["rows_scanned"], int)
        assert env["data"]["claim_status"] in {"supported", "limited", "not_measured", "stale", "invalid"}
        assert isinstance(env["data"]["reasons"], list)


def test_insight_ranks_uncovered_code_with_at_most_three_ranges_per_target(service: Service) -> None:
    """Seed: "Compact history keeps two points by default and compact insight keeps three
    `[start,end,line_count]` ranges per target while exposing `region_count` and `regions_truncated`;
    audit is the explicit exact projection." """
    data = review(service, task="insight")["data"]
    assert len(data["files"]) <= 3 and len(data["targets"]) <= 5
    # format_price (lines 24-27) is the largest uncovered run of the sample.
    top = data["targets"][0]
    assert top[0] == "inventory/pricing.py" and top[1] == "format_price"
    assert top[4] == [[24, 27, 4]]
    for t in data["targets"]:
        assert len(t[4]) <= 3
        assert t[6] == (t[5] > len(t[4]))  # regions_truncated tells the truth
    sizes = [t[2] + t[3] for t in data["targets"]]
    assert sizes == sorted(sizes, reverse=True)


def test_representations_grow_from_compact_to_review_to_audit(service: Service) -> None:
    for task in ("insight", "all"):
        sizes = [
            len(json.dumps(review(service, task=task, representation=r)["data"]))
            for r in ("compact", "review", "audit")
        ]
        assert sizes[0] < sizes[1] < sizes[2], (task, sizes)


@pytest.mark.parametrize("max_words", [60, 90, 150, 400])
def test_word_budgets_are_honoured_to_the_word_over_the_whole_data_object(
    service: Service, max_words: int
) -> None:
    for task in ("insight", "source", "audit"):
        try:
            env = review(service, task=task, limits={"max_words": max_words})
        except CoverageError as err:
            assert err.code is ErrorCode.BUDGET_TOO_SMALL and err.details["needed_words"] > max_words
            continue
        assert words(env["data"]) <= max_words


def test_project_context_accounts_reserved_page_and_response_words(service: Service) -> None:
    """Seed: "`project_context` reserves its fixed project/run summary before paging commands and enforces
    the budget over the complete `data` object; `page.reserved_words` reports that fixed reservation,
    `page.word_count` reports only the command page, and `page.response_word_count` reports their
    combined accounting." """
    env = service.call("project_context", {})
    page = env["page"]
    assert page["response_word_count"] == words(env["data"])
    assert page["reserved_words"] + page["word_count"] == page["response_word_count"]
    assert env["data"]["active_runs"] == [] and env["data"]["active_runs_truncated"] is False
    suite = env["data"]["suites"][0]
    assert suite["behind_head"] == 0 and suite["claim_status"] == "supported"
    # The smallest budget is a shorter answer, not a failure (issue 25): page.omitted says what it left out.
    small = service.call("project_context", {"max_words": 40})
    assert small["page"]["response_word_count"] <= 40 and small["page"]["omitted"]


def test_source_marks_lines_from_git_at_the_snapshots_commit(own_service: Service, sample_repo: Path) -> None:
    (sample_repo / "inventory" / "pricing.py").write_text("rewritten\n")  # the working tree moves on
    data = review(own_service, task="source", file="inventory/pricing.py", ranges=["6-9", "14-17", "22-27"])[
        "data"
    ]
    lines = {n: (mark, text) for r in data["ranges"] for n, mark, text in r["lines"]}
    assert lines[6] == ("c", 'def price_with_tax(net, band="standard"):')
    assert lines[8][0] == "c" and "raise ValueError" in lines[8][1]
    assert lines[15] == ("p", "    elif quantity >= 20:")  # executed, its true branch never taken
    assert lines[16][0] == "u"
    assert lines[24][0] == "u" and lines[23][0] == "c" and lines[22][0] == "-"
    # The file was modified after it was measured: an answer about it is stale, and says which file.
    assert data["claim_status"] == "stale" and "inventory/pricing.py" in data["reasons"][0]


def test_source_without_a_range_shows_the_top_insight_target(service: Service) -> None:
    data = review(service, task="source")["data"]
    assert data["file"] == "inventory/pricing.py"
    numbers = [n for r in data["ranges"] for n, _, _ in r["lines"]]
    assert {24, 25, 26, 27} <= set(numbers)


def test_history_gives_two_points_and_a_window_aggregate(sample_repo: Path) -> None:
    """Seed: "Compact history keeps two points by default and compact insight keeps three
    `[start,end,line_count]` ranges per target while exposing `region_count` and `regions_truncated`;
    audit is the explicit exact projection." """
    with open_project(sample_repo) as project:
        svc = Service(project)
        svc.call("coverage_import", {"report_path": "step1.coverage.json", "suite": "unit"})
        write(sample_repo, {"CHANGELOG": "x\n"})
        commit(sample_repo, "later")
        svc.call("coverage_import", {"report_path": "step3.coverage.json", "suite": "unit"})
        data = review(svc, task="history", measurement={"suite": "unit"})["data"]
        assert data["window"]["snapshots"] == 2 and len(data["points"]) == 2
        # The headline: coverage.py's own total, statements and branches together.
        totals = json.loads((sample_repo / "step3.coverage.json").read_text())["totals"]
        newest = [
            totals["covered_lines"] + totals["covered_branches"],
            totals["num_statements"] + totals["num_branches"],
        ]
        assert data["window"]["newest"] == newest and data["window"]["change"] > 0
        file_hist = review(svc, task="history", measurement={"suite": "unit"}, file="inventory/pricing.py")[
            "data"
        ]
        pricing = json.loads((sample_repo / "step3.coverage.json").read_text())["files"][
            "inventory/pricing.py"
        ]
        s = pricing["summary"]  # a file's figure follows the same rule: statements and branches
        both = [s["covered_lines"] + s["covered_branches"], s["num_statements"] + s["num_branches"]]
        assert file_hist["subject"] == "file" and file_hist["points"][0][3:] == [*both, "complete", None]
        line_hist = review(
            svc, task="history", measurement={"suite": "unit"}, file="inventory/pricing.py", lines="24"
        )["data"]
        assert [p[3:] for p in line_hist["points"]] == [[0, 1, "complete", None], [0, 1, "complete", None]]


def test_a_snapshot_of_an_older_commit_is_stale_never_the_checkouts_state(
    own_service: Service, sample_repo: Path
) -> None:
    write(sample_repo, {"NEWS": "x\n"})
    commit(sample_repo, "moved on")
    data = review(own_service, task="insight")["data"]
    assert data["claim_status"] == "stale"
    assert "1 commit behind" in data["reasons"][0]


def test_wrong_typed_and_unknown_arguments_are_refused_with_a_suggestion(service: Service) -> None:
    cases = [
        ({"task": "insight", "limits": {"max_words": "many"}}, "$.limits.max_words"),
        ({"task": "insight", "colour": "red"}, "colour"),
        ({"task": "sideways"}, "$.task"),
        ({}, "task"),
        ({"task": "insight", "measurement": {"snapshot_id": "HEAD"}}, "$.measurement.snapshot_id"),
    ]
    for args, mention in cases:
        with pytest.raises(CoverageError) as err:
            service.call("coverage_review", args)
        assert err.value.code is ErrorCode.INVALID_ARGUMENT
        assert mention in err.value.message and err.value.suggestion


def test_tests_task_is_unavailable_for_reports_without_named_tests(service: Service) -> None:
    """Seed: "The response exposes global counts and small cursor pages, while other report formats return
    `status=unavailable` because they do not provide named observations." """
    data = review(service, task="tests")["data"]
    assert data["status"] == "unavailable"


def _duplicate_tracefile(with_duplicates: bool) -> str:
    a = {"src/a.c": {1: 1, 2: 1, 3: 0}}
    b = {"src/a.c": {1: 2, 2: 5, 3: 0}} if with_duplicates else {"src/a.c": {1: 1, 2: 0, 3: 1}}
    c = {"src/a.c": {1: 0, 2: 0, 3: 1}}
    return lcov(a, "alpha") + lcov(b, "beta") + lcov(c, "gamma")


@pytest.mark.parametrize("with_duplicates", [True, False])
def test_duplicate_candidates_are_tests_with_identical_coverage(
    tmp_path: Path, with_duplicates: bool
) -> None:
    """Seed: "Duplicate candidates compare a full, ordered JSON representation of each test's
    `{kind,file_path,line_number, region_key}` set inside DuckDB; no hash-only grouping is used." """
    repo = make_repo(tmp_path / "r", {"src/a.c": "1\n2\n3\n"})
    (repo / "t.info").write_text(_duplicate_tracefile(with_duplicates))
    with open_project(repo) as project:
        svc = Service(project)
        svc.call("coverage_import", {"report_path": "t.info"})
        data = review(svc, task="tests")["data"]
        assert data["status"] == "available" and data["named_tests"] == 3
        if with_duplicates:
            assert data["duplicate_groups"] == 1 and data["duplicates"] == [[2, ["alpha", "beta"]]]
        else:
            assert data["duplicate_groups"] == 0 and data["duplicates"] == []
        per_file = review(svc, task="tests", file="src/a.c")["data"]
        assert per_file["covering_tests"] == 3
        if not with_duplicates:
            # alpha runs lines 1-2, beta 1 and 3, gamma 3: only line 2 has a single test.
            assert per_file["only_one_test"] == [[2, 2, 1, "alpha"]]


def test_tests_task_attributes_lines_of_a_real_tracefile(tmp_path: Path) -> None:
    """Seed: "Named per-test coverage is normalized during LCOV parsing into `test_names` and
    `test_coverage_observations`." """
    repo = make_repo(tmp_path / "r", {"README": "x\n"})
    shutil.copy(corpus.path("lcov/cmark-gfm-0.29.0.gfm.13.gcov-9tests.lcov"), repo / "cmark.info")
    with open_project(repo) as project:
        svc = Service(project)
        project.ingest(repo / "cmark.info")  # the library stores it unmapped (coverage_import refuses it)
        glob = review(svc, task="tests", representation="review")["data"]
        assert glob["named_tests"] == 9
        path = "/build/cmark-gfm-0.29.0.gfm.13/src/blocks.c"
        per_file = review(svc, task="tests", file=path, limits={"max_words": 2000})["data"]
        assert 1 <= per_file["covering_tests"] <= 9
        assert per_file["claim_status"] == "limited"  # its files are unmapped here
        # Against the tracefile read plainly: each TN: section's hit DA lines of the file.
        hit: dict[str, set[int]] = {}
        test = source = None
        for line in (repo / "cmark.info").read_text().splitlines():
            if line.startswith("TN:"):
                test = line[3:]
            elif line.startswith("SF:"):
                source = line[3:]
            elif line.startswith("DA:") and source == path:
                number, count = line[3:].split(",")[:2]
                if int(count) > 0:
                    hit.setdefault(test or "", set()).add(int(number))
        want_tests = sorted(([t, len(lines)] for t, lines in hit.items()), key=lambda r: (-r[1], r[0]))
        lone = sorted(n for n in set().union(*hit.values()) if sum(n in lines for lines in hit.values()) == 1)
        walked, cursor = [], None
        while True:
            args = {"task": "tests", "file": path, **({"cursor": cursor} if cursor else {})}
            page = review(svc, **args)["data"]
            walked.append(page)
            cursor = review(svc, **args)["page"]["next_cursor"] if page["truncated"] else None
            if cursor is None:
                break
        assert per_file["covering_tests"] == len(hit) and per_file["single_test_lines"] == len(lone)
        assert [t for page in walked for t in page["tests"]] == want_tests
        ranges = [r for page in walked for r in page["only_one_test"]]
        assert sorted(n for a, b, _count, _t in ranges for n in range(a, b + 1)) == lone
        owner = {n: t for t, lines in hit.items() for n in lines if n in set(lone)}
        assert all(owner[n] == t for a, b, _count, t in ranges for n in range(a, b + 1))


def test_audit_pages_exact_file_records_with_a_cursor(service: Service) -> None:
    env = review(service, task="audit", file="inventory/stock.py", limits={"max_words": 80})
    seen = [tuple(r) for r in env["data"]["lines"]]
    while env["page"]["next_cursor"]:
        env = review(
            service,
            task="audit",
            file="inventory/stock.py",
            limits={"max_words": 80},
            cursor=env["page"]["next_cursor"],
        )
        seen += [tuple(r) for r in env["data"]["lines"]]
    assert len(seen) == len(set(seen)) == 27


def test_tampered_and_foreign_cursors_are_refused(service: Service) -> None:
    env = review(service, task="audit", file="inventory/stock.py", limits={"max_words": 80})
    cursor = env["page"]["next_cursor"]
    assert cursor
    body, mac = cursor.rsplit(".", 1)
    tampered = body + "." + ("0" if mac[0] != "0" else "1") + mac[1:]
    bad = [
        (tampered, {"file": "inventory/stock.py", "limits": {"max_words": 80}}),
        (cursor, {"file": "inventory/pricing.py", "limits": {"max_words": 80}}),  # another query
        (cursor, {"file": "inventory/stock.py", "limits": {"max_words": 90}}),
        ("garbage", {"file": "inventory/stock.py", "limits": {"max_words": 80}}),
    ]
    for c, args in bad:
        with pytest.raises(CoverageError) as err:
            review(service, task="audit", cursor=c, **args)
        assert err.value.code is ErrorCode.INVALID_CURSOR and err.value.suggestion


def test_a_cursor_of_another_snapshot_is_refused(own_service: Service, sample_repo: Path) -> None:
    first = review(own_service, task="audit", file="inventory/stock.py", limits={"max_words": 80})
    sid = first["data"]["snapshot_id"]
    other = own_service.call("coverage_import", {"report_path": "step3.coverage.lcov", "suite": "other"})
    other_id = other["data"]["snapshot"]["snapshot_id"]
    page = review(
        own_service,
        task="audit",
        measurement={"snapshot_id": sid},
        file="inventory/stock.py",
        limits={"max_words": 80},
    )
    with pytest.raises(CoverageError) as err:
        review(
            own_service,
            task="audit",
            measurement={"snapshot_id": other_id},
            file="inventory/stock.py",
            limits={"max_words": 80},
            cursor=page["page"]["next_cursor"],
        )
    assert err.value.code is ErrorCode.INVALID_CURSOR


def test_a_snapshot_of_thousands_of_files_is_walked_page_by_page_without_gaps_or_duplicates(
    tmp_path: Path,
) -> None:
    # 2,500 files over 97 folders are 25 audit pages of keyset paging; benchmarks/walk.py checks the same
    # answer on 100,000 files.
    repo = make_repo(tmp_path / "big", {"README": "x\n"})
    n = 2_500
    lines = []
    for i in range(n):
        lines.append(f"SF:gen/d{i % 97}/f{i:06d}.c\nDA:1,{i % 2}\nDA:2,0\nend_of_record\n")
    (repo / "big.info").write_text("".join(lines))
    with open_project(repo) as project:
        svc = Service(project)
        snap = snapshot_to_dict(project.ingest(repo / "big.info"))  # unmapped: the library stores it anyway
        assert snap["files"] == n
        seen: list[str] = []
        pages = 0
        cursor = None
        while True:
            args = {"task": "audit", "limits": {"max_words": 50_000, "max_bytes": 2_000_000}}
            if cursor:
                args["cursor"] = cursor
            env = svc.call("coverage_review", args)
            seen += [f[0] for f in env["data"]["files"]]
            pages += 1
            cursor = env["page"]["next_cursor"]
            if not cursor:
                break
        assert pages > 20
        assert len(seen) == n and len(set(seen)) == n and seen == sorted(seen)
        insight = svc.call(
            "coverage_review", {"task": "insight", "limits": {"max_files": 200, "max_words": 50_000}}
        )
        assert insight["page"]["total_files"] == n and len(insight["data"]["files"]) == 200


def test_nothing_stored_yet_is_not_measured_with_the_way_forward(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "empty", {"a.py": "x\n"})
    with open_project(repo) as project:
        data = review(Service(project), task="insight")["data"]
    assert data["claim_status"] == "not_measured" and "coverage_import" in data["next"]


def test_cli_review_json_prints_exactly_the_tool_envelope(own_service: Service, sample_repo: Path) -> None:
    expected = review(own_service, task="insight")
    own_service.project.close()
    out = commandline.cli("review", "insight", "--json", cwd=sample_repo)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["data"] == expected["data"] and got["page"] == expected["page"]
    assert set(got["context"]) == set(expected["context"])
    human = commandline.cli("review", "source", cwd=sample_repo)
    assert "24 u" in human.stdout.replace("  ", " ")
    ctx = commandline.cli("context", "--json", cwd=sample_repo)
    assert json.loads(ctx.stdout)["page"]["response_word_count"] > 0


def test_every_declared_operation_has_a_strict_object_schema() -> None:
    for op in OPERATIONS.values():
        assert op.input_schema["type"] == "object" and op.input_schema["additionalProperties"] is False
        assert op.description and op.title


def test_a_source_request_over_the_record_cap_pages_with_a_flag_and_a_cursor_instead_of_dropping_lines(
    tmp_path: Path,
) -> None:
    body = "".join(f"x{i} = {i}\n" for i in range(1, 3001))
    repo = make_repo(tmp_path / "r", {"big.py": body})
    (repo / "c.info").write_text(lcov({"big.py": {n: n % 2 for n in range(1, 3001)}}))
    with open_project(repo) as project:
        svc = Service(project)
        svc.call("coverage_import", {"report_path": "c.info"})
        ranges = [f"{a}-{a + 199}" for a in range(1, 2001, 200)]
        limits = {"max_words": 50_000, "max_bytes": 2_000_000}
        first = review(svc, task="source", file="big.py", ranges=ranges, limits=limits)
        assert first["data"]["lines_truncated"] is True and first["page"]["next_cursor"]
        rest = review(
            svc,
            task="source",
            file="big.py",
            ranges=ranges,
            limits=limits,
            cursor=first["page"]["next_cursor"],
        )
        assert rest["data"]["lines_truncated"] is False
        seen = [line[0] for answer in (first, rest) for r in answer["data"]["ranges"] for line in r["lines"]]
        assert seen == list(range(1, 2001)), "every requested line exactly once, in order"


TASK_ARGS = {
    "insight": {},
    "history": {},
    "source": {},
    "tests": {},
    "audit": {},
    "all": {},
    "change": {"baseline": {"kind": "previous_snapshot"}},
    "incremental": {},  # explicit snapshots, filled in by the test
}


@pytest.fixture(scope="module")
def two_snapshots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The sample repository with a second commit and snapshot, so change and history have something to say.

    Built once for the module: its only user, the budget test, reads (96 cases of every task,
    representation and limit) and never writes."""
    sample_repo = make_sample_repo(tmp_path_factory.mktemp("two-snapshots") / "inventory")
    with open_project(sample_repo) as project:
        service = Service(project)
        service.call("coverage_import", {"report_path": "step3.coverage.lcov"})
        write(sample_repo, {"inventory/extra.py": "def f():\n    return 1\n"})
        commit(sample_repo, "extra")
        (sample_repo / "later.info").write_text(
            (sample_repo / "step3.coverage.lcov").read_text() + lcov({"inventory/extra.py": {1: 1, 2: 0}})
        )
        service.call("coverage_import", {"report_path": "later.info"})
        yield service


@pytest.mark.parametrize("task", sorted(TASK_ARGS))
@pytest.mark.parametrize("representation", ["compact", "review", "audit"])
@pytest.mark.parametrize(
    "limits", [{"max_words": 120}, {"max_words": 300}, {"max_bytes": 700}, {"max_bytes": 2500}]
)
def test_every_task_keeps_the_whole_data_object_within_its_word_and_byte_budget(
    two_snapshots: Service, task: str, representation: str, limits: dict
) -> None:
    args = dict(TASK_ARGS[task])
    if task == "incremental":
        current, base = two_snapshots.project.snapshots(limit=2)
        args = {
            "measurement": {"snapshot_id": current.snapshot_id},
            "baseline": {"kind": "explicit", "snapshot_id": base.snapshot_id},
        }
    if "representation" in ARGUMENTS[task]:  # a task that does not read it refuses it
        args["representation"] = representation
    try:
        env = review(two_snapshots, task=task, limits=limits, **args)
    except CoverageError as err:
        # Only the tight budgets may be too small; the roomier ones must answer.
        assert err.code is ErrorCode.BUDGET_TOO_SMALL
        assert limits in ({"max_words": 120}, {"max_bytes": 700})
        return
    text = json.dumps(env["data"], separators=(",", ":"), ensure_ascii=False)
    assert words(env["data"]) <= limits.get("max_words", 600)
    assert len(text.encode()) <= limits.get("max_bytes", 16_384)


def test_history_in_audit_representation_pages_every_point_without_gaps(sample_repo: Path) -> None:
    with open_project(sample_repo) as project:
        svc = Service(project)
        report = sample_repo / "h.info"
        for i in range(25):
            report.write_text(lcov({"inventory/stock.py": {1: i + 1, 2: i % 2, 3: 1 if i > 10 else 0}}))
            svc.call("coverage_import", {"report_path": "h.info", "suite": "h"})
        seen, cursor = [], None
        while True:
            args = {
                "task": "history",
                "measurement": {"suite": "h"},
                "representation": "audit",
                "limits": {"max_words": 200},
            }
            if cursor:
                args["cursor"] = cursor
            env = svc.call("coverage_review", args)
            seen += [p["snapshot_id"] for p in env["data"]["all_points"]]
            cursor = env["page"]["next_cursor"]
            if not cursor:
                break
        assert len(seen) == len(set(seen)) == 25


def test_a_union_of_snapshots_claims_no_more_than_its_weakest_member(
    own_service: Service, sample_repo: Path
) -> None:
    full = own_service.call("coverage_import", {"report_path": "step3.coverage.json", "suite": "py"})["data"][
        "snapshot"
    ]
    part = own_service.call(
        "coverage_import", {"report_path": "step1.coverage.json", "suite": "py-subset", "scope": "subset"}
    )["data"]["snapshot"]
    data = review(
        own_service, task="insight", measurement={"snapshot_ids": [full["snapshot_id"], part["snapshot_id"]]}
    )["data"]
    assert data["claim_status"] == "limited"
    assert any("subset" in r for r in data["reasons"])


def test_a_union_of_snapshots_of_different_commits_is_refused(
    own_service: Service, sample_repo: Path
) -> None:
    first = own_service.call("coverage_import", {"report_path": "step1.coverage.json", "suite": "py"})[
        "data"
    ]["snapshot"]
    write(sample_repo, {"NEWS": "x\n"})
    commit(sample_repo, "moved on")
    second = own_service.call("coverage_import", {"report_path": "step3.coverage.json", "suite": "py"})[
        "data"
    ]["snapshot"]
    with pytest.raises(CoverageError) as err:
        review(
            own_service,
            task="insight",
            measurement={"snapshot_ids": [first["snapshot_id"], second["snapshot_id"]]},
        )
    assert err.value.code is ErrorCode.INCOMPATIBLE_SNAPSHOTS and "task=change" in err.value.suggestion


def test_an_import_right_after_a_commit_is_measured_at_the_new_head(
    own_service: Service, sample_repo: Path
) -> None:
    review(own_service, task="insight")  # the checkout state is now cached
    write(sample_repo, {"NEWS": "x\n"})
    commit(sample_repo, "moved on")
    data = own_service.call("coverage_import", {"report_path": "step3.coverage.json"})["data"]
    assert data["claim_status"] == "supported" and data["reasons"] == []


def test_project_context_refuses_a_cursor_it_never_issued(service: Service) -> None:
    with pytest.raises(CoverageError) as err:
        service.call("project_context", {"cursor": "garbage.notacursor"})
    assert err.value.code is ErrorCode.INVALID_CURSOR


@pytest.mark.parametrize(
    "name, args",
    [
        ("coverage_review", {"task": "all", "limits": {"max_words": 40, "max_files": 5}}),
        ("coverage_review", {"task": "history", "limits": {"max_words": 40}}),
    ],
)
def test_a_budget_too_small_carries_the_call_that_fits_and_that_call_succeeds(
    service: Service, name: str, args: dict
) -> None:
    with pytest.raises(CoverageError) as caught:
        service.call(name, args)
    remedy = caught.value.remedy.to_dict()
    assert caught.value.code == ErrorCode.BUDGET_TOO_SMALL and remedy["operation"] == name
    fixed = remedy["arguments"]
    assert {k: v for k, v in fixed.items() if k not in ("limits", "max_words")} == {
        k: v for k, v in args.items() if k not in ("limits", "max_words")
    }  # the rest of the call is kept
    assert fixed.get("limits", {}).get("max_files") == args.get("limits", {}).get("max_files")
    service.call(remedy["operation"], fixed)  # the remedy is a call that succeeds


def test_a_foreign_cursor_carries_the_same_call_without_it(service: Service) -> None:
    cursor = review(service, task="snapshots", page_size=1)["page"]["next_cursor"] or "x.y"
    with pytest.raises(CoverageError) as caught:
        review(service, task="history", cursor=cursor)
    assert caught.value.code == ErrorCode.INVALID_CURSOR
    assert caught.value.remedy.to_dict() == {"operation": "coverage_review", "arguments": {"task": "history"}}


@pytest.mark.parametrize(
    "args",
    [
        {"task": "insight", "measurement": {"snapshot_id": "snap-00000000"}},
        {"task": "file", "file": "no/such.py"},
        {"task": "change", "baseline": {"kind": "explicit"}},
    ],
)
def test_an_agents_mistake_suggests_an_mcp_call_never_a_command_line(service: Service, args: dict) -> None:
    from coverage_daemon.mcp import tool_error

    with pytest.raises(CoverageError) as caught:
        service.call("coverage_review", args)
    body = tool_error(caught.value)["structuredContent"]["error"]
    assert body["remedy"]["operation"] == "coverage_review"
    assert (
        body["suggestion"].startswith("Call coverage_review with")
        and "coverage-mcp " not in body["suggestion"]
    )
    service.call(body["remedy"]["operation"], body["remedy"]["arguments"])  # the suggested call works


def test_an_import_that_maps_no_file_of_the_repository_is_refused_and_stores_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"README": "x\n"})
    shutil.copy(corpus.path("lcov/cmark-gfm-0.29.0.gfm.13.gcov-9tests.lcov"), repo / "cmark.info")
    with open_project(repo) as project:
        svc = Service(project)
        with pytest.raises(CoverageError) as caught:
            svc.call("coverage_import", {"report_path": "cmark.info"})
        error = caught.value
        assert error.code is ErrorCode.INVALID_ARGUMENT and "nothing was stored" in error.message
        assert error.details["unmapped"] == 40 and error.details["examples"][0].startswith("/build/cmark-gfm")
        assert "--path-map" in error.suggestion
        assert project.snapshots() == []


def test_project_context_names_each_suites_newest_snapshot_after_every_import_and_deletion(
    sample_repo: Path,
) -> None:
    with open_project(sample_repo) as project:
        svc = Service(project)

        def newest() -> list[str]:
            return [s["snapshot_id"] for s in svc.call("project_context")["data"]["suites"]]

        first = svc.call("coverage_import", {"report_path": "step1.coverage.json"})["data"]["snapshot"][
            "snapshot_id"
        ]
        assert newest() == [first]
        second = svc.call("coverage_import", {"report_path": "step3.coverage.json"})["data"]["snapshot"][
            "snapshot_id"
        ]
        assert newest() == [second]
        other = svc.call("coverage_import", {"report_path": "step3.coverage.lcov", "suite": "e2e"})["data"]
        assert newest() == [other["snapshot"]["snapshot_id"], second]
        project.delete_snapshots([second], force=True)
        assert newest() == [other["snapshot"]["snapshot_id"], first]
