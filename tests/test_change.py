"""coverage_review(task="change"): lcov's twelve categories across real git diffs and real stores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coverage_core import open_project
from coverage_core.diffmap import (
    KEY_SHIFT,
    DiffMap,
    FileChange,
    Hunks,
    added,
    diff_trees,
    forward,
)
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.review.budget import words
from coverage_core.review.categories import CATEGORIES, Side, compare, load_side
from coverage_core.review.change import RANGE_ORDER
from coverage_core.review.comparing import empty_side
from coverage_core.service import Service

from .gitrepo import commit, git, lcov, make_repo, write

IGNORE = {".gitignore": "*.info\n"}


def lines_of(tag: str, n: int) -> list[str]:
    return [f"{tag} {i}" for i in range(1, n + 1)]


def text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def store(svc: Service, repo: Path, report: str, **args) -> str:
    """Import an LCOV text as a snapshot (``commit``, ``suite``, ``scope`` as coverage_import takes them)."""
    (repo / "r.info").write_text(report)
    return svc.call("coverage_import", {"report_path": "r.info", **args})["data"]["snapshot"]["snapshot_id"]


def categories_of(project, base_id: str, cur_id: str) -> tuple[dict, dict]:
    """Per line: {(path, current line): category} and {(path, baseline line): category} of baseline-only lines."""
    st_ = project.store
    diff = diff_trees(project.git, st_.snapshot(base_id).commit, st_.snapshot(cur_id).commit)
    c = compare(load_side(st_.con, [st_.snap_key(base_id)]), load_side(st_.con, [st_.snap_key(cur_id)]), diff)
    current = {(c.paths[f], int(n)): CATEGORIES[k] for f, n, k in zip(c.cur_file, c.cur_line, c.cur_cat)}
    baseline = {(c.paths[f], int(n)): CATEGORIES[k] for f, n, k in zip(c.base_file, c.base_line, c.base_cat)}
    return current, baseline


def change(svc: Service, **args) -> dict:
    return svc.call("coverage_review", {"task": "change", **args})


def test_edits_and_insertions_that_shift_lines_keep_each_lines_identity(tmp_path: Path) -> None:
    base_src = lines_of("b", 12)
    repo = make_repo(tmp_path / "r", {"src/base.c": text(base_src), **IGNORE})
    cur_src = list(base_src)
    cur_src[7] = "b 8 edited"
    cur_src[3:3] = ["new one", "new two"]  # after line 3: old 4.. move down by two
    write(repo, {"src/base.c": text(cur_src)})
    commit(repo, "edit")
    with open_project(repo) as project:
        svc = Service(project)
        base = store(svc, repo, lcov({"src/base.c": {n: n % 2 for n in range(1, 13)}}), commit="HEAD~1")
        cur_hits = {1: 1, 2: 1, 3: 0, 4: 1, 5: 0, 6: 0, 7: 1, 8: 1, 9: 0, 10: 0, 11: 1, 12: 0, 13: 1, 14: 0}
        cur = store(svc, repo, lcov({"src/base.c": cur_hits}))
        current, baseline = categories_of(project, base, cur)
        data = change(svc, representation="audit")["data"]
    expected = [
        "CBC",
        "GBC",
        "LBC",
        "GNC",
        "UNC",
        "UBC",
        "CBC",
        "GBC",
        "LBC",
        "UNC",
        "CBC",
        "UBC",
        "CBC",
        "UBC",
    ]
    assert [current[("src/base.c", n)] for n in range(1, 15)] == expected
    assert baseline == {("src/base.c", 8): "DUB"}  # the edited line's old version
    assert data["patch"] == {"found": 3, "hit": 1}
    assert data["regression"] == {"status": "regression", "lines": 2}
    assert [(r["category"], r["start"], r["end"]) for r in data["ranges"][:3]] == [
        ("UNC", 5, 5),
        ("UNC", 10, 10),
        ("LBC", 3, 3),
    ]


def test_deleted_lines_are_deleted_baseline_code_never_a_regression(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"d.c": text(lines_of("d", 5)), **IGNORE})
    write(repo, {"d.c": text(["d 1", "d 4", "d 5"])})
    commit(repo, "delete two lines")
    with open_project(repo) as project:
        svc = Service(project)
        base = store(svc, repo, lcov({"d.c": {1: 1, 2: 1, 3: 0, 4: 1, 5: 1}}), commit="HEAD~1")
        cur = store(svc, repo, lcov({"d.c": {1: 1, 2: 1, 3: 1}}))
        current, baseline = categories_of(project, base, cur)
        data = change(svc)["data"]
    assert current == {("d.c", 1): "CBC", ("d.c", 2): "CBC", ("d.c", 3): "CBC"}
    assert baseline == {("d.c", 2): "DCB", ("d.c", 3): "DUB"}
    assert data["regression"] == {"status": "none", "lines": 0} and data["categories"]["DCB"] == 1


def test_a_renamed_and_edited_file_keeps_its_lines_history(tmp_path: Path) -> None:
    src = lines_of("old", 20)
    repo = make_repo(tmp_path / "r", {"lib/old.c": text(src), **IGNORE})
    edited = list(src)
    edited[9] = "old 10 edited"
    edited[15:15] = ["inserted"]  # after line 15
    write(repo, {"lib/old.c": text(edited)})
    git(repo, "mv", "lib/old.c", "lib/new.c")
    commit(repo, "rename and edit")
    with open_project(repo) as project:
        svc = Service(project)
        base = store(svc, repo, lcov({"lib/old.c": {5: 1, 10: 1, 12: 0, 16: 1}}), commit="HEAD~1")
        cur = store(svc, repo, lcov({"lib/new.c": {5: 1, 10: 0, 12: 1, 16: 1, 17: 0}}))
        current, baseline = categories_of(project, base, cur)
        rows = change(svc, representation="review")["data"]["files"]
    assert current == {
        ("lib/new.c", 5): "CBC",
        ("lib/new.c", 10): "UNC",
        ("lib/new.c", 12): "GBC",
        ("lib/new.c", 16): "GNC",
        ("lib/new.c", 17): "LBC",
    }
    assert baseline == {("lib/new.c", 10): "DCB"}
    assert rows == [
        {
            "path": "lib/new.c",
            "status": "renamed",
            "previous_path": "lib/old.c",
            "lines": {"UNC": 1, "LBC": 1, "GBC": 1, "GNC": 1, "CBC": 1, "DCB": 1},
            "patch": {"found": 2, "hit": 1},
        }
    ]


def test_lines_that_stop_or_start_being_code_are_excluded_or_included(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"x.c": text(lines_of("x", 8)), "other.c": "o\n", **IGNORE})
    write(repo, {"other.c": "o changed\n"})
    commit(repo, "touch another file")
    with open_project(repo) as project:
        svc = Service(project)
        base = store(svc, repo, lcov({"x.c": {1: 1, 2: 0, 3: 1, 4: 0}}), commit="HEAD~1")
        cur = store(svc, repo, lcov({"x.c": {1: 1, 2: 0, 5: 1, 6: 0}}))
        current, baseline = categories_of(project, base, cur)
        data = change(svc)["data"]
    assert current == {("x.c", 1): "CBC", ("x.c", 2): "UBC", ("x.c", 5): "GIC", ("x.c", 6): "UIC"}
    assert baseline == {("x.c", 3): "ECB", ("x.c", 4): "EUB"}
    assert data["regression"]["status"] == "none"  # excluded code is not lost coverage


def test_a_new_file_is_new_code_and_a_deleted_file_is_deleted_code(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"gone.c": text(lines_of("g", 3)), "keep.c": "k\n", **IGNORE})
    git(repo, "rm", "-q", "gone.c")
    write(repo, {"fresh.c": text(lines_of("f", 3))})
    commit(repo, "replace")
    with open_project(repo) as project:
        svc = Service(project)
        base = store(svc, repo, lcov({"gone.c": {1: 1, 2: 0}, "keep.c": {1: 1}}), commit="HEAD~1")
        cur = store(svc, repo, lcov({"fresh.c": {1: 1, 3: 0}, "keep.c": {1: 1}}))
        current, baseline = categories_of(project, base, cur)
        rows = change(svc)["data"]["files"]
    assert current == {("fresh.c", 1): "GNC", ("fresh.c", 3): "UNC", ("keep.c", 1): "CBC"}
    assert baseline == {("gone.c", 1): "DCB", ("gone.c", 2): "DUB"}
    assert rows == [["fresh.c", "added", 1, 0, 0, 1], ["gone.c", "deleted", 0, 0, 0, 0]]


BRANCHY_BASE = """TN:
SF:f.c
FN:2,alpha
FN:6,beta
FNDA:1,alpha
FNDA:0,beta
BRDA:3,0,0,1
BRDA:3,0,1,0
BRDA:7,0,0,0
DA:2,1
DA:3,1
DA:6,0
DA:7,0
end_of_record
"""
BRANCHY_CURRENT = """TN:
SF:f.c
FN:3,alpha
FN:7,beta
FNDA:1,alpha
FNDA:0,beta
BRDA:4,0,0,1
BRDA:4,0,1,1
BRDA:8,0,0,0
DA:3,1
DA:4,1
DA:7,0
DA:8,0
end_of_record
"""


def test_branches_and_functions_are_categorized_like_lines(tmp_path: Path) -> None:
    src = lines_of("f", 9)
    repo = make_repo(tmp_path / "r", {"f.c": text(src), **IGNORE})
    edited = ["header"] + src
    edited[6] = "f 6 new signature"  # beta's first line, now line 7
    write(repo, {"f.c": text(edited)})
    commit(repo, "insert a header, change beta")
    with open_project(repo) as project:
        svc = Service(project)
        store(svc, repo, BRANCHY_BASE, commit="HEAD~1")
        store(svc, repo, BRANCHY_CURRENT)
        data = change(svc, representation="review")["data"]
    assert data["functions"] == {**{c: 0 for c in CATEGORIES}, "CBC": 1, "UNC": 1, "DUB": 1}
    assert data["branches"] == {**{c: 0 for c in CATEGORIES}, "CBC": 1, "GBC": 1, "UBC": 1}
    assert data["categories"]["UNC"] == 1 and data["categories"]["DUB"] == 1


def _pairs(old: bytes, new: bytes) -> tuple[dict[int, int], set[int], set[int]]:
    """git's own view: unchanged old line -> new line, removed old lines, added new lines."""
    patch = pygit2.Patch.create_from(old, new, context_lines=1_000_000)
    moved, removed, added_ = {}, set(), set()
    for hunk in patch.hunks:
        for line in hunk.lines:
            if line.origin == " ":
                moved[line.old_lineno] = line.new_lineno
            elif line.origin == "-":
                removed.add(line.old_lineno)
            elif line.origin == "+":
                added_.add(line.new_lineno)
    n_old = old.count(b"\n")
    moved.update({n: n for n in range(1, n_old + 1) if not patch.hunks})  # identical texts
    return moved, removed, added_


