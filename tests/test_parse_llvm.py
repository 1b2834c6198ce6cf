"""The llvm-cov export JSON parser: llvm's line rule, instantiations, expansions, hostile input."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter as Tally

import pytest
import zstandard

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import SNIFF_BYTES, ReportBytes, detect, go, istanbul, llvm, parse, regions_v1
from coverage_core.report import REGION_CODE, REGION_EXPANSION

from . import corpus, lcovtext
from .jsonfuzz import odd_documents

T, F = True, False

# A tiny export written by hand. a.c's segments exercise each of llvm-cov's line
# rules; h.h holds a static inline function instantiated in two translation units.
SEGMENTS = [
    [1, 1, 5, T, T, F],  # line 1: a region starts, count 5
    [2, 3, 0, T, T, F],  # line 2: a region with count 0 starts, but the wrapped count is 5
    [3, 1, 5, T, F, F],  # line 3: no region starts; the wrapped segment (line 2's) says 0
    [4, 1, 8, T, T, T],  # line 4: a gap region (count 8) is no region start; wrapped count 5
    [5, 1, 0, F, T, F],  # line 5: a skipped region starts: not mapped
    [6, 1, 0, F, F, F],  # line 6: wrapped by the skipped region, nothing starts: not mapped
    [7, 2, 9, T, T, F],  # line 7: a region starts, count 9
    [8, 1, 0, F, F, F],  # line 8: the region from line 7 wraps it: 9
]
EXPECTED_LINES = {1: 5, 2: 5, 3: 0, 4: 5, 7: 9, 8: 9}


def summary(lines: tuple[int, int], functions=(0, 0), instantiations=(0, 0), regions=(0, 0), branches=(0, 0)):
    def c(pair):
        return {"count": pair[0], "covered": pair[1], "percent": 0}

    return {
        "lines": c(lines),
        "functions": c(functions),
        "instantiations": c(instantiations),
        "regions": c(regions),
        "branches": c(branches),
    }


def export() -> dict:
    """A fresh copy: tests mutate it."""
    return copy.deepcopy(
        {
            "data": [
                {
                    "files": [
                        {
                            "filename": "/src/a.c",
                            "segments": SEGMENTS,
                            "branches": [[2, 7, 2, 12, 4, 1, 0, 0, 4]],
                            "expansions": [
                                {
                                    "filenames": ["/src/a.c", "/src/m.h"],
                                    "source_region": [7, 3, 7, 12, 9, 0, 1, 1],
                                    "target_regions": [[1, 1, 8, 2, 5, 0, 0, 0], [1, 1, 1, 10, 9, 1, 0, 0]],
                                    "branches": [[1, 5, 1, 9, 2, 0, 1, 0, 4]],
                                }
                            ],
                            "summary": summary((6, 5), (1, 1), (1, 1), (3, 3), (4, 3)),
                        },
                        {
                            "filename": "/src/h.h",
                            "segments": [[10, 1, 5, T, T, F], [12, 2, 0, F, F, F]],
                            "branches": [],
                            "expansions": [],
                            "summary": summary((3, 3), (1, 1), (2, 2), (1, 1)),
                        },
                        {
                            "filename": "/src/m.h",
                            "segments": [],
                            "branches": [],
                            "expansions": [],
                            "summary": summary((0, 0)),
                        },
                    ],
                    "functions": [
                        {
                            "name": "main",
                            "count": 5,
                            "filenames": ["/src/a.c", "/src/m.h"],
                            "branches": [],
                            "regions": [
                                [1, 1, 8, 2, 5, 0, 0, 0],
                                [7, 3, 7, 12, 9, 0, 1, 1],
                                [1, 1, 1, 10, 9, 1, 0, 0],
                            ],
                        },
                        {
                            "name": "a.c:helper",
                            "count": 3,
                            "filenames": ["/src/h.h"],
                            "branches": [],
                            "regions": [[10, 1, 12, 2, 3, 0, 0, 0]],
                        },
                        {
                            "name": "b.c:helper",
                            "count": 2,
                            "filenames": ["/src/h.h"],
                            "branches": [],
                            "regions": [[10, 1, 12, 2, 2, 0, 0, 0]],
                        },
                    ],
                    "totals": summary((9, 8), (2, 2), (3, 3), (4, 4), (4, 3)),
                }
            ],
            "type": "llvm.coverage.json.export",
            "version": "2.0.1",
        }
    )


def encode(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()  # llvm-cov's compact spelling


def parse_doc(doc: dict):
    return parse(encode(doc), format="llvm")


def lines_of(report, path: str) -> dict[int, int]:
    file = [f.path for f in report.files].index(path)
    rows = report.lines["file"] == file
    return dict(zip(report.lines["line"][rows].tolist(), report.lines["hits"][rows].tolist(), strict=True))


def refused(data: bytes | dict) -> CoverageError:
    with pytest.raises(CoverageError) as info:
        parse(data if isinstance(data, bytes) else encode(data), format="llvm")
    assert info.value.code == ErrorCode.MALFORMED_REPORT
    return info.value


def test_lines_follow_llvm_covs_line_coverage_iterator() -> None:
    assert lines_of(parse_doc(export()), "/src/a.c") == EXPECTED_LINES


def test_lines_between_segments_take_the_wrapping_regions_count() -> None:
    assert lines_of(parse_doc(export()), "/src/h.h") == {10: 5, 11: 5, 12: 5}


def test_totals_are_the_exports_totals_not_the_detail() -> None:
    report = parse_doc(export())
    assert {k: (c.found, c.hit) for k, c in report.totals.items()} == {
        "lines": (9, 8),
        "functions": (2, 2),
        "instantiations": (3, 3),
        "regions": (4, 4),
        "branches": (4, 3),
    }
    assert report.tool == "llvm-cov"


def test_totals_of_several_exports_are_summed() -> None:
    doc = export()
    second = copy.deepcopy(doc["data"][0])
    for f in second["files"]:
        f["filename"] = f["filename"].replace("/src/", "/lib/")
    doc["data"].append(second)
    report = parse_doc(doc)
    assert report.totals["instantiations"].to_dict() == {"found": 6, "hit": 6}
    assert len(report.files) == 6


def test_per_file_totals_are_llvm_covs_file_summaries() -> None:
    report = parse_doc(export())
    found, hit = report.file_totals["instantiations"]
    assert (found.tolist(), hit.tolist()) == ([1, 2, 0], [1, 2, 0])


def test_each_branch_is_a_true_and_a_false_row_and_macro_branches_sit_where_the_macro_is_used() -> None:
    report = parse_doc(export())
    rows = list(
        zip(*(report.branches[c].tolist() for c in ("line", "block", "branch", "taken")), strict=True)
    )
    assert rows == [(2, 0, "true", 4), (2, 0, "false", 1), (7, 1, "true", 2), (7, 1, "false", 0)]


def test_instantiations_starting_at_the_same_place_are_one_function_with_summed_hits() -> None:
    report = parse_doc(export())
    functions = {
        (report.files[f].path, n, s, h)
        for f, n, s, h in zip(
            *(report.functions[c].tolist() for c in ("file", "name", "start_line", "hits")), strict=True
        )
    }
    assert functions == {("/src/a.c", "main", 1, 5), ("/src/h.h", "helper", 10, 5)}


def test_identical_regions_of_several_instantiations_are_merged_by_summing() -> None:
    report = parse_doc(export())
    regions = {
        (report.files[f].path, sl, el, h, k)
        for f, sl, el, h, k in zip(
            *(report.regions[c].tolist() for c in ("file", "start_line", "end_line", "hits", "kind")),
            strict=True,
        )
    }
    assert regions == {
        ("/src/a.c", 1, 8, 5, REGION_CODE),
        ("/src/a.c", 7, 7, 9, REGION_EXPANSION),
        ("/src/m.h", 1, 1, 9, REGION_CODE),
        ("/src/h.h", 10, 12, 5, REGION_CODE),
    }


def test_a_summary_that_disagrees_with_the_segments_is_a_warning_naming_both_figures() -> None:
    doc = export()
    doc["data"][0]["files"][0]["summary"]["lines"] = {"count": 5, "covered": 4}
    report = parse_doc(doc)
    (warning,) = report.warnings
    assert warning.code == "detail_differs_from_summary"
    assert "/src/a.c: 6/5 vs 5/4" in warning.message
    found, hit = report.file_totals["lines"]
    assert (found[0], hit[0]) == (5, 4)  # the tool's figure stays the file's total


def test_an_export_that_agrees_with_its_summaries_has_no_warnings() -> None:
    assert parse_doc(export()).warnings == ()


def test_expansion_target_regions_are_cut_without_touching_strings_that_mention_them() -> None:
    doc = export()
    odd = '/src/we"ird,"target_regions":[[1]].c'
    doc["data"][0]["files"][2]["filename"] = odd
    doc["data"][0]["files"][0]["expansions"][0]["target_regions"].append([1, 2, 3, 4, 5, 6, 7, 8])
    report = parse_doc(doc)
    assert odd in [f.path for f in report.files]
    assert lines_of(report, "/src/a.c") == EXPECTED_LINES


def test_target_regions_that_are_not_plain_numbers_are_parsed_normally() -> None:
    text = encode(export()).replace(b'"target_regions":[[1,1,8,2', b'"target_regions" : [[1, 1, null, 2')
    assert lines_of(parse(text, format="llvm"), "/src/a.c") == EXPECTED_LINES


def test_a_syntax_error_after_a_cut_is_located_in_the_original_text() -> None:
    text = encode(export()).replace(b'"functions":[', b'\n"functions":[}')
    error = refused(text)
    assert error.details["line"] == 2
    assert "column 14" in error.message


def test_summary_only_and_skip_functions_exports_still_give_totals() -> None:
    doc = export()
    for f in doc["data"][0]["files"]:
        del f["segments"], f["branches"], f["expansions"]
    del doc["data"][0]["functions"]
    report = parse_doc(doc)
    assert report.totals["lines"].to_dict() == {"found": 9, "hit": 8}
    assert len(report.lines) == len(report.functions) == 0


def test_version_2_0_0_segments_without_the_gap_flag_are_read() -> None:
    doc = export()
    doc["version"] = "2.0.0"
    doc["data"][0]["files"][1]["segments"] = [s[:5] for s in doc["data"][0]["files"][1]["segments"]]
    assert lines_of(parse_doc(doc), "/src/h.h") == {10: 5, 11: 5, 12: 5}


def mutate(path: list, value) -> dict:
    doc = export()
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


FILE0 = ["data", 0, "files", 0]


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        (mutate([*FILE0, "segments", 1, 2], -3), "$.data[0].files[0].segments[1][2] is negative (-3)"),
        (mutate([*FILE0, "segments", 1, 2], 2.5), "$.data[0].files[0].segments[1][2] must be an integer"),
        (mutate([*FILE0, "segments", 1, 2], 2**64), "$.data[0].files[0].segments[1][2] overflows"),
        (mutate([*FILE0, "segments", 1, 2], "7"), "$.data[0].files[0].segments[1][2] must be an integer"),
        (
            mutate([*FILE0, "segments", 1], [2, 3]),
            "$.data[0].files[0].segments[1]: must be a list of at least",
        ),
        (mutate([*FILE0, "segments", 7, 0], 2**40), "$.data[0].files[0].segments[7][0] is larger than"),
        (mutate([*FILE0, "segments", 7, 0], 2_000_000_000), "$.data[0].files[0].segments: spans"),
        (mutate([*FILE0, "branches", 0, 5], -1), "$.data[0].files[0].branches[0][5] is negative"),
        (
            mutate([*FILE0, "expansions", 0, "branches", 0, 4], None),
            "$.data[0].files[0].expansions[0].branches[0][4] must be an integer",
        ),
        (mutate(["data", 0, "functions", 1, "count"], -1), "$.data[0].functions[1].count is negative"),
        (mutate(["data", 0, "functions", 2, "regions", 0, 4], 1.5), "$.data[0].functions[2].regions[0][4]"),
        (
            mutate(["data", 0, "functions", 1, "regions", 0, 5], 3),
            "$.data[0].functions[1].regions[0][5]: file id 3",
        ),
        (
            mutate(["data", 0, "functions", 2, "regions", 0, 7], 300),
            "$.data[0].functions[2].regions[0][7]: region kind",
        ),
        (mutate(["data", 0, "totals", "lines", "covered"], 10), "$.data[0].totals.lines: covered (10)"),
        (mutate(["data", 0, "totals"], None), "$.data[0].totals: missing"),
        (mutate([*FILE0, "summary", "regions", "count"], -2), "$.data[0].files[0].summary.regions.count"),
        (mutate([*FILE0, "filename"], 3), "$.data[0].files[0].filename"),
        (mutate(["version"], "1.0.0"), "unsupported llvm-cov export version (excerpt: '1.0.0')"),
        (mutate(["type"], "something.else"), "not an llvm-cov export"),
        (mutate(["data"], {}), "$.data: must be a list"),
    ],
)
def test_bad_values_are_refused_naming_their_json_path(doc: dict, says: str) -> None:
    assert says in refused(doc).message


def test_nan_counts_are_refused() -> None:
    text = encode(export()).replace(b"[2,3,0,true", b"[2,3,NaN,true")
    assert "$.data[0].files[0].segments[1][2] must be an integer, got nan" in refused(text).message


@pytest.mark.parametrize("cut", [10, 200, 700])
def test_truncated_exports_are_a_clean_error(cut: int) -> None:
    refused(encode(export())[:cut])


def test_llvm_exports_are_detected_from_head_and_tail() -> None:
    data = encode(export())
    assert detect(data) == "llvm"
    assert not llvm.sniff(b'{"data": [1]}', b'{"type": "other"}')
    assert not llvm.sniff(b'{"meta": {"format": 3}}', b"")


# -- the corpus -----------------------------------------------------------------


def lcov_detail(path) -> tuple[set, Tally]:
    """DA records and BRDA records per line of llvm-cov's LCOV export."""
    da, brda, _fn = lcovtext.records(path)
    return set(da), Tally((file, line) for file, line, *_ in brda)


