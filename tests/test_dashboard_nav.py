"""The dashboard's navigation rows: the file table over all files, the directory tree, the function index.

A real store of a real LCOV report over a small tree of files; each answer is
checked against the report's own per-file counts, computed here without the
store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.project import open_project
from coverage_core.service import Service

from .gitrepo import make_repo

# path -> (lines: hits per line; functions: (name, line, hits))
FILES: dict[str, tuple[list[int], list[tuple[str, int, int]]]] = {
    "src/a.c": ([1, 1, 0, 0], [("alpha", 1, 1), ("beta", 3, 0)]),
    "src/b.c": ([1, 1, 1], [("gamma", 1, 4)]),
    "src/sub/c.c": ([0, 0, 0, 1, 1], [("delta", 1, 0), ("eps", 4, 2)]),
    "lib/d.c": ([1, 0], [("zeta", 1, 1)]),
    "top.c": ([1], []),
}


def lcov() -> str:
    out = ["TN:"]
    for path, (hits, functions) in FILES.items():
        out.append(f"SF:{path}")
        for name, line, count in functions:
            out += [f"FN:{line},{name}", f"FNDA:{count},{name}"]
        out += [f"DA:{i},{h}" for i, h in enumerate(hits, 1)]
        out.append("end_of_record")
    return "\n".join(out) + "\n"


@pytest.fixture
def stored(tmp_path: Path, isolated_home: Path) -> tuple[Path, str]:
    repo = make_repo(tmp_path / "repo", {path: "x\n" * len(h) for path, (h, _) in FILES.items()})
    (tmp_path / "r.lcov").write_text(lcov())
    with open_project(repo) as project:
        return repo, project.ingest(tmp_path / "r.lcov").snapshot_id


def row(repo: Path, name: str, **args: Any) -> dict[str, Any]:
    with open_project(repo) as project:
        return Service(project).call(name, args)


def missed(path: str) -> int:
    return sum(1 for h in FILES[path][0] if h == 0)


def test_the_file_table_sorts_by_any_column_over_every_file_before_the_page_is_cut(
    stored: tuple[Path, str],
) -> None:
    repo, snap = stored
    by_missed = sorted(FILES, key=lambda p: (-missed(p), p))
    first = row(repo, "dashboard_files", snapshot=snap, sort="missed", descending=True, limit=2)
    assert [r["path"] for r in first["data"]["rows"]] == by_missed[:2]
    assert first["data"]["matched"] == first["data"]["total"] == 5 and first["data"]["truncated"]
    # the cursor continues the same query, and only it
    cursor = first["page"]["next_cursor"]
    rest = row(repo, "dashboard_files", snapshot=snap, sort="missed", descending=True, limit=2, cursor=cursor)
    assert [r["path"] for r in rest["data"]["rows"]] == by_missed[2:4]
    with pytest.raises(CoverageError) as refused:
        row(repo, "dashboard_files", snapshot=snap, sort="path", limit=2, cursor=cursor)
    assert refused.value.code is ErrorCode.INVALID_CURSOR
    # by line coverage, lowest first; a counter's figures are the report's
    by_lines = row(repo, "dashboard_files", snapshot=snap, sort="lines")["data"]["rows"]
    ratio = {p: sum(1 for x in h if x) / len(h) for p, (h, _) in FILES.items()}
    assert [r["path"] for r in by_lines] == sorted(FILES, key=lambda p: (ratio[p], p))
    for r in by_lines:
        hits = FILES[r["path"]][0]
        assert r["lines"] == {"found": len(hits), "hit": len(hits) - missed(r["path"])}


def test_the_file_table_filters_by_search_directory_and_hides_fully_covered_files(
    stored: tuple[Path, str],
) -> None:
    repo, snap = stored
    found = row(repo, "dashboard_files", snapshot=snap, search="SUB/")["data"]
    assert (
        [r["path"] for r in found["rows"]] == ["src/sub/c.c"]
        and found["matched"] == 1
        and found["total"] == 5
    )
    under = row(repo, "dashboard_files", snapshot=snap, dir="src")["data"]["rows"]
    assert [r["path"] for r in under] == ["src/a.c", "src/b.c", "src/sub/c.c"]
    left = row(repo, "dashboard_files", snapshot=snap, hide_covered=True)["data"]["rows"]
    assert {r["path"] for r in left} == {p for p in FILES if missed(p) or any(f[2] == 0 for f in FILES[p][1])}


def test_the_tree_rolls_each_directory_up_over_its_whole_subtree(stored: tuple[Path, str]) -> None:
    repo, snap = stored
    top = row(repo, "dashboard_tree", snapshot=snap)["data"]
    assert [d["name"] for d in top["directories"]] == ["lib", "src"] and top["files_here"] == 1
    src = next(d for d in top["directories"] if d["name"] == "src")
    under = [p for p in FILES if p.startswith("src/")]
    assert src["files"] == 3
    assert src["lines"] == {
        "found": sum(len(FILES[p][0]) for p in under),
        "hit": sum(len(FILES[p][0]) - missed(p) for p in under),
    }
    assert src["functions"]["found"] == 5 and src["functions"]["hit"] == 3
    inner = row(repo, "dashboard_tree", snapshot=snap, dir="src/")["data"]
    assert [d["path"] for d in inner["directories"]] == ["src/sub/"] and inner["parent"] == ""
    assert inner["files_here"] == 2 and inner["lines"]["found"] == 12


def test_the_function_index_lists_a_file_s_functions_or_every_file_s_and_finds_the_uncovered(
    stored: tuple[Path, str],
) -> None:
    repo, snap = stored
    every = row(repo, "dashboard_functions", snapshot=snap)["data"]
    assert every["matched"] == 6 and every["hit"] == 4
    assert [(f["path"], f["name"]) for f in every["rows"]][:2] == [("lib/d.c", "zeta"), ("src/a.c", "alpha")]
    one = row(repo, "dashboard_functions", snapshot=snap, file="src/sub/c.c")["data"]["rows"]
    assert [(f["name"], f["start_line"], f["hits"]) for f in one] == [("delta", 1, 0), ("eps", 4, 2)]
    never = row(repo, "dashboard_functions", snapshot=snap, uncovered=True, sort="name")["data"]["rows"]
    assert [f["name"] for f in never] == ["beta", "delta"]
    most = row(repo, "dashboard_functions", snapshot=snap, sort="hits", descending=True, limit=1)
    assert most["data"]["rows"][0]["name"] == "gamma" and most["page"]["next_cursor"]
