"""Patch coverage agrees with diff-cover's, run as a subprocess on the same repository and reports."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from coverage_core import open_project
from coverage_core.service import Service

from .gitrepo import commit, git, git_env, lcov, make_repo, write
from .systemtools import peer

APP = [f"app line {n}" for n in range(1, 41)]
HELPERS = [f"helper line {n}" for n in range(1, 21)]


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


@pytest.fixture
def changed_repo(tmp_path: Path) -> tuple[Path, str, dict[str, dict[int, int]]]:
    """A repository whose second commit edits, inserts, deletes, renames and adds; and the current hits."""
    repo = make_repo(
        tmp_path / "proj",
        {
            "src/app.py": _text(APP),
            "src/helpers.py": _text(HELPERS),
            "src/stable.py": _text(["s"] * 10),
            ".gitignore": "*.xml\n*.info\n*.json\n",
        },
    )
    base = git(repo, "rev-parse", "HEAD")
    app = list(APP)
    app[4] = "app line 5 changed"  # an edit
    app[10:10] = ["inserted a", "inserted b", "inserted c"]  # shifts everything below
    del app[25:28]  # a deletion
    app.append("appended at the end")
    helpers = list(HELPERS)
    helpers[7] = "helper line 8 changed"
    write(
        repo,
        {
            "src/app.py": _text(app),
            "src/helpers.py": _text(helpers),
            "src/fresh.py": _text(["f1", "f2", "f3"]),
        },
    )
    git(repo, "mv", "src/helpers.py", "src/tools.py")
    commit(repo, "change")
    # Current hits: every third line uncovered, a few lines not executable at all.
    hits = {
        "src/app.py": {
            n: (0 if n % 3 == 0 or n in (13, 41) else 2) for n in range(1, len(app) + 1) if n not in (2, 12)
        },
        "src/tools.py": {n: (0 if n % 4 == 0 else 1) for n in range(1, len(helpers) + 1)},
        "src/fresh.py": {1: 1, 2: 0, 3: 0},
        "src/stable.py": {n: 1 for n in range(1, 11)},
    }
    return repo, base, hits


def _cobertura(root: Path, hits: dict[str, dict[int, int]]) -> str:
    classes = "".join(
        f'<class name="{Path(p).stem}" filename="{p}" line-rate="0"><methods/><lines>'
        + "".join(f'<line number="{n}" hits="{h}"/>' for n, h in sorted(lines.items()))
        + "</lines></class>"
        for p, lines in hits.items()
    )
    return (
        f'<?xml version="1.0" ?>\n<coverage version="7.4" line-rate="0" branch-rate="0">'
        f"<sources><source>{root}</source></sources>"
        f'<packages><package name="src"><classes>{classes}</classes></package></packages></coverage>\n'
    )


def _diff_cover(repo: Path, report: str, base: str) -> dict:
    subprocess.run(
        [peer("diff-cover"), report, f"--compare-branch={base}", "--json-report", "out.json"],
        cwd=repo,
        env=git_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads((repo / "out.json").read_text())


@pytest.mark.parametrize("fmt", ["lcov", "cobertura"])
def test_patch_coverage_equals_diff_covers_for_lcov_and_cobertura(changed_repo, fmt: str) -> None:
    repo, base, hits = changed_repo
    if fmt == "lcov":
        report = "coverage.info"
        (repo / report).write_text(lcov({str(repo / p): lines for p, lines in hits.items()}))
    else:
        report = "coverage.xml"
        (repo / report).write_text(_cobertura(repo, hits))
    # The baseline in the current side's format: a comparison across formats is refused.
    base_hits = {"src/app.py": {n: 1 for n in range(1, 41)}}
    base_report = "base.info" if fmt == "lcov" else "base.xml"
    (repo / base_report).write_text(lcov(base_hits) if fmt == "lcov" else _cobertura(repo, base_hits))
    theirs = _diff_cover(repo, report, base)
    with open_project(repo) as project:
        svc = Service(project)
        svc.call("coverage_import", {"report_path": base_report, "commit": base})
        svc.call("coverage_import", {"report_path": report})
        env = svc.call(
            "coverage_review",
            {
                "task": "change",
                "baseline": {"kind": "ref", "ref": base},
                "representation": "audit",
                "limits": {"max_files": 20},
            },
        )
    ours = env["data"]
    found = theirs["total_num_lines"]
    assert found >= 8  # the scenario really exercises added lines
    assert ours["patch"] == {"found": found, "hit": found - theirs["total_num_violations"]}
    per_file = {f["path"]: f["patch"] for f in ours["files"] if f["patch"]["found"]}
    assert per_file == {
        path: {"found": len(s["covered_lines"]) + len(s["violation_lines"]), "hit": len(s["covered_lines"])}
        for path, s in theirs["src_stats"].items()
        if s["covered_lines"] or s["violation_lines"]
    }
    # A range spans adjacent executable lines; lines between them that are not code are not in it.
    uncovered_new = {
        (r["path"], n)
        for r in ours["ranges"]
        if r["category"] == "UNC"
        for n in range(r["start"], r["end"] + 1)
        if n in hits[r["path"]]
    }
    assert uncovered_new == {(p, n) for p, s in theirs["src_stats"].items() for n in s["violation_lines"]}
