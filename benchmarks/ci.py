"""CI benchmark: ``coverage-mcp diff`` and ``gate`` beside diff-cover on the same real change (issue 29).

A real git repository holds a real Python package (``ledger``: modules of small
functions and a ``unittest`` suite that covers part of them). Its suite runs
under coverage.py (``coverage run --branch -m unittest``) at the baseline commit
and at a changed commit (functions moved within a file, functions added, lines
removed, one module added); ``coverage xml`` writes each side's Cobertura. The
baseline's report is stored as CI on the main branch stores it (``coverage-mcp
ingest base.xml --commit BASE``, not timed), then the pull request's question
is asked both ways, each a fresh process of the installed console script, in
turns so that load falls on both alike:

- ``diff-cover coverage.xml --compare-branch=BASE`` beside ``coverage-mcp diff
  --baseline BASE --current coverage.xml --commit HEAD --format markdown`` (the
  pull-request comment, the report compared without storing it);
- ``diff-cover ... --fail-under=P`` beside ``coverage-mcp gate --baseline BASE
  --current coverage.xml --commit HEAD --fail-under-patch P``;
- and the stored path README documents: ``coverage-mcp ingest coverage.xml``
  (once, not timed) then ``coverage-mcp diff --baseline BASE --format markdown``
  and ``gate --baseline BASE --fail-under-patch P``.

Each timed run is checked: diff-cover's ``Total``/``Missing`` lines and our
Markdown's patch line (``hit of found added or changed lines``) must name the
same changed-line counts, which must also equal what diff-cover's JSON report
says (``total_num_lines``, ``total_num_violations``); each gate must pass (exit
0, P is below the patch coverage), and the stored gate's envelope agrees. The
Markdown is printed and written into benchmarks/README.md (section "ci").

Example: python benchmarks/ci.py --repeat 11
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from common import ROOT, library_revision, load_average, machine, median, run_measured, write_section

BIN = Path(sysconfig.get_path("scripts"))
FAIL_UNDER = 50  # the gate's patch threshold: under the change's patch coverage, so every gate passes
MODULES = 12
FUNCTIONS = 14  # per module


def script(name: str) -> str:
    path = BIN / name
    if not path.exists():
        sys.exit(f"{path} is missing: install {name} into this interpreter")
    return str(path)


def function(module: int, n: int, variant: str = "") -> str:
    """A small function with a branch; odd-numbered ones are exercised by the suite."""
    return (
        f"def f{n}(x{variant}):\n"
        f'    """Function {n} of module {module}."""\n'
        f"    total = 0\n"
        f"    for i in range(x):\n"
        f"        if i % {n + 2} == 0:\n"
        f"            total += i * {module + 1}\n"
        f"        else:\n"
        f"            total -= 1\n"
        f"    return total\n"
    )


def module_text(module: int, order: list[int], extra: str = "") -> str:
    body = "\n\n".join(function(module, n) for n in order)
    return f'"""Module {module} of the ledger package."""\n\n\n{body}{extra}\n'


def suite_text(modules: list[int], covered: dict[int, list[int]]) -> str:
    imports = "".join(f"from ledger import m{m}\n" for m in modules)
    tests = "".join(
        f"    def test_m{m}_f{n}(self):\n        self.assertIsInstance(m{m}.f{n}(7), int)\n\n"
        for m in modules
        for n in covered[m]
    )
    return f"import unittest\n\n{imports}\n\nclass TestLedger(unittest.TestCase):\n{tests}"


class Repo:
    """The package at two commits, each side's Cobertura, the baseline stored in a home of its own."""

    def __init__(self, base: Path) -> None:
        self.root, self.home = base / "ledger-project", base / "home"
        self.root.mkdir()
        # No PYTHONDONTWRITEBYTECODE: an installed package has its bytecode, and without it every timed run
        # would compile the modules edited since the last write.
        self.env = {
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("COVERAGE_MCP_", "COVERAGE_")) and k != "PYTHONDONTWRITEBYTECODE"
            },
            "COVERAGE_MCP_HOME": str(self.home),
            "COVERAGE_MCP_PORT": "0",
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.com",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        order = {m: list(range(FUNCTIONS)) for m in range(MODULES)}
        covered = {m: [n for n in range(FUNCTIONS) if n % 2] for m in range(MODULES)}
        self.write(order, covered, extra={})
        (self.root / ".gitignore").write_text(".coverage\n*.xml\n*.json\n.coverage-mcp/\n__pycache__/\n")
        self.git("init", "-q", "-b", "main")
        self.commit("ledger: baseline")
        self.base = self.git("rev-parse", "HEAD")
        self.measure("base.xml")
        # The change: in every third module two functions trade places (lines moved), one function loses
        # its else branch (lines removed), every fourth gains a new function half the suite covers
        # (lines added), and one module is new.
        extra: dict[int, str] = {}
        for m in range(MODULES):
            if m % 3 == 0:
                order[m][2], order[m][9] = order[m][9], order[m][2]
            if m % 4 == 1:
                order[m].append(FUNCTIONS)
                if m % 8 == 1:
                    covered[m].append(FUNCTIONS)
        order[MODULES] = list(range(6))
        covered[MODULES] = [0, 1, 2]
        self.write(order, covered, extra=extra)
        for m in range(0, MODULES, 5):  # drop f3's else branch (a deletion inside a function)
            path = self.root / "ledger" / f"m{m}.py"
            path.write_text(path.read_text().replace("    else:\n            total -= 1\n", "", 1))
        self.commit("ledger: move, add and remove lines")
        self.head = self.git("rev-parse", "HEAD")
        self.measure("coverage.xml")

    def write(
        self, order: dict[int, list[int]], covered: dict[int, list[int]], *, extra: dict[int, str]
    ) -> None:
        pkg = self.root / "ledger"
        (pkg / "tests").mkdir(parents=True, exist_ok=True)
        (pkg / "__init__.py").write_text('"""A small ledger package the benchmark measures."""\n')
        (pkg / "tests" / "__init__.py").write_text("")
        for m, names in order.items():
            (pkg / f"m{m}.py").write_text(module_text(m, names, extra.get(m, "")))
        (pkg / "tests" / "test_ledger.py").write_text(suite_text(sorted(order), covered))

    def git(self, *args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(self.root), *args], env=self.env, check=True, capture_output=True, text=True
        )
        return out.stdout.strip()

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-qm", message)

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, env=self.env, cwd=self.root, capture_output=True, text=True)

    def measure(self, xml: str) -> None:
        for argv in (
            (script("coverage"), "run", "--branch", "--source=ledger", "-m", "unittest", "-q"),
            (script("coverage"), "xml", "-o", xml),
        ):
            done = self.run(*argv)
            if done.returncode:
                raise SystemExit(f"{argv} failed: {done.stderr}")


