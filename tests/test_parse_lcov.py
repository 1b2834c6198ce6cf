"""The LCOV parser: lcov --summary's merge, per-test observations, summary lines, bad input, the corpus."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from pathlib import Path

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import ReportBytes, detect, lcov
from coverage_core.report import OBS_BRANCH, OBS_FUNCTION, OBS_LINE, NormalizedReport

from . import corpus


def parse_lcov(text: str | bytes, origin: str = "t.info") -> NormalizedReport:
    data = text.encode() if isinstance(text, str) else text
    return lcov.parse_bytes(ReportBytes(data, origin, None, len(data)))


def refused(text: str | bytes) -> CoverageError:
    with pytest.raises(CoverageError) as info:
        parse_lcov(text)
    assert info.value.code is ErrorCode.MALFORMED_REPORT
    return info.value


def lines_of(report: NormalizedReport, path: str) -> dict[int, int]:
    index = [f.path for f in report.files].index(path)
    mine = report.lines["file"] == index
    return dict(zip(report.lines["line"][mine].tolist(), report.lines["hits"][mine].tolist()))


def branches_of(report: NormalizedReport) -> list[tuple[int, int, str, int]]:
    t = report.branches
    return list(zip(t["line"].tolist(), t["block"].tolist(), t["branch"].tolist(), t["taken"].tolist()))


def observations(report: NormalizedReport, kind: int = OBS_LINE) -> dict[tuple[str, str, int, int], int]:
    t = report.test_observations
    pick = t["kind"] == kind
    return {
        (report.tests[test], report.files[file].path, line, item): hits
        for test, file, line, item, hits in zip(
            t["test"][pick].tolist(),
            t["file"][pick].tolist(),
            t["line"][pick].tolist(),
            t["item"][pick].tolist(),
            t["hits"][pick].tolist(),
        )
    }


def totals(report: NormalizedReport) -> dict[str, tuple[int, int]]:
    return {name: (c.found, c.hit) for name, c in report.totals.items()}


TWO_TESTS = """\
TN:unit
SF:src/a.c
FN:1,main
FN:8,helper
FNDA:1,main
FNDA:0,helper
FNF:2
FNH:1
BRDA:2,0,0,1
BRDA:2,0,1,-
BRF:2
BRH:1
DA:1,1
DA:2,1
DA:3,0
LF:3
LH:2
end_of_record
TN:integration
SF:src/a.c
FN:1,main
FN:8,helper
FNDA:2,main
FNDA:3,helper
FNF:2
FNH:2
BRDA:2,0,0,0
BRDA:2,0,1,-
BRDA:9,0,0,4
BRF:3
BRH:1
DA:1,2
DA:3,0
DA:8,3
DA:9,3
LF:4
LH:3
end_of_record
"""


# -- merging records -----------------------------------------------------------------
def test_a_file_repeated_across_test_sections_is_merged_like_lcov_summary() -> None:
    report = parse_lcov(TWO_TESTS)
    assert [f.path for f in report.files] == ["src/a.c"]
    # union of lines, counts summed, hit if any section hit it
    assert lines_of(report, "src/a.c") == {1: 3, 2: 1, 3: 0, 8: 3, 9: 3}
    assert totals(report) == {"lines": (5, 4), "functions": (2, 2), "branches": (3, 2)}
    # summing the LF/LH lines instead would say 7 lines found
    assert report.warnings == ()


def test_a_branch_never_evaluated_by_any_section_stays_a_dash_and_is_not_hit() -> None:
    report = parse_lcov(TWO_TESTS)
    assert branches_of(report) == [(2, 0, "0", 1), (2, 0, "1", -1), (9, 0, "0", 4)]


def test_a_dash_merged_with_a_count_becomes_the_count() -> None:
    text = "SF:a.c\nBRDA:1,0,0,-\nend_of_record\nSF:a.c\nBRDA:1,0,0,0\nend_of_record\n"
    assert branches_of(parse_lcov(text)) == [(1, 0, "0", 0)]


def test_a_line_listed_twice_in_one_record_is_counted_once_with_its_counts_summed() -> None:
    report = parse_lcov("SF:a.c\nDA:5,1\nDA:2,0\nDA:5,2\nend_of_record\n")
    assert lines_of(report, "a.c") == {2: 0, 5: 3}
    assert list(report.lines["line"]) == [2, 5]  # sorted, as the report table promises


def test_records_of_different_files_stay_apart_and_keep_the_order_of_first_appearance() -> None:
    report = parse_lcov(
        "SF:b.c\nDA:1,1\nend_of_record\nSF:a.c\nDA:1,0\nend_of_record\nSF:b.c\nDA:2,1\nend_of_record\n"
    )
    assert [f.path for f in report.files] == ["b.c", "a.c"]
    assert lines_of(report, "b.c") == {1: 1, 2: 1}
    assert totals(report)["lines"] == (3, 2)


# -- per-test observations -----------------------------------------------------------
def test_each_named_test_observes_exactly_the_lines_branches_and_functions_it_hit() -> None:
    report = parse_lcov(TWO_TESTS)
    assert report.tests == ("unit", "integration")
    assert observations(report, OBS_LINE) == {
        ("unit", "src/a.c", 1, 0): 1,
        ("unit", "src/a.c", 2, 0): 1,
        ("integration", "src/a.c", 1, 0): 2,
        ("integration", "src/a.c", 8, 0): 3,
        ("integration", "src/a.c", 9, 0): 3,
    }
    # a branch's item is block << 16 | branch
    assert observations(report, OBS_BRANCH) == {
        ("unit", "src/a.c", 2, 0): 1,
        ("integration", "src/a.c", 9, 0): 4,
    }
    assert observations(report, OBS_FUNCTION) == {
        ("unit", "src/a.c", 1, 0): 1,
        ("integration", "src/a.c", 1, 0): 2,
        ("integration", "src/a.c", 8, 0): 3,
    }


def test_a_test_name_holds_for_the_records_that_follow_until_the_next_tn_line() -> None:
    report = parse_lcov(
        "TN:t1\nSF:a.c\nDA:1,1\nend_of_record\nSF:b.c\nDA:1,1\nend_of_record\n"
        "TN:\nSF:c.c\nDA:1,1\nend_of_record\n"
    )
    assert report.tests == ("t1",)
    assert set(observations(report)) == {("t1", "a.c", 1, 0), ("t1", "b.c", 1, 0)}


def test_records_without_a_test_name_give_no_tests_and_no_observations() -> None:
    report = parse_lcov("TN:\nSF:a.c\nDA:1,1\nend_of_record\n")
    assert report.tests == () and len(report.test_observations) == 0


def test_one_test_naming_a_file_twice_gives_one_observation_with_the_counts_summed() -> None:
    report = parse_lcov("TN:t\nSF:a.c\nDA:1,1\nend_of_record\nTN:t\nSF:a.c\nDA:1,4\nend_of_record\n")
    assert observations(report) == {("t", "a.c", 1, 0): 5}


# -- summary lines versus detail -------------------------------------------------------
def test_a_single_records_summary_lines_are_its_totals_and_a_disagreement_is_a_warning_naming_both() -> None:
    # llvm-cov writes DA lines for a header with no functions, yet LF:0
    report = parse_lcov(
        "SF:x.h\nDA:3,1\nDA:4,0\nLF:0\nLH:0\nend_of_record\nSF:x.c\nDA:1,1\nLF:1\nLH:1\nend_of_record\n"
    )
    assert totals(report)["lines"] == (1, 1)
    assert lines_of(report, "x.h") == {3: 1, 4: 0}  # the detail is kept
    [warning] = report.warnings
    assert warning.code == "summary_detail_mismatch"
    assert (
        "x.h" in warning.message
        and "LF/LH say 0" in warning.message
        and "give 2 found, 1 hit" in warning.message
    )


def test_summary_lines_of_several_records_of_one_file_are_not_summed() -> None:
    report = parse_lcov(
        "TN:a\nSF:x.c\nDA:1,1\nLF:1\nLH:1\nend_of_record\nTN:b\nSF:x.c\nDA:1,0\nLF:1\nLH:0\nend_of_record\n"
    )
    assert totals(report)["lines"] == (1, 1)


def test_a_counter_without_data_totals_zero_of_zero() -> None:
    assert totals(parse_lcov("SF:a.c\nDA:1,1\nend_of_record\n")) == {
        "lines": (1, 1),
        "branches": (0, 0),
        "functions": (0, 0),
    }


# -- what writers do -------------------------------------------------------------------
def test_coverage_py_text_branch_ids_and_function_end_lines_are_kept() -> None:
    report = parse_lcov(
        "SF:pkg/mod.py\nDA:6,1\nDA:7,1\nDA:8,0\nLF:3\nLH:2\nFN:6,9,price\nFNDA:1,price\nFN:12,13,other\nFNDA:0,other\n"
        "FNF:2\nFNH:1\nBRDA:7,0,jump to line 8,0\nBRDA:7,0,jump to line 9,1\n"
        "BRDA:9,0,return from function 'price',-\nBRF:3\nBRH:1\nend_of_record\n"
    )
    assert branches_of(report) == [
        (7, 0, "jump to line 8", 0),
        (7, 0, "jump to line 9", 1),
        (9, 0, "return from function 'price'", -1),
    ]
    f = report.functions
    assert list(zip(f["name"], f["start_line"].tolist(), f["end_line"].tolist(), f["hits"].tolist())) == [
        ("price", 6, 9, 1),
        ("other", 12, 13, 0),
    ]
    assert report.warnings == ()


def test_c8_functions_sharing_a_name_pair_with_their_fnda_lines_in_order() -> None:
    report = parse_lcov(
        "SF:lib/a.js\nFN:160,onfile\nFN:317,onfile\nFNF:2\nFNH:2\n"
        "FNDA:21,onfile\nFNDA:45,onfile\nDA:1,1\nLF:1\nLH:1\nend_of_record\n"
    )
    f = report.functions
    assert list(zip(f["start_line"].tolist(), f["hits"].tolist())) == [(160, 21), (317, 45)]
    assert totals(report)["functions"] == (2, 2) and report.warnings == ()


def test_an_fnda_line_for_an_undeclared_function_is_a_function_of_unknown_line() -> None:
    report = parse_lcov("SF:a.c\nFN:3,f\nFNDA:1,f\nFNDA:2,g\nend_of_record\n")
    f = report.functions
    assert list(zip(f["name"], f["start_line"].tolist(), f["hits"].tolist())) == [("f", 3, 1), ("g", 0, 2)]


def test_line_checksums_are_ignored() -> None:
    report = parse_lcov(
        "SF:a.c\n" + "".join(f"DA:{n},{n % 2},Xk9+/Ab{n}\n" for n in range(1, 50)) + "end_of_record\n"
    )
    assert lines_of(report, "a.c") == {n: n % 2 for n in range(1, 50)}


def test_windows_line_endings_and_a_byte_order_mark_read_the_same() -> None:
    plain = parse_lcov(TWO_TESTS)
    windows = parse_lcov(b"\xef\xbb\xbf" + TWO_TESTS.replace("\n", "\r\n").encode())
    assert totals(windows) == totals(plain) and lines_of(windows, "src/a.c") == lines_of(plain, "src/a.c")


def test_tags_of_newer_lcov_versions_are_ignored() -> None:
    report = parse_lcov("VER:2.0\nSF:a.c\nFNL:0,1,3\nFNA:0,1,f\nDA:1,1\nend_of_record\n")
    assert totals(report)["lines"] == (1, 1)


def random_report(seed: int, files: int = 4, tests: int = 3) -> list[list[str]]:
    """Records as lists of lines, in geninfo's tag order."""
    rng = random.Random(seed)
    records = []
    for t in range(tests):
        for f in range(files):
            lines = sorted(rng.sample(range(1, 400), 60))
            record = [f"TN:test{t}", f"SF:src/f{f}.c"]
            record += [f"FN:{n},fn{n}" for n in lines[:5]]
            record += [f"FNDA:{rng.choice([0, 1, 7])},fn{n}" for n in lines[:5]]
            record += [f"BRDA:{n},0,{b},{rng.choice(['-', '0', '3'])}" for n in lines[::7] for b in range(2)]
            record += [f"DA:{n},{rng.choice([0, 0, 1, 12, 10**12])}" for n in lines]
            records.append(record)
    return records


