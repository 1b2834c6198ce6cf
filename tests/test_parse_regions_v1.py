"""regions-v1: the schema, the same rules in code, totals, lines, tests and errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import ReportBytes, detect, parse, regions_v1
from coverage_core.report import OBS_LINE, REGION_BRANCH, REGION_CODE, REGION_SKIPPED

from .jsonfuzz import odd_documents

DOC = Path(__file__).resolve().parents[1] / "docs" / "regions-v1.md"
SCHEMA = regions_v1.SCHEMA_PATH


def region(start: int, end: int, hits: int, **extra) -> dict:
    return {"start_line": start, "start_col": 1, "end_line": end, "end_col": 2, "hits": hits, **extra}


def document(*files: dict, **top) -> dict:
    return {"format": "coverage-mcp-regions-v1", "version": 1, "files": list(files), **top}


def parse_doc(doc: dict):
    return parse(json.dumps(doc).encode(), format="regions-v1")


def refused(doc: dict) -> CoverageError:
    with pytest.raises(CoverageError) as info:
        parse_doc(doc)
    assert info.value.code == ErrorCode.MALFORMED_REPORT
    return info.value


def lines_of(report, file: int = 0) -> dict[int, int]:
    rows = report.lines["file"] == file
    return dict(zip(report.lines["line"][rows].tolist(), report.lines["hits"][rows].tolist(), strict=True))


def docs_example() -> dict:
    text = DOC.read_text()
    block = re.search(r"## Example\n\n```json\n(.*?)\n```", text, re.S)
    assert block, "docs/regions-v1.md lost its example"
    return json.loads(block.group(1))


def test_the_documented_example_parses_to_the_figures_the_documentation_states() -> None:
    report = parse_doc(docs_example())
    summary = report.summary()
    assert (summary["files"], summary["tests"]) == (2, 2)
    assert summary["totals"] == {"lines": {"found": 9, "hit": 8}, "regions": {"found": 2, "hit": 1}}
    prose = " ".join(DOC.read_text().split())
    assert "2 files, 2 named tests, regions 1 of 2 hit and lines 8 of 9 hit" in prose


def test_the_documented_example_and_the_schema_agree() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(docs_example())


def test_lines_are_every_line_a_code_region_spans_hit_when_any_covering_region_hits() -> None:
    report = parse_doc(
        document(
            {
                "path": "a.wgsl",
                "regions": [
                    region(1, 4, 3),
                    region(2, 3, 0),
                    region(6, 6, 0),
                    region(8, 9, 5, kind="gap"),
                ],
            }
        )
    )
    assert lines_of(report) == {1: 3, 2: 3, 3: 3, 4: 3, 6: 0}
    assert report.totals["lines"].to_dict() == {"found": 5, "hit": 4}


def test_only_code_regions_count_as_regions_but_every_kind_is_kept() -> None:
    report = parse_doc(
        document(
            {
                "path": "a.wgsl",
                "regions": [
                    region(1, 2, 3),
                    region(3, 3, 0),
                    region(4, 4, 0, kind="skipped"),
                    region(1, 1, 2, kind="branch"),
                ],
            }
        )
    )
    assert report.totals["regions"].to_dict() == {"found": 2, "hit": 1}
    assert report.regions["kind"].tolist() == [REGION_CODE, REGION_CODE, REGION_SKIPPED, REGION_BRANCH]


def test_explicit_lines_replace_the_derived_ones() -> None:
    report = parse_doc(document({"path": "a.wgsl", "regions": [region(1, 4, 3)], "lines": [[2, 3], [4, 0]]}))
    assert lines_of(report) == {2: 3, 4: 0}


def test_file_identity_fields_reach_the_report_and_the_digest_is_lowercased() -> None:
    report = parse_doc(
        document(
            {
                "path": "a.wgsl",
                "regions": [],
                "source_sha256": "AB" * 32,
                "logical_source_id": "blur",
                "variant": "fragment",
            },
            tool={"name": "wgsl-cov", "version": "0.3"},
        )
    )
    info = report.files[0]
    assert (info.source_sha256, info.logical_source_id, info.variant) == ("ab" * 32, "blur", "fragment")
    assert (report.tool, report.metadata["tool_version"]) == ("wgsl-cov", "0.3")


def test_tests_named_on_regions_become_line_observations_by_index_or_name() -> None:
    report = parse_doc(
        document(
            {"path": "a.wgsl", "regions": [region(1, 2, 3, tests=[0, "late"]), region(2, 3, 1, tests=[0])]},
            tests=["early"],
        )
    )
    assert report.tests == ("early", "late")
    obs = report.test_observations
    rows = set(zip(*(obs[c].tolist() for c in ("test", "line", "kind", "hits")), strict=True))
    # Line 2 is in both regions hit by test 0: still one observation.
    assert rows == {
        (0, 1, OBS_LINE, 1),
        (0, 2, OBS_LINE, 1),
        (0, 3, OBS_LINE, 1),
        (1, 1, OBS_LINE, 1),
        (1, 2, OBS_LINE, 1),
    }


def test_an_empty_file_list_is_a_valid_document_with_zero_totals() -> None:
    report = parse_doc(document())
    assert report.files == ()
    assert {k: c.to_dict() for k, c in report.totals.items()} == {
        "regions": {"found": 0, "hit": 0},
        "lines": {"found": 0, "hit": 0},
    }


def test_regions_v1_is_detected_and_coverage_py_json_is_not_claimed() -> None:
    assert detect(json.dumps(docs_example()).encode()) == "regions-v1"
    assert not regions_v1.sniff(b'{"meta": {"format": 3, "version": "7.6"}}', b"")


# Each case: the document, the path and words of the error, and whether the
# JSON Schema can tell (False: a rule the schema cannot state).
def with_region(**changes) -> dict:
    r = region(1, 2, 3)
    r.update(changes)
    return document({"path": "a.wgsl", "regions": [region(1, 1, 0), r]})


def without(key: str) -> dict:
    doc = with_region()
    del doc["files"][0]["regions"][1][key]
    return doc


INVALID = [
    (with_region(hits=-1), "$.files[0].regions[1].hits", "between 0 and", True),
    (with_region(hits=1.5), "$.files[0].regions[1].hits", "must be an integer", True),
    (with_region(hits=True), "$.files[0].regions[1].hits", "must be an integer, got true", True),
    (with_region(hits="3"), "$.files[0].regions[1].hits", "must be an integer", True),
    (with_region(hits=2**63), "$.files[0].regions[1].hits", "between 0 and", True),
    (with_region(start_line=0), "$.files[0].regions[1].start_line", "between 1 and", True),
    (with_region(end_col=2**31), "$.files[0].regions[1].end_col", "between 1 and", True),
    (with_region(hit=3), "$.files[0].regions[1].hit", "unknown key", True),
    (without("hits"), "$.files[0].regions[1].hits", "required", True),
    (with_region(kind="loop"), "$.files[0].regions[1].kind", "must be one of", True),
    (with_region(tests=[{"name": "x"}]), "$.files[0].regions[1].tests[0]", "non-empty string", True),
    (with_region(end_line=0), "$.files[0].regions[1].end_line", "between 1 and", True),
    (with_region(start_line=5), "$.files[0].regions[1]", "ends before it starts", False),
    (
        with_region(start_line=2, start_col=5, end_col=4),
        "$.files[0].regions[1]",
        "ends before it starts",
        False,
    ),
    (with_region(tests=[3]), "$.files[0].regions[1].tests[0]", "test index 3", False),
    (with_region(hits=0, tests=["t"]), "$.files[0].regions[1].tests", "hits are 0", False),
    (with_region(kind="gap", tests=["t"]), "$.files[0].regions[1].tests", "only code and branch", False),
    (
        document({"path": "a", "regions": [], "lines": [[3, 1], [3, 2]]}),
        "$.files[0].lines[1]",
        "listed twice",
        False,
    ),
    (
        document({"path": "a", "regions": [], "lines": [[3]]}),
        "$.files[0].lines[0]",
        "[line, hits] pair",
        True,
    ),
    (
        document({"path": "a", "regions": [], "lines": [[0, 1]]}),
        "$.files[0].lines[0][0]",
        "between 1 and",
        True,
    ),
    (
        document({"path": "a", "regions": []}, {"path": "a", "regions": []}),
        "$.files[1].path",
        "already appears",
        False,
    ),
    (
        document({"path": "a", "regions": [], "source_sha256": "abc"}),
        "$.files[0].source_sha256",
        "64 hexadecimal",
        True,
    ),
    (document({"path": "", "regions": []}), "$.files[0].path", "non-empty string", True),
    (document({"path": "a"}), "$.files[0].regions", "required", True),
    (document({"path": "a", "regions": {}}), "$.files[0].regions", "must be a list", True),
    (document(tests=["t", "t"]), "$.tests[1]", "listed twice", True),
    (document(tool={"name": "x", "url": "y"}), "$.tool.url", "unknown key", True),
    (document(extra=1), "$.extra", "unknown key", True),
    ({"format": "coverage-mcp-regions-v1", "version": 1}, "$.files", "required", True),
    ({**document(), "version": 2}, "$.version", "reads version 1", True),
    ({**document(), "version": "1"}, "$.version", "unsupported version", True),
    ({**document(), "format": "coverage-mcp-regions-v2"}, "$.format", "must be", True),
]


@pytest.mark.parametrize(("doc", "path", "says", "_schema"), INVALID, ids=[f"{c[1]}:{c[2]}" for c in INVALID])
def test_invalid_documents_are_refused_naming_the_json_path(
    doc: dict, path: str, says: str, _schema: bool
) -> None:
    message = refused(doc).message
    assert f"<bytes>: {path}: " in message
    assert says in message


@pytest.mark.parametrize(
    ("doc", "path", "says", "schema_can_tell"), INVALID, ids=[f"{c[1]}:{c[2]}" for c in INVALID]
)
def test_the_schema_refuses_what_the_code_refuses_wherever_a_schema_can_say_it(
    doc: dict, path: str, says: str, schema_can_tell: bool
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    assert (not validator.is_valid(doc)) == schema_can_tell


def test_a_json_syntax_error_names_its_line() -> None:
    with pytest.raises(CoverageError) as info:
        parse(b'{"format": "coverage-mcp-regions-v1",\n"version": 1,\n"files": [}', format="regions-v1")
    assert info.value.details["line"] == 3


def test_nan_hits_are_refused() -> None:
    text = json.dumps(with_region()).replace('"hits": 3', '"hits": NaN')
    with pytest.raises(CoverageError) as info:
        parse(text.encode(), format="regions-v1")
    assert "$.files[0].regions[1].hits: must be an integer, got nan" in info.value.message


def test_regions_spanning_billions_of_lines_are_refused_without_expanding_them() -> None:
    error = refused(document({"path": "a", "regions": [region(1, 2_000_000_000, 1)]}))
    assert "$.files[0].regions: regions span" in error.message


def test_any_value_replaced_by_any_odd_value_ends_in_a_report_or_a_coverage_error() -> None:
    for doc in odd_documents(docs_example()):
        blob = json.dumps(doc).encode()
        try:
            regions_v1.parse_bytes(
                ReportBytes(blob, "<fuzz>", None, len(blob))
            )  # not the registry's safety net
        except CoverageError:
            pass