@dataclass
class Command:
    label: str
    argv: list[str]
    check: object  # stdout -> what is wrong with it, or None
    walls: list[float] = field(default_factory=list)

    env: dict[str, str] | None = None  # beside the repository's (a PYTHONPATH of an exported tree)

    def measure(self, repo: Repo) -> None:
        env = {**repo.env, **(self.env or {})}
        wall, _, out = run_measured(self.argv, env=env, cwd=repo.root)  # raises unless it exited 0
        wrong = self.check(out)  # type: ignore[operator]
        if wrong:
            raise SystemExit(f"{self.label}: {wrong}\n--- its output ends with:\n{out[-1500:]}")
        self.walls.append(wall)


def diff_cover_counts(found: int, missing: int):
    def check(out: str) -> str | None:
        total = re.search(r"^Total:\s+(\d+) lines?", out, re.M)
        miss = re.search(r"^Missing:\s+(\d+) lines?", out, re.M)
        if not total or not miss or (int(total[1]), int(miss[1])) != (found, missing):
            return f"printed no Total: {found} lines / Missing: {missing} lines"
        return None

    return check


def markdown_patch(found: int, missing: int):
    def check(out: str) -> str | None:
        seen = re.search(r"\((\d+) of (\d+) added or changed lines covered\)", out)
        if not seen or (int(seen[2]), int(seen[2]) - int(seen[1])) != (found, missing):
            return f"printed no patch line of {found - missing} of {found}"
        return None

    return check


