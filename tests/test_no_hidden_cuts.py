"""No cut without a flag and a cursor: every page of every task on a file of thousands of lines, walked at
the smallest budget that answers (the one its own budget_too_small remedy names), shows every line
exactly once, and the counts do not depend on the budget.

The report is LCOV written here with 3,000 lines, 300 functions, partial lines (BRDA) and 60 named
tests (TN:), for a file committed in a real git repository.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.review.budget import MAX_BYTES, MAX_WORDS, MIN_WORDS
from coverage_core.service import Service

from .commandline import cli
from .daemons import Running, sdk_client
from .gitrepo import make_repo
from .test_daemon_rest import register

FUNCTIONS, BODY = 300, 9  # 300 functions of 10 lines: 3,000 lines
LINES = FUNCTIONS * (BODY + 1)
TESTS = 60
WHOLE = {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES}


def _uncovered(i: int) -> bool:
    return i % 3 == 0


def _partial(i: int) -> bool:
    return i % 5 == 1


def _report() -> str:
    """One TN record per test; test t runs the functions i with i % TESTS == t (the covered ones)."""
    out = []
    for t in range(TESTS):
        out += [f"TN:test_{t:02d}", "SF:big.py"]
        for i in range(FUNCTIONS):
            start = i * (BODY + 1) + 1
            ran = not _uncovered(i) and i % TESTS == t
            out.append(f"FN:{start},{start + BODY},f{i}")
            out += [f"DA:{n},{int(ran)}" for n in range(start, start + BODY + 1)]
            if _partial(i):
                out += [f"BRDA:{start},0,0,{int(ran)}", f"BRDA:{start},0,1,0"]
        out.append("end_of_record")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    body = "".join(
        f"def f{i}(x):\n" + "".join(f"    x{j} = {j}\n" for j in range(BODY)) for i in range(FUNCTIONS)
    )
    repo = make_repo(tmp_path_factory.mktemp("cuts") / "r", {"big.py": body})
    (repo / "big.info").write_text(_report())
    with open_project(repo) as project:
        Service(project).call("coverage_import", {"report_path": "big.info"})
    return repo


@pytest.fixture
def service(repo: Path):
    with open_project(repo) as project:
        yield Service(project)


def smallest(svc: Service, args: dict[str, Any]) -> dict[str, Any]:
    """The arguments at the smallest budget: the minimum, or what its budget_too_small remedy names."""
    at_least = {**args, "limits": {**args.get("limits", {}), "max_words": MIN_WORDS, "max_bytes": 512}}
    try:
        svc.call("coverage_review", at_least)
        return at_least
    except CoverageError as error:
        assert error.code in (ErrorCode.BUDGET_TOO_SMALL, ErrorCode.INVALID_ARGUMENT), error
        assert error.remedy is not None
        return error.remedy.to_dict()["arguments"]


def walk(svc: Service, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page; a page the budget cannot hold is asked again as its remedy says (once: it works)."""
    pages, args = [], dict(args)
    while True:
        try:
            env = svc.call("coverage_review", args)
        except CoverageError as error:
            assert error.code is ErrorCode.BUDGET_TOO_SMALL and error.remedy is not None, error
            args = error.remedy.to_dict()["arguments"]
            env = svc.call("coverage_review", args)
        pages.append(env)
        following = (env["page"] or {}).get("next_cursor")
        if not following:
            return pages
        args["cursor"] = following


def _marks() -> dict[int, str]:
    out = {}
    for i in range(FUNCTIONS):
        start = i * (BODY + 1) + 1
        for n in range(start, start + BODY + 1):
            out[n] = "u" if _uncovered(i) else ("p" if _partial(i) and n == start else "c")
    return out


@pytest.mark.parametrize("representation", ["compact", "review"])
def test_source_of_a_wide_range_pages_every_line_once_at_the_smallest_budget(
    service: Service, representation: str
) -> None:
    """Seed: "Public region/source projections stay bounded." """
    args = smallest(
        service, {"task": "source", "file": "big.py", "lines": f"1-{LINES}", "representation": representation}
    )
    pages = walk(service, args)
    seen = []
    for env in pages[:-1]:
        assert env["data"]["lines_truncated"] is True and env["page"]["next_cursor"]
    assert pages[-1]["data"]["lines_truncated"] is False
    marks = _marks()
    for env in pages:
        assert env["page"]["total"] == LINES  # the file's length, on every page
        for r in env["data"]["ranges"]:
            for line in r["lines"]:
                n, mark = (line[0], line[1]) if isinstance(line, list) else (line["line"], line["status"][0])
                seen.append(n)
                assert mark == marks[n], n
    assert seen == list(range(1, LINES + 1))
    # At the largest budget a page still holds at most the record cap: more than 200 lines, flagged.
    whole = walk(service, {"task": "source", "file": "big.py", "lines": f"1-{LINES}", "limits": WHOLE})
    assert len(whole) == 3 and [len(p["data"]["ranges"][0]["lines"]) for p in whole] == [1000, 1000, 1000]


