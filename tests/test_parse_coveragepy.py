"""The coverage.py JSON parser: statements, arcs, functions, contexts as tests, validation, the corpus."""

from __future__ import annotations

import copy
import json

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import ReportBytes, coveragepy, detect, lcov
from coverage_core.report import OBS_LINE, NormalizedReport

from . import corpus


def parse_doc(doc: dict | bytes, origin: str = "coverage.json") -> NormalizedReport:
    data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return coveragepy.parse_bytes(ReportBytes(data, origin, None, len(data)))


def refused(doc: dict | bytes) -> CoverageError:
    with pytest.raises(CoverageError) as info:
        parse_doc(doc)
    assert info.value.code is ErrorCode.MALFORMED_REPORT
    assert info.value.message.startswith("coverage.json")
    return info.value


def totals(report: NormalizedReport) -> dict[str, tuple[int, int]]:
    return {name: (c.found, c.hit) for name, c in report.totals.items()}


def summary(
    statements: int, covered: int, branches: int | None = None, covered_branches: int | None = None
) -> dict:
    out = {
        "covered_lines": covered,
        "num_statements": statements,
        "percent_covered": 50.0,
        "missing_lines": statements - covered,
        "excluded_lines": 0,
    }
    if branches is not None:
        out.update(
            num_branches=branches,
            covered_branches=covered_branches,
            num_partial_branches=0,
            missing_branches=branches - covered_branches,
        )
    return out


DOC = {
    "meta": {
        "format": 3,
        "version": "7.17.5",
        "timestamp": "2026-01-01T00:00:00",
        "branch_coverage": True,
        "show_contexts": True,
    },
    "files": {
        "pkg/mod.py": {
            "executed_lines": [1, 3, 4, 6],
            "summary": summary(5, 4, 3, 2),
            "missing_lines": [7],
            "excluded_lines": [9, 10],
            "contexts": {
                "1": [""],
                "2": ["test_a"],
                "3": ["", "test_a"],
                "4": ["test_a", "test_b"],
                "6": ["test_b"],
            },
            "executed_branches": [[4, 6], [6, -3]],
            "missing_branches": [[4, 7]],
            "functions": {
                "f": {
                    "executed_lines": [4, 6],
                    "summary": summary(3, 2),
                    "missing_lines": [7],
                    "excluded_lines": [],
                    "start_line": 3,
                },
                "g": {
                    "executed_lines": [],
                    "summary": summary(0, 0),
                    "missing_lines": [],
                    "excluded_lines": [10],
                    "start_line": 9,
                },
                "": {
                    "executed_lines": [1, 3],
                    "summary": summary(2, 2),
                    "missing_lines": [],
                    "excluded_lines": [9],
                    "start_line": 1,
                },
            },
            "classes": {
                "": {
                    "executed_lines": [1, 3, 4, 6],
                    "summary": summary(5, 4),
                    "missing_lines": [7],
                    "excluded_lines": [9, 10],
                    "start_line": 1,
                }
            },
        },
    },
    "totals": summary(5, 4, 3, 2),
}


def doc(**changes) -> dict:
    """A copy of DOC with ``changes`` applied to its one file."""
    out = copy.deepcopy(DOC)
    out["files"]["pkg/mod.py"].update(changes)
    return out


# -- counters and detail ---------------------------------------------------------------
def test_statements_are_the_executed_and_missing_lines_and_lines_equal_them() -> None:
    report = parse_doc(DOC)
    assert totals(report) == {"statements": (5, 4), "lines": (5, 4), "branches": (3, 2), "functions": (1, 1)}
    t = report.lines
    assert list(zip(t["line"].tolist(), t["hits"].tolist())) == [(1, 1), (3, 1), (4, 1), (6, 1), (7, 0)]
    assert report.warnings == ()


def test_excluded_lines_are_not_statements() -> None:
    assert 9 not in parse_doc(DOC).lines["line"].tolist()


def test_arcs_are_branches_from_their_first_line_with_exits_after_jumps() -> None:
    t = parse_doc(DOC).branches
    assert list(zip(t["line"].tolist(), t["block"].tolist(), t["branch"], t["taken"].tolist())) == [
        (4, 0, "jump to line 6", 1),
        (4, 0, "jump to line 7", 0),
        (6, 0, "exit", 1),
    ]