_texts = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=30)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_texts, _texts), min_size=1, max_size=4))
def test_line_mapping_agrees_with_gits_pairing_of_unchanged_lines(
    files: list[tuple[list[str], list[str]]],
) -> None:
    changes, old_keys, new_keys, expected = [], [], [], {}
    for i, (old_lines, new_lines) in enumerate(files):
        old, new = (
            text(old_lines).encode() if old_lines else b"",
            text(new_lines).encode() if new_lines else b"",
        )
        patch = pygit2.Patch.create_from(old, new, context_lines=0)
        hunks = np.array(
            [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks], dtype=np.int64
        ).reshape(-1, 4)
        changes.append(FileChange("modified", f"f{i}", f"f{i}", hunks))
        moved, removed, added_ = _pairs(old, new)
        base = i << KEY_SHIFT
        old_keys += [base + n for n in range(1, len(old_lines) + 1)]
        new_keys += [base + n for n in range(1, len(new_lines) + 1)]
        expected[i] = (moved, removed, added_)
    hunks = Hunks.collect(tuple(changes), lambda c: int(c.path[1:]))
    keys = np.array(old_keys, dtype=np.int64)
    shifted, gone = forward(keys, hunks)
    for k, s, g in zip(keys, shifted, gone):
        f, n = int(k >> KEY_SHIFT), int(k & 0xFFFFFFFF)
        moved, removed, _ = expected[f]
        assert bool(g) == (n in removed)
        if not g:
            assert int(s) == (f << KEY_SHIFT) + moved[n]
    fresh = added(np.array(new_keys, dtype=np.int64), hunks)
    for k, is_new in zip(new_keys, fresh):
        assert bool(is_new) == (int(k & 0xFFFFFFFF) in expected[k >> KEY_SHIFT][2])


