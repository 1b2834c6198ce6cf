"""The LCOV parser's totals equal `lcov --summary`'s own, run on the same tracefile (Debian's lcov)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from coverage_core.parsers import ReportBytes, lcov

from . import corpus
from .systemtools import require

SUMMARY = re.compile(r"^\s+(lines|functions|branches)\.+: [\d.]+% \((\d+) of (\d+) \w+\)$", re.M)

# Each case is a merge rule that lcov's own summary defines. (A single record whose
# LF/LH disagree with its DA lines is left out on purpose: there the producing
# tool's summary is the total, as llvm-cov's own report gives it; see test_parse_lcov.)
CASES = {
    "one file repeated across test sections": (
        "TN:unit\nSF:a.c\nFN:1,main\nFNDA:1,main\nBRDA:2,0,0,1\nBRDA:2,0,1,-\nDA:1,1\nDA:2,1\nDA:3,0\nend_of_record\n"
        "TN:integration\nSF:a.c\nFN:1,main\nFNDA:0,main\nBRDA:2,0,0,0\nBRDA:2,0,1,-\nBRDA:9,0,0,4\n"
        "DA:1,2\nDA:3,0\nDA:9,3\nend_of_record\n"
    ),
    "a dash branch merged with a zero": "SF:a.c\nBRDA:1,0,0,-\nDA:1,1\nend_of_record\nSF:a.c\nBRDA:1,0,0,0\nend_of_record\n",
    "a function hit in one record only": (
        "SF:a.c\nFN:1,f\nFN:5,g\nFNDA:0,f\nFNDA:0,g\nDA:1,0\nend_of_record\n"
        "SF:a.c\nFN:1,f\nFNDA:2,f\nDA:1,2\nend_of_record\n"
    ),
    "several files, one without any hit": "SF:a.c\nDA:1,1\nend_of_record\nSF:b.c\nDA:1,0\nDA:2,0\nend_of_record\n",
}


def lcov_summary(path: Path) -> dict[str, tuple[int, int]]:
    out = subprocess.run(
        [require("lcov"), "--summary", "--rc", "lcov_branch_coverage=1", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = {name: (int(total), int(hit)) for name, hit, total in SUMMARY.findall(out.stdout + out.stderr)}
    return {name: found.get(name, (0, 0)) for name in ("lines", "functions", "branches")}


def ours(path: Path) -> dict[str, tuple[int, int]]:
    data = path.read_bytes()
    report = lcov.parse_bytes(ReportBytes(data, str(path), None, len(data)))
    return {
        name: (report.totals[name].found, report.totals[name].hit)
        for name in ("lines", "functions", "branches")
    }


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_lcov_merge_rules_give_lcov_summarys_totals(case: str, tmp_path: Path) -> None:
    path = tmp_path / "case.info"
    path.write_text(CASES[case])
    assert ours(path) == lcov_summary(path)


def test_a_real_gcov_tracefile_with_nine_named_tests_gives_lcov_summarys_totals() -> None:
    path = corpus.path("lcov/cmark-gfm-0.29.0.gfm.13.gcov-9tests.lcov")
    assert (
        ours(path)
        == lcov_summary(path)
        == {"lines": (22358, 5397), "functions": (489, 375), "branches": (14962, 2935)}
    )
