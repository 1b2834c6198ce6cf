"""The JaCoCo parser: report-level totals, sourcefile detail, methods, the CSV report, errors."""

from __future__ import annotations

from functools import cache

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import detect, jacoco, parse
from coverage_core.report import Counter

from . import corpus

XML = "jacoco/beanshell-2.0b4.jacoco.xml"
CSV = "jacoco/beanshell-2.0b4.jacoco.csv"
RENAMES = {
    "instruction": "instructions",
    "branch": "branches",
    "line": "lines",
    "complexity": "complexity",
    "method": "functions",
    "class": "classes",
}


def entry(name: str) -> dict:
    return next(e for e in corpus.entries() if e["file"] == name)


@cache
def beanshell():
    return parse(corpus.path(XML))


def malformed(doc: bytes) -> CoverageError:
    with pytest.raises(CoverageError) as caught:
        parse(doc, format="jacoco")
    assert caught.value.code is ErrorCode.MALFORMED_REPORT
    return caught.value


DOCTYPE = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">'
)

# An outer class and its inner class share line 3; the class counters count it
# twice, the sourcefile and report counters once.
SMALL = (
    DOCTYPE
    + b"""
<report name="demo">
  <sessioninfo id="unit" start="1" dump="2"/>
  <sessioninfo id="integration" start="3" dump="4"/>
  <package name="org/demo">
    <class name="org/demo/Outer" sourcefilename="Outer.java">
      <method name="&lt;init&gt;" desc="()V" line="3">
        <counter type="INSTRUCTION" missed="0" covered="3"/><counter type="LINE" missed="0" covered="1"/>
        <counter type="COMPLEXITY" missed="0" covered="1"/><counter type="METHOD" missed="0" covered="1"/>
      </method>
      <method name="pick" desc="(I)I" line="5">
        <counter type="INSTRUCTION" missed="4" covered="5"/><counter type="BRANCH" missed="1" covered="1"/>
        <counter type="LINE" missed="1" covered="1"/><counter type="COMPLEXITY" missed="1" covered="1"/>
        <counter type="METHOD" missed="0" covered="1"/>
      </method>
      <counter type="INSTRUCTION" missed="4" covered="8"/><counter type="LINE" missed="1" covered="2"/>
      <counter type="METHOD" missed="0" covered="2"/><counter type="CLASS" missed="0" covered="1"/>
    </class>
    <class name="org/demo/Outer$Inner" sourcefilename="Outer.java">
      <method name="run" desc="()V" line="3">
        <counter type="INSTRUCTION" missed="2" covered="0"/><counter type="LINE" missed="1" covered="0"/>
        <counter type="METHOD" missed="1" covered="0"/>
      </method>
      <counter type="INSTRUCTION" missed="2" covered="0"/><counter type="LINE" missed="1" covered="0"/>
      <counter type="METHOD" missed="1" covered="0"/><counter type="CLASS" missed="1" covered="0"/>
    </class>
    <class name="org/demo/Listener" sourcefilename="Listener.java"/>
    <sourcefile name="Outer.java">
      <line nr="3" mi="2" ci="3" mb="0" cb="0"/>
      <line nr="5" mi="0" ci="5" mb="1" cb="1"/>
      <line nr="6" mi="4" ci="0" mb="0" cb="0"/>
      <counter type="INSTRUCTION" missed="6" covered="8"/><counter type="BRANCH" missed="1" covered="1"/>
      <counter type="LINE" missed="1" covered="2"/><counter type="METHOD" missed="1" covered="2"/>
      <counter type="CLASS" missed="1" covered="1"/>
    </sourcefile>
    <sourcefile name="Listener.java"/>
  </package>
  <counter type="INSTRUCTION" missed="6" covered="8"/>
  <counter type="BRANCH" missed="1" covered="1"/>
  <counter type="LINE" missed="1" covered="2"/>
  <counter type="METHOD" missed="1" covered="2"/>
  <counter type="CLASS" missed="1" covered="1"/>
</report>
"""
)


