"""One headline per snapshot: the producing tool's own printed total, computed and rounded as that tool does.

Oracles: the totals each tool printed for the corpus reports (``tests/corpus/MANIFEST.json``), and a real
``coverage report --fail-under`` run in a subprocess on both sides of each threshold, including totals that
round across it.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from coverage_core import headline
from coverage_core.parsers import parse
from coverage_core.project import open_project
from coverage_core.service import Service
from coverage_core.storage import schema

from . import corpus
from .realcov import REPORTS, cli, make_package, measure

# The sqlite reports are the same tools' dialects as the cmark-gfm ones, a hundred times larger.
ENTRIES = [e for e in corpus.entries() if "sqlite" not in e["file"] and not e["file"].endswith(".csv")]
BY_FILE = {e["file"]: e for e in corpus.entries()}


def _printed(entry: dict) -> tuple[str, int, int]:
    """(the headline the producing tool printed, its found, its hit) for a corpus entry, from MANIFEST.json."""
    fmt, tool = entry["format"], entry["tool_reported_totals"]
    canon = entry["canonical_totals"]
    if fmt.startswith("coverage.py JSON"):
        totals = tool["coverage_json_totals"]
        found = totals["num_statements"] + totals.get("num_branches", 0)
        hit = totals["covered_lines"] + totals.get("covered_branches", 0)
        return tool["coverage_report_TOTAL_line"].split()[-1], found, hit
    if fmt.startswith("Cobertura XML (coverage.py"):
        # The same coverage.py run's `coverage report` TOTAL (the JSON beside it).
        twin = BY_FILE[entry["file"].replace(".cobertura.xml", ".coverage.json")]
        _, found, hit = _printed(twin)
        return twin["tool_reported_totals"]["coverage_report_TOTAL_line"].split()[-1], found, hit
    if fmt.startswith("Cobertura XML (gcovr"):
        summary = tool["gcovr_json_summary"]
        return f"{summary['line_percent']}%", summary["line_total"], summary["line_covered"]
    if fmt.startswith("Istanbul"):
        printed = next(x for x in tool["text_summary_as_printed"] if x.startswith("Lines"))
        return printed.split(":")[1].split()[0], canon["lines"]["found"], canon["lines"]["hit"]
    if fmt.startswith("LLVM"):
        row = dict(zip(tool["llvm_cov_report_header"][7:10], tool["llvm_cov_report_TOTAL"][7:10]))
        return row["Cover"], canon["lines"]["found"], canon["lines"]["hit"]
    if fmt.startswith("JaCoCo XML"):
        c = tool["report_level_counters_in_xml"]["INSTRUCTION"]
        found = c["missed"] + c["covered"]
        return f"{100 * c['covered'] // found}%", found, c["covered"]  # the HTML report's Cov. column
    if fmt.startswith("Go coverprofile"):
        level = tool["profile_level"]  # what `go test -cover` prints
        return f"{level['percent']}%", level["statements_total"], level["statements_covered"]
    if "llvm-cov export -format=lcov" in fmt:
        # lcov 1.16 counts llvm-cov's DA records, not its LF/LH; the tool's own total is llvm-cov's TOTAL.
        return f"{100 * canon['lines']['hit'] / canon['lines']['found']:.1f}%", *_lines(canon)
    if fmt.startswith("LCOV"):
        return f"{tool['lcov_1.16_summary']['lines']['percent_as_printed']}%", *_lines(canon)
    raise AssertionError(f"no oracle for {fmt}")


def _lines(canon: dict) -> tuple[int, int]:
    return canon["lines"]["found"], canon["lines"]["hit"]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_the_headline_is_the_producing_tools_own_printed_total(entry: dict, tmp_path: Path) -> None:
    report = parse(corpus.decompressed(entry["file"], tmp_path))
    head = headline.of(report.format, report.tool, report.totals)
    printed, found, hit = _printed(entry)
    assert head is not None
    assert (head.found, head.hit) == (found, hit)
    assert head.percent == printed


def test_istanbul_prints_each_of_its_four_metrics_floored_to_two_decimals() -> None:
    for name in (
        "istanbul/minimist-1.2.8.nyc.coverage-final.json",
        "istanbul/resolve-1.22.14.c8.coverage-final.json",
    ):
        entry = BY_FILE[name]
        report = parse(corpus.path(name))
        printed = {
            line.split(":")[0].strip().lower(): line.split(":")[1].split()[0]
            for line in entry["tool_reported_totals"]["text_summary_as_printed"]
        }
        shown = {
            counter: headline.display("istanbul", report.totals[counter].hit, report.totals[counter].found)
            for counter in ("statements", "branches", "functions", "lines")
        }
        assert shown == printed


def test_c8s_259_of_263_reads_98_47_as_c8_prints_it_never_98_48() -> None:
    assert headline.display("istanbul", 259, 263) == "98.47%"


def test_llvm_covs_other_total_row_counters_are_available_by_name_as_it_prints_them() -> None:
    entry = BY_FILE["llvm/cmark-gfm-0.29.0.gfm.13.llvm-cov.json.zst"]
    row = entry["tool_reported_totals"]["llvm_cov_report_TOTAL"]
    canon = entry["canonical_totals"]
    for counter, printed in (("regions", row[3]), ("functions", row[6]), ("branches", row[12])):
        assert headline.display("llvm", canon[counter]["hit"], canon[counter]["found"]) == printed


@given(st.integers(1, 10**6).flatmap(lambda found: st.tuples(st.integers(0, found), st.just(found))))
def test_no_rule_shows_0_or_100_unless_the_count_is_exact_where_the_tool_promises_it(pair) -> None:
    hit, found = pair
    for style in ("coveragepy", "lcov", "gcovr", "exact"):
        text = headline.display(style, hit, found)
        assert (float(text.rstrip("%")) == 100) == (hit == found), (style, text)
        if style != "gcovr":  # gcovr keeps 0.0 for a tiny share
            assert (float(text.rstrip("%")) == 0) == (hit == 0), (style, text)


# -- gate --fail-under-total is coverage.py's --fail-under ---------------------------------------------


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """The realcov package measured by coverage.py (branch coverage) and stored; its total as coverage.py has it."""
    repo = make_package(tmp_path_factory.mktemp("fail-under") / "repo")
    reports = measure(repo)
    done = cli(repo, "ingest", REPORTS["json"], "--json")
    assert done.returncode == 0, done.stderr
    return repo, json.loads(reports["json"].read_text())["totals"]["percent_covered"]


def _coverage_report_fails(repo: Path, minimum: float, precision: int) -> bool:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("COVERAGE_PROCESS_START", None)
    done = subprocess.run(
        [sys.executable, "-m", "coverage", "report", f"--fail-under={minimum}", f"--precision={precision}"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 2), done.stderr
    return done.returncode == 2


def _gate_fails(repo: Path, minimum: float, precision: int) -> bool:
    done = cli(repo, "gate", "--fail-under-total", str(minimum), "--precision", str(precision))
    assert done.returncode in (0, 3), done.stdout + done.stderr
    return done.returncode == 3


def _thresholds(total: float) -> list[tuple[float, int]]:
    """Minimums on both sides of ``total`` at precisions 0 to 2, each with the one its rounding crosses."""
    out = []
    for precision in (0, 1, 2):
        step = 10**-precision
        low = math.floor(total / step) * step
        for minimum in (low - step, low, low + step, low + 2 * step):
            out.append((round(minimum, precision), precision))
    return [*out, (100.0, 0), (0.0, 0)]


def test_gate_fail_under_total_agrees_with_coverage_report_fail_under_on_both_sides(measured) -> None:
    repo, total = measured
    crossing = 0
    for minimum, precision in _thresholds(total):
        expected = _coverage_report_fails(repo, minimum, precision)
        assert _gate_fails(repo, minimum, precision) == expected, (minimum, precision, total)
        # A total under the minimum that rounds up to it passes coverage.py's gate: the rounding is the tool's.
        crossing += (total < minimum) and not expected
    assert crossing, f"no threshold rounds across the total {total}"


def test_gate_counter_lines_keeps_the_earlier_meaning_the_exact_statement_total(measured) -> None:
    repo, total = measured
    report = json.loads((repo / REPORTS["json"]).read_text())["totals"]
    statements = 100 * report["covered_lines"] / report["num_statements"]
    low, high = sorted((statements, total))
    assert high - low > 0.01  # branch data: the headline is statements and branches together
    minimum = round((low + high) / 2, 3)  # strictly between the two
    lines = cli(repo, "gate", "--fail-under-total", str(minimum), "--counter", "lines")
    assert lines.returncode == (3 if statements < minimum else 0), lines.stdout
    tools = cli(repo, "gate", "--fail-under-total", str(minimum), "--precision", "3")
    assert tools.returncode == (3 if _coverage_report_fails(repo, minimum, 3) else 0), tools.stdout
    assert lines.returncode != tools.returncode


def test_gate_says_whose_total_it_checked(measured) -> None:
    repo, _total = measured
    out = cli(repo, "gate", "--fail-under-total", "1").stdout
    assert "statements+branches" in out and "coverage.py JSON" in out


def test_precision_without_fail_under_total_is_refused_with_exit_2(measured) -> None:
    repo, _total = measured
    done = cli(repo, "gate", "--baseline", "none", "--precision", "2")
    assert done.returncode == 2
    assert "fail_under_total" in (done.stdout + done.stderr)


def test_every_surface_shows_the_same_headline_for_a_coverage_py_snapshot(measured) -> None:
    repo, _total = measured
    report = json.loads((repo / REPORTS["json"]).read_text())["totals"]
    shown = headline.display(
        "coveragepy",
        report["covered_lines"] + report["covered_branches"],
        report["num_statements"] + report["num_branches"],
    )
    assert shown == f"{report['percent_covered']:.2f}%"
    snap = json.loads(cli(repo, "snapshots", "--json").stdout)["data"]["snapshots"][0]
    assert snap["headline"]["percent"] == shown
    assert shown in cli(repo, "snapshots").stdout
    context = json.loads(cli(repo, "context", "--json").stdout)["data"]["suites"][0]
    assert context["percent"] == shown
    table = cli(repo, "show", snap["snapshot_id"]).stdout
    assert shown in next(line for line in table.splitlines() if line.strip().startswith("TOTAL"))
    diff = cli(repo, "diff", "--baseline", "none", "--format", "markdown").stdout
    assert f"**Total coverage: {shown}" in diff


# -- revision 11 -----------------------------------------------------------------------------------------


def test_files_stored_before_revision_11_get_their_headline_from_the_columns_they_have(
    tmp_path: Path,
) -> None:
    con = duckdb.connect(str(tmp_path / "old.duckdb"))
    try:
        schema.migrate(con, target=10)
        for snap, fmt, tool in (
            (1, "coveragepy", "coverage.py"),
            (2, "cobertura", "gcovr"),
            (3, "lcov", None),
        ):
            con.execute(
                "INSERT INTO snapshots VALUES (?, ?, now(), 'unit', ?, ?, 'complete', 'import', NULL, NULL, false, "
                "'w', NULL, 'sha', 0, 1, 1, 0, 0, 0, '[]', '{}')",
                [snap, f"snap-{snap:016x}", fmt, tool],
            )
            # 40 of 48 lines, 13 of 20 branches
            con.execute(
                "INSERT INTO files VALUES (?, 0, 'a.py', 'a.py', 'mapped', 48, 40, 20, 13, 0, 0, NULL, NULL, NULL, NULL)",
                [snap],
            )
        assert schema.migrate(con) == schema.SCHEMA_REVISION
        rows = con.execute(
            "SELECT snap, headline_found, headline_hit, excluded FROM files ORDER BY snap"
        ).fetchall()
        # coverage.py adds its branches; gcovr and lcov count lines
        assert rows == [(1, 68, 53, 0), (2, 48, 40, 0), (3, 48, 40, 0)]
        assert con.execute("SELECT count(*) FROM excluded_lines").fetchall() == [(0,)]
    finally:
        con.close()


def test_the_dashboard_and_the_static_report_show_the_tools_total_and_each_files(
    measured, tmp_path: Path
) -> None:
    repo, _total = measured
    report = json.loads((repo / REPORTS["json"]).read_text())
    with open_project(repo) as project:
        data = Service(project).call("dashboard", {"baseline": "none"})["data"]
    totals = report["totals"]
    shown = f"{100 * (totals['covered_lines'] + totals['covered_branches']) / (totals['num_statements'] + totals['num_branches']):.2f}%"
    assert data["metrics"]["headline"]["current"]["text"] == shown
    assert data["metrics"]["headline"]["current"]["counter"] == "statements+branches"
    for row in data["files"]["rows"]:
        s = report["files"][row["path"]]["summary"]
        both = (s["covered_lines"] + s["covered_branches"], s["num_statements"] + s["num_branches"])
        assert (
            row["headline"]["hit"],
            row["headline"]["found"],
        ) == both  # as coverage.py's HTML counts a file
        assert row["headline"]["text"] == headline.display("coveragepy", *both)
    done = cli(repo, "report", "--html", str(tmp_path / "out"), "--baseline", "none", "--json")
    assert done.returncode == 0, done.stderr
    page = Path(json.loads(done.stdout)["report"]).read_text()
    embedded = json.loads(page.split('id="dashboard-data">', 1)[1].split("</script>", 1)[0])
    assert embedded["metrics"]["headline"]["current"]["text"] == shown


def test_gate_counter_names_any_other_counter_of_the_current_snapshot(measured) -> None:
    repo, _total = measured
    totals = json.loads((repo / REPORTS["json"]).read_text())["totals"]
    branches = 100 * totals["covered_branches"] / totals["num_branches"]
    above = cli(repo, "gate", "--fail-under-total", f"{branches + 0.01:.2f}", "--counter", "branches")
    assert above.returncode == 3 and "total branches coverage" in above.stdout
    below = cli(repo, "gate", "--fail-under-total", f"{branches - 0.01:.2f}", "--counter", "branches")
    assert below.returncode == 0, below.stdout
    missing = cli(repo, "gate", "--fail-under-total", "1", "--counter", "regions")
    assert missing.returncode == 3 and "no regions counter" in missing.stdout


def test_the_readme_table_names_every_rule_and_its_rounding() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("### Whose total: the producing tool's own", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    for rule in headline.RULES.values():
        dialect = rule.name.split(" (")[0]
        assert any(row.split("|")[1].strip().startswith(dialect) for row in rows), dialect