def test_cmark_detail_equals_llvm_covs_own_lcov_export_of_the_same_profile(corpus_dir) -> None:
    report = parse(corpus.path("llvm/cmark-gfm-0.29.0.gfm.13.llvm-cov.json.zst"))
    paths = [f.path for f in report.files]
    lines = {
        (paths[f], n, h) for f, n, h in zip(*(report.lines[c].tolist() for c in ("file", "line", "hits")))
    }
    branches = Tally(
        (paths[f], n) for f, n in zip(report.branches["file"].tolist(), report.branches["line"].tolist())
    )
    assert (lines, branches) == lcov_detail(corpus.path("llvm/cmark-gfm-0.29.0.gfm.13.llvm-cov.lcov"))


def test_cmark_functions_are_llvm_covs_unique_functions(corpus_dir) -> None:
    report = parse(corpus.path("llvm/cmark-gfm-0.29.0.gfm.13.llvm-cov.json.zst"))
    assert len(report.functions) == report.totals["functions"].found == 493
    assert int((report.functions["hits"] > 0).sum()) == report.totals["functions"].hit
    found, hit = report.file_totals["functions"]
    assert (int(found.sum()), int(hit.sum())) == (493, 375)


def test_the_246_mb_sqlite_export_parses_to_llvm_cov_reports_totals_and_names_its_disagreements(
    corpus_dir,
) -> None:
    entry = next(e for e in corpus.entries() if e["file"] == "llvm/sqlite-3.53.2.llvm-cov.json.zst")
    report = parse(corpus.path(entry["file"]))
    for name in ("lines", "functions", "instantiations", "regions", "branches"):
        assert report.totals[name].to_dict() == entry["canonical_totals"][name]
    da, _ = lcov_detail(corpus.path("llvm/sqlite-3.53.2.llvm-cov.lcov"))
    assert len(report.lines) == len(da)
    lines_warning = next(w.message for w in report.warnings if w.message.startswith("lines:"))
    # FORMATS.md: llvm-cov's LCOV has 112,130 DA lines for sqlite3.c against LF:109800.
    assert re.search(r"sqlite3\.c: 112,130/[\d,]+ vs 109,800/", lines_warning)