def test_the_arcs_of_a_line_none_of_whose_arcs_ran_were_never_evaluated() -> None:
    t = parse_doc(
        doc(missing_lines=[7, 8], executed_branches=[[4, 6]], missing_branches=[[4, 7], [8, 9], [8, -1]])
    ).branches
    assert list(zip(t["line"].tolist(), t["taken"].tolist())) == [(4, 1), (4, 0), (8, -1), (8, -1)]


def test_named_functions_with_statements_count_and_module_level_code_does_not() -> None:
    t = parse_doc(DOC).functions
    assert list(zip(t["name"], t["start_line"].tolist(), t["end_line"].tolist(), t["hits"].tolist())) == [
        ("f", 3, 7, 1)
    ]


def test_a_report_without_branch_coverage_has_no_branch_counter() -> None:
    plain = copy.deepcopy(DOC)
    plain["meta"]["branch_coverage"] = False
    for entry in (plain["files"]["pkg/mod.py"], plain):
        entry.pop("executed_branches", None), entry.pop("missing_branches", None)
    plain["totals"] = summary(5, 4)
    plain["files"]["pkg/mod.py"]["summary"] = summary(5, 4)
    assert "branches" not in parse_doc(plain).totals


# -- contexts --------------------------------------------------------------------------
def test_each_non_empty_context_is_a_test_observing_the_statements_it_ran() -> None:
    report = parse_doc(DOC)
    assert report.tests == ("test_a", "test_b")
    t = report.test_observations
    seen = {
        (report.tests[test], line)
        for test, line, kind in zip(t["test"].tolist(), t["line"].tolist(), t["kind"].tolist())
        if kind == OBS_LINE
    }
    # line 2 ran under test_a but is not a statement (a docstring, say): a test, no observation
    assert seen == {("test_a", 3), ("test_a", 4), ("test_b", 4), ("test_b", 6)}


def test_a_context_seen_only_off_statements_is_still_a_test() -> None:
    report = parse_doc(doc(contexts={"2": ["test_docstring"]}))
    assert report.tests == ("test_docstring",) and len(report.test_observations) == 0


# -- summaries versus detail -------------------------------------------------------------
def test_a_file_summary_that_disagrees_with_its_lines_wins_the_totals_and_is_named_in_a_warning() -> None:
    report = parse_doc(doc(summary=summary(6, 4, 3, 2)))
    assert totals(report)["statements"] == (5, 4)  # $.totals is the tool's figure
    assert report.file_totals["statements"][0].tolist() == [6]
    messages = [w.message for w in report.warnings]
    assert any('$.files["pkg/mod.py"]' in m and "6 statements" in m and "lists 5" in m for m in messages)
    assert any("$.totals" in m and "5/4" in m and "6/4" in m for m in messages)


def test_a_line_both_executed_and_missing_counts_once_as_executed_with_a_warning() -> None:
    report = parse_doc(doc(missing_lines=[6, 7]))
    assert report.lines["line"].tolist() == [1, 3, 4, 6, 7]
    assert report.lines["hits"].tolist() == [1, 1, 1, 1, 0]
    assert any("both executed and missing" in w.message for w in report.warnings)


# -- validation --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"executed_lines": [1, True, 4]}, '$.files["pkg/mod.py"].executed_lines[1]'),
        ({"executed_lines": [1, 3.0]}, '$.files["pkg/mod.py"].executed_lines[1]'),
        ({"missing_lines": [-7]}, '$.files["pkg/mod.py"].missing_lines[0]'),
        ({"missing_lines": [2**40]}, '$.files["pkg/mod.py"].missing_lines[0]'),
        (
            {"summary": {**summary(5, 4, 3, 2), "num_statements": float("nan")}},
            '$.files["pkg/mod.py"].summary.num_statements',
        ),
        (
            {"summary": {**summary(5, 4, 3, 2), "covered_lines": 2**64}},
            '$.files["pkg/mod.py"].summary.covered_lines',
        ),
        (
            {"summary": {**summary(5, 4, 3, 2), "covered_lines": -1}},
            '$.files["pkg/mod.py"].summary.covered_lines',
        ),
        ({"executed_branches": [[4]]}, '$.files["pkg/mod.py"].executed_branches[0]'),
        ({"executed_branches": [[4, "6"]]}, '$.files["pkg/mod.py"].executed_branches[0][1]'),
        ({"contexts": {"x": ["t"]}}, '$.files["pkg/mod.py"].contexts'),
        ({"contexts": {"3": [7]}}, '$.files["pkg/mod.py"].contexts["3"][0]'),
        ({"functions": []}, '$.files["pkg/mod.py"].functions'),
    ],
)
def test_a_bad_value_is_refused_naming_the_file_and_its_json_path(change: dict, where: str) -> None:
    """Seed: "numeric fields are validated before normalization." and "Request bodies, coverage reports,
    and retained command output are explicitly size-bounded; malformed coverage numbers are rejected." """
    data = json.dumps(doc(**change), allow_nan=True).encode()
    error = refused(data)
    assert where in error.message


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b'{"meta": {"format": 3',
        b"[1, 2]",
        b"\xff\xfe",
        b'{"meta": 3}',
        b'{"meta": {"format": 1}, "files": {}}',
        b'{"meta": {"format": 3}}',
    ],
)
def test_empty_truncated_or_foreign_json_is_a_clean_malformed_report(data: bytes) -> None:
    refused(data)