def gate_passed(found: int, missing: int):
    def check(out: str) -> str | None:
        d = json.loads(out)["data"]
        if not d["passed"] or (d["patch"]["found"], d["patch"]["found"] - d["patch"]["hit"]) != (
            found,
            missing,
        ):
            return f"the gate did not pass with patch {found - missing}/{found}: {d['passed']}, {d['patch']}"
        return None

    return check


def gate_text(out: str) -> str | None:
    return None if "passed" in out.lower() else "printed no verdict"


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--no-readme", action="store_true")
    parser.add_argument(
        "--before",
        type=Path,
        help="also time our commands from this exported tree (git archive COMMIT coverage_core coverage_cli "
        "coverage_daemon | tar -x -C DIR; git rev-parse COMMIT > DIR/.commit), in the same turns",
    )
    args = parser.parse_args()
    trees = [ROOT / p for p in ("coverage_core", "coverage_cli", "coverage_daemon")]
    if args.before:
        trees += [args.before / p for p in ("coverage_core", "coverage_cli", "coverage_daemon")]
    for tree in trees:  # bytecode, as an installed package has it
        compileall.compile_dir(str(tree), quiet=1)
    loads = [load_average()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        repo = Repo(Path(tmp))
        ours, dc = script("coverage-mcp"), script("diff-cover")
        stored = repo.run(ours, "ingest", "base.xml", "--commit", repo.base, "--json")
        if stored.returncode:
            raise SystemExit(f"ingest of the baseline failed: {stored.stderr}")
        theirs = repo.run(dc, "coverage.xml", f"--compare-branch={repo.base}", "--json-report", "dc.json")
        if theirs.returncode:
            raise SystemExit(f"diff-cover failed: {theirs.stderr}")
        report = json.loads((repo.root / "dc.json").read_text())
        found, missing = report["total_num_lines"], report["total_num_violations"]
        if found < 20 or not missing:
            raise SystemExit(f"the change is too small to measure: {found} lines, {missing} missing")
        patch_percent = 100 * (found - missing) / found
        if patch_percent <= FAIL_UNDER:
            raise SystemExit(f"patch coverage {patch_percent:.1f}% is under the gate's {FAIL_UNDER}%")
        side = ["--baseline", repo.base, "--current", "coverage.xml", "--commit", repo.head]
        pairs = [
            (
                "pull-request comment (report not stored)",
                Command(
                    "diff-cover",
                    [dc, "coverage.xml", f"--compare-branch={repo.base}"],
                    diff_cover_counts(found, missing),
                ),
                Command(
                    "coverage-mcp diff --current coverage.xml --format markdown",
                    [ours, "diff", *side, "--format", "markdown"],
                    markdown_patch(found, missing),
                ),
            ),
            (
                "gate (report not stored)",
                Command(
                    "diff-cover --fail-under",
                    [dc, "coverage.xml", f"--compare-branch={repo.base}", f"--fail-under={FAIL_UNDER}"],
                    diff_cover_counts(found, missing),
                ),
                Command(
                    "coverage-mcp gate --current coverage.xml --fail-under-patch",
                    [ours, "gate", *side, "--fail-under-patch", str(FAIL_UNDER), "--json"],
                    gate_passed(found, missing),
                ),
            ),
        ]
        before_of: dict[int, Command] = {}
        if args.before:
            stamp = args.before / ".commit"
            was = stamp.read_text().strip()[:12] if stamp.exists() else str(args.before)
            for _, _, ours_cmd in pairs:
                before_of[id(ours_cmd)] = Command(
                    f"{ours_cmd.label} at {was}",
                    ours_cmd.argv,
                    ours_cmd.check,
                    env={"PYTHONPATH": str(args.before)},
                )
        for _, theirs_cmd, ours_cmd in pairs:  # one warm-up each (the page cache, .pyc files)
            theirs_cmd.measure(repo)
            ours_cmd.measure(repo)
            theirs_cmd.walls.clear()
            ours_cmd.walls.clear()
        for twin in before_of.values():
            twin.measure(repo)
            twin.walls.clear()
        for _ in range(args.repeat):
            for _, theirs_cmd, ours_cmd in pairs:
                theirs_cmd.measure(repo)
                ours_cmd.measure(repo)
                if id(ours_cmd) in before_of:
                    before_of[id(ours_cmd)].measure(repo)
            loads.append(load_average()[0])
        # The stored path: HEAD's report ingested once, then diff and gate read both sides from the store.
        current = repo.run(ours, "ingest", "coverage.xml", "--json")
        if current.returncode:
            raise SystemExit(f"ingest of the change failed: {current.stderr}")
        stored_pairs = [
            (
                "pull-request comment (both sides stored)",
                Command(pairs[0][1].label, pairs[0][1].argv, pairs[0][1].check),
                Command(
                    "coverage-mcp diff --format markdown",
                    [ours, "diff", "--baseline", repo.base, "--format", "markdown"],
                    markdown_patch(found, missing),
                ),
            ),
            (
                "gate (both sides stored)",
                Command(pairs[1][1].label, pairs[1][1].argv, pairs[1][1].check),
                Command(
                    "coverage-mcp gate --fail-under-patch",
                    [ours, "gate", "--baseline", repo.base, "--fail-under-patch", str(FAIL_UNDER), "--json"],
                    gate_passed(found, missing),
                ),
            ),
        ]
        for _, _, ours_cmd in stored_pairs:
            ours_cmd.measure(repo)
            ours_cmd.walls.clear()
        for _, _, ours_cmd in stored_pairs:
            if args.before:
                before_of[id(ours_cmd)] = Command(
                    f"{ours_cmd.label} at {was}",
                    ours_cmd.argv,
                    ours_cmd.check,
                    env={"PYTHONPATH": str(args.before)},
                )
                before_of[id(ours_cmd)].measure(repo)
                before_of[id(ours_cmd)].walls.clear()
        for _ in range(args.repeat):
            for _, theirs_cmd, ours_cmd in stored_pairs:
                theirs_cmd.measure(repo)
                ours_cmd.measure(repo)
                if id(ours_cmd) in before_of:
                    before_of[id(ours_cmd)].measure(repo)
            loads.append(load_average()[0])
        files = len({path for path in report["src_stats"]})
        rows = [
            f"| {title} | `{o.label}` | {fmt(median(o.walls))} | `{t.label}` | {fmt(median(t.walls))} | "
            f"**{median(o.walls) / median(t.walls):.2f}x** |"
            for title, t, o in [*pairs, *stored_pairs]
        ]
        rows += [
            f"| {title}, before | `{b.label}` | {fmt(median(b.walls))} | `{t.label}` | {fmt(median(t.walls))} | "
            f"{median(b.walls) / median(t.walls):.2f}x |"
            for title, t, o in [*pairs, *stored_pairs]
            if (b := before_of.get(id(o))) is not None
        ]
    lines = [
        "## CI: `diff` and `gate` beside diff-cover",
        "",
        f"`python benchmarks/ci.py`: a real git repository with a real Python package ({MODULES + 1} modules, a "
        "unittest suite run under `coverage run --branch`, `coverage xml` of each side); the change moves "
        "functions within files, adds functions and a module and removes lines; the baseline's report is "
        "stored (`coverage-mcp ingest base.xml --commit BASE`, not timed). Each command a fresh process of "
        f"its console script, ours and diff-cover's in turns after one warm-up; median wall time of "
        f"{args.repeat} runs. Every timed run exited 0 and named the same changed lines: {found} added or "
        f"changed executable lines in {files} files, {missing} of them uncovered (diff-cover's JSON report "
        f"and our patch figures agree); every gate passed at {FAIL_UNDER}%. The ratio is ours / theirs by "
        f"wall time: at or below 1 we are no slower. {machine()}; diff-cover "
        f"{subprocess.run([dc, '--version'], capture_output=True, text=True).stdout.split()[-1]}; "
        f"{library_revision()}. Load average (1 minute) while measuring: "
        + " → ".join(f"{x:.2f}" for x in loads)
        + " (the machine is shared).",
        "",
        "| question | ours | wall | theirs | wall | ours / theirs |",
        "|---|---|---:|---|---:|---|",
        *rows,
        "",
        "- Ours: `--baseline BASE --current coverage.xml --commit HEAD` parses and maps the report in "
        "memory (never stored) and compares it with the stored baseline: lcov's twelve categories, branches "
        "and functions, patch coverage and the uncovered new lines with their source; diff-cover reports "
        "the patch coverage of the same report against `git diff BASE...HEAD`.",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_readme:
        write_section("ci", text)


if __name__ == "__main__":
    main()
