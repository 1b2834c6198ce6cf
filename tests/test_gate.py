"""The `diff` and `gate` commands: formats, annotations, exit codes and readable reasons."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from coverage_cli.ci_cmds import github_annotations
from coverage_cli.main import cli
from coverage_core import open_project
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.review.gate import Criteria, Summary
from coverage_core.service import Service
from coverage_core.usecases import ci

from .conftest import StoredCheckout
from .daemons import in_process
from .gitrepo import commit, git, lcov, make_repo, write

SRC = "".join(f"line{i}\n" for i in range(1, 11))
BASE_HITS = {
    "a.c": {1: 1, 2: 1, 3: 0, 4: 1, 5: 0, 6: 1},
    "b.c": {1: 1, 2: 0},
    "old.c": {2: 1, 3: 0},
    "gone.c": {1: 1, 2: 0},
}
CURRENT_HITS = {
    "a.c": {1: 1, 2: 0, 3: 1, 4: 0, 5: 0, 6: 1, 7: 1, 8: 1},
    "b.c": {1: 1, 2: 0, 3: 1},
    "new.c": {2: 1, 3: 1},
    "fresh.c": {1: 0, 2: 1},
}


def source(tag: str) -> str:
    return "".join(f"{tag} line{i}\n" for i in range(1, 11))


def _change_repo(at: Path) -> Path:
    """A change that edits, inserts, renames, deletes and adds; the baseline stored at HEAD~1, cur.info beside."""
    root = make_repo(
        at,
        {
            "a.c": SRC,
            "b.c": source("b"),
            "old.c": source("old"),
            "gone.c": source("gone"),
            ".gitignore": "*.info\n",
        },
    )
    (root / "base.info").write_text(lcov(BASE_HITS))
    a = SRC.splitlines(True)
    a[3] = "CHANGED4\n"
    a[1:1] = ["ins1\n", "ins2\n"]
    write(root, {"a.c": "".join(a), "fresh.c": "x\ny\n"})
    git(root, "mv", "old.c", "new.c")
    git(root, "rm", "-q", "gone.c")
    commit(root, "edit")
    (root / "cur.info").write_text(lcov(CURRENT_HITS))
    with open_project(root) as project:
        project.ingest(root / "base.info", commit="HEAD~1")
    return root


@pytest.fixture(scope="module")
def stored_change(tmp_path_factory: pytest.TempPathFactory) -> StoredCheckout:
    base = tmp_path_factory.mktemp("gate")
    root = _change_repo(base / "r")
    return StoredCheckout(root, Path(shutil.copytree(root, base / "pristine", symlinks=True)))


@pytest.fixture
def repo(stored_change: StoredCheckout) -> Path:
    """The change with its baseline stored: made once for the module, a pristine copy per test (the tests
    store the current report, commit, or hand the store to a daemon)."""
    return stored_change.fresh()


def run(repo: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [*args, "--repo", str(repo)])
    return result.exit_code, result.stdout, result.stderr


def store_current(repo: Path, **kw) -> str:
    with open_project(repo) as project:
        return project.ingest(repo / "cur.info", **kw).snapshot_id


def short(repo: Path, rev: str) -> str:
    return git(repo, "rev-parse", rev)[:12]


GOLD_MARKDOWN = """### Coverage change

**Total coverage: 58.3% → 66.7% (+8.33%)** · **Patch coverage: 60.00%** (3 of 5 added or changed lines covered)

Baseline `{base}` (ref `HEAD~1`, 7/12 lines covered) → current `{cur}` (complete run, 10/15) · 4 files changed, +5 −11 lines

#### Files

| File | Status | Before | After | Change | Patch | UNC uncovered new |
|---|---|---:|---:|---:|---:|---:|
| `a.c` | modified | 66.67% (4/6) | 62.50% (5/8) | -4.17% | 66.67% (2/3) | 1 |
| `fresh.c` | added | - | 50.00% (1/2) | new | 50.00% (1/2) | 1 |
| `gone.c` | deleted | 50.00% (1/2) | - | deleted | - | 0 |
| `b.c` | unchanged | 50.00% (1/2) | 66.67% (2/3) | +16.67% | - | 0 |
| `old.c` → `new.c` | renamed | 50.00% (1/2) | 100.00% (2/2) | +50.00% | - | 0 |

