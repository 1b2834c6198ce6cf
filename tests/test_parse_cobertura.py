"""The Cobertura parser: root totals, class-level detail, gcovr's and coverage.py's dialects, errors."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import cobertura, detect, parse

from . import corpus

COBERTURA = [e for e in corpus.entries() if e["format"].startswith("Cobertura XML")]
GCOVR = [e for e in COBERTURA if "gcovr" in e["format"]]
SQLITE = "cobertura/sqlite-3.53.2.gcovr.cobertura.xml.zst"
CMARK = "cobertura/cmark-gfm-0.29.0.gfm.13.gcovr.cobertura.xml"


def ids(entries: list[dict]) -> list[str]:
    return [e["file"] for e in entries]


@cache
def parsed(name: str):
    """A corpus report parsed once per test session (reports are immutable)."""
    return parse(corpus.path(name))


@pytest.fixture(scope="module")
def sqlite():
    return parsed(SQLITE)


def line_of(doc: bytes, marker: bytes) -> int:
    """The 1-based line of ``doc`` on which ``marker`` first appears."""
    return doc[: doc.index(marker)].count(b"\n") + 1


def malformed(doc: bytes) -> CoverageError:
    with pytest.raises(CoverageError) as caught:
        parse(doc, format="cobertura")
    assert caught.value.code is ErrorCode.MALFORMED_REPORT
    return caught.value


ONE_CLASS = b"""<?xml version="1.0" ?>
<coverage version="gcovr 8.8" line-rate="0.5" lines-valid="4" lines-covered="2" branches-valid="4" branches-covered="3">
  <sources><source>/build/demo</source></sources>
  <packages><package name="src"><classes>
    <class name="a_c" filename="src/a.c">
      <methods>
        <method name="main" signature=""><lines>
          <line number="3" hits="2" branch="false"/>
          <line number="4" hits="2" branch="true" condition-coverage="75% (3/4)"/>
          <line number="9" hits="0" branch="false"/>
        </lines></method>
        <method name="unused_inline" signature=""><lines/></method>
      </methods>
      <lines>
        <line number="3" hits="2" branch="false"/>
        <line number="4" hits="2" branch="true" condition-coverage="75% (3/4)">
          <conditions><condition number="0" type="jump" coverage="75%"/></conditions>
        </line>
        <line number="9" hits="0" branch="false"/>
        <line number="12" hits="0" branch="false"/>
      </lines>
    </class>
  </classes></package></packages>