def as_text(records: list[list[str]]) -> str:
    return "".join("\n".join(record) + "\nend_of_record\n" for record in records)


@pytest.mark.parametrize("seed", range(3))
def test_the_bulk_reader_and_the_line_by_line_reader_agree(seed: int) -> None:
    records = random_report(seed)
    grouped = parse_lcov(as_text(records))
    # Interleaving the tags defeats every bulk run, so each line goes through the exact reader.
    shuffled = []
    for record in records:
        head, body = record[:2], record[2:]
        random.Random(seed).shuffle(body)
        shuffled.append(head + body)
    interleaved = parse_lcov(as_text(shuffled))
    for table in ("lines", "branches", "functions", "test_observations"):
        a, b = getattr(grouped, table), getattr(interleaved, table)
        assert sorted(zip(*(a[c].tolist() for c in a.columns))) == sorted(
            zip(*(b[c].tolist() for c in b.columns))
        )
    # lines and branches come out sorted by file and line either way
    assert list(grouped.lines["line"]) == list(interleaved.lines["line"])
    assert totals(grouped) == totals(interleaved)


def read_everything_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch the parser to its exact reader only: no run is taken in bulk."""
    monkeypatch.setattr(lcov, "DA_RUNS", lcov.DA_RUNS._replace(shape=lambda text: None))
    monkeypatch.setattr(lcov, "BRDA_RUNS", lcov.BRDA_RUNS._replace(shape=lambda text: None))
    monkeypatch.setattr(lcov, "BULK_FNDA_BYTES", 2**62)
    monkeypatch.setattr(lcov._Parser, "_fn", lambda self, run, here, r: self._exact(run, here, r))


def outcome(data: bytes) -> object:
    try:
        report = parse_lcov(data)
    except CoverageError:
        return "refused"
    tables = {
        t: sorted(zip(*(getattr(report, t)[c].tolist() for c in getattr(report, t).columns)))
        for t in ("lines", "branches", "functions", "test_observations")
    }
    return tables, totals(report), report.tests, sorted(w.message for w in report.warnings)


def test_damaged_reports_read_the_same_in_bulk_as_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    seeds = [as_text(random_report(s, files=2, tests=2)).encode() for s in range(3)]
    damage = [b"-", b"99999999999999999999", b"0", b",", b"\n", b"1", b" ", b"DA:5,1\n", b"BRDA:3,0,1,-\n"]
    cases = []
    for _ in range(150):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            data[at:at] = rng.choice(damage)
        cases.append(bytes(data))
    bulk = [outcome(data) for data in cases]
    read_everything_line_by_line(monkeypatch)
    assert [outcome(data) for data in cases] == bulk


def test_batch_boundaries_do_not_change_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    text = as_text(random_report(7, files=5, tests=4))
    whole = parse_lcov(text)
    monkeypatch.setattr(lcov, "BATCH_RECORDS", 3)  # a file's records land in different batches
    monkeypatch.setattr(lcov, "BATCH_BYTES", 500)  # and some batches hold one record's runs only
    split = parse_lcov(text)
    for table in ("lines", "branches", "functions", "test_observations"):
        a, b = getattr(whole, table), getattr(split, table)
        assert sorted(zip(*(a[c].tolist() for c in a.columns))) == sorted(
            zip(*(b[c].tolist() for c in b.columns))
        )
    assert totals(whole) == totals(split) and whole.tests == split.tests


# -- bad input -------------------------------------------------------------------------
GOOD_DA = "".join(f"DA:{n},1\n" for n in range(1, 200))  # long enough for the bulk reader


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        ("DA:200,-5", "negative"),
        ("DA:200,1.5", "must be an integer"),
        ("DA:200,NaN", "must be an integer"),
        ("DA:200,99999999999999999999", "overflows"),
        ("DA:200,", "must be an integer"),
        ("DA:,3", "must be an integer"),
        ("DA:200", "DA needs"),
        ("BRDA:200,0,0,-2", "negative"),
        ("BRDA:200,0,0,1e3", "must be an integer"),
        ("FNDA:-1,f", "negative"),
        ("LF:many", "must be an integer"),
        ("DA 200,1", "not an LCOV line"),
    ],
)
def test_a_bad_number_or_line_is_refused_naming_the_file_and_its_line(bad: str, what: str) -> None:
    # the bad line is line 201: SF on line 1, 199 good DA lines, then it
    error = refused(
        "SF:src/a.c\n" + GOOD_DA + bad + "\n" + GOOD_DA.replace("DA:", "DA:1") + "end_of_record\n"
    )
    assert error.message.startswith("t.info:201: ")
    assert what in error.message
    assert error.details == {"path": "t.info", "line": 201}


@pytest.mark.parametrize("bad", ["1DA:3212,5", "DA:,5", "DA:3212,5,", "DA:3212,+5x", "DA:3212,5 5"])
def test_a_damaged_line_inside_a_run_of_good_ones_is_not_taken_for_a_good_one(bad: str) -> None:
    body = [f"DA:{n},{n}" for n in range(1, 5000)]
    body[3211] = bad
    report_text = "SF:a.c\n" + "\n".join(body) + "\nend_of_record\n"
    if bad == "DA:3212,5,":  # an empty checksum is still a checksum
        assert lines_of(parse_lcov(report_text), "a.c")[3212] == 5
    else:
        assert refused(report_text).message.startswith("t.info:3213: ")


def test_a_bad_count_deep_inside_a_big_run_is_found_at_its_line() -> None:
    body = [f"DA:{n},{n}" for n in range(1, 5000)]
    body[3210] = "DA:3211,12x"
    error = refused("TN:t\nSF:a.c\n" + "\n".join(body) + "\nend_of_record\n")
    assert error.message.startswith("t.info:3213: ")


def test_a_bad_count_among_lines_with_checksums_is_found_at_its_line() -> None:
    body = [f"DA:{n},{n},Q2hlY2tzdW0{n}" for n in range(1, 3000)]
    body[2000] = "DA:2001,99999999999999999999,Q2hlY2tzdW0"  # well shaped: found only when parsed
    error = refused("SF:a.c\n" + "\n".join(body) + "\nend_of_record\n")
    assert error.message.startswith("t.info:2002: ") and "overflows" in error.message


def test_a_report_cut_off_before_end_of_record_is_refused_as_truncated() -> None:
    error = refused(TWO_TESTS[: TWO_TESTS.rindex("end_of_record")])
    assert "src/a.c" in error.message and "truncated" in error.message
    assert "(from line 19)" in error.message


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "end_of_record\n",
        "DA:1,1\nend_of_record\n",
        "SF:a\nSF:b\nend_of_record\n",
        "\x00\xff garbage",
    ],
)
def test_empty_or_structureless_input_is_a_clean_malformed_report(text: str) -> None:
    refused(text)


# -- detection -------------------------------------------------------------------------
def test_lcov_is_detected_from_tn_or_sf_and_never_claims_json_or_xml() -> None:
    assert detect(TWO_TESTS.encode()) == "lcov"
    assert detect(b"SF:a.c\nDA:1,1\nend_of_record\n") == "lcov"
    for other in (
        b'{"meta": {"format": 3}}',
        b'{"data":[{"files": []}]}',
        b"<?xml version='1.0'?><coverage/>",
        b"mode: set\n",
        b"TN:only a test name\n",
    ):
        assert not lcov.sniff(other, other)


# -- the corpus ------------------------------------------------------------------------
LCOV_ENTRIES = [e for e in corpus.entries() if e["format"].startswith("LCOV")]


@pytest.mark.parametrize(
    "entry", [e for e in LCOV_ENTRIES if not e["file"].endswith(".zst")], ids=lambda e: e["file"]
)
def test_every_corpus_lcov_file_gives_its_producing_tools_totals(entry: dict) -> None:
    path = corpus.path(entry["file"])
    report = parse_lcov(path.read_bytes(), str(path))
    canon = entry["canonical_totals"]
    assert totals(report) == {
        k: (canon[k]["found"], canon[k]["hit"]) for k in ("lines", "functions", "branches")
    }
    assert len(report.files) == canon["files"]
    assert len(report.tests) == canon.get("test_names", 0)


def test_llvm_cov_lcov_keeps_its_detail_and_warns_where_lf_disagrees_with_its_da_lines() -> None:
    path = corpus.path("llvm/sqlite-3.53.2.llvm-cov.lcov")
    report = parse_lcov(path.read_bytes(), str(path))
    messages = [w.message for w in report.warnings]
    assert any("sqlite3.c" in m and "109,800" in m and "112,130" in m for m in messages)
    assert any("sqlite3.h" in m and "LF/LH say 0" in m and "give 4 found" in m for m in messages)
    assert len(report.lines) == 17 + 112_130 + 4  # every DA line of the three files


@pytest.fixture(scope="module")
def cmark() -> tuple[NormalizedReport, bytes]:
    data = corpus.path("lcov/cmark-gfm-0.29.0.gfm.13.gcov-9tests.lcov").read_bytes()
    return parse_lcov(data), data


def test_the_cmark_tracefile_has_nine_tests_and_attributes_autolink_lines_to_the_right_ones(cmark) -> None:
    report, _ = cmark
    assert len(report.tests) == 9
    path = "/build/cmark-gfm-0.29.0.gfm.13/extensions/autolink.c"
    seen = observations(report)
    # www_match's first line ran 6 times in each GFM-extension test, in no other
    assert {t for (t, p, line, _) in seen if p == path and line == 168} == {"gfm_extensions", "gfm_xml"}
    assert seen[("gfm_xml", path, 168, 0)] == 6
    # create_autolink_extension ran once in every test: merged count 9
    assert {t for (t, p, line, _) in seen if p == path and line == 495} == set(report.tests)
    assert lines_of(report, path)[495] == 9 and lines_of(report, path)[168] == 12


def test_the_cmark_tracefiles_line_observations_are_every_hit_da_line_of_every_test(cmark) -> None:
    report, data = cmark
    expected = {}
    test = path = ""
    for m in re.finditer(rb"^(?:TN:(.*)|SF:(.*)|DA:(\d+),(\d+))$", data, re.MULTILINE):
        if m.group(1) is not None:
            test = m.group(1).decode()
        elif m.group(2) is not None:
            path = m.group(2).decode()
        elif int(m.group(4)):
            expected[(test, path, int(m.group(3)), 0)] = int(m.group(4))
    assert observations(report) == expected


@pytest.fixture(scope="module")
def sqlite(tmp_path_factory: pytest.TempPathFactory) -> NormalizedReport:
    path = corpus.decompressed("lcov/sqlite-3.53.2.gcov-60tests.lcov.zst", tmp_path_factory.mktemp("sqlite"))
    return parse_lcov(Path(path).read_bytes(), str(path))


def test_the_big_sqlite_tracefile_merges_60_tests_to_lcov_summarys_totals(sqlite: NormalizedReport) -> None:
    entry = next(e for e in LCOV_ENTRIES if e["file"] == "lcov/sqlite-3.53.2.gcov-60tests.lcov.zst")
    canon, records = entry["canonical_totals"], entry["tool_reported_totals"]["records"]
    assert totals(sqlite) == {
        k: (canon[k]["found"], canon[k]["hit"]) for k in ("lines", "functions", "branches")
    }
    assert sorted(sqlite.tests) == records["test_names"]
    # one observation per hit line, branch and function of every test's record
    assert len(sqlite.test_observations) == records["sum_LH"] + records["sum_BRH"] + records["sum_FNH"]


def test_the_big_sqlite_tracefile_attributes_lines_to_the_tests_that_ran_them(
    sqlite: NormalizedReport,
) -> None:
    path = "/build/sqlite-3.53.2/sqlite3.c"
    index = [f.path for f in sqlite.files].index(path)
    t = sqlite.test_observations

    def tests_of(line: int) -> set[str]:
        pick = (t["file"] == index) & (t["kind"] == OBS_LINE) & (t["line"] == line)
        return {sqlite.tests[i] for i in t["test"][pick].tolist()}

    assert tests_of(38607) == {f"rtree_geopoly_{v}" for v in ("filedel", "filewal", "mem", "smallpage")}
    assert tests_of(56355) == {"wal_file_smallpage"}
    by_test = defaultdict(int)
    for test in t["test"][t["kind"] == OBS_LINE].tolist():
        by_test[test] += 1
    assert len(by_test) == 60
