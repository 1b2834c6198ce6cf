"""Lines coverage.py excluded (``# pragma: no cover``) are stored per file and shown, from a real coverage.py run.

The package of ``tests/realcov.py`` gains a function and a branch marked ``# pragma: no cover``; coverage.py
measures it in the test's own folder, and its JSON report's ``excluded_lines`` are the oracle: the same line
numbers come back from the store (the file answer, the files listing, the source view and ``show``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .commandline import cli as command
from .gitrepo import commit, write
from .realcov import REPORTS, cli, make_package, measure

EXCLUDED_TAIL = """

def debug_dump(items):  # pragma: no cover
    for item in items:
        print(item)


def safe_total(prices):
    if not prices:  # pragma: no cover
        return 0
    return total(prices)
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The package with excluded code, measured by coverage.py and stored; the repository and the JSON report."""
    root = tmp_path_factory.mktemp("excluded")
    repo = make_package(root / "repo")
    write(repo, {"shop/cart.py": (repo / "shop/cart.py").read_text() + EXCLUDED_TAIL})
    commit(repo, "excluded code")
    reports = measure(repo)
    name = REPORTS["json"]
    done = cli(repo, "ingest", name, "--json")
    assert done.returncode == 0, done.stderr
    return repo, json.loads(reports["json"].read_text())


def _snapshot(repo: Path) -> str:
    listed = json.loads(cli(repo, "snapshots", "--json").stdout)
    return listed["data"]["snapshots"][0]["snapshot_id"]


def test_coverage_py_really_excluded_lines_in_this_run(measured) -> None:
    _repo, report = measured
    excluded = report["files"]["shop/cart.py"]["excluded_lines"]
    assert len(excluded) >= 3  # the function's lines and the guarded branch


def test_the_file_answer_returns_exactly_the_lines_coverage_py_excluded(measured) -> None:
    repo, report = measured
    out = cli(repo, "show", _snapshot(repo), "--file", "shop/cart.py", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)["data"]
    assert data["excluded_lines"] == sorted(report["files"]["shop/cart.py"]["excluded_lines"])
    assert data["summary"]["excluded"] == len(report["files"]["shop/cart.py"]["excluded_lines"])


def test_the_files_listing_counts_each_files_excluded_lines_and_show_totals_them(measured) -> None:
    repo, report = measured
    snap = _snapshot(repo)
    listed = json.loads(cli(repo, "show", snap, "--json").stdout)["data"]["files"]
    counts = {f["path"]: f["excluded"] for f in listed}
    assert counts == {path: len(entry["excluded_lines"]) for path, entry in report["files"].items()}
    table = cli(repo, "show", snap).stdout
    assert "Excl" in table.splitlines()[2]
    total = next(line for line in table.splitlines() if line.strip().startswith("TOTAL"))
    assert str(report["totals"]["excluded_lines"]) in total.split()


def test_show_file_names_the_excluded_lines_as_ranges(measured) -> None:
    repo, report = measured
    text = cli(repo, "show", _snapshot(repo), "--file", "shop/cart.py").stdout
    excluded = sorted(report["files"]["shop/cart.py"]["excluded_lines"])
    line = next(x for x in text.splitlines() if x.strip().startswith("excluded lines:"))
    assert str(excluded[0]) in line and f"({len(excluded)})" in line


def test_the_source_view_marks_excluded_lines_as_excluded_and_never_as_uncovered(measured) -> None:
    repo, report = measured
    excluded = sorted(report["files"]["shop/cart.py"]["excluded_lines"])
    out = cli(
        repo,
        "review",
        "source",
        "--file",
        "shop/cart.py",
        "--lines",
        f"{excluded[0]}-{excluded[-1]}",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    rows = [row for r in json.loads(out.stdout)["data"]["ranges"] for row in r["lines"]]
    marks = {n: mark for n, mark, _text in rows}
    assert {n for n, mark in marks.items() if mark == "x"} == set(excluded)


def test_excluded_lines_count_in_no_total(measured) -> None:
    repo, report = measured
    listed = json.loads(cli(repo, "snapshots", "--json").stdout)
    snap = listed["data"]["snapshots"][0]
    assert snap["totals"]["statements"] == {
        "found": report["totals"]["num_statements"],
        "hit": report["totals"]["covered_lines"],
    }


def test_parse_counts_the_excluded_lines_of_the_report(measured, tmp_path: Path) -> None:
    repo, report = measured
    copy = Path(shutil.copy(repo / REPORTS["json"], tmp_path / "c.json"))
    parsed = json.loads(command("parse", str(copy), "--json", cwd=tmp_path).stdout)
    assert parsed["excluded_lines"] == report["totals"]["excluded_lines"]
