"""``coverage-mcp report --html`` against ``coverage html`` and genhtml on the same run: time and bytes.

    python benchmarks/report_html.py [--repeat 3] [--no-write]

The project is the suite's small real package (``tests/realcov.py``: a shop
with branches, measured by its own pytest suite under coverage.py). One run
gives coverage.py's data file, its JSON and its LCOV; then, each timed as a
subprocess (median of ``--repeat``) and sized on disk:

- ``coverage html -d DIR`` (coverage.py's own report of the data file);
- ``genhtml coverage.lcov -o DIR`` (lcov's, of the LCOV coverage.py wrote);
- ``coverage-mcp report --html DIR`` of the JSON ingested into a store (the
  ingest is not timed: a CI job stores its report once and may write several).

Every answer is checked: the site's embedded line totals are coverage.py's
JSON totals and ``lcov --summary``'s line count.

Results go into benchmarks/README.md (section "report --html").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import library_revision, load_average, machine, median, write_section

from coverage_core import open_project
from tests.realcov import make_package, measure


def size(directory: Path) -> tuple[int, int]:
    files = [p for p in directory.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def timed(argv: list[str], cwd: Path, env: dict[str, str], out: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True, timeout=600)
        times.append(time.perf_counter() - started)
    return median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    genhtml = shutil.which("genhtml")
    with tempfile.TemporaryDirectory(prefix="report-bench-") as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_MCP_")}
        env.update({"COVERAGE_MCP_HOME": str(root / "home"), "COVERAGE_MCP_PORT": "0"})
        os.environ.update({"COVERAGE_MCP_HOME": env["COVERAGE_MCP_HOME"], "COVERAGE_MCP_PORT": "0"})
        repo = make_package(root / "repo")
        reports = measure(repo)
        with open_project(repo) as project:
            project.ingest(reports["json"])
        totals = json.loads(reports["json"].read_text())["totals"]
        source_bytes = sum(
            len((repo / p).read_bytes()) for p in json.loads(reports["json"].read_text())["files"]
        )
        py = sys.executable
        rows = []
        t = timed(
            [py, "-m", "coverage", "html", "-q", "-d", str(root / "cov")],
            repo,
            env,
            root / "cov",
            args.repeat,
        )
        rows.append(
            (
                "`coverage html` (coverage.py " + _version([py, "-m", "coverage", "--version"]) + ")",
                t,
                *size(root / "cov"),
            )
        )
        if genhtml:
            argv = [genhtml, "-q", str(reports["lcov"]), "-o", str(root / "gen")]
            t = timed(argv, repo, env, root / "gen", args.repeat)
            rows.append(("`genhtml` (" + _version([genhtml, "--version"]) + ")", t, *size(root / "gen")))
        argv = [py, "-m", "coverage_cli", "report", "--html", str(root / "site"), "--json"]
        t = timed(argv, repo, env, root / "site", args.repeat)
        rows.append(("`coverage-mcp report --html`", t, *size(root / "site")))
        # the answer: the site's line totals are coverage.py's own, and lcov's
        page = (root / "site" / "index.html").read_text()
        data = json.loads(page.split('id="dashboard-data">', 1)[1].split("</script>", 1)[0])
        lines = data["metrics"]["lines"]["current"]
        assert (lines["hit"], lines["found"]) == (totals["covered_lines"], totals["num_statements"]), lines
        assert len(data["pages"]) == len(json.loads(reports["json"].read_text())["files"])
        if shutil.which("lcov"):
            summary = (
                subprocess.run(
                    ["lcov", "--summary", str(reports["lcov"])], capture_output=True, text=True, check=True
                ).stdout
                + ""
            )
            found = re.search(r"lines\.*: [\d.]+% \((\d+) of (\d+) lines\)", summary)
            assert found and (int(found.group(1)), int(found.group(2))) == (lines["hit"], lines["found"]), (
                summary
            )
    load = load_average()[0]
    text = "\n".join(
        [
            "## report --html",
            "",
            f"`python benchmarks/report_html.py`: the small shop package of `tests/realcov.py` ({source_bytes:,} "
            f"source bytes), one coverage.py run; median of {args.repeat} runs each as a subprocess; "
            f"{library_revision()}; {machine()}; load average {load:.2f}. Checked: the site's line totals are "
            "coverage.py's and `lcov --summary`'s.",
            "",
            "| report | time | files | bytes | bytes / source bytes |",
            "|---|---|---|---|---|",
            *(
                f"| {name} | {seconds * 1000:.0f} ms | {count} | {total:,} | {total / source_bytes:.1f}x |"
                for name, seconds, count, total in rows
            ),
        ]
    )
    print(text)
    if not args.no_write:
        write_section("report --html", text)


def _version(argv: list[str]) -> str:
    out = subprocess.run(argv, capture_output=True, text=True).stdout
    found = re.search(r"(\d+\.\d+(?:\.\d+)?)", out)
    return found.group(1) if found else "?"


if __name__ == "__main__":
    main()
