"""A report named as current is the working tree's only as far as its identity is shown (issue 24).

Real coverage.py reports of a real package with real history
(``tests/sidesfixture.py``), compared with ``diff``/``gate --current REPORT`` by
the console script: an older commit's report, a fresh one, and LCOV with
coverage.py's line checksums on a dirty tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from . import commandline
from .gitrepo import git, write
from .realcov import measure
from .sidesfixture import build

UNPROVEN = "report_identity_unproven"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    return build(tmp_path_factory.mktemp("identity"))


@pytest.fixture
def repo(history: tuple[Path, dict[str, str], Path], tmp_path: Path) -> Path:
    checkout = Path(shutil.copytree(history[0], tmp_path / "repo"))
    shutil.copy(history[2], checkout / "c0.coverage.json")
    ingest = cli(checkout, "ingest", "c0.coverage.json", "--suite", "unit", "--commit", history[1]["c0"])
    assert ingest.returncode == 0, ingest.stderr
    return checkout


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``coverage-mcp ARGS --repo REPO`` in this process: these tests check answers and exit codes."""
    return commandline.cli(*args, repo=repo)


def older_than_head(repo: Path, report: Path) -> None:
    """Give ``report`` the modification time of a report written a minute before HEAD was committed."""
    committed = int(git(repo, "show", "-s", "--format=%ct", "HEAD"))
    os.utime(report, (committed - 60, committed - 60))


def test_an_older_commits_report_named_as_current_is_limited_naming_what_is_missing_and_fails_the_gate(
    repo: Path, history: tuple[Path, dict[str, str], Path]
) -> None:
    report = repo / "old.coverage.json"
    shutil.copy(history[2], report)  # c0's report, while HEAD is c1
    older_than_head(repo, report)
    diff = cli(repo, "diff", "--baseline", "HEAD~1", "--current", str(report), "--suite", "unit", "--json")
    assert diff.returncode == 0, diff.stderr
    data = json.loads(diff.stdout)["data"]
    assert data["claim_status"] == "limited" and data["reason_codes"] == [UNPROVEN]
    assert any("written before the last change to HEAD" in r for r in data["reasons"])

    gate = cli(repo, "gate", "--baseline", "HEAD~1", "--current", str(report), "--suite", "unit", "--json")
    assert gate.returncode == 1, gate.stdout + gate.stderr
    judged = json.loads(gate.stdout)["data"]
    assert judged["passed"] is False and UNPROVEN in judged["reason_codes"]
    assert all(c["passed"] for c in judged["checks"])  # the checks ran; the evidence is what is missing
    text = cli(repo, "gate", "--baseline", "HEAD~1", "--current", str(report), "--suite", "unit")
    assert text.returncode == 1 and "claim: limited" in text.stdout and "--commit" in text.stdout

    # Named as the commit it measured, it is that commit's measurement: no identity is asked of it.
    c0 = history[1]["c0"]
    named = cli(
        repo,
        "diff",
        "--baseline",
        "HEAD~1",
        "--current",
        str(report),
        "--commit",
        c0,
        "--suite",
        "unit",
        "--json",
    )
    assert named.returncode == 0, named.stderr
    as_c0 = json.loads(named.stdout)["data"]
    assert as_c0["current"]["commit"] == c0[:12] and UNPROVEN not in as_c0.get("reason_codes", [])
    assert as_c0["claim_status"] == "stale"  # c0 is not HEAD, and the claim says so


def test_a_report_written_on_the_clean_tree_at_head_is_taken_as_the_working_trees(repo: Path) -> None:
    fresh = measure(repo)["json"]
    diff = cli(repo, "diff", "--baseline", "HEAD~1", "--current", str(fresh), "--suite", "unit", "--json")
    assert diff.returncode == 0, diff.stderr
    data = json.loads(diff.stdout)["data"]
    assert UNPROVEN not in data.get("reason_codes", []) and data["claim_status"] == "supported"
    gate = cli(
        repo,
        "gate",
        "--baseline",
        "HEAD~1",
        "--current",
        str(fresh),
        "--suite",
        "unit",
        "--fail-under-patch",
        "50",
    )
    assert gate.returncode == 0, gate.stdout + gate.stderr


def test_lcov_line_checksums_prove_a_dirty_file_measured_until_it_changes_again(repo: Path) -> None:
    rc = (repo / ".coveragerc").read_text()
    write(repo, {".coveragerc": rc + "\n[lcov]\nline_checksums = True\n"})
    git(repo, "commit", "-qam", "lcov checksums")
    cart = (repo / "shop/cart.py").read_text()
    write(
        repo,
        {"shop/cart.py": cart.replace('"""A shopping cart."""\n', '"""A shopping cart."""\nRATE = 1\n', 1)},
    )
    lcov = measure(repo)["lcov"]
    first = next(line for line in lcov.read_text().splitlines() if line.startswith("DA:"))
    assert first.count(",") == 2  # DA:<line>,<count>,<checksum>
    proven = cli(repo, "diff", "--baseline", "none", "--current", str(lcov), "--suite", "lcov", "--json")
    assert proven.returncode == 0, proven.stderr
    assert UNPROVEN not in json.loads(proven.stdout)["data"].get("reason_codes", [])

    write(repo, {"shop/cart.py": cart})  # edited again (undone) after the report was written
    again = cli(repo, "diff", "--baseline", "none", "--current", str(lcov), "--suite", "lcov", "--json")
    assert again.returncode == 0, again.stderr
    data = json.loads(again.stdout)["data"]
    assert data["reason_codes"] == [UNPROVEN]
    assert any("checksums do not match" in r and "shop/cart.py" in r for r in data["reasons"])