def _side(paths: list[str], lines: dict[str, dict[int, int]]) -> Side:
    empty = empty_side()
    keys = [(i << KEY_SHIFT) + n for i, p in enumerate(paths) for n in sorted(lines.get(p, {}))]
    hits = [lines[p][n] for p in paths for n in sorted(lines.get(p, {}))]
    return Side(
        tuple(paths),
        np.array(keys, dtype=np.int64),
        np.array(hits, dtype=np.int64),
        empty.branches,
        empty.functions,
    )


_coverage = st.dictionaries(st.integers(1, 30), st.integers(0, 2), max_size=30)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_texts, _texts, _coverage, _coverage), min_size=1, max_size=3))
def test_every_executable_line_lands_in_exactly_one_category_as_lcov_defines_them(files) -> None:
    paths = [f"f{i}.c" for i in range(len(files))]
    base_lines, cur_lines, changes, expected = {}, {}, [], {}
    for path, (old_lines, new_lines, base_cov, cur_cov) in zip(paths, files):
        old, new = (
            text(old_lines).encode() if old_lines else b"",
            text(new_lines).encode() if new_lines else b"",
        )
        patch = pygit2.Patch.create_from(old, new, context_lines=0)
        hunks = np.array(
            [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks], dtype=np.int64
        ).reshape(-1, 4)
        if len(hunks):
            changes.append(FileChange("modified", path, path, hunks))
        moved, removed, added_ = _pairs(old, new)
        base_lines[path] = {n: h for n, h in base_cov.items() if n <= len(old_lines)}
        cur_lines[path] = {n: h for n, h in cur_cov.items() if n <= len(new_lines)}
        back = {v: k for k, v in moved.items()}
        for n, h in cur_lines[path].items():  # lcov's definitions, line by line
            if n in added_:
                cat = "GNC" if h else "UNC"
            elif back[n] in base_lines[path]:
                was = base_lines[path][back[n]]
                cat = {(1, 1): "CBC", (0, 1): "GBC", (1, 0): "LBC", (0, 0): "UBC"}[(bool(was), bool(h))]
            else:
                cat = "GIC" if h else "UIC"
            expected[(path, "current", n)] = cat
        for n, h in base_lines[path].items():
            if n in removed:
                expected[(path, "baseline", n)] = "DCB" if h else "DUB"
            elif moved[n] not in cur_lines[path]:
                expected[(path, "baseline", n)] = "ECB" if h else "EUB"
    c = compare(_side(paths, base_lines), _side(paths, cur_lines), DiffMap("a", "b", tuple(changes)))
    got = {
        (c.paths[f], "current", int(n)): CATEGORIES[k] for f, n, k in zip(c.cur_file, c.cur_line, c.cur_cat)
    }
    got |= {
        (c.paths[f], "baseline", int(n)): CATEGORIES[k]
        for f, n, k in zip(c.base_file, c.base_line, c.base_cat)
    }
    assert got == expected
    assert int(c.totals.sum()) == len(expected)