<details><summary>Lines by category (lcov's differential coverage)</summary>

| Category | Lines | Branches | Functions |
|---|---:|---:|---:|
| UNC uncovered new code | 2 | 0 | 0 |
| LBC lost baseline coverage | 1 | 0 | 0 |
| UBC uncovered baseline code | 2 | 0 | 0 |
| GBC gained baseline coverage | 2 | 0 | 0 |
| GIC gained included code | 1 | 0 | 0 |
| GNC gained new code | 3 | 0 | 0 |
| CBC covered baseline code | 4 | 0 | 0 |
| DUB deleted uncovered baseline | 1 | 0 | 0 |
| DCB deleted covered baseline | 2 | 0 | 0 |

</details>

#### UNC uncovered new code

Added or changed lines no test covers (`!` marks them):

`a.c`: line 2

```c
  1  line1
! 2  ins1
  3  ins2
```

`fresh.c`: line 1

```c
! 1  x
  2  y
```

#### LBC lost baseline coverage

Lines covered in the baseline, not covered now:

- `a.c`: line 4

_Claim: supported._
"""

GOLD_ANNOTATIONS = """\
::warning file=a.c,line=2,endLine=2,title=UNC uncovered new code::1 new or changed line not covered by any test
::warning file=a.c,line=4,endLine=4,title=LBC lost baseline coverage::1 line covered in the baseline is no longer covered
::warning file=fresh.c,line=1,endLine=1,title=UNC uncovered new code::1 new or changed line not covered by any test
"""


def test_diff_renders_a_markdown_pull_request_comment(repo: Path) -> None:
    store_current(repo)
    code, out, _ = run(repo, "diff", "--baseline", "HEAD~1", "--format", "markdown")
    assert code == 0
    assert out == GOLD_MARKDOWN.format(base=short(repo, "HEAD~1"), cur=short(repo, "HEAD"))


def test_diff_writes_github_annotations_for_uncovered_new_code_and_lost_coverage_to_stderr(
    repo: Path,
) -> None:
    code, out, err = run(
        repo, "diff", "--baseline", "HEAD~1", "--current", str(repo / "cur.info"), "--annotations"
    )
    assert code == 0
    assert err == GOLD_ANNOTATIONS and "::" not in out
    assert "patch    3/5 (60.00%)" in out and "a.c: UNC 2; LBC 4" in out


def test_annotation_properties_escape_commas_colons_and_newlines() -> None:
    summary = Summary(
        {"current": {"scope": "complete"}},
        (),
        ({"path": "src/we,ird:name.c", "category": "UNC", "start": 3, "end": 5, "line_count": 2},),
        False,
    )
    assert github_annotations(summary) == [
        (
            "::warning file=src/we%2Cird%3Aname.c,line=3,endLine=5,title=UNC uncovered new code::"
            "2 new or changed lines not covered by any test"
        ),
    ]


def test_a_report_given_as_current_is_compared_without_being_stored(repo: Path) -> None:
    code, out, _ = run(
        repo, "diff", "--baseline", "HEAD~1", "--current", str(repo / "cur.info"), "--format", "json"
    )
    assert code == 0
    from_report = json.loads(out)
    with open_project(repo) as project:
        assert len(project.snapshots()) == 1  # only the baseline
    store_current(repo)
    code, out, _ = run(repo, "diff", "--baseline", "HEAD~1", "--format", "json")
    stored = json.loads(out)
    assert from_report["categories"] == stored["categories"] and from_report["files"] == stored["files"]
    assert from_report["current"]["snapshot_ids"][0].startswith("report:")
    assert len(stored["files"]) == 5 and set(stored["files"][0]["lines"]) == {
        "UNC",
        "LBC",
        "UIC",
        "UBC",
        "GBC",
        "GIC",
        "GNC",
        "CBC",
        "EUB",
        "ECB",
        "DUB",
        "DCB",
    }


def without_stats(envelope: dict) -> dict:
    return {**envelope, "context": {k: v for k, v in envelope["context"].items() if k != "stats"}}


def test_diff_json_prints_exactly_the_library_diff_envelope_every_page_of_the_audit_change_review(
    repo: Path,
) -> None:
    sid = store_current(repo)
    code, out, _ = run(repo, "diff", "--baseline", "HEAD~1", "--current", sid, "--json")
    assert code == 0
    printed = json.loads(out)
    args = {
        "task": "change",
        "baseline": {"kind": "ref", "ref": "HEAD~1"},
        "measurement": {"snapshot_id": sid},
        "representation": "audit",
        "limits": {"max_files": 2},
    }
    with open_project(repo) as project:
        assert without_stats(printed) == without_stats(
            ci.diff(project, {"baseline": {"kind": "ref", "ref": "HEAD~1"}, "current": {"snapshot_id": sid}})
        )
        service = Service(project)
        pages = [service.call("coverage_review", args)]
        while pages[-1]["page"]["next_cursor"]:
            pages.append(
                service.call("coverage_review", {**args, "cursor": pages[-1]["page"]["next_cursor"]})
            )
    assert len(pages) == 3 and printed["page"] is None
    assert printed["data"]["files"] == [f for p in pages for f in p["data"]["files"]]
    assert printed["data"]["categories"] == pages[0]["data"]["categories"]


def test_gate_passes_with_exit_0_when_every_threshold_is_met(repo: Path) -> None:
    store_current(repo)
    code, out, _ = run(
        repo, "gate", "--baseline", "HEAD~1", "--fail-under-patch", "60", "--fail-under-total", "66.6"
    )
    assert code == 0
    assert out.splitlines() == [
        # LCOV's headline is its lines, as lcov prints them (one decimal); the check is exact.
        "PASS total: total coverage (lines, LCOV's) 10/15 (66.7%) meets the minimum 66.6%",
        "PASS patch: patch coverage 3/5 (60.00%) meets the minimum 60%",
        "claim: supported",  # the claim and its reasons always close the text
    ]


def test_gate_fails_with_exit_3_and_a_reason_per_failed_check(repo: Path) -> None:
    store_current(repo)
    code, out, err = run(
        repo,
        "gate",
        "--baseline",
        "HEAD~1",
        "--fail-under-patch",
        "80",
        "--ratchet",
        "--criteria",
        "UNC == 0 and LBC <= 1",
    )
    assert code == 3
    assert out.splitlines() == [
        "FAIL patch: patch coverage 3/5 (60.00%) is under the minimum 80%",
        "FAIL ratchet: uncovered lines grew in 2 files or directories: a.c 2 -> 3 (+1); fresh.c 0 -> 1 (+1)",
        "FAIL criteria: criteria `UNC == 0 and LBC <= 1` does not hold: UNC=2, LBC=1",
        "claim: supported",
    ]
    assert "threshold_not_met" in err and "3 of 3 checks failed" in err
    code, out, _ = run(repo, "gate", "--baseline", "HEAD~1")  # the default criteria
    assert (
        code == 3
        and out.splitlines()[0]
        == "FAIL criteria: criteria `UNC + LBC + UIC == 0` does not hold: UNC=2, LBC=1, UIC=0"
    )


def test_gate_json_says_which_checks_failed(repo: Path) -> None:
    store_current(repo)
    code, out, _ = run(repo, "gate", "--baseline", "HEAD~1", "--criteria", "GNC >= 3", "--json")
    assert code == 0
    body = json.loads(out)["data"]
    assert body["passed"] is True and body["checks"][0]["name"] == "criteria" and body["patch"]["found"] == 5


def test_gate_from_a_subset_run_does_not_count_lost_coverage_as_a_regression(repo: Path) -> None:
    code, out, _ = run(
        repo,
        "gate",
        "--baseline",
        "HEAD~1",
        "--current",
        str(repo / "cur.info"),
        "--scope",
        "subset",
        "--criteria",
        "LBC == 0",
    )
    assert code == 0
    assert "LBC taken as 0: the current run is a subset; 1 lines are not_observed" in out


@pytest.mark.parametrize(
    "args, mention",
    [
        (["--criteria", "__import__('os').system('true') == 0"], "is not allowed"),
        (["--criteria", "UNC =="], "does not parse"),
        (["--criteria", "UNC + 1"], "must be a comparison"),
        (["--criteria", "NOPE == 0"], "'NOPE' is not a category"),
        (["--fail-under-patch", "120"], "120"),
        (["--baseline", "no-such-ref"], "no-such-ref"),
        (["--suite", "never-stored"], "no snapshot of suite 'never-stored'"),
    ],
)
def test_gate_refuses_bad_usage_with_exit_2(repo: Path, args: list[str], mention: str) -> None:
    store_current(repo)
    argv = ["gate"] + (args if args[0] == "--baseline" else ["--baseline", "HEAD~1", *args])
    code, _out, err = run(repo, *argv)
    assert code == 2
    assert mention in err


def test_gate_exits_1_when_the_comparison_cannot_be_made(repo: Path) -> None:
    store_current(repo)
    code, _, err = run(repo, "gate", "--baseline", "HEAD")  # nothing but the current snapshot measured HEAD
    assert code == 1
    assert "baseline_unavailable" in err and "coverage-mcp ingest REPORT --suite default --commit" in err
    git(repo, "checkout", "-q", "--orphan", "other")
    commit(repo, "unrelated root")
    git(repo, "checkout", "-q", "main")
    code, _, err = run(repo, "gate", "--baseline", "other")
    assert code == 1 and "shares no history" in err


def test_criteria_are_parsed_never_evaluated_as_python() -> None:
    counts = dict.fromkeys(
        ("UNC", "LBC", "UIC", "UBC", "GBC", "GIC", "GNC", "CBC", "EUB", "ECB", "DUB", "DCB"), 0
    )
    counts.update(UNC=2, GNC=8)
    assert Criteria("GNC * 100 >= 80 * (GNC + UNC)").holds(counts)  # 80% patch coverage
    assert not Criteria("UNC == 0 or (LBC > 0 and -UIC < 0)").holds(counts)
    assert Criteria("0 <= UNC < 3").holds(counts)
    for text in (
        "UNC.__class__ == 0",
        "[UNC] == [0]",
        "UNC == 0 if True else 1",
        "lambda: 0",
        "UNC ** 2 == 4",
        "UNC == 'x'",
        "UNC == True",
        "not UNC == 0",
        "UNC == 0; 1",
        "x" * 600,
    ):
        with pytest.raises(CoverageError) as err:
            Criteria(text)
        assert err.value.code is ErrorCode.INVALID_ARGUMENT


async def test_diff_and_gate_read_through_the_daemon_when_it_holds_the_store(repo: Path) -> None:
    store_current(repo)
    direct = run(repo, "gate", "--baseline", "HEAD~1", "--ratchet", "--json")
    async with in_process(Settings.from_env(port=0)) as d:
        await asyncio.to_thread(d.client().register, repo)  # the daemon now holds the store
        routed = await asyncio.to_thread(run, repo, "gate", "--baseline", "HEAD~1", "--ratchet", "--json")
        unstored = await asyncio.to_thread(
            run, repo, "diff", "--baseline", "HEAD~1", "--current", str(repo / "cur.info")
        )
    assert routed[0] == direct[0] == 3
    assert json.loads(routed[1])["data"] == json.loads(direct[1])["data"]
    # An unstored report needs the store itself: the comparison cannot be made (1), and the error says what to do.
    assert unstored[0] == 1 and "store_locked" in unstored[2] and "coverage-mcp ingest" in unstored[2]
