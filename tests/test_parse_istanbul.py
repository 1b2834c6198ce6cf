"""The Istanbul coverage-final.json parser: nyc's rules, c8 versus nyc, hostile input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import detect, istanbul, parse
from coverage_core.report import REGION_CODE

from . import corpus, lcovtext


def loc(line: int, col: int, end_line: int, end_col: int) -> dict:
    return {"start": {"line": line, "column": col}, "end": {"line": end_line, "column": end_col}}


def nyc_file(path: str = "/src/a.js", **overrides) -> dict:
    entry = {
        "path": path,
        "statementMap": {
            "0": loc(1, 0, 1, 20),
            "1": loc(2, 2, 2, 10),
            "2": loc(2, 12, 2, 30),
            "3": loc(4, 0, 4, 5),
        },
        "s": {"0": 1, "1": 0, "2": 7, "3": 0},
        "fnMap": {"0": {"name": "main", "decl": loc(1, 9, 1, 13), "loc": loc(1, 16, 5, 1), "line": 1}},
        "f": {"0": 1},
        "branchMap": {
            "0": {
                "type": "if",
                "loc": loc(2, 2, 2, 30),
                "locations": [loc(2, 2, 2, 30), {"start": {}, "end": {}}],
                "line": 2,
            },
            "1": {"type": "cond-expr", "loc": loc(4, 0, 4, 5), "locations": [loc(4, 0, 4, 1)] * 3, "line": 4},
        },
        "b": {"0": [7, 0], "1": [0, 0, 0]},
        "_coverageSchema": "1a1c01bbd47fc00a2c39e90264f33305004495a9",
        "hash": "x",
    }
    entry.update(overrides)
    return entry


def c8_file(path: str = "/src/b.js") -> dict:
    return {
        "path": path,
        "all": False,
        "statementMap": {"0": loc(1, 0, 1, 13), "1": loc(2, 0, 2, 0)},
        "s": {"0": 2, "1": 0},
        "branchMap": {
            "0": {"type": "branch", "line": 1, "loc": loc(1, 0, 2, 0), "locations": [loc(1, 0, 2, 0)]}
        },
        "b": {"0": [2]},
        "fnMap": {},
        "f": {},
    }


def parse_doc(doc: dict):
    return parse(json.dumps(doc).encode(), format="istanbul")


def refused(doc_or_bytes) -> CoverageError:
    data = doc_or_bytes if isinstance(doc_or_bytes, bytes) else json.dumps(doc_or_bytes).encode()
    with pytest.raises(CoverageError) as info:
        parse(data, format="istanbul")
    assert info.value.code == ErrorCode.MALFORMED_REPORT
    return info.value


def test_a_line_counts_the_largest_of_the_statements_starting_on_it() -> None:
    report = parse_doc({"/src/a.js": nyc_file()})
    lines = dict(zip(report.lines["line"].tolist(), report.lines["hits"].tolist(), strict=True))
    # Line 2 holds statements hit 0 and 7 times: nyc shows 7, not their sum or the smaller.
    assert lines == {1: 1, 2: 7, 4: 0}
    assert report.totals["lines"].to_dict() == {"found": 3, "hit": 2}
    assert report.totals["statements"].to_dict() == {"found": 4, "hit": 2}


def test_branches_are_one_row_per_outcome_numbered_by_branch_and_outcome() -> None:
    report = parse_doc({"/src/a.js": nyc_file()})
    rows = list(
        zip(*(report.branches[c].tolist() for c in ("line", "block", "branch", "taken")), strict=True)
    )
    assert rows == [(2, 0, "0", 7), (2, 0, "1", 0), (4, 1, "0", 0), (4, 1, "1", 0), (4, 1, "2", 0)]
    assert report.totals["branches"].to_dict() == {"found": 5, "hit": 1}


def test_functions_take_the_declaration_line_the_body_end_and_their_hits() -> None:
    report = parse_doc({"/src/a.js": nyc_file()})
    assert report.functions["name"].tolist() == ["main"]
    assert (report.functions["start_line"].tolist(), report.functions["end_line"].tolist()) == ([1], [5])
    assert report.totals["functions"].to_dict() == {"found": 1, "hit": 1}


def test_statements_become_code_regions_with_1_based_columns() -> None:
    report = parse_doc({"/src/a.js": nyc_file()})
    first = {c: report.regions[c][0] for c in report.regions.columns}
    assert first == {
        "file": 0,
        "start_line": 1,
        "start_col": 1,
        "end_line": 1,
        "end_col": 21,
        "hits": 1,
        "kind": REGION_CODE,
    }


def test_nyc_and_c8_reports_are_told_apart() -> None:
    assert parse_doc({"/src/a.js": nyc_file()}).tool == "nyc"
    c8 = parse_doc({"/src/b.js": c8_file()})
    assert c8.tool == "c8"
    assert c8.totals["branches"].to_dict() == {"found": 1, "hit": 1}


def test_a_report_mixing_nyc_and_c8_files_warns_and_names_no_tool() -> None:
    report = parse_doc({"/src/a.js": nyc_file(), "/src/b.js": c8_file()})
    assert report.tool is None
    assert [w.code for w in report.warnings] == ["mixed_instrumenters"]


def test_an_empty_report_has_no_files_and_zero_totals() -> None:
    report = parse(b"{}", format="istanbul")
    assert report.files == ()
    assert {k: c.to_dict() for k, c in report.totals.items()} == {
        k: {"found": 0, "hit": 0} for k in ("statements", "branches", "functions", "lines")
    }


def test_a_file_without_branches_or_functions_still_totals_them_as_zero() -> None:
    report = parse_doc({"/src/a.js": nyc_file(b={}, branchMap={}, f={}, fnMap={})})
    assert report.totals["branches"].to_dict() == {"found": 0, "hit": 0}
    assert report.totals["functions"].to_dict() == {"found": 0, "hit": 0}


def test_two_entries_for_one_path_are_refused() -> None:
    error = refused({"/src/a.js": nyc_file(), "/src/other-key": nyc_file()})
    assert "/src/a.js" in error.message


@pytest.mark.parametrize(
    ("bad", "path", "says"),
    [
        ({"s": {"0": -1, "1": 0, "2": 7, "3": 0}}, '$["/src/a.js"].s["0"]', "is negative"),
        ({"s": {"0": 1.5, "1": 0, "2": 7, "3": 0}}, '$["/src/a.js"].s["0"]', "must be an integer"),
        ({"s": {"0": 1, "1": True, "2": 7, "3": 0}}, '$["/src/a.js"].s["1"]', "must be an integer"),
        ({"f": {"0": 2**64}}, '$["/src/a.js"].f["0"]', "overflows a 64-bit counter"),
        ({"f": {"0": "7"}}, '$["/src/a.js"].f["0"]', "must be an integer, got a string"),
        ({"b": {"0": [7, -2], "1": [0, 0, 0]}}, '$["/src/a.js"].b["0"][1]', "is negative"),
        ({"b": {"0": [7, 0], "1": [0, None, 0]}}, '$["/src/a.js"].b["1"][1]', "must be an integer"),
        ({"s": {"0": 1, "1": 0, "2": 7, "3": 0, "9": 1}}, '$["/src/a.js"].statementMap["9"]', "missing"),
        ({"f": {"0": 1, "1": 1}}, '$["/src/a.js"].fnMap["1"]', "missing"),
        ({"b": {"0": 3, "1": [0, 0, 0]}}, '$["/src/a.js"].b["0"]', "must be a list"),
        (
            {
                "statementMap": {"0": {"start": {"line": -3, "column": 0}, "end": {"line": 1, "column": 1}}},
                "s": {"0": 1},
            },
            '$["/src/a.js"].statementMap["0"].start.line',
            "is negative",
        ),
        ({"path": 7}, '$["/src/a.js"].path', "non-empty string"),
        (
            {"branchMap": {"0": {"type": "if", "line": 2**40, "locations": []}, "1": {"line": 1}}},
            '$["/src/a.js"].b["0"][0]',
            "larger than 2147483647",
        ),
    ],
)
def test_bad_numbers_and_shapes_are_refused_naming_their_json_path(bad: dict, path: str, says: str) -> None:
    error = refused({"/src/a.js": nyc_file(**bad)})
    assert path in error.message
    assert says in error.message


def test_nan_counts_are_refused() -> None:
    text = json.dumps({"/src/a.js": nyc_file()}).replace('"s": {"0": 1', '"s": {"0": NaN')
    error = refused(text.encode())
    assert '$["/src/a.js"].s["0"] must be an integer, got nan' in error.message


@pytest.mark.parametrize(
    "data", [b'{"/src/a.js": {"path": "/src/a.js", "statementMap": {', b"\x00garbage", b"[1, 2]"]
)
def test_truncated_garbage_or_non_object_input_is_a_clean_error(data: bytes) -> None:
    refused(data)


def test_a_json_syntax_error_names_its_line() -> None:
    error = refused(b'{\n"/a.js": {\n"s": {"0": 1,,}\n}}')
    assert error.details["line"] == 3


def test_istanbul_is_detected_but_coverage_py_json_is_not_claimed() -> None:
    assert detect(json.dumps({"/src/a.js": nyc_file()}).encode()) == "istanbul"
    assert detect(json.dumps({"/src/b.js": c8_file()}).encode()) == "istanbul"
    assert not istanbul.sniff(b'{"meta": {"format": 3, "version": "7.6"}, "files": {}}', b"")


# -- the corpus: both instrumenters, compared with their own LCOV writer -------


def lcov_records(path: Path) -> tuple[set, set, set]:
    """DA, BRDA and FN records of an lcov.info, with paths relative to the project."""
    return tuple(set(records) for records in lcovtext.records(path))


@pytest.mark.parametrize(("stem", "tool"), [("minimist-1.2.8.nyc", "nyc"), ("resolve-1.22.14.c8", "c8")])
def test_corpus_detail_equals_what_istanbuls_own_lcov_writer_wrote(stem: str, tool: str, corpus_dir) -> None:
    report = parse(corpus.path(f"istanbul/{stem}.coverage-final.json"))
    assert report.tool == tool
    paths = [re.sub(r"^/build/[^/]+/", "", f.path) for f in report.files]
    lines = {
        (paths[f], n, h) for f, n, h in zip(*(report.lines[c].tolist() for c in ("file", "line", "hits")))
    }
    branches = {
        (paths[f], n, b, br, t)
        for f, n, b, br, t in zip(
            *(report.branches[c].tolist() for c in ("file", "line", "block", "branch", "taken"))
        )
    }
    functions = {
        (paths[f], n, name)
        for f, n, name in zip(*(report.functions[c].tolist() for c in ("file", "start_line", "name")))
    }
    assert (lines, branches, functions) == lcov_records(corpus.path(f"istanbul/{stem}.lcov.info"))


def test_c8_counts_one_statement_per_line_so_statements_equal_lines(corpus_dir) -> None:
    report = parse(corpus.path("istanbul/resolve-1.22.14.c8.coverage-final.json"))
    assert report.totals["statements"] == report.totals["lines"]
    assert set(report.branches["branch"].tolist()) == {"0"}