def head_and_tail(name: str) -> tuple[bytes, bytes]:
    """A corpus file's first and last 64 KiB, decompressed as the registry sees them."""
    with corpus.path(name).open("rb") as raw:
        stream = (
            zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(raw)
            if name.endswith(".zst")
            else raw
        )
        head = stream.read(SNIFF_BYTES)
        tail = head
        while chunk := stream.read(1 << 20):
            tail = (tail + chunk)[-SNIFF_BYTES:]
    return head.lstrip(b"\xef\xbb\xbf \t\r\n"), tail[-SNIFF_BYTES:]


def test_each_of_our_sniffers_claims_exactly_the_corpus_files_of_its_format(corpus_dir) -> None:
    sniffers = {
        "llvm": llvm.sniff,
        "istanbul": istanbul.sniff,
        "go": go.sniff,
        "regions-v1": regions_v1.sniff,
    }
    formats = {
        "llvm": "LLVM llvm-cov export JSON",
        "istanbul": "Istanbul coverage-final.json",
        "go": "Go coverprofile",
        "regions-v1": "(none in the corpus)",
    }
    claimed = {fmt: set() for fmt in sniffers}
    for entry in corpus.entries():
        head, tail = head_and_tail(entry["file"])
        for fmt, sniff in sniffers.items():
            if sniff(head, tail):
                claimed[fmt].add(entry["file"])
    for fmt, files in claimed.items():
        assert files == {e["file"] for e in corpus.entries() if e["format"].startswith(formats[fmt])}, fmt


def test_any_value_replaced_by_any_odd_value_ends_in_a_report_or_a_coverage_error() -> None:
    for doc in odd_documents(export()):
        blob = encode(doc)
        try:
            llvm.parse_bytes(ReportBytes(blob, "<fuzz>", None, len(blob)))  # not the registry's safety net
        except CoverageError:
            pass