def test_source_without_lines_says_it_shows_windows_and_how_long_the_file_is(repo: Path) -> None:
    with open_project(repo) as project:
        env = Service(project).call("coverage_review", {"task": "source", "file": "big.py"})
    assert env["page"]["total"] == LINES and "windows" in env["data"]["next"]
    assert f"lines=A-B (1-{LINES})" in env["data"]["next"]
    done = cli("review", "source", "--file", "big.py", repo=repo)
    assert done.returncode == 0 and "next: these are windows" in done.stdout


def _insight_lines(svc: Service, args: dict[str, Any]) -> tuple[list[tuple], set[int], list[int]]:
    """Every range of every target over every page (and every target's ranges_cursor), the target
    count each page gave."""
    ranges, targets, counts = [], set(), []
    for env in walk(svc, args):
        counts.append(env["data"]["target_count"])
        for t in env["data"]["targets"]:
            targets.add(t["function"])
            ranges += [(t["function"], r["start"], r["end"], r["kind"]) for r in t["ranges"]]
            if t["ranges_cursor"]:
                for more in walk(svc, {**args, "cursor": t["ranges_cursor"]})[0:]:
                    counts.append(more["data"]["target_count"])
                    for u in more["data"]["targets"]:
                        ranges += [(u["function"], r["start"], r["end"], r["kind"]) for r in u["ranges"]]
    return ranges, targets, counts


def test_insight_walks_every_gap_once_and_its_counts_do_not_depend_on_the_budget(service: Service) -> None:
    args = smallest(service, {"task": "insight", "representation": "review"})
    ranges, targets, counts = _insight_lines(service, args)
    want_unc = {
        (f"f{i}", i * (BODY + 1) + 1, i * (BODY + 1) + BODY + 1) for i in range(FUNCTIONS) if _uncovered(i)
    }
    want_part = {(f"f{i}", i * (BODY + 1) + 1) for i in range(FUNCTIONS) if _partial(i) and not _uncovered(i)}
    got_unc = [(f, a, b) for f, a, b, kind in ranges if kind == "uncovered"]
    got_part = [(f, a) for f, a, b, kind in ranges if kind == "partial"]
    assert sorted(got_unc) == sorted(want_unc) and len(got_unc) == len(set(got_unc))
    assert sorted(got_part) == sorted(want_part) and len(got_part) == len(set(got_part))
    assert set(counts) == {len(targets)} == {len(want_unc) + len(want_part)}
    for budget in (400, 600, 5000):
        data = service.call("coverage_review", {"task": "insight", "limits": {"max_words": budget}})["data"]
        assert data["target_count"] == len(targets), budget


def test_the_insight_text_says_what_it_left_out_and_how_to_continue(repo: Path) -> None:
    done = cli(
        "review",
        "insight",
        "--file",
        "big.py",
        "--max-words",
        "5000",
        repo=repo,
    )
    assert done.returncode == 0, done.stderr
    targets = sum(1 for i in range(FUNCTIONS) if _uncovered(i) or _partial(i))
    assert f"target count: {targets}" in done.stdout and "targets truncated: yes" in done.stdout
    assert "more: --cursor " in done.stdout


def test_file_walks_every_line_then_every_test_that_ran_it_once(service: Service) -> None:
    args = smallest(service, {"task": "file", "file": "big.py"})
    lines, tests, counts = [], [], set()
    for env in walk(service, args):
        lines += env["data"]["lines"]["line"]
        tests += env["data"]["tests"]
        counts.add(env["page"]["total"])
    assert lines == list(range(1, LINES + 1))
    ran = sorted({f"test_{i % TESTS:02d}" for i in range(FUNCTIONS) if not _uncovered(i)})
    assert tests == ran and counts == {len(ran)}


def test_file_with_lines_lists_the_tests_of_those_lines_only(service: Service) -> None:
    # Lines 11-30: f1 and f2, run by test_01 and test_02.
    pages = walk(service, {"task": "file", "file": "big.py", "lines": "11-30", "limits": WHOLE})
    assert [t for p in pages for t in p["data"]["tests"]] == ["test_01", "test_02"]
    assert [n for p in pages for n in p["data"]["lines"]["line"]] == list(range(11, 31))


def test_tests_of_a_file_walk_every_test_once(service: Service) -> None:
    args = smallest(service, {"task": "tests", "file": "big.py"})
    seen = [t[0] for env in walk(service, args) for t in env["data"]["tests"]]
    ran = {f"test_{i % TESTS:02d}" for i in range(FUNCTIONS) if not _uncovered(i)}
    assert sorted(seen) == sorted(ran) and len(seen) == len(set(seen))