</coverage>
"""


# -- the corpus -----------------------------------------------------------------
@pytest.mark.parametrize("entry", COBERTURA, ids=ids(COBERTURA))
def test_every_corpus_report_has_the_roots_totals_and_one_file_per_class_filename(entry: dict) -> None:
    report = parsed(entry["file"])
    canon = entry["canonical_totals"]
    assert report.format == "cobertura"
    assert report.totals["lines"].to_dict() == canon["lines"]
    assert report.totals["branches"].to_dict() == canon["branches"]
    assert len(report.files) == canon["files"]
    assert report.source_roots == tuple(entry["tool_reported_totals"]["sources"])


@pytest.mark.parametrize("entry", COBERTURA, ids=ids(COBERTURA))
def test_every_corpus_reports_detail_adds_up_to_its_root_totals(entry: dict) -> None:
    report = parsed(entry["file"])
    lines, branches = report.lines, report.branches
    assert len(lines) == report.totals["lines"].found
    assert int((lines["hits"] > 0).sum()) == report.totals["lines"].hit
    assert len(branches) == report.totals["branches"].found
    assert int(branches["taken"].sum()) == report.totals["branches"].hit
    assert not {w.code for w in report.warnings} & {"totals_differ_from_detail", "repeated_lines"}


@pytest.mark.parametrize("entry", COBERTURA, ids=ids(COBERTURA))
def test_the_producing_tool_is_told_from_the_report_gcovr_or_coverage_py(entry: dict) -> None:
    report = parsed(entry["file"])
    version = entry["tool_reported_totals"]["root_attributes"]["version"]
    if "gcovr" in entry["format"]:
        assert report.tool == "gcovr"
        assert report.metadata["tool_version"] == version.removeprefix("gcovr ")
    else:
        assert report.tool == "coverage.py"
        assert report.metadata["tool_version"] == version


@pytest.mark.parametrize("entry", COBERTURA, ids=ids(COBERTURA))
def test_every_corpus_report_is_detected_as_cobertura(entry: dict, corpus_dir) -> None:
    data = corpus.decompressed(entry["file"], corpus_dir).read_bytes()
    assert detect(data) == "cobertura"


def test_gcovr_methods_are_functions_that_agree_with_gcovrs_own_function_summary(sqlite) -> None:
    summary = next(e for e in GCOVR if e["file"] == SQLITE)["tool_reported_totals"]["gcovr_json_summary"]
    functions = sqlite.functions
    assert len(functions) == summary["function_total"]
    assert int((functions["hits"] > 0).sum()) == summary["function_covered"]
    assert (functions["start_line"] <= functions["end_line"]).all()
    # ...but Cobertura does not carry function totals, so none are claimed.
    assert "functions" not in sqlite.totals


def test_gcovr_methods_that_list_no_lines_are_left_out_of_the_functions_with_a_warning() -> None:
    report = parsed(CMARK)
    assert len(report.functions) == 482
    (warning,) = [w for w in report.warnings if w.code == "methods_without_lines"]
    assert warning.message.startswith("8 <method> elements")


def test_coverage_py_reports_have_no_functions_and_claim_no_function_totals() -> None:
    report = parsed("coveragepy/markupsafe-3.0.4.cobertura.xml")
    assert len(report.functions) == 0
    assert "functions" not in report.totals


def test_the_detail_keeps_numpy_columns_not_python_objects_per_line(sqlite) -> None:
    assert sqlite.lines["line"].dtype == np.int32 and sqlite.lines["hits"].dtype == np.int64
    # Branch labels are shared objects: one per outcome number, not one per row.
    labels = sqlite.branches["branch"]
    assert len({id(label) for label in labels}) == len(set(labels.tolist()))


@pytest.mark.slow
def test_the_sqlite_report_s_line_totals_are_the_ones_pycobertura_reads(sqlite, corpus_dir) -> None:
    """pycobertura, the peer our speed is compared with (benchmarks/bounds.py), reads the same lines."""
    from pycobertura import Cobertura

    theirs = Cobertura(str(corpus.decompressed(SQLITE, corpus_dir)))
    lines = sqlite.totals["lines"].to_dict()
    assert lines["found"] == theirs.total_statements()
    # pycobertura counts a line whose branches are partly taken as missed; we count it hit (it ran)
    assert lines["found"] - theirs.total_misses() < lines["hit"] < lines["found"]


# -- detail from small reports --------------------------------------------------
def test_a_method_repeating_its_classs_lines_adds_no_line_rows() -> None:
    report = parse(ONE_CLASS, format="cobertura")
    assert report.lines["line"].tolist() == [3, 4, 9, 12]
    assert report.lines["hits"].tolist() == [2, 2, 0, 0]
    assert report.totals["lines"].to_dict() == {"found": 4, "hit": 2}


def test_condition_coverage_becomes_covered_outcomes_then_missed_ones() -> None:
    branches = parse(ONE_CLASS, format="cobertura").branches
    assert branches["line"].tolist() == [4, 4, 4, 4]
    assert branches["block"].tolist() == [0, 0, 0, 0]
    assert branches["branch"].tolist() == ["0", "1", "2", "3"]
    assert branches["taken"].tolist() == [1, 1, 1, 0]


def test_a_method_is_a_function_from_its_first_to_its_last_line_hit_as_often_as_its_first() -> None:
    report = parse(ONE_CLASS, format="cobertura")
    functions = report.functions
    assert functions["name"].tolist() == ["main"]
    assert (functions["start_line"][0], functions["end_line"][0], functions["hits"][0]) == (3, 9, 2)
    assert [w.code for w in report.warnings] == ["methods_without_lines"]


def test_sources_tool_and_version_are_read_from_a_small_report() -> None:
    report = parse(ONE_CLASS)
    assert (report.format, report.tool, report.metadata["tool_version"]) == ("cobertura", "gcovr", "8.8")
    assert report.source_roots == ("/build/demo",)


REPEATED = b"""<coverage line-rate="0.5" lines-valid="4" lines-covered="2" branches-valid="4" branches-covered="2">
  <packages><package name="."><classes>
    <class name="h" filename="inc/util.h"><lines>
      <line number="5" hits="1" branch="true" condition-coverage="50% (1/2)"/>
      <line number="5" hits="0" branch="true" condition-coverage="50% (1/2)"/>
      <line number="5" hits="2" branch="false"/>
      <line number="6" hits="0" branch="false"/>
    </lines></class>
  </classes></package></packages>