def test_a_file_the_current_snapshot_lacks_is_not_measured_never_unchanged(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"a.c": text(lines_of("a", 4)), "b.c": text(lines_of("b", 4)), "README.md": "hello\n", **IGNORE},
    )
    write(repo, {"a.c": text(lines_of("a", 5)), "b.c": text(lines_of("b", 5)), "README.md": "hello again\n"})
    commit(repo, "change all three")
    with open_project(repo) as project:
        svc = Service(project)
        store(svc, repo, lcov({"a.c": {1: 1}, "b.c": {1: 1, 2: 1}}), commit="HEAD~1")
        store(svc, repo, lcov({"a.c": {1: 1, 5: 1}}))
        data = change(svc, representation="review", limits={"max_files": 10})["data"]
    status = {f["path"]: f["status"] for f in data["files"]}
    assert status == {"a.c": "modified", "b.c": "not_measured", "README.md": "outside_scope"}
    assert data["not_measured"] == {"files": 1}  # README.md is no code the suite measures: outside its scope
    assert data["outside_scope"] == {"count": 1, "examples": ["README.md"]}
    assert data["claim_status"] == "limited"
    assert any("not_measured, not unchanged" in r for r in data["reasons"])
    assert data["categories"]["ECB"] == 2  # b.c's baseline lines are excluded, not lost