# -- the corpus XML -------------------------------------------------------------
def test_the_corpus_report_has_the_report_level_counters_as_totals() -> None:
    canon = entry(XML)["canonical_totals"]
    report = beanshell()
    assert (report.format, report.tool) == ("jacoco", "jacoco")
    for key, name in RENAMES.items():
        assert report.totals[name].to_dict() == canon[key], name
    assert len(report.files) == canon["files (sourcefile elements)"]


def test_the_corpus_reports_line_detail_agrees_with_its_sourcefile_line_elements() -> None:
    lines_seen = entry(XML)["tool_reported_totals"]["from_sourcefile_line_elements"]
    report = beanshell()
    assert len(report.lines) == lines_seen["lines_covered(ci>0)"] + lines_seen["lines_missed(ci==0,mi>0)"]
    assert int((report.lines["hits"] > 0).sum()) == lines_seen["lines_covered(ci>0)"]
    branches = lines_seen["branches_missed(sum mb)"] + lines_seen["branches_covered(sum cb)"]
    assert len(report.branches) == branches
    assert int(report.branches["taken"].sum()) == lines_seen["branches_covered(sum cb)"]
    assert report.warnings == ()


def test_the_corpus_reports_methods_are_functions_hit_when_their_method_counter_is_covered() -> None:
    report = beanshell()
    assert len(report.functions) == report.totals["functions"].found
    assert int(report.functions["hits"].sum()) == report.totals["functions"].hit
    assert "ParserTokenManager.setDebugStream(Ljava/io/PrintStream;)V" in set(report.functions["name"])
    assert any(name.startswith("Interpreter.<init>(") for name in report.functions["name"])


def test_the_corpus_reports_files_are_package_slash_sourcefile_with_their_own_counters() -> None:
    report = beanshell()
    paths = {f.path for f in report.files}
    assert "bsh/Interpreter.java" in paths
    assert all("/" in path and path.endswith(".java") for path in paths)
    for name in ("lines", "branches", "instructions", "complexity", "functions", "classes"):
        found, hit = report.file_totals[name]
        assert Counter(int(found.sum()), int(hit.sum())) == report.totals[name], name


def test_the_corpus_reports_sessions_are_kept() -> None:
    assert beanshell().metadata["sessions"] == entry(XML)["tool_reported_totals"]["sessions"]


def test_the_corpus_report_is_detected_as_jacoco() -> None:
    assert detect(corpus.path(XML).read_bytes()) == "jacoco"


# -- the corpus CSV -------------------------------------------------------------
def test_the_csv_report_sums_its_class_rows_and_counts_the_classes() -> None:
    sums = entry(XML)["tool_reported_totals"]["csv_report_column_sums"]
    report = parse(corpus.path(CSV))
    assert (report.format, report.tool, report.metadata["dialect"]) == ("jacoco", "jacoco", "csv")
    for key, value in sums.items():
        name = RENAMES[key.lower()]
        assert report.totals[name] == Counter(value["missed"] + value["covered"], value["covered"]), name
    assert report.totals["classes"].found == entry(CSV)["canonical_totals"]["class_rows"]
    # JaCoCo's XML says 99 of the same 139 classes ran.
    assert report.totals["classes"].to_dict() == {"found": 139, "hit": 99}
    assert len(report.files) == 0 and len(report.lines) == 0


def test_the_csv_report_warns_that_lines_summed_over_classes_can_over_count() -> None:
    report = parse(corpus.path(CSV))
    assert [w.code for w in report.warnings] == ["lines_summed_over_classes"]
    # Indeed: the XML's report-level LINE counter is smaller.
    assert report.totals["lines"].found > beanshell().totals["lines"].found


def test_the_csv_report_is_sniffed_by_its_exact_header_only() -> None:
    data = corpus.path(CSV).read_bytes()
    assert detect(data) == "jacoco"
    renamed = data.replace(b"METHOD_COVERED", b"METHOD_HIT", 1)
    assert not jacoco.sniff(renamed, renamed)
    longer = data.replace(b"METHOD_COVERED", b"METHOD_COVERED,CLASS_MISSED", 1)
    assert not jacoco.sniff(longer, longer)


CSV_HEAD = jacoco.CSV_HEADER + b"\n"