def test_coverage_py_json_is_detected_compact_or_pretty_and_other_json_is_not_claimed() -> None:
    assert detect(json.dumps(DOC).encode()) == "coveragepy"
    assert detect(json.dumps(DOC, indent=4).encode()) == "coveragepy"
    for other in (
        b'{"/src/a.js": {"path": "/src/a.js", "statementMap": {}}}',
        b'{"data":[{"files": []}]}',
        b'{"meta": {"tool": "x"}}',
        b"SF:a\nend_of_record\n",
    ):
        assert not coveragepy.sniff(other, other)


# -- the corpus --------------------------------------------------------------------------
JSON_ENTRIES = [e for e in corpus.entries() if e["format"].startswith("coverage.py JSON")]


@pytest.mark.parametrize("entry", JSON_ENTRIES, ids=lambda e: e["file"])
def test_every_corpus_report_gives_coverage_reports_totals_and_agrees_with_its_lcov_twin(entry: dict) -> None:
    path = corpus.path(entry["file"])
    report = parse_doc(path.read_bytes(), str(path))
    canon = entry["canonical_totals"]
    assert totals(report)["statements"] == (canon["statements"]["found"], canon["statements"]["hit"])
    assert totals(report)["lines"] == totals(report)["statements"]
    if "branches" in canon:
        assert totals(report)["branches"] == (canon["branches"]["found"], canon["branches"]["hit"])
    assert len(report.files) == canon["files"]
    assert len(report.tests) == canon.get("test_names", 0)
    assert report.warnings == ()
    # coverage lcov of the same run: the same lines, arcs and function counts
    twin_path = corpus.path(entry["file"].replace(".coverage.json", ".coverage-py.lcov"))
    twin = lcov.parse_bytes(ReportBytes(twin_path.read_bytes(), str(twin_path), None, 0))
    for table, columns in (
        ("lines", ("file", "line", "hits")),
        ("branches", ("file", "line", "branch", "taken")),
    ):
        ours = sorted(zip(*(getattr(report, table)[c].tolist() for c in columns)))
        theirs = sorted(zip(*(getattr(twin, table)[c].tolist() for c in columns)))
        if table == "branches":  # coverage lcov names exits ("return from function 'f'"); JSON only has -N
            ours = [row for row in ours if row[2] != "exit"]
            theirs = [row for row in theirs if row[2].startswith("jump to line")]
        assert ours == theirs, table
    assert totals(report)["functions"] == totals(twin)["functions"]
    ours, theirs = (
        [
            *zip(
                t.functions["file"].tolist(),
                t.functions["name"],
                t.functions["start_line"].tolist(),
                t.functions["hits"].tolist(),
            )
        ]
        for t in (report, twin)
    )
    assert sorted(ours) == sorted(theirs)


def test_itsdangerous_contexts_become_37_tests_observing_what_they_ran() -> None:
    path = corpus.path("coveragepy/itsdangerous-2.2.0.coverage.json")
    report = parse_doc(path.read_bytes())
    assert len(report.tests) == 37
    raw = json.loads(path.read_bytes())["files"]
    expected = {
        (name, f, int(line))
        for f, entry in raw.items()
        for line, names in entry["contexts"].items()
        for name in names
        if name and int(line) in entry["executed_lines"]
    }
    t = report.test_observations
    paths = [f.path for f in report.files]
    seen = {
        (report.tests[test], paths[file], line)
        for test, file, line in zip(t["test"].tolist(), t["file"].tolist(), t["line"].tolist())
    }
    assert seen == expected
    signer = "test_itsdangerous.test_signer.TestSigner.test_signer"
    assert {test for test, f, line in seen if f == "src/itsdangerous/timed.py" and line == 165} == {signer}
