"""The Go coverprofile parser: merging, statements, lines, regions and hostile input."""

from __future__ import annotations

import numpy as np
import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import detect, go, parse, read_report
from coverage_core.report import REGION_CODE

from . import corpus


def parse_profile(text: str):
    return parse(text.encode(), format="go")


def lines_of(report, file: int = 0) -> dict[int, int]:
    rows = report.lines["file"] == file
    return dict(zip(report.lines["line"][rows].tolist(), report.lines["hits"][rows].tolist(), strict=True))


def refused(text: str) -> CoverageError:
    with pytest.raises(CoverageError) as info:
        parse_profile(text)
    assert info.value.code == ErrorCode.MALFORMED_REPORT
    return info.value


def test_identical_blocks_are_summed_in_count_mode() -> None:
    report = parse_profile(
        "mode: count\n"
        "example.com/m/a.go:3.10,5.2 2 4\n"
        "example.com/m/a.go:3.10,5.2 2 3\n"
        "example.com/m/a.go:7.1,7.9 1 0\n"
    )
    assert report.totals["statements"].to_dict() == {"found": 3, "hit": 2}
    assert report.regions["hits"].tolist() == [7, 0]


def test_identical_blocks_are_ored_in_set_mode() -> None:
    report = parse_profile(
        "mode: set\n"
        "example.com/m/a.go:3.10,5.2 2 0\n"
        "example.com/m/a.go:3.10,5.2 2 1\n"
        "example.com/m/a.go:3.10,5.2 2 1\n"
    )
    assert report.totals["statements"].to_dict() == {"found": 2, "hit": 2}
    assert report.regions["hits"].tolist() == [1]


def test_blocks_that_differ_only_in_a_column_are_not_merged() -> None:
    report = parse_profile("mode: count\nm/a.go:3.10,5.2 2 4\nm/a.go:3.11,5.2 2 0\n")
    assert report.totals["statements"].to_dict() == {"found": 4, "hit": 2}


def test_totals_are_statements_only_since_go_test_reports_nothing_else() -> None:
    report = parse_profile("mode: atomic\nm/a.go:1.1,2.2 1 1\n")
    assert set(report.totals) == {"statements"}
    assert report.tool == "go test"
    assert report.metadata["mode"] == "atomic"


def test_every_line_of_a_block_gets_the_block_count() -> None:
    report = parse_profile("mode: count\nm/a.go:3.10,6.2 2 5\n")
    assert lines_of(report) == {3: 5, 4: 5, 5: 5, 6: 5}


def test_a_line_shared_by_two_blocks_takes_the_larger_count() -> None:
    # `if cond {` on line 4: the outer block ran 5 times and ends at the brace,
    # the body starting there ran twice; go tool cover -html paints the
    # condition with the outer block's count.
    report = parse_profile("mode: count\nm/a.go:3.10,4.12 2 5\nm/a.go:4.12,6.3 1 2\n")
    assert lines_of(report) == {3: 5, 4: 5, 5: 2, 6: 2}


def test_a_line_whose_condition_ran_is_covered_even_when_the_body_after_its_brace_did_not() -> None:
    report = parse_profile("mode: set\nm/a.go:3.10,4.12 2 1\nm/a.go:4.12,6.3 1 0\n")
    assert lines_of(report) == {3: 1, 4: 1, 5: 0, 6: 0}


def test_blocks_become_code_regions_with_their_positions() -> None:
    report = parse_profile("mode: count\nm/a.go:3.10,6.2 2 5\n")
    row = {c: report.regions[c].tolist() for c in report.regions.columns}
    assert row == {
        "file": [0],
        "start_line": [3],
        "start_col": [10],
        "end_line": [6],
        "end_col": [2],
        "hits": [5],
        "kind": [REGION_CODE],
    }


def test_files_are_import_paths_in_order_of_appearance_with_per_file_statements() -> None:
    report = parse_profile(
        "mode: set\nexample.com/m/b.go:1.1,1.9 3 1\nexample.com/m/a.go:1.1,1.9 2 0\nexample.com/m/b.go:2.1,2.9 1 0\n"
    )
    assert [f.path for f in report.files] == ["example.com/m/b.go", "example.com/m/a.go"]
    found, hit = report.file_totals["statements"]
    assert found.tolist() == [4, 2] and hit.tolist() == [3, 0]
    assert len(report.functions) == 0


def test_a_profile_with_only_the_mode_line_has_no_statements() -> None:
    report = parse_profile("mode: set\n")
    assert report.totals["statements"].to_dict() == {"found": 0, "hit": 0}
    assert report.files == ()


