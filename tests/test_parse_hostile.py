"""Hostile and broken reports end in a CoverageError, never a traceback or a blow-up."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import FORMATS, Limits, ReportBytes, module, parse, read_report

from . import commandline

SAMPLE = Path(__file__).resolve().parents[1] / "coverage_core" / "sample" / "reports"


def _llvm_sample() -> bytes:
    from .test_parse_llvm import encode, export

    return encode(export())


def _regions_sample() -> bytes:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "regions-v1.md").read_text()
    return doc.split("```json", 1)[1].split("```", 1)[0].encode()


SMALL_REPORTS = {
    "llvm": _llvm_sample(),
    "regions-v1": _regions_sample(),
    "lcov": b"TN:t\nSF:a.c\nFN:1,f\nFNDA:2,f\nDA:1,2\nDA:2,0\nBRDA:1,0,0,1\nBRDA:1,0,1,-\nLF:2\nLH:1\nend_of_record\n",
    "coveragepy": (SAMPLE / "step3.coverage.json").read_bytes(),
    "cobertura": (SAMPLE / "step3.cobertura.xml").read_bytes(),
    "go": b"mode: count\nexample.com/m/a.go:3.10,5.2 2 1\nexample.com/m/a.go:6.1,7.2 1 0\n",
    "istanbul": json.dumps(
        {
            "/src/a.js": {
                "path": "/src/a.js",
                "statementMap": {"0": {"start": {"line": 1, "column": 0}, "end": {"line": 1, "column": 9}}},
                "fnMap": {},
                "branchMap": {},
                "s": {"0": 1},
                "f": {},
                "b": {},
            }
        }
    ).encode(),
    "jacoco": (
        b'<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">'
        b'<report name="r"><package name="p"><class name="p/A" sourcefilename="A.java">'
        b'<method name="f" desc="()V" line="3"><counter type="LINE" missed="0" covered="1"/></method></class>'
        b'<sourcefile name="A.java"><line nr="3" mi="0" ci="2" mb="0" cb="0"/></sourcefile></package>'
        b'<counter type="LINE" missed="0" covered="1"/></report>'
    ),
}


def test_a_report_over_the_cap_is_refused_with_how_to_raise_it(tmp_path: Path) -> None:
    """Seed: "Coverage report parsing is capped at 64 MiB" """
    report = tmp_path / "big.lcov"
    report.write_bytes(b"SF:a.c\n" + b"DA:1,1\n" * 200_000 + b"end_of_record\n")
    with pytest.raises(CoverageError) as err:
        parse(report, limits=Limits(max_report_bytes=1_000_000))
    assert err.value.code is ErrorCode.REPORT_TOO_LARGE
    assert "COVERAGE_MCP_MAX_REPORT_BYTES" in err.value.suggestion


def test_a_small_gzip_that_inflates_past_the_cap_is_refused_without_inflating_it_whole() -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 100_000
    with pytest.raises(CoverageError) as err:
        read_report(io.BytesIO(bomb), Limits(max_report_bytes=4 * 1024 * 1024))
    assert err.value.code is ErrorCode.REPORT_TOO_LARGE


def test_a_small_zstd_that_inflates_past_the_cap_is_refused() -> None:
    bomb = zstandard.ZstdCompressor(level=19).compress(b"DA:1,1\n" * 5_000_000)
    with pytest.raises(CoverageError) as err:
        read_report(bomb, Limits(max_report_bytes=1024 * 1024))
    assert err.value.code is ErrorCode.REPORT_TOO_LARGE


def test_gzip_and_zstd_reports_parse_like_the_plain_file() -> None:
    plain = SMALL_REPORTS["lcov"]
    expected = parse(plain).summary()
    assert parse(gzip.compress(plain)).summary() == expected
    assert parse(zstandard.ZstdCompressor().compress(plain)).summary() == expected


def test_a_truncated_gzip_stream_is_a_malformed_report() -> None:
    broken = gzip.compress(SMALL_REPORTS["lcov"])[:20]
    with pytest.raises(CoverageError) as err:
        parse(broken)
    assert err.value.code is ErrorCode.MALFORMED_REPORT


@pytest.mark.parametrize("content", [b"", b"   \n\n", b"\xef\xbb\xbf"])
def test_an_empty_report_is_a_clean_error(content: bytes) -> None:
    with pytest.raises(CoverageError) as err:
        parse(content)
    assert err.value.code is ErrorCode.MALFORMED_REPORT
    assert "empty" in err.value.message


def test_garbage_is_refused_with_the_list_of_formats() -> None:
    with pytest.raises(CoverageError) as err:
        parse(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR garbage")
    assert err.value.code is ErrorCode.UNKNOWN_FORMAT
    for fmt in FORMATS:
        assert fmt in err.value.suggestion


def test_a_missing_report_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(CoverageError) as err:
        parse(tmp_path / "nope.info")
    assert err.value.code is ErrorCode.NOT_FOUND
    assert "nope.info" in err.value.message


def test_an_unknown_format_name_is_refused_before_reading() -> None:
    with pytest.raises(CoverageError) as err:
        parse(b"whatever", format="clover")
    assert err.value.code is ErrorCode.UNKNOWN_FORMAT


@pytest.mark.parametrize("fmt", sorted(SMALL_REPORTS))
def test_each_small_sample_is_detected_as_its_own_format(fmt: str) -> None:
    assert parse(SMALL_REPORTS[fmt]).format == fmt


def test_the_cli_answers_a_bad_report_with_exit_2_and_a_json_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.lcov"
    bad.write_bytes(b"SF:a.c\nDA:1,-5\nend_of_record\n")
    out = commandline.cli("parse", str(bad), "--json")
    assert out.returncode == 2
    assert out.stdout == ""
    error = json.loads(out.stderr)["error"]
    assert error["code"] == "malformed_report"
    assert "bad.lcov:2" in error["message"]
    assert error["suggestion"]
    plain = commandline.cli("parse", str(bad))
    assert plain.returncode == 2
    assert "Traceback" not in plain.stderr and "malformed_report" in plain.stderr


def _mutations(data: bytes) -> st.SearchStrategy[bytes]:
    """Truncations, byte flips, digit swaps and splices of a valid report."""

    @st.composite
    def mutate(draw: st.DrawFn) -> bytes:
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 6))):
            if not out:
                break
            kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "number"]))
            i = draw(st.integers(0, len(out) - 1))
            if kind == "truncate":
                del out[i:]
            elif kind == "flip":
                out[i] = draw(st.integers(0, 255))
            elif kind == "insert":
                out[i:i] = draw(
                    st.sampled_from(
                        [
                            b"-",
                            b"1e999",
                            b"NaN",
                            b"99999999999999999999999",
                            b"\0",
                            b",",
                            b"<",
                            b'"',
                            b"{",
                            b"\n",
                        ]
                    )
                )
            elif kind == "delete":
                del out[i : i + draw(st.integers(1, 20))]
            else:
                out[i:i] = b"-1.5"
        return bytes(out)

    return mutate()


@pytest.mark.parametrize("fmt", sorted(SMALL_REPORTS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_reports_raise_nothing_but_coverage_error(fmt: str, data: st.DataObject) -> None:
    mutated = data.draw(_mutations(SMALL_REPORTS[fmt]))
    _parse_unwrapped(mutated, fmt)
    try:
        parse(mutated)
    except CoverageError:
        pass


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@settings(max_examples=100, deadline=None)
@given(blob=st.binary(max_size=2000))
def test_random_bytes_raise_nothing_but_coverage_error_in_every_parser(fmt: str, blob: bytes) -> None:
    _parse_unwrapped(blob, fmt)


def _parse_unwrapped(blob: bytes, fmt: str) -> None:
    """Call the format module itself, not the registry's safety net, so a stray
    KeyError or IndexError inside a parser fails the test instead of being wrapped."""
    try:
        module(fmt).parse_bytes(ReportBytes(blob, "<fuzz>", None, len(blob)))
    except CoverageError:
        pass


def test_a_parser_bug_is_internal_not_blamed_on_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    from coverage_core.parsers import lcov, parse_bytes

    def broken(report: ReportBytes) -> None:
        raise AttributeError("'NoneType' object has no attribute 'x'")

    monkeypatch.setattr(lcov, "parse_bytes", broken)  # stands in for a bug, not for DuckDB, git or a daemon
    with pytest.raises(CoverageError) as caught:
        parse_bytes(ReportBytes(b"SF:a\nDA:1,1\nend_of_record\n", "r.info", None, 26), "lcov")
    assert caught.value.code is ErrorCode.INTERNAL and "bug in coverage-mcp" in caught.value.suggestion


def test_a_damaged_report_is_still_malformed_report() -> None:
    from coverage_core.parsers import parse_bytes

    with pytest.raises(CoverageError) as caught:
        parse_bytes(
            ReportBytes(
                b'{"meta": {"format": 3}, "files": {"a.py": {"executed_lines": "x"}}}', "c.json", None, 70
            ),
            "coveragepy",
        )
    assert caught.value.code is ErrorCode.MALFORMED_REPORT