def test_a_subset_current_snapshot_gives_not_observed_where_a_complete_one_gives_a_regression(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "r", {"s.c": text(lines_of("s", 4)), **IGNORE})
    with open_project(repo) as project:
        svc = Service(project)
        base = store(svc, repo, lcov({"s.c": {1: 1, 2: 1, 3: 1}}))
        answers = {}
        for scope in ("complete", "subset"):
            cur = store(svc, repo, lcov({"s.c": {1: 1, 2: 0, 3: 0}}, test=scope), scope=scope)
            answers[scope] = change(
                svc, measurement={"snapshot_id": cur}, baseline={"kind": "explicit", "snapshot_id": base}
            )["data"]
    assert answers["complete"]["regression"] == {"status": "regression", "lines": 2}
    assert answers["subset"]["regression"] == {"status": "not_observed", "lines": 2}
    assert (
        answers["subset"]["claim_status"] == "limited" and answers["complete"]["claim_status"] == "supported"
    )


def _history(root: Path):
    """main: c1 [A], c2 [B]; feature from c1: c3 [C], c4 [D, the latest]. Yields (service, ids, commits)."""
    repo = make_repo(root / "h", {"h.c": text(lines_of("h", 6)), **IGNORE})
    c1 = git(repo, "rev-parse", "HEAD")
    write(repo, {"h.c": text(lines_of("h", 7))})
    c2 = commit(repo, "main moves on")
    git(repo, "checkout", "-q", "-b", "feature", c1)
    write(repo, {"h.c": text(["top"] + lines_of("h", 6))})
    c3 = commit(repo, "feature 1")
    write(repo, {"h.c": text(["top", "second"] + lines_of("h", 6))})
    c4 = commit(repo, "feature 2")
    with open_project(repo) as project:
        svc = Service(project)
        ids = {
            name: store(svc, repo, lcov({"h.c": {1: 1, 2: n}}), commit=c)
            for name, c, n in (("A", c1, 0), ("B", c2, 1), ("C", c3, 2), ("D", c4, 3))
        }
        yield svc, ids, {"c1": c1, "c2": c2, "c3": c3, "c4": c4}, repo


@pytest.fixture
def history(tmp_path: Path):
    """The four-snapshot history in this test's own repository (the test changes its git history)."""
    yield from _history(tmp_path)


@pytest.fixture(scope="module")
def read_history(tmp_path_factory: pytest.TempPathFactory):
    """The four-snapshot history once for the module, for the tests that only review it."""
    yield from _history(tmp_path_factory.mktemp("history"))


@pytest.mark.parametrize(
    "spec, expected",
    [
        ({"kind": "previous_snapshot"}, "C"),
        ({"kind": "parent_commit"}, "C"),
        ({"kind": "ref", "ref": "main"}, "B"),
        ({"kind": "merge_base", "ref": "main"}, "A"),
        ({"kind": "worktree_base"}, "A"),
        ({"kind": "explicit", "snapshot_id": "B"}, "B"),
    ],
)
def test_each_baseline_kind_finds_its_snapshot(read_history, spec: dict, expected: str) -> None:
    svc, ids, _commits, _repo = read_history
    if "snapshot_id" in spec:
        spec = {**spec, "snapshot_id": ids[spec["snapshot_id"]]}
    data = change(svc, baseline=spec)["data"]
    assert data["baseline"]["snapshot_ids"] == [ids[expected]]
    assert data["current"]["snapshot_ids"] == [ids["D"]]


def test_no_baseline_counts_every_line_as_included_code(read_history) -> None:
    svc, _ids, _commits, _repo = read_history
    data = change(svc, baseline={"kind": "none"})["data"]
    assert data["baseline"]["snapshot_ids"] == [] and data["patch"] == {"found": 0, "hit": 0}
    assert {k: v for k, v in data["categories"].items() if v} == {"GIC": 2}


