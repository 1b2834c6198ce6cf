"""A partial line (executed, a branch missed) is its own kind in insight, with what it missed as its format
says it, and the counts add up.

Real reports of the corpus, each checked against a reader of its own text written here: coverage.py
JSON with branches (arcs, exits included), LCOV with BRDA (gcov's block and branch numbers, nine TN
records merged), Cobertura (coverage.py's dialect: outcomes counted only) and JaCoCo (mb/cb).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from coverage_core import open_project
from coverage_core.review.budget import MAX_BYTES, MAX_WORDS
from coverage_core.service import Service

from . import corpus
from .commandline import cli
from .gitrepo import make_repo
from .realcov import PACKAGE, measure

WHOLE = {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES, "max_files": 200, "max_regions": 500}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("partial") / "r", {"README": "partial lines\n"})


def _insight(repo: Path, report: str) -> tuple[dict[str, dict[int, list[str]]], dict[str, set[int]], Any]:
    """Every partial line (path -> line -> missing) and uncovered line of the report's insight, walked to
    its end, and the per-file figures (files list) it gave."""
    partial: dict[str, dict[int, list[str]]] = defaultdict(dict)
    uncovered: dict[str, set[int]] = defaultdict(set)
    files: dict[str, dict[str, Any]] = {}
    targets: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with open_project(repo) as project:
        svc = Service(project)
        snap = project.ingest(corpus.path(report), suite=Path(report).stem.replace(".", "-")[:40])
        args: dict[str, Any] = {
            "task": "insight",
            "representation": "audit",
            "limits": WHOLE,
            "measurement": {"snapshot_id": snap.snapshot_id},
        }
        while True:
            env = svc.call("coverage_review", args)
            for f in env["data"]["files"]:
                files[f["path"]] = f
            for t in env["data"]["targets"]:
                targets[t["path"]].append(t)
                assert t["regions_truncated"] is False  # audit shows every range
                for r in t["ranges"]:
                    if r["kind"] == "partial":
                        assert r["start"] == r["end"] and r["line_count"] == 1
                        assert r["missed_branches"] >= 1 and r["missing"]
                        partial[t["path"]][r["start"]] = r["missing"]
                    else:
                        assert "missing" not in r and r["missed_branches"] == 0
                        uncovered[t["path"]].update(range(r["start"], r["end"] + 1))
            following = env["page"]["next_cursor"]
            if not following:
                break
            args["cursor"] = following
    # The counts add up: a file's figures are its targets' sums, a target's its ranges'.
    for path, f in files.items():
        ts = targets[path]
        assert f["uncovered_lines"] == sum(t["uncovered_lines"] for t in ts), path
        assert f["partial_lines"] == sum(t["partial_lines"] for t in ts) == len(partial[path]), path
        for t in ts:
            assert t["uncovered_lines"] == sum(
                r["line_count"] for r in t["ranges"] if r["kind"] == "uncovered"
            )
            assert t["partial_lines"] == sum(1 for r in t["ranges"] if r["kind"] == "partial")
    return dict(partial), dict(uncovered), files


def _by_suffix(ours: dict[str, Any], path: str) -> Any:
    found = [v for p, v in ours.items() if p == path or p.endswith("/" + path) or path.endswith("/" + p)]
    assert len(found) <= 1, path
    return found[0] if found else {}


def _same_uncovered(spans: dict, files: dict, path: str, missed: set[int]) -> None:
    """The uncovered ranges hold every missed line (and the code-free lines between them), and count
    exactly the missed ones."""
    assert missed <= (_by_suffix(spans, path) or set()), path
    assert (_by_suffix(files, path) or {"uncovered_lines": 0})["uncovered_lines"] == len(missed), path


def test_coveragepy_partial_lines_name_the_arcs_they_missed_exits_included(repo: Path) -> None:
    report = "coveragepy/markupsafe-3.0.4.coverage.json"
    partial, uncovered, files = _insight(repo, report)
    doc = json.loads(corpus.path(report).read_text())
    exits = 0
    for path, entry in doc["files"].items():
        ran = set(entry["executed_lines"])
        want: dict[int, list[str]] = defaultdict(list)
        for start, to in entry["missing_branches"]:
            if start in ran:
                want[start].append(f"didn't jump to line {to}" if to > 0 else "exit")
        ours = _by_suffix(partial, path)
        assert set(ours) == set(want), path
        for line, missing in want.items():
            jumps = sorted(m for m in missing if m != "exit")
            assert sorted(m for m in ours[line] if m.startswith("didn't jump")) == jumps, (path, line)
            left = [m for m in ours[line] if not m.startswith("didn't jump")]
            assert len(left) == missing.count("exit"), (path, line)
            # An exit names the function it did not return from (or the module).
            assert all(
                re.fullmatch(r"didn't return from function '.+'|didn't exit the module", m) for m in left
            )
            exits += len(left)
        _same_uncovered(uncovered, files, path, set(entry["missing_lines"]))
    assert partial and exits == 0  # (the corpus has no missed exit: the test below makes one)


def _lcov_records(text: str) -> tuple[dict, dict]:
    """Merged per file as lcov --summary does: hits summed per line, a branch taken if any record took it
    (``-``: never evaluated, -1)."""
    hits: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    branches: dict[str, dict[tuple[int, int, str], int]] = defaultdict(dict)
    path = ""
    for line in text.splitlines():
        tag, _, rest = line.partition(":")
        if tag == "SF":
            path = rest
        elif tag == "DA":
            number, count = rest.split(",")[:2]
            hits[path][int(number)] += int(count)
        elif tag == "BRDA":
            number, block, branch, taken = rest.split(",", 3)
            value = -1 if taken == "-" else int(taken)
            key = (int(number), int(block), branch)
            branches[path][key] = max(branches[path].get(key, -1), value)
    return hits, branches


def test_lcov_partial_lines_name_the_block_and_branch_numbers_they_missed(repo: Path) -> None:
    report = "lcov/cmark-gfm-0.29.0.gfm.13.gcov-9tests.lcov"
    partial, uncovered, files = _insight(repo, report)
    hits, branches = _lcov_records(corpus.path(report).read_text())
    never = 0
    for path, by_branch in branches.items():
        want: dict[int, list[str]] = defaultdict(list)
        for (line, block, branch), taken in sorted(by_branch.items()):
            if taken <= 0 and hits[path].get(line, 0) > 0:
                state = "never evaluated" if taken < 0 else "not taken"
                want[line].append(f"block {block} branch {branch} {state}")
                never += taken < 0
        ours = _by_suffix(partial, path)
        assert {k: sorted(v) for k, v in ours.items()} == {k: sorted(v) for k, v in want.items()}, path
        _same_uncovered(uncovered, files, path, {n for n, h in hits[path].items() if h == 0})
    assert sum(map(len, partial.values())) > 100


def test_cobertura_partial_lines_say_how_many_outcomes_were_missed_as_the_report_only_counts_them(
    repo: Path,
) -> None:
    report = "coveragepy/itsdangerous-2.2.0.cobertura.xml"
    partial, uncovered, files = _insight(repo, report)
    root = etree.parse(str(corpus.path(report)), etree.XMLParser(resolve_entities=False, no_network=True))
    checked = 0
    for cls in root.iter("class"):
        want, missed = {}, set()
        for line in cls.iter("line"):
            number, count = int(line.get("number")), int(line.get("hits"))
            if count == 0:
                missed.add(number)
            cover = line.get("condition-coverage")
            if cover and count > 0:
                covered, total = map(int, re.search(r"\((\d+)/(\d+)\)", cover).groups())
                if covered < total:
                    want[number] = [f"{total - covered} of {total} branches not taken"]
        assert _by_suffix(partial, cls.get("filename")) == want, cls.get("filename")
        _same_uncovered(uncovered, files, cls.get("filename"), missed)
        checked += len(want)
    assert checked > 0


def test_jacoco_partial_lines_say_how_many_branches_were_missed_of_how_many(repo: Path) -> None:
    report = "jacoco/beanshell-2.0b4.jacoco.xml"
    partial, _, _ = _insight(repo, report)
    root = etree.parse(
        str(corpus.path(report)), etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    )
    want: dict[str, dict[int, list[str]]] = defaultdict(dict)
    for package in root.iter("package"):
        for source in package.iter("sourcefile"):
            path = f"{package.get('name')}/{source.get('name')}"
            for line in source.iter("line"):
                mb, cb, ci = (int(line.get(k)) for k in ("mb", "cb", "ci"))
                if mb and ci:
                    want[path][int(line.get("nr"))] = [f"{mb} of {mb + cb} branches not taken"]
    for path, lines in want.items():
        assert _by_suffix(partial, path) == lines, path
    assert sum(map(len, want.values())) > 50


def test_the_insight_text_shows_partial_lines_apart_with_what_they_missed(repo: Path) -> None:
    report = "coveragepy/markupsafe-3.0.4.coverage.json"
    partial, _, _ = _insight(repo, report)
    done = cli(
        "review",
        "insight",
        "--suite",
        Path(report).stem.replace(".", "-")[:40],
        "--max-words",
        "5000",
        "--max-bytes",
        "100000",
        repo=repo,
    )
    assert done.returncode == 0, done.stderr
    shown = re.findall(r"partial (\d+): (.+)", done.stdout)
    assert shown  # partial lines are listed as such, never among the uncovered ranges
    every = {(line, "; ".join(m)) for lines in partial.values() for line, m in lines.items()}
    assert {(int(n), text) for n, text in shown} <= every


EXITS = {
    "shop/exits.py": "def first_positive(values):\n    for v in values:\n        if v > 0:\n            return v\n",
    "tests/test_exits.py": "from shop.exits import first_positive\n\n\n"
    "def test_first():\n    assert first_positive([1]) == 1\n",
}


@pytest.mark.parametrize("kind", ["json", "lcov"])
def test_a_missed_exit_names_the_function_it_did_not_return_from(
    tmp_path_factory: pytest.TempPathFactory, kind: str
) -> None:
    checkout = make_repo(tmp_path_factory.mktemp("exits") / "shop", {**PACKAGE, **EXITS})
    reports = measure(checkout)
    with open_project(checkout) as project:
        svc = Service(project)
        snap = project.ingest(reports[kind], suite=kind)
        data = svc.call(
            "coverage_review",
            {
                "task": "insight",
                "file": "shop/exits.py",
                "representation": "review",
                "measurement": {"snapshot_id": snap.snapshot_id},
            },
        )["data"]
    ranges = {r["start"]: r for t in data["targets"] for r in t["ranges"]}
    assert ranges[2]["kind"] == "partial" and ranges[2]["missing"] == [
        "didn't return from function 'first_positive'"
    ]
    assert ranges[3]["kind"] == "partial" and ranges[3]["missing"] == ["didn't jump to line 2"]
    assert data["targets"][0]["partial_lines"] == 2 and data["targets"][0]["uncovered_lines"] == 0
