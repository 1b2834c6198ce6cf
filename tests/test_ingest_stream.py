"""An LCOV ingest reads the report in chunks and stores it batch by batch, in one transaction.

What a user relies on: a report cut into many chunks and batches is stored exactly as an
independent reading of its text says (a naive reader here, `lcov --summary` for the totals), and a
report that turns out damaged late (after batches were already written into the transaction)
leaves nothing behind.
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.model import Snapshot
from coverage_core.parsers import ReportBytes, lcov
from coverage_core.parsers.reading import STREAM_CHUNK
from coverage_core.project import Project
from coverage_core.report import NormalizedReport

from . import corpus
from .gitrepo import make_repo
from .systemtools import require

TESTS, FILES, LINES = 10, 500, 100  # 5,000 records, 500,000 DA lines: several chunks and batches


def _hits(test: int, file: int, line: int) -> int:
    return 0 if (test + file + line) % 4 == 0 else (test * 7 + file * 13 + line) % 50


@functools.cache  # half a million DA lines, built once per form for the module
def big_report(*, repeat_first: bool = True) -> str:
    """TESTS x FILES records; with ``repeat_first``, test t0's record of f0 once more at the very end (its
    observations then merge with those of a batch written long before)."""
    out = []
    for t in range(TESTS):
        for f in range(FILES):
            out.append(_record(t, f))
    if repeat_first:
        out.append(_record(0, 0, bump=5))
    return "".join(out)


def _record(t: int, f: int, bump: int = 0) -> str:
    das = "".join(f"DA:{n},{_hits(t, f, n) + bump}\n" for n in range(1, LINES + 1))
    return f"TN:t{t}\nSF:src/f{f}.c\n{das}end_of_record\n"


def naive(text: str) -> tuple[dict[tuple[str, int], int], dict[tuple[str, str, int], int]]:
    """Per (file, line) the summed count, and per (test, file, line) the summed count where it is above 0."""
    lines: dict[tuple[str, int], int] = defaultdict(int)
    observed: dict[tuple[str, str, int], int] = defaultdict(int)
    test = path = ""
    for raw in text.splitlines():
        tag, _, value = raw.partition(":")
        if tag == "TN":
            test = value
        elif tag == "SF":
            path = value
        elif tag == "DA":
            number, count = map(int, value.split(","))
            lines[(path, number)] += count
            if count > 0:
                observed[(test, path, number)] += count
    return dict(lines), dict(observed)


def _repo(root: Path) -> Path:
    return make_repo(root / "repo", {f"src/f{f}.c": "x\n" * LINES for f in range(FILES)})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return _repo(tmp_path)


class Ingested(NamedTuple):
    project: Project
    report: Path
    snapshot: Snapshot


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ingested]:
    """``big_report()`` ingested once for the module, its project kept open: for the tests that read what was
    stored (and the one that ingests it again, which must store nothing)."""
    repo = _repo(tmp_path_factory.mktemp("ingested"))
    report = repo / "big.info"
    report.write_text(big_report())
    with open_project(repo) as project:
        yield Ingested(project, report, project.ingest(report, suite="unit"))


def stored(project, snapshot_id: str):  # type: ignore[no-untyped-def]
    con = project.store.con
    snap = project.store.snap_key(snapshot_id)
    lines = {
        (path, line): hits
        for path, line, hits in con.execute(
            "SELECT f.report_path, l.line, l.hits FROM lines l JOIN files f USING (snap, file_id) WHERE snap = ?",
            [snap],
        ).fetchall()
    }
    observed = {
        (test, path, line): hits
        for test, path, line, hits in con.execute(
            "SELECT t.name, f.report_path, o.line, o.hits FROM test_observations o "
            "JOIN test_names t USING (snap, test_id) JOIN files f USING (snap, file_id) WHERE snap = ? AND kind = 0",
            [snap],
        ).fetchall()
    }
    rows = con.execute("SELECT count(*) FROM test_observations WHERE snap = ?", [snap]).fetchall()[0][0]
    return lines, observed, rows


def test_a_report_of_many_chunks_and_batches_is_stored_as_a_naive_reading_of_its_text_says(
    ingested: Ingested,
) -> None:
    text = ingested.report.read_text()
    assert len(text) > 2 * STREAM_CHUNK and text.count("end_of_record") > lcov.BATCH_RECORDS
    want_lines, want_observed = naive(text)
    project, snap = ingested.project, ingested.snapshot
    lines, observed, rows = stored(project, snap.snapshot_id)
    assert lines == want_lines
    assert observed == want_observed
    assert rows == len(want_observed)  # the repeated record's rows were merged, not stored twice
    covered = sum(1 for hits in want_lines.values() if hits)
    assert (snap.totals["lines"].found, snap.totals["lines"].hit) == (len(want_lines), covered)
    assert project.snapshot(snap.snapshot_id).tests == TESTS


def test_the_streamed_totals_are_lcov_summarys_own(ingested: Ingested) -> None:
    out = subprocess.run(
        [require("lcov"), "--summary", str(ingested.report)], capture_output=True, text=True, check=True
    )
    m = re.search(r"lines\.+: [\d.]+% \((\d+) of (\d+) lines\)", out.stdout + out.stderr)
    assert m is not None
    snap = ingested.snapshot
    assert (snap.totals["lines"].hit, snap.totals["lines"].found) == (int(m.group(1)), int(m.group(2)))


def test_a_parse_error_late_in_a_report_leaves_no_snapshot_and_names_its_line(repo: Path) -> None:
    text = big_report(repeat_first=False) + "TN:late\nSF:src/f1.c\nDA:1,1\nDA:2,x\nend_of_record\n"
    bad_line = text.count("\n") - 1  # the line before end_of_record
    report = repo / "late.info"
    report.write_text(text)
    with open_project(repo) as project:
        with pytest.raises(CoverageError) as caught:
            project.ingest(report, suite="unit")
        assert caught.value.code == ErrorCode.MALFORMED_REPORT
        assert caught.value.details["line"] == bad_line
        con = project.store.con
        for table in ("snapshots", "files", "lines", "test_observations", "test_names"):
            assert con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == 0, table
        # the store still takes the same report once it is whole
        report.write_text(big_report(repeat_first=False))
        assert project.ingest(report, suite="unit").duplicate is False


def test_a_report_cut_off_after_many_chunks_is_refused_as_truncated_and_nothing_is_stored(repo: Path) -> None:
    text = big_report(repeat_first=False) + "TN:cut\nSF:src/f2.c\nDA:1,1\n"
    report = repo / "cut.info"
    report.write_text(text)
    with open_project(repo) as project:
        with pytest.raises(CoverageError) as caught:
            project.ingest(report, suite="unit")
        assert caught.value.code == ErrorCode.MALFORMED_REPORT
        assert caught.value.details["line"] == text.count("\n") - 2  # the record's first line, TN:cut
        assert "truncated" in caught.value.message
        assert project.store.con.execute("SELECT count(*) FROM test_observations").fetchall()[0][0] == 0


def test_a_streamed_report_ingested_twice_is_a_duplicate_and_stored_once(ingested: Ingested) -> None:
    project, first = ingested.project, ingested.snapshot  # the first time: the module's
    again = project.ingest(ingested.report, suite="unit")
    assert again.duplicate and again.snapshot_id == first.snapshot_id
    assert project.store.con.execute("SELECT count(*) FROM snapshots").fetchall()[0][0] == 1


def _rows(columns: dict[str, np.ndarray]) -> list[tuple[int, ...]]:
    return sorted(zip(*(columns[c].tolist() for c in columns)))


def _same(a: NormalizedReport, b: NormalizedReport) -> None:
    assert a.files == b.files and a.tests == b.tests and a.totals == b.totals and a.warnings == b.warnings
    for name in ("lines", "branches", "functions", "regions"):
        ta, tb = getattr(a, name), getattr(b, name)
        assert ta.columns.keys() == tb.columns.keys()
        for column in ta.columns:
            assert np.array_equal(ta[column], tb[column]), (name, column)
    # Observations come out batch by batch, lines, branches and functions in turn: the same rows, in an
    # order that follows where the batches end.
    assert _rows(a.test_observations.columns) == _rows(b.test_observations.columns)
    for counter in a.file_totals:
        assert all(np.array_equal(x, y) for x, y in zip(a.file_totals[counter], b.file_totals[counter]))


@pytest.mark.parametrize("size", [1, 997, 65_536])
@pytest.mark.parametrize("form", ["as written", "CRLF with a BOM"])
def test_a_report_parsed_chunk_by_chunk_is_the_report_parsed_whole(size: int, form: str) -> None:
    data = corpus.path("lcov/cmark-gfm-0.29.0.gfm.13.gcov-9tests.lcov").read_bytes()
    if size == 1:
        data = data[:20_000]
        data = data[: data.rindex(b"end_of_record\n") + 14]  # every byte its own chunk: a short report
    if form != "as written":
        data = b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")
    whole = lcov.parse_bytes(ReportBytes(data, "r.info", None, len(data)))
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    _same(lcov.parse_chunks(pieces, "r.info"), whole)


def test_a_damaged_line_is_named_alike_whole_and_in_chunks() -> None:
    data = corpus.path("lcov/cmark-gfm-0.29.0.gfm.13.gcov-9tests.lcov").read_bytes()
    at = data.index(b"\nDA:", len(data) // 2) + 1
    data = data[:at] + b"DA:1,-3\n" + data[at:]
    line = data.count(b"\n", 0, at) + 1
    errors = []
    for pieces in ([data], [data[i : i + 4096] for i in range(0, len(data), 4096)]):
        with pytest.raises(CoverageError) as caught:
            lcov.parse_chunks(pieces, "r.info")
        errors.append((caught.value.code, caught.value.details.get("line"), caught.value.message))
    assert errors[0] == errors[1] and errors[0][1] == line