def test_the_dashboards_file_view_carries_every_line_of_a_long_file(service: Service) -> None:
    project = service.project
    snap = project.store.latest("default", project.store.con)
    assert snap is not None
    view = service.call("dashboard_file", {"snapshot": snap.snapshot_id, "file": "big.py"})["data"]
    assert [line["line"] for line in view["lines"]] == list(range(1, LINES + 1))
    assert view["truncated"] is False and view["file_lines"] == LINES


async def test_over_mcp_a_file_run_by_many_tests_pages_at_default_limits_and_a_remedy_works_as_written(
    daemon: Running, repo: Path
) -> None:
    pid = await register(daemon, repo)
    async with sdk_client(daemon, f"{daemon.url}/p/{pid}/mcp", "auto") as client:
        args: dict[str, Any] = {"task": "file", "file": "big.py"}
        lines, tests = [], []
        while True:
            answer = await client.call_tool("coverage_review", args)
            assert not answer.is_error, answer.content[0].text
            lines += answer.structured_content["data"]["lines"]["line"]
            tests += answer.structured_content["data"]["tests"]
            following = answer.structured_content["page"]["next_cursor"]
            if not following:
                break
            args = {**args, "cursor": following}
        assert lines == list(range(1, LINES + 1))
        assert tests == sorted({f"test_{i % TESTS:02d}" for i in range(FUNCTIONS) if not _uncovered(i)})
        for wrong in (
            {"task": "insight", "limits": {"max_words": 10}},  # below the minimum
            {"task": "insight", "limits": {"max_words": 40, "max_bytes": 512}},
            {"task": "source", "file": "bg.py"},  # one letter off
        ):
            refused = await client.call_tool("coverage_review", wrong)
            assert refused.is_error
            remedy = refused.structured_content["error"]["remedy"]
            fixed = await client.call_tool(remedy["operation"], remedy["arguments"])
            assert not fixed.is_error, (wrong, fixed.content[0].text)


def test_the_insight_text_says_when_a_targets_ranges_are_cut_and_its_cursor_brings_the_rest(
    tmp_path: Path,
) -> None:
    body = "def f(x):\n" + "".join(f"    x{j} = {j}\n" for j in range(11))
    repo = make_repo(tmp_path / "alt", {"alt.py": body})
    # Lines 2, 4, ..., 12 never ran: six one-line ranges in f, of which a page shows three.
    (repo / "alt.info").write_text(
        "TN:\nSF:alt.py\nFN:1,12,f\nFNDA:1,f\n"
        + "".join(f"DA:{n},{n % 2}\n" for n in range(1, 13))
        + "end_of_record\n"
    )
    assert cli("ingest", "alt.info", repo=repo).returncode == 0
    done = cli("review", "insight", "--file", "alt.py", repo=repo)
    assert done.returncode == 0, done.stderr
    assert "alt.py:f: 6 uncovered lines, 0 partial lines" in done.stdout
    cursor = re.search(r"3 of 6 ranges shown; more: --cursor (\S+)", done.stdout).group(1)
    shown = re.search(r"uncovered: (.+)", done.stdout).group(1).split(", ")
    rest = cli("review", "insight", "--file", "alt.py", "--cursor", cursor, repo=repo)
    assert rest.returncode == 0, rest.stderr
    shown += re.search(r"uncovered: (.+)", rest.stdout).group(1).split(", ")
    assert sorted(map(int, shown)) == [2, 4, 6, 8, 10, 12]


def _embedded(page: str) -> dict:
    raw = page.split('<script type="application/json" id="dashboard-data">', 1)[1].split("</script>", 1)[0]
    return json.loads(raw)


def test_the_static_report_carries_every_line_of_a_long_file(repo: Path, tmp_path: Path) -> None:
    single = cli(
        "report", "--html", str(tmp_path / "one"), "--single-file", "--baseline", "none", "--json", repo=repo
    )
    assert single.returncode == 0, single.stderr
    source = _embedded(Path(json.loads(single.stdout)["report"]).read_text())["sources"]["big.py"]
    assert [line["line"] for line in source["lines"]] == list(range(1, LINES + 1))
    assert source["truncated"] is False
    # the site: the file's own page holds its whole text, one line of the page's source per line
    site = cli("report", "--html", str(tmp_path / "site"), "--baseline", "none", "--json", repo=repo)
    assert site.returncode == 0, site.stderr
    index = Path(json.loads(site.stdout)["report"])
    page = (index.parent / _embedded(index.read_text())["pages"]["big.py"]).read_text()
    text = page.split('<pre class="t">', 1)[1].split("</pre>", 1)[0]
    assert re.sub(r"<[^>]+>", "", text).count("\n") == LINES
    assert "The first" not in page