def test_baseline_errors_name_the_commit_and_say_how_to_get_one(history) -> None:
    svc, ids, commits, repo = history
    git(repo, "checkout", "-q", "--orphan", "unrelated")
    write(repo, {"h.c": "other history\n"})
    commit(repo, "orphan")
    git(repo, "checkout", "-q", "feature")
    cases = [
        ({"kind": "ref", "ref": "no-such-branch"}, ErrorCode.NOT_FOUND, "no-such-branch", "snap-"),
        (
            {"kind": "ref", "ref": "unrelated"},
            ErrorCode.BASELINE_UNAVAILABLE,
            "shares no history",
            "parent_commit",
        ),
        ({"kind": "ref", "ref": "feature~1"}, None, "", ""),  # has a snapshot (C): fine
        (
            {"kind": "explicit", "snapshot_id": "snap-0000000000000000"},
            ErrorCode.NOT_FOUND,
            "snap-0000",
            "snapshots",
        ),
        (
            {"kind": "explicit", "composite_snapshot_id": "comp-1"},
            ErrorCode.INCOMPATIBLE_SNAPSHOTS,
            "composite",
            "composite_snapshot_id",
        ),
        ({"kind": "merge_base"}, ErrorCode.INVALID_ARGUMENT, "needs baseline.ref", "main"),
    ]
    for spec, code, mention, hint in cases:
        if code is None:
            change(svc, baseline=spec)
            continue
        with pytest.raises(CoverageError) as err:
            change(svc, baseline=spec)
        assert err.value.code is code, spec
        assert mention in err.value.message and hint in err.value.suggestion
    # A commit nobody measured: the error names it and says how to store a snapshot of it.
    write(repo, {"h.c": "unmeasured\n"})
    sha = commit(repo, "not measured")
    store(svc, repo, lcov({"h.c": {1: 1}}), suite="later")
    with pytest.raises(CoverageError) as err:
        change(svc, measurement={"suite": "later"}, baseline={"kind": "parent_commit"})
    assert err.value.code is ErrorCode.BASELINE_UNAVAILABLE
    assert commits["c4"][:12] in err.value.message and "later" in err.value.message
    assert f"store the report with commit {commits['c4']}" in err.value.suggestion
    assert "coverage-mcp" not in err.value.suggestion  # the remedy says it, in each surface's terms
    assert err.value.remedy.to_dict() == {
        "operation": "coverage_import",
        "arguments": {"report_path": "REPORT", "suite": "later", "commit": commits["c4"]},
    }
    with pytest.raises(CoverageError) as err:
        change(svc, measurement={"suite": "later"})  # previous_snapshot: none in that suite
    assert err.value.code is ErrorCode.BASELINE_UNAVAILABLE and "earlier commit" in err.value.suggestion
    assert err.value.remedy.to_dict()["arguments"] == {
        "report_path": "REPORT",
        "suite": "later",
        "commit": "<its sha>",
    }
    with pytest.raises(CoverageError) as err:
        change(svc, measurement={"suite": "later"}, baseline={"kind": "explicit", "snapshot_id": ids["A"]})
    assert err.value.code is ErrorCode.INCOMPATIBLE_SNAPSHOTS and "incremental" in err.value.suggestion
    assert sha


def test_change_answers_have_budgets_representations_and_cursors(tmp_path: Path) -> None:
    files = {f"pkg/m{i:02d}.c": text(lines_of(f"m{i}", 6)) for i in range(12)}
    repo = make_repo(tmp_path / "r", {**files, **IGNORE})
    write(repo, {p: text(lines_of(f"m{i}", 6) + ["added"]) for i, p in enumerate(files)})
    commit(repo, "grow every file")
    with open_project(repo) as project:
        svc = Service(project)
        store(svc, repo, lcov({p: {1: 1, 2: 0} for p in files}), commit="HEAD~1")
        store(svc, repo, lcov({p: {1: 0, 2: 0, 7: i % 2} for i, p in enumerate(files)}))
        sizes = [
            len(json.dumps(change(svc, representation=r)["data"])) for r in ("compact", "review", "audit")
        ]
        assert sizes[0] < sizes[1] < sizes[2]
        first = change(svc)
        assert len(first["data"]["files"]) == 3 and first["page"]["total_files"] == 12
        for max_words in (120, 200, 400):
            try:
                assert words(change(svc, limits={"max_words": max_words})["data"]) <= max_words
            except CoverageError as err:
                assert err.code is ErrorCode.BUDGET_TOO_SMALL
        seen, cursor = [], None
        while True:
            env = change(svc, limits={"max_files": 5}, **({"cursor": cursor} if cursor else {}))
            seen += [f[0] for f in env["data"]["files"]]
            cursor = env["page"]["next_cursor"]
            if not cursor:
                break
        assert sorted(seen) == sorted(files) and len(seen) == len(set(seen))
        with pytest.raises(CoverageError) as err:
            change(svc, limits={"max_files": 6}, cursor=first["page"]["next_cursor"])
        assert err.value.code is ErrorCode.INVALID_CURSOR
        ranges = change(svc, limits={"max_files": 12, "max_regions": 50}, representation="review")["data"][
            "ranges"
        ]
        order = [r["category"] for r in ranges]
        assert order == sorted(order, key=[CATEGORIES[c] for c in RANGE_ORDER].index)  # UNC and LBC first
        assert order[0] == "UNC" and "LBC" in order


