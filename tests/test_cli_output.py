"""Readable output of the command line (run in process: what is checked is the text and the exit code):
`show` as coverage.py users read it, whole names, and `review` as text for every task.

``show`` is checked against coverage.py itself: the same run's `coverage report -m`
is the oracle for every column and for the TOTAL percentage.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from coverage_cli.options import TASKS
from coverage_cli.review_cmds import TASK_HELP

from .commandline import cli
from .gitrepo import commit, lcov, make_repo, write
from .realcov import make_package, measure


def ok(repo: Path, *args: str) -> str:
    done = cli(*args, cwd=repo)
    assert done.returncode == 0, done.stderr
    return done.stdout


def ingest(repo: Path, report: str, suite: str = "unit") -> str:
    return json.loads(ok(repo, "ingest", report, "--suite", suite, "--json"))["data"]["snapshot"][
        "snapshot_id"
    ]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The realcov package measured by coverage.py (branch coverage), with its reports inside."""
    repo = make_package(tmp_path_factory.mktemp("realcov") / "shop")
    measure(repo)
    return repo


def coverage_report(repo: Path) -> dict[str, list[str]]:
    """`coverage report -m --precision 2` of the run in ``repo``: name -> its cells."""
    done = subprocess.run(
        [sys.executable, "-m", "coverage", "report", "-m", "--precision", "2"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    rows = {}
    for line in done.stdout.splitlines():
        if line.startswith(("Name", "---")) or not line.strip():
            continue
        name, *cells = re.split(r"\s{2,}|\s(?=\d)", line.strip(), maxsplit=0)
        rows[name] = [c.strip() for c in " ".join(cells).split(None, 5)]
    return rows


def show_rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        if not line.startswith("  ") or line.strip().startswith(("Name", "---", "(", "...")):
            continue
        name, *cells = line.split(None, 6)
        rows[name] = cells
    return rows


def test_show_has_coverage_py_columns_and_its_total_percentage_for_a_real_coverage_py_run(
    measured: Path,
) -> None:
    snapshot = ingest(measured, "coverage.json")
    shown = ok(measured, "show", snapshot)
    assert re.search(r"Name\s+Stmts\s+Miss\s+Branch\s+BrPart\s+Cover\s+Missing", shown)
    ours, theirs = show_rows(shown), coverage_report(measured)
    assert theirs["TOTAL"][4] == ours["TOTAL"][4]  # statements plus branches, as coverage.py counts them
    assert ours["TOTAL"][:4] == theirs["TOTAL"][:4]  # Stmts, Miss, Branch, BrPart
    cart = "shop/cart.py"
    assert ours[cart][:5] == theirs[cart][:5]
    assert " ".join(ours[cart][5:]) == " ".join(theirs[cart][5:])  # Missing, written as coverage.py writes it


def test_the_same_run_through_lcov_shows_lcovs_own_total_never_coverage_pys_formula(measured: Path) -> None:
    snapshot = ingest(measured, "coverage.lcov", suite="lcov")
    text = (measured / "coverage.lcov").read_text().splitlines()
    found = sum(int(x[3:]) for x in text if x.startswith("LF:"))
    hit = sum(int(x[3:]) for x in text if x.startswith("LH:"))
    total = show_rows(ok(measured, "show", snapshot))["TOTAL"][4]
    assert total == f"{100 * hit / found:.1f}%"  # lcov --summary's lines, one decimal
    assert total != coverage_report(measured)["TOTAL"][4]  # statements and branches: coverage.py's figure


@pytest.fixture
def long_names(tmp_path: Path) -> Path:
    deep = "services/" + "x" * 70 + "/"
    files = {
        f"{deep}integration-tests/app.py": "a = 1\n" * 3,
        f"{deep}integration-slow/app.py": "a = 1\n" * 3,
    }
    repo = make_repo(tmp_path / "repo", files)
    (repo / "cov.info").write_text(lcov({path: {1: 1, 2: 0, 3: 1} for path in files}))
    return repo


def test_names_that_differ_only_after_a_cut_are_both_shown_whole(long_names: Path) -> None:
    first = ingest(long_names, "cov.info", suite="integration-tests")
    ingest(long_names, "cov.info", suite="integration-slow")  # the same artifact in another suite
    listed = ok(long_names, "snapshots")
    assert re.search(r"\sintegration-tests\s", listed) and re.search(r"\sintegration-slow\s", listed)
    shown = ok(long_names, "show", first)
    deep = "services/" + "x" * 70
    assert f"{deep}/integration-tests/app.py " in shown and f"{deep}/integration-slow/app.py " in shown


def test_a_long_file_list_says_how_many_more_files_there_are(long_names: Path) -> None:
    snapshot = ingest(long_names, "cov.info")
    shown = ok(long_names, "show", snapshot, "--limit", "1")
    assert "... 1 more file: --cursor " in shown
    assert len([line for line in shown.splitlines() if "/app.py" in line]) == 1


@pytest.fixture(scope="module")
def reviewed(measured: Path) -> tuple[Path, str, str]:
    """Two measured commits of the realcov package: (repo, baseline snapshot, current snapshot)."""
    base = ingest(measured, "coverage.json", suite="review")
    write(measured, {"shop/extra.py": "def untested(x):\n    if x:\n        return 1\n    return 2\n"})
    commit(measured, "an untested function")
    measure(measured)
    return measured, base, ingest(measured, "coverage.json", suite="review")


def review_cases(repo: Path, base: str, current: str) -> dict[str, list[str]]:
    focus = ["--file", "shop/cart.py"]
    special = {
        "incremental": ["--snapshot", current, "--baseline", base],
        "source": ["--suite", "review", *focus],
        "file": ["--suite", "review", *focus],
        "snapshots": ["--suite", "review"],
        "change": ["--suite", "review", "--baseline", base],
        "all": ["--suite", "review", "--baseline", base],
    }
    return {task: special.get(task, ["--suite", "review"]) for task in TASKS}


def test_review_prints_every_task_as_text_without_python_reprs(reviewed: tuple[Path, str, str]) -> None:
    repo, base, current = reviewed
    for task, args in review_cases(repo, base, current).items():
        text = ok(repo, "review", task, *args)
        assert text.strip(), task
        for repr_mark in ("{'", "[(", "['", "[[", "': "):
            assert repr_mark not in text, (task, repr_mark, text)
        if task not in ("snapshots", "files", "file"):
            assert text.startswith(f"{task}: "), text  # the task and how far its evidence goes
    change = ok(repo, "review", "change", "--suite", "review", "--baseline", base)
    assert re.search(r"path\s+status\s+UNC\s+LBC\s+UIC\s+GNC", change)  # compact rows named by their legend
    assert re.search(r"shop/extra.py\s+added\s+4", change)


def test_review_json_stays_the_envelope(reviewed: tuple[Path, str, str]) -> None:
    repo, _, _ = reviewed
    envelope = json.loads(ok(repo, "review", "insight", "--suite", "review", "--json"))
    assert set(envelope) >= {"context", "data"} and envelope["data"]["task"] == "insight"


def test_review_help_explains_every_task() -> None:
    assert list(TASK_HELP) == TASKS
    text = cli("review", "--help").stdout
    for task in TASKS:
        assert re.search(rf"^\s+{task}\s+\S", text, re.M), task
    assert "claim status" in text