</coverage>
"""


def test_repeated_lines_are_summed_once_per_line_while_the_root_totals_are_kept() -> None:
    report = parse(REPEATED, format="cobertura")
    assert report.lines["line"].tolist() == [5, 6]
    assert report.lines["hits"].tolist() == [3, 0]
    assert report.totals["lines"].to_dict() == {"found": 4, "hit": 2}
    (warning,) = report.warnings
    assert warning.code == "repeated_lines"
    assert "4 class-level <line> elements name 2 distinct (file, line) pairs" in warning.message


def test_each_repeat_of_a_line_keeps_its_own_branch_outcomes_in_its_own_block() -> None:
    branches = parse(REPEATED, format="cobertura").branches
    assert branches["block"].tolist() == [0, 0, 1, 1]
    assert branches["taken"].tolist() == [1, 0, 1, 0]


def test_classes_that_share_a_filename_are_one_file_with_their_lines_merged() -> None:
    doc = b"""<coverage line-rate="1" lines-valid="3" lines-covered="3" branches-valid="0" branches-covered="0">
      <packages><package name="p"><classes>
        <class name="A" filename="p/A.java"><methods/><lines><line number="1" hits="1"/><line number="2" hits="1"/></lines></class>
        <class name="A$1" filename="p/A.java"><methods/><lines><line number="2" hits="4"/></lines></class>
      </classes></package></packages></coverage>"""
    report = parse(doc, format="cobertura")
    assert [f.path for f in report.files] == ["p/A.java"]
    assert report.lines["hits"].tolist() == [1, 5]


def test_a_root_without_totals_gets_them_from_the_detail_with_a_warning() -> None:
    doc = b"""<coverage line-rate="0.5"><packages><package><classes>
      <class filename="a.py"><lines><line number="1" hits="1"/><line number="2" hits="0"/></lines></class>
    </classes></package></packages></coverage>"""
    report = parse(doc, format="cobertura")
    assert report.totals["lines"].to_dict() == {"found": 2, "hit": 1}
    assert report.totals["branches"].to_dict() == {"found": 0, "hit": 0}
    assert [w.code for w in report.warnings] == ["totals_from_detail", "totals_from_detail"]


def test_a_root_that_disagrees_with_its_lines_is_kept_and_both_figures_are_named() -> None:
    doc = b"""<coverage line-rate="1" lines-valid="10" lines-covered="7" branches-valid="0" branches-covered="0">
      <packages><package><classes>
      <class filename="a.py"><lines><line number="1" hits="1"/><line number="2" hits="0"/></lines></class>
    </classes></package></packages></coverage>"""
    report = parse(doc, format="cobertura")
    assert report.totals["lines"].to_dict() == {"found": 10, "hit": 7}
    (warning,) = report.warnings
    assert warning.code == "totals_differ_from_detail"
    assert "7/10" in warning.message and "1/2" in warning.message


def test_a_class_without_lines_is_still_a_file() -> None:
    doc = b"""<coverage line-rate="1" lines-valid="0" lines-covered="0" branches-valid="0" branches-covered="0">
      <packages><package><classes><class filename="empty.py"><methods/><lines/></class></classes></package></packages>
    </coverage>"""
    report = parse(doc, format="cobertura")
    assert [f.path for f in report.files] == ["empty.py"]
    assert len(report.lines) == 0 and len(report.branches) == 0 and len(report.functions) == 0


# -- detection ------------------------------------------------------------------
@pytest.mark.parametrize(
    "head",
    [
        b'<coverage line-rate="1" branch-rate="1" version="1" timestamp="1">',
        b"<?xml version='1.0'?>\n<!-- gcovr -->\n<!DOCTYPE coverage SYSTEM 'coverage-04.dtd'>\n"
        b'<coverage line-rate="0.2">',
        b'<?xml version="1.0" ?>\n<coverage version="7.4" timestamp="1" lines-valid="1" line-rate="1">',
    ],
)
def test_a_coverage_root_with_cobertura_attributes_is_sniffed(head: bytes) -> None:
    assert cobertura.sniff(head, head)


@pytest.mark.parametrize(
    "head",
    [
        b'<?xml version="1.0"?>\n<coverage generated="1" clover="4.4.1"><project>',  # Clover
        b'<coverage version="1"><file path="a.py">',  # SonarQube generic coverage
        b'<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd"><report name="x">',
        b"<!-- line-rate= --><other/>",
        b"TN:\nSF:a.c\n",
    ],
)
def test_other_documents_are_not_sniffed_as_cobertura(head: bytes) -> None:
    assert not cobertura.sniff(head, head)


# -- errors ---------------------------------------------------------------------
def test_an_empty_report_is_refused_as_empty() -> None:
    assert "report is empty" in malformed(b"  \n").message


def test_a_truncated_report_is_refused_naming_the_line_where_it_stops() -> None:
    doc = ONE_CLASS[: ONE_CLASS.index(b'<line number="12"')]
    error = malformed(doc)
    assert "not well-formed XML" in error.message
    assert error.details["line"] == doc.count(b"\n") + 1


@pytest.mark.parametrize("doc", [b"\x00\x01garbage", b"garbage", b'{"json": true}'])
def test_garbage_is_refused_as_malformed(doc: bytes) -> None:
    malformed(doc)


def test_a_report_with_another_root_element_is_refused() -> None:
    assert (
        "not a Cobertura report"
        in malformed(b'<coverage-report name="x"><package/></coverage-report>').message
    )
    with pytest.raises(CoverageError) as caught:  # a JaCoCo root: the forced format is the mistake
        parse(b'<report name="x"><package/></report>', format="cobertura")
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT and "looks like jacoco" in caught.value.message


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b'<line number="2" hits="-1"/>', "hits is negative"),
        (b'<line number="2" hits="1.5"/>', "hits must be an integer"),
        (b'<line number="2" hits="NaN"/>', "hits must be an integer"),
        (b'<line number="2" hits=""/>', "hits must be an integer"),
        (b'<line number="2" hits="99999999999999999999"/>', "hits overflows"),
        (b'<line number="2"/>', "hits is missing"),
        (b'<line number="x" hits="1"/>', "line number must be an integer"),
        (b'<line number="-4" hits="1"/>', "line number is negative"),
        (b'<line number="3000000000" hits="1"/>', "line number is out of range"),
        (b'<line number="2" hits="1" condition-coverage="lots"/>', "condition-coverage must read like"),
        (b'<line number="2" hits="1" condition-coverage="50% (3/2)"/>', "condition-coverage must read like"),
    ],
)
def test_a_bad_line_attribute_is_refused_naming_its_line(line: bytes, says: str) -> None:
    """Seed: "numeric fields are validated before normalization." """
    doc = (
        b'<coverage line-rate="1" lines-valid="2" lines-covered="2" branches-valid="0" branches-covered="0">\n'
        b'<packages><package><classes>\n<class filename="a.c"><lines>\n'
        b'<line number="1" hits="1"/>\n' + line + b"\n"
        b"</lines></class></classes></package></packages></coverage>\n"
    )
    error = malformed(doc)
    assert says in error.message
    assert error.details["line"] == 5


@pytest.mark.parametrize("value", [b"NaN", b"-3", b"2.0", b"1e3"])
def test_a_bad_root_total_is_refused_naming_the_root_line(value: bytes) -> None:
    doc = b'<?xml version="1.0"?>\n<coverage line-rate="1" lines-valid="' + value + b'" lines-covered="0"/>\n'
    error = malformed(doc)
    assert "lines-valid" in error.message
    assert error.details["line"] == 2


def test_a_line_outside_any_class_is_refused_naming_its_line() -> None:
    doc = b'<coverage line-rate="1">\n<packages>\n<line number="1" hits="1"/>\n</packages></coverage>'
    error = malformed(doc)
    assert "outside a <class>" in error.message
    assert error.details["line"] == line_of(doc, b"<line ")


def test_a_class_without_a_filename_is_refused_naming_its_line() -> None:
    doc = (
        b'<coverage line-rate="1">\n<packages><package><classes>\n\n'
        b'<class name="x">\n</class></classes></package></packages></coverage>'
    )
    error = malformed(doc)
    assert "no filename" in error.message
    assert error.details["line"] == 4


def test_condition_coverage_claiming_more_outcomes_than_the_report_has_bytes_is_refused() -> None:
    doc = (
        b'<coverage line-rate="1"><packages><package><classes><class filename="a.c"><lines>'
        b'<line number="1" hits="1" branch="true" condition-coverage="0% (0/999999999)"/>'
        b"</lines></class></classes></package></packages></coverage>"
    )
    assert "branch outcomes" in malformed(doc).message