def test_crlf_line_endings_and_repeated_identical_mode_lines_are_accepted() -> None:
    report = parse_profile("mode: count\r\nm/a.go:1.1,1.9 1 2\r\nmode: count\r\nm/a.go:1.1,1.9 1 3\r\n")
    assert report.regions["hits"].tolist() == [5]


def test_a_missing_mode_line_is_refused_naming_line_1() -> None:
    error = refused("m/a.go:1.1,1.9 1 2\n")
    assert error.details["line"] == 1
    assert "mode: set|count|atomic" in error.message


def test_profiles_in_different_modes_cannot_be_concatenated() -> None:
    error = refused("mode: set\nm/a.go:1.1,1.9 1 1\nmode: count\nm/a.go:1.1,1.9 1 3\n")
    assert error.details["line"] == 3


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("m/a.go:1.1,1.9 1 -4", "count is negative"),
        ("m/a.go:1.1,1.9 1 2.5", "count must be an integer"),
        ("m/a.go:1.1,1.9 1 NaN", "count must be an integer"),
        ("m/a.go:1.1,1.9 1 99999999999999999999", "overflows a 64-bit counter"),
        ("m/a.go:1.1,1.9 -1 2", "numStmt is negative"),
        ("m/a.go:0.1,1.9 1 2", "start line must be at least 1"),
        ("m/a.go:5.1,4.9 1 2", "ends before it starts"),
        ("m/a.go:1.1,9999999999.9 1 2", "larger than 2147483647"),
        ("this is not a block", "not a block line"),
        ("m/a.go:1.1,1.9 1", "not a block line"),
    ],
)
def test_a_bad_block_line_is_refused_naming_its_line_number(line: str, says: str) -> None:
    error = refused(f"mode: count\nm/a.go:1.1,1.9 1 2\n\n{line}\n")
    assert error.details["line"] == 4
    assert says in error.message
    assert error.message.startswith("<bytes>:4: ")


def test_copies_of_a_block_with_different_statement_counts_are_refused_naming_both_lines() -> None:
    error = refused("mode: count\nm/a.go:1.1,3.9 2 1\nm/b.go:1.1,1.2 1 1\nm/a.go:1.1,3.9 3 1\n")
    assert "numStmt 2 on line 2 and 3 on line 4" in error.message


def test_a_block_spanning_billions_of_lines_is_refused_before_lines_are_expanded() -> None:
    error = refused("mode: count\nm/a.go:1.1,2000000000.1 1 1\n")
    assert error.details["line"] == 2
    assert "lines" in error.message


def test_text_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(CoverageError) as info:
        parse(b"mode: set\nm/\xff.go:1.1,1.2 1 1\n", format="go")
    assert info.value.code == ErrorCode.MALFORMED_REPORT


def test_a_coverprofile_is_detected_from_its_mode_line() -> None:
    assert detect(b"mode: atomic\nm/a.go:1.1,1.9 1 2\n") == "go"
    assert not go.sniff(b"moded: set\n", b"")
    assert not go.sniff(b"TN:\nSF:a.go\n", b"")


CORPUS = [e for e in corpus.entries() if e["format"] == "Go coverprofile"]


@pytest.mark.parametrize("entry", CORPUS, ids=[e["file"] for e in CORPUS])
def test_corpus_profiles_merge_to_the_distinct_blocks_and_go_test_cover_totals(
    entry: dict, corpus_dir
) -> None:
    report = parse(corpus.path(entry["file"]))
    canon, tool = entry["canonical_totals"], entry["tool_reported_totals"]
    assert len(report.regions) == tool["unique_blocks"]
    assert len(report.files) == canon["files"]
    allb = canon["statements_all_blocks (go test -cover view)"]
    assert report.totals["statements"].to_dict() == {"found": allb["found"], "hit": allb["hit"]}
    # A merged profile's lines are unique per file and every block line is among them.
    keys = report.lines["file"].astype(np.int64) << 32 | report.lines["line"]
    assert len(np.unique(keys)) == len(keys)


def test_the_half_megabyte_coverpkg_profile_parses_to_the_same_report_again_with_warm_caches(
    corpus_dir,
) -> None:
    # Its speed (well under 100 ms) is measured in benchmarks/bounds.py, not asserted here.
    data = read_report(corpus.path("go/go-cmp-0.5.9.count-coverpkg.coverprofile"))
    first, again = go.parse_bytes(data), go.parse_bytes(data)
    assert again.totals == first.totals and len(again.files) == len(first.files)
    assert np.array_equal(again.lines["line"], first.lines["line"])
    assert np.array_equal(again.lines["hits"], first.lines["hits"])