def test_a_csv_row_with_a_bad_number_is_refused_naming_its_line() -> None:
    doc = CSV_HEAD + b"g,p,A,1,2,0,0,1,1,1,1,0,1\ng,p,B,1,2,0,0,1,x,1,1,0,1\n"
    error = malformed(doc)
    assert "LINE_COVERED must be an integer" in error.message
    assert error.details["line"] == 3


def test_a_csv_row_with_too_few_fields_is_refused_naming_its_line() -> None:
    error = malformed(CSV_HEAD + b"g,p,A,1,2\n")
    assert "expected 13 fields, got 5" in error.message
    assert error.details["line"] == 2


def test_a_csv_class_name_with_a_quoted_comma_is_one_row() -> None:
    report = parse(CSV_HEAD + b'"Group, with comma",p,A,1,2,0,0,1,1,1,1,0,1\n')
    assert report.totals["classes"].to_dict() == {"found": 1, "hit": 1}
    assert report.totals["instructions"].to_dict() == {"found": 3, "hit": 2}


# -- small reports --------------------------------------------------------------
def test_report_counters_are_the_totals_even_though_class_counters_add_up_to_more() -> None:
    report = parse(SMALL)
    assert report.totals["lines"].to_dict() == {"found": 3, "hit": 2}  # the classes say 4 lines
    assert report.totals["instructions"].to_dict() == {"found": 14, "hit": 8}
    assert report.totals["classes"].to_dict() == {"found": 2, "hit": 1}  # the interface is not a class


def test_a_counter_type_absent_from_the_report_is_a_zero_total() -> None:
    assert parse(SMALL).totals["complexity"].to_dict() == {"found": 0, "hit": 0}


def test_a_line_counts_its_covered_instructions_and_has_one_branch_row_per_outcome() -> None:
    report = parse(SMALL)
    assert report.lines["line"].tolist() == [3, 5, 6]
    assert report.lines["hits"].tolist() == [3, 5, 0]
    assert report.branches["line"].tolist() == [5, 5]
    assert report.branches["taken"].tolist() == [1, 0]


def test_methods_become_functions_named_by_class_method_and_descriptor() -> None:
    functions = parse(SMALL).functions
    assert functions["name"].tolist() == ["Outer.<init>()V", "Outer.pick(I)I", "Outer$Inner.run()V"]
    assert functions["start_line"].tolist() == [3, 5, 3]
    assert functions["hits"].tolist() == [1, 1, 0]


def test_every_sourcefile_is_a_file_and_every_session_is_kept() -> None:
    report = parse(SMALL)
    assert [f.path for f in report.files] == ["org/demo/Outer.java", "org/demo/Listener.java"]
    assert report.metadata["sessions"] == ["unit", "integration"]
    assert report.metadata["name"] == "demo"


def test_packages_inside_groups_and_the_default_package_name_their_files_the_same_way() -> None:
    doc = b"""<report name="r"><group name="module-a"><group name="nested">
        <package name="a/b"><sourcefile name="X.java"><line nr="1" mi="0" ci="1" mb="0" cb="0"/></sourcefile></package>
      </group></group>
      <package name=""><sourcefile name="Y.java"><line nr="2" mi="1" ci="0" mb="0" cb="0"/></sourcefile></package>
      <counter type="LINE" missed="1" covered="1"/></report>"""
    report = parse(doc)
    assert [f.path for f in report.files] == ["a/b/X.java", "Y.java"]
    assert report.totals["lines"].to_dict() == {"found": 2, "hit": 1}


def test_a_report_whose_lines_disagree_with_its_counters_keeps_the_counters_and_warns() -> None:
    doc = b"""<report name="r"><package name="p"><sourcefile name="X.java">
      <line nr="1" mi="0" ci="1" mb="0" cb="0"/></sourcefile></package>
      <counter type="LINE" missed="5" covered="1"/></report>"""
    report = parse(doc)
    assert report.totals["lines"].to_dict() == {"found": 6, "hit": 1}
    (warning,) = report.warnings
    assert warning.code == "totals_differ_from_detail"
    assert "1/6" in warning.message and "1/1" in warning.message