def test_task_all_includes_change_when_a_baseline_resolves_and_says_why_not_otherwise(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.c": text(lines_of("a", 3)), **IGNORE})
    with open_project(repo) as project:
        svc = Service(project)
        store(svc, repo, lcov({"a.c": {1: 1, 2: 0}}))
        alone = svc.call("coverage_review", {"task": "all"})["data"]
        assert "change" not in alone and alone["reasons"][0].startswith("change omitted: no snapshot")
        store(svc, repo, lcov({"a.c": {1: 1, 2: 1}}))
        both = svc.call("coverage_review", {"task": "all"})["data"]
        assert both["change"]["categories"]["GBC"] == 1 and {"insight", "history"} <= set(both)
        assert words(both) <= 600
        with pytest.raises(CoverageError):  # an explicit baseline that fails is an error, not an omission
            svc.call("coverage_review", {"task": "all", "baseline": {"kind": "ref", "ref": "nowhere"}})


def test_a_dirty_current_snapshot_is_followed_into_the_working_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"w.c": text(lines_of("w", 4)), **IGNORE})
    with open_project(repo) as project:
        svc = Service(project)
        store(svc, repo, lcov({"w.c": {1: 1, 2: 1, 3: 1, 4: 1}}))
        write(repo, {"w.c": text(["w 1", "uncommitted"] + lines_of("w", 4)[1:])})  # not committed
        store(svc, repo, lcov({"w.c": {1: 1, 2: 0, 3: 1, 4: 1, 5: 1}}))  # measured on the dirty tree
        data = change(svc, representation="review")["data"]
    assert {k: v for k, v in data["categories"].items() if v} == {"UNC": 1, "CBC": 4}
    assert any("working tree" in r for r in data["reasons"])


def test_ranges_cut_by_max_regions_continue_with_their_own_cursor_without_gaps(tmp_path: Path) -> None:
    src = lines_of("z", 60)
    repo = make_repo(tmp_path / "r", {"z.c": text(src), **IGNORE})
    write(repo, {"z.c": text(src + lines_of("w", 40))})
    commit(repo, "grow")
    with open_project(repo) as project:
        svc = Service(project)
        store(svc, repo, lcov({"z.c": {n: 1 for n in range(1, 61)}}), commit="HEAD~1")
        # every other new line uncovered: 20 separate UNC ranges and 20 GNC ranges
        store(
            svc, repo, lcov({"z.c": {**{n: 1 for n in range(1, 61)}, **{n: n % 2 for n in range(61, 101)}}})
        )
        whole = change(svc, representation="audit", limits={"max_words": 50_000, "max_bytes": 2_000_000})
        assert whole["data"]["ranges_truncated"] is False and whole["data"]["ranges_cursor"] is None
        seen, cursor = [], None
        for _ in range(100):
            page = change(svc, limits={"max_regions": 7}, **({"cursor": cursor} if cursor else {}))["data"]
            seen += page["ranges"]
            cursor = page["ranges_cursor"]
            if cursor is None:
                break
        assert page["ranges_truncated"] is False
        assert [(r[0], r[1], r[2], r[3]) for r in seen] == [
            (r["path"], r["category"], r["start"], r["end"]) for r in whole["data"]["ranges"]
        ]
        assert len(seen) == 40
