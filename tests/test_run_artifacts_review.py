"""A run that writes several reports: its incremental review over all of them, one group per format.

Real runs of a registered command in a real repository (in-process runtime, as
``coverage_core`` runs them when no daemon holds the store). The command
writes two LCOV reports of one file, and a Cobertura report of it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coverage_core.execution import commands
from coverage_core.project import Project, open_project
from coverage_core.service import Service

from .gitrepo import make_repo

LCOV = "SF:app.py\n{}end_of_record\n"
COBERTURA = """<?xml version="1.0" ?>
<coverage line-rate="0" branch-rate="0" lines-covered="{hit}" lines-valid="4" version="7" timestamp="0">
<sources><source>.</source></sources>
<packages><package name="." line-rate="0" branch-rate="0"><classes>
<class name="app.py" filename="app.py" line-rate="0" branch-rate="0"><methods/><lines>
{lines}
</lines></class></classes></package></packages></coverage>
"""
# a.info hits lines 1-2 of app.py, b.info line 3, cov.xml (Cobertura) lines 1 and 4.
GEN = f"""\
lcov = {LCOV!r}
open("a.info", "w").write(lcov.format("DA:1,1\\nDA:2,1\\nDA:3,0\\nDA:4,0\\n"))
open("b.info", "w").write(lcov.format("DA:1,0\\nDA:2,0\\nDA:3,1\\nDA:4,0\\n"))
xml = {COBERTURA!r}
rows = "".join(f'<line number="{{n}}" hits="{{int(n in (1, 4))}}"/>' for n in (1, 2, 3, 4))
open("cov.xml", "w").write(xml.format(hit=2, lines=rows))
"""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    repo = make_repo(
        tmp_path / "repo",
        {"app.py": "a = 1\nb = 2\nc = 3\nd = 4\n", "gen.py": GEN, ".gitignore": "*.info\n*.xml\n"},
    )
    with open_project(repo) as opened:
        yield opened


def _import(project: Project, name: str, text: str, suite: str) -> str:
    (project.checkout.worktree_path / name).write_text(text)
    imported = Service(project).call("coverage_import", {"report_path": name, "suite": suite})
    return str(imported["data"]["snapshot"]["snapshot_id"])


def _run(project: Project, artifacts: list[dict[str, str]], baseline: list[str]) -> dict[str, Any]:
    service = Service(project)
    command_id = service.call(
        "register_test_command",
        {"name": "gen", "argv": [sys.executable, "gen.py"], "artifacts": artifacts},
    )["data"]["command"]["id"]
    commands.approve(project, command_id, approved_by="tester", via="cli")
    run = service.call(
        "run_test", {"command_id": command_id, "wait": True, "baseline": {"snapshot_ids": baseline}}
    )["data"]["run"]
    assert run["state"] == "succeeded", run
    assert all(a["status"] == "ingested" for a in run["artifacts"]), run["artifacts"]
    return dict(run)


def test_a_runs_incremental_review_is_over_the_union_of_all_its_reports(project: Project) -> None:
    """Seed: "when a run ingests multiple ordinary artifacts, the review unions their snapshot IDs."
    Seed: "A terminal incremental run invokes the same stored-detail projection used by
    `coverage_review`, unions all ordinary artifacts attached to the run, and attaches its bounded result."
    Two LCOV reports of one file (lines 1-2 and line 3) against a baseline that hit line 1: the review's
    current side is both snapshots, three of four lines covered, and it equals coverage_review's answer."""
    base = _import(project, "base.info", LCOV.format("DA:1,1\nDA:2,0\nDA:3,0\nDA:4,0\n"), "base")
    run = _run(project, [{"path": "a.info", "suite": "unit"}, {"path": "b.info", "suite": "unit"}], [base])
    review = run["incremental_review"]
    produced = sorted(a["snapshot_id"] for a in run["artifacts"])
    assert sorted(review["current"]["snapshot_ids"]) == produced and len(produced) == 2
    assert review["lines"]["current"] == [3, 4] and review["lines"]["baseline"] == [1, 4]
    assert review["categories"]["gained"] == 2
    asked = Service(project).call(
        "coverage_review",
        {
            "task": "incremental",
            "measurement": {"snapshot_ids": produced},
            "baseline": {"kind": "explicit", "snapshot_ids": [base]},
        },
    )["data"]
    assert {k: asked[k] for k in ("lines", "categories")} == {k: review[k] for k in ("lines", "categories")}


def test_a_run_whose_reports_are_in_two_formats_gets_one_review_group_per_format(project: Project) -> None:
    """Seed: "when a run ingests multiple ordinary artifacts, the review unions their snapshot IDs."
    Seed: "Ordinary comparisons require the same repository and normalized format" and "when a run
    ingests multiple ordinary artifacts, the review unions their snapshot IDs". An LCOV and a Cobertura
    report of one run, with a baseline of each format: one incremental group per format, each compared with
    the baseline of its own format, none an error."""
    lcov_base = _import(project, "base.info", LCOV.format("DA:1,1\nDA:2,0\nDA:3,0\nDA:4,0\n"), "base")
    rows = "".join(f'<line number="{n}" hits="{int(n == 4)}"/>' for n in (1, 2, 3, 4))
    xml_base = _import(project, "base.xml", COBERTURA.format(hit=1, lines=rows), "base-xml")
    run = _run(
        project,
        [{"path": "a.info", "suite": "unit"}, {"path": "cov.xml", "suite": "unit-xml"}],
        [lcov_base, xml_base],
    )
    review = run["incremental_review"]
    assert "error" not in review, review
    groups = {g["format"]: g for g in review["groups"]}
    assert sorted(groups) == ["cobertura", "lcov"]
    assert groups["lcov"]["review"]["baseline"]["snapshot_ids"] == [lcov_base]
    assert groups["cobertura"]["review"]["baseline"]["snapshot_ids"] == [xml_base]
    assert groups["lcov"]["review"]["lines"]["current"] == [2, 4]
    assert groups["cobertura"]["review"]["lines"] == {
        **groups["cobertura"]["review"]["lines"],
        "current": [2, 4],
        "baseline": [1, 4],
    }