def test_methods_of_classes_without_a_source_file_are_left_out_with_a_warning() -> None:
    doc = b"""<report name="r"><package name="p"><class name="p/Gen">
      <method name="m" desc="()V"><counter type="METHOD" missed="0" covered="1"/></method></class></package>
      <counter type="METHOD" missed="0" covered="1"/></report>"""
    report = parse(doc)
    assert len(report.functions) == 0
    assert [w.code for w in report.warnings] == ["methods_without_source"]


# -- detection ------------------------------------------------------------------
@pytest.mark.parametrize(
    "head",
    [
        DOCTYPE + b'<report name="x">',
        b'<?xml version="1.0"?>\n<report name="x">\n  <sessioninfo id="s" start="1" dump="2"/>',
        b'<report name="x"><package name="p">',
    ],
)
def test_a_jacoco_report_is_sniffed_by_its_doctype_or_its_first_child(head: bytes) -> None:
    assert jacoco.sniff(head, head)


@pytest.mark.parametrize(
    "head",
    [
        b'<?xml version="1.0"?>\n<report><stats><packages value="1"/>',  # EMMA
        b'<coverage line-rate="1">',
        b"GROUP,PACKAGE,CLASS\n",
    ],
)
def test_other_documents_are_not_sniffed_as_jacoco(head: bytes) -> None:
    assert not jacoco.sniff(head, head)


# -- errors ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("counter", "says"),
    [
        (b'<counter type="LINE" missed="-1" covered="1"/>', "<report> counter missed is negative"),
        (b'<counter type="LINE" missed="1" covered="NaN"/>', "<report> counter covered must be an integer"),
        (b'<counter type="LINE" missed="1"/>', "<report> counter covered is missing"),
        (b'<counter type="LINES" missed="1" covered="1"/>', "unknown counter type (excerpt: 'LINES')"),
    ],
)
def test_a_bad_counter_is_refused_naming_its_line(counter: bytes, says: str) -> None:
    doc = b'<report name="r">\n<counter type="BRANCH" missed="1" covered="1"/>\n' + counter + b"\n</report>\n"
    error = malformed(doc)
    assert says in error.message
    assert error.details["line"] == 3


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b'<line nr="2" mi="0" ci="x" mb="0" cb="0"/>', "<line> ci must be an integer"),
        (b'<line nr="2" mi="0" ci="1" mb="1.5" cb="0"/>', "<line> mb must be an integer"),
        (b'<line nr="-2" mi="0" ci="1" mb="0" cb="0"/>', "<line> nr is negative"),
        (b'<line nr="2" mi="0" ci="1" mb="0"/>', "<line> cb is missing"),
    ],
)
def test_a_bad_line_is_refused_naming_its_line(line: bytes, says: str) -> None:
    doc = (
        b'<report name="r">\n<package name="p">\n<sourcefile name="A.java">\n'
        b'<line nr="1" mi="0" ci="1" mb="0" cb="0"/>\n' + line + b"\n</sourcefile></package></report>\n"
    )
    error = malformed(doc)
    assert says in error.message
    assert error.details["line"] == 5


def test_a_line_outside_a_sourcefile_is_refused_naming_its_line() -> None:
    doc = b'<report name="r">\n<package name="p">\n<line nr="1" mi="0" ci="1" mb="0" cb="0"/></package></report>'
    error = malformed(doc)
    assert "outside a <sourcefile>" in error.message
    assert error.details["line"] == 3


def test_a_truncated_report_is_refused_naming_the_line_where_it_stops() -> None:
    doc = SMALL[: SMALL.index(b'<line nr="6"')]
    error = malformed(doc)
    assert "not well-formed XML" in error.message
    assert error.details["line"] == doc.count(b"\n") + 1


@pytest.mark.parametrize("doc", [b"", b"garbage"])
def test_an_empty_garbage_or_foreign_report_is_refused(doc: bytes) -> None:
    malformed(doc)


def test_forcing_jacoco_on_a_cobertura_report_is_refused_naming_what_it_looks_like() -> None:
    with pytest.raises(CoverageError) as caught:
        parse(b'<coverage line-rate="1"/>', format="jacoco")
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    assert "looks like cobertura" in caught.value.message and "Drop the format" in caught.value.suggestion
