"""CLI benchmark: the console scripts end to end, ours beside coverage.py's and pycobertura's.

Three pairs, each command a fresh process of the installed console script
(the interpreter's own ``bin/``, not a pyenv shim), ours and theirs in turns so
that load on this shared machine falls on both alike:

- ``coverage-mcp --version`` beside ``coverage --version``,
- ``coverage-mcp --help`` beside ``coverage --help``,
- ``coverage-mcp parse`` of the 16 MB SQLite gcovr Cobertura beside
  ``pycobertura show`` of the same file (decompressed once into benchmarks/.work/),
- the reads ``coverage-mcp context``, ``snapshots`` and ``review insight`` on the
  bundled sample project (its step-3 report ingested, the store owned by the command:
  no daemon) beside ``coverage report`` of the same project's own coverage.py data
  (``coverage run --branch -m pytest`` of its tests), issue 29.

Every timed run must exit 0 and print what it should: the version, every
command of the help, and for the Cobertura the report's totals as its MANIFEST
entry records them (lines-valid 69,595; ours also the covered lines and the
branches); the reads the ingested snapshot (its id, its line totals) and
``coverage report`` its TOTAL row; a run that does not fails the benchmark. Reported: the median wall
time and peak RSS of ``--repeat`` runs, and the ratio ours / theirs. A reference
row times what every start cost before the commands were imported lazily
(every command module imported, then ``--version``). The Markdown is printed
and written into benchmarks/README.md (section "cli").

Example: python benchmarks/cli.py --repeat 21 --notebooks-path /tmp/nbextra
         python benchmarks/cli.py --only reads --no-readme   # the reads alone, printed
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

from common import (
    CORPUS,
    ROOT,
    commit_all,
    corpus_file,
    library_revision,
    load_average,
    machine,
    median,
    run_measured_cpu,
    write_section,
)

BIN = Path(sysconfig.get_path("scripts"))
COBERTURA = "cobertura/sqlite-3.53.2.gcovr.cobertura.xml.zst"
START_TARGET = 1.5  # issue 11: --help/--version within 1.5x of `coverage --version`
READ_GOAL_MS = 300  # issue 29: context, snapshots and review insight under 300 ms wall on the sample project
SAMPLE = ROOT / "coverage_core" / "sample"


def script(name: str) -> str:
    path = BIN / name
    if not path.exists():
        sys.exit(f"{path} is missing: install {name} into this interpreter")
    return str(path)


def manifest_totals(name: str) -> dict[str, dict[str, int]]:
    entries = json.loads((CORPUS / "MANIFEST.json").read_text())["files"]
    entry = next(e for e in entries if e["file"] == name)
    return {k: v for k, v in entry["canonical_totals"].items() if k in ("lines", "branches")}


# Our console script's work, with the number of modules imported at its exit written to stderr last.
COUNTED = (
    "import atexit, os, sys\n"
    "atexit.register(lambda: os.write(2, f'\\nmodules imported: {len(sys.modules)}\\n'.encode()))\n"
    "from coverage_cli.entry import main\n"
    "main(sys.argv[1:])\n"
)


@dataclass
class Command:
    label: str
    argv: list[str]
    check: Callable[[str], str | None]  # stdout -> what is wrong with it, or None
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)

    env: dict[str, str] | None = None
    cwd: Path | None = None
    modules: int | None = None  # sys.modules at exit (ours: count_modules)

    def measure(self) -> None:
        # raises unless it exited 0
        wall, cpu, rss, out, _ = run_measured_cpu(self.argv, env=self.env, cwd=self.cwd)
        self.checked(out)
        self.walls.append(wall)
        self.cpus.append(cpu)
        self.rss.append(rss)

    def checked(self, out: str) -> None:
        wrong = self.check(out)
        if wrong:
            raise SystemExit(f"{self.label}: {wrong}\n--- its output ends with:\n{out[-1500:]}")

    def count_modules(self) -> None:
        """For our console script: the same command once more, as the script runs it, counting the modules
        it had imported at exit (its answer checked as every timed one is)."""
        if Path(self.argv[0]).name != "coverage-mcp":
            return
        _, _, _, out, err = run_measured_cpu(
            [sys.executable, "-c", COUNTED, *self.argv[1:]], env=self.env, cwd=self.cwd
        )
        self.checked(out)
        self.modules = int(err.rsplit("modules imported: ", 1)[1].split()[0])


@dataclass
class Pair:
    title: str
    ours: Command
    theirs: Command
    target: float | None = None  # the ratio ours / theirs the issue asks for


def expect(*needles: str) -> Callable[[str], str | None]:
    def check(out: str) -> str | None:
        missing = [n for n in needles if n not in out]
        return f"printed no {missing}" if missing else None

    return check


def row(*words: str) -> Callable[[str], str | None]:
    """A printed line that starts with these words (a table row, whatever its column widths)."""

    def check(out: str) -> str | None:
        found = any(line.split()[: len(words)] == list(words) for line in out.splitlines())
        return None if found else f"printed no row {' '.join(words)}"

    return check


def both(*checks: Callable[[str], str | None]) -> Callable[[str], str | None]:
    def check(out: str) -> str | None:
        return next((wrong for wrong in (c(out) for c in checks) if wrong), None)

    return check


def counters(**expected: dict[str, int]) -> Callable[[str], str | None]:
    """``coverage-mcp parse`` prints one row per counter: name, hit, found, percent."""

    def check(out: str) -> str | None:
        rows = {words[0]: words[1:3] for words in map(str.split, out.splitlines()) if len(words) == 4}
        wrong = [
            name for name, c in expected.items() if rows.get(name) != [f"{c['hit']:,}", f"{c['found']:,}"]
        ]
        return f"printed other totals for {wrong} than {expected}" if wrong else None

    return check


def pycobertura_total(lines_valid: int) -> Callable[[str], str | None]:
    """``pycobertura show`` ends with ``TOTAL  <Stmts> <Miss> <Cover>``; Stmts is the report's lines-valid."""

    def check(out: str) -> str | None:
        total = [line.split() for line in out.splitlines() if line.startswith("TOTAL")]
        if not total or int(total[-1][1]) != lines_valid:
            return f"printed no TOTAL line with {lines_valid} statements"
        return None

    return check


class SampleReads:
    """The sample project as a git repository in a fresh folder, its step-3 report ingested into a store
    of a home of its own, and coverage.py's data file of the same tests beside it. With ``daemon`` that
    home's daemon runs and holds the store (it registered the repository), so each read is routed to it;
    without, no daemon runs and each command owns the store."""

    def __init__(self, base: Path, *, daemon: bool = False) -> None:
        self.repo, self.home = base / "inventory", base / "home"
        shutil.copytree(SAMPLE / "project", self.repo, ignore=shutil.ignore_patterns("__pycache__"))
        (self.repo / ".gitignore").write_text(".coverage\n*.json\n.coverage-mcp/\n")
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_MCP_")},
            "COVERAGE_MCP_HOME": str(self.home),
            "COVERAGE_MCP_PORT": "0",
        }
        commit_all(self.repo, self.env)
        shutil.copyfile(SAMPLE / "reports" / "step3.coverage.json", self.repo / "coverage.json")
        ingested = self.run(script("coverage-mcp"), "ingest", "coverage.json", "--suite", "unit", "--json")
        snapshot = json.loads(ingested)["data"]["snapshot"]
        self.snapshot_id: str = snapshot["snapshot_id"]
        lines = snapshot["totals"]["lines"]
        self.lines: tuple[int, int] = (lines["hit"], lines["found"])
        self.run(
            script("coverage"), "run", "--branch", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"
        )
        self.daemon: subprocess.Popen[str] | None = None
        if daemon:
            self.daemon = subprocess.Popen(
                [script("coverage-mcp"), "serve"],
                env=self.env,
                cwd=self.repo,
                stderr=subprocess.PIPE,
                text=True,
            )
            announce = self.daemon.stderr.readline() if self.daemon.stderr else ""
            if "listening on" not in announce:
                raise SystemExit(f"the sample's daemon did not start: {announce}")
            register = (
                "from coverage_core.config import Settings\n"
                "from coverage_daemon.rest_client import running_daemon\n"
                "client, _ = running_daemon(Settings.from_env())\n"
                "print(client.register('.')['project_id'])\n"
            )
            self.run(sys.executable, "-c", register)  # the daemon now holds the store
            # Its log goes on to stderr: drain it, so a full pipe never stalls the daemon being timed.
            threading.Thread(target=self.daemon.stderr.read, daemon=True).start()  # type: ignore[union-attr]

    def held_by_daemon(self) -> bool:
        """Whether the store's lease names the daemon (the reads were its to answer)."""
        lease = self.repo / ".coverage-mcp" / "coverage.duckdb.lock"
        return json.loads(lease.read_text() or "{}").get("owner") == "daemon"

    def close(self) -> None:
        if self.daemon is not None:
            self.run(script("coverage-mcp"), "stop")
            self.daemon.wait(timeout=60)

    def run(self, *argv: str) -> str:
        return subprocess.run(
            argv, check=True, capture_output=True, text=True, env=self.env, cwd=self.repo
        ).stdout

    def command(
        self, label: str, argv: list[str], check: Callable[[str], str | None], *paths: str | None
    ) -> Command:
        """A command in the sample repository; ``paths`` first on its PYTHONPATH (the [notebooks] case, an
        exported tree of earlier code)."""
        env = self.env
        if any(paths):
            env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [*paths, env.get("PYTHONPATH")]))}
        return Command(label, argv, check, env=env, cwd=self.repo)


def read_pairs(sample: SampleReads, notebooks: str | None = None, before: Path | None = None) -> list[Pair]:
    """The three reads beside ``coverage report``; with ``notebooks`` (a folder holding rfc3987_syntax, as
    the [notebooks] extra installs it) our commands also run with it importable; with ``before`` (an
    exported tree of earlier code) each read again from that tree, in the same turns."""
    where = "the daemon holds the store" if sample.daemon is not None else "the command owns the store"
    ours, coverage = script("coverage-mcp"), script("coverage")
    hit, found = sample.lines
    snapshot = sample.snapshot_id
    reads = [  # what each must print: the ingested snapshot, its claim, its line totals, the first gap
        ("`coverage-mcp context`", ["context"], expect(f"suite unit          {snapshot}", "[supported]")),
        (
            "`coverage-mcp snapshots`",
            ["snapshots"],
            both(expect(snapshot), row("lines", f"{hit}", f"{found}")),
        ),
        (
            "`coverage-mcp review insight`",
            ["review", "insight", "--suite", "unit"],
            expect("insight: supported", "inventory/pricing.py:format_price: 4 uncovered lines", snapshot),
        ),
    ]
    cases = [("", None)] + ([(" with rfc3987_syntax", notebooks)] if notebooks else [])
    report = sample.command("`coverage report`", [coverage, "report"], expect("TOTAL", "inventory/stock.py"))
    floor = [  # what a command that owns the store cannot do without, before any code of ours runs
        Pair(
            "floor of a read that owns the store: importing DuckDB, pygit2, jsonschema and click, nothing else",
            sample.command(
                "`python -c 'import duckdb, pygit2, jsonschema, click'`",
                [sys.executable, "-c", "import duckdb, pygit2, jsonschema, click; print('imported')"],
                expect("imported"),
            ),
            report,
        )
    ]
    stamp = before / ".commit" if before else None
    was = stamp.read_text().strip()[:12] if stamp and stamp.exists() else str(before)
    versions = [("", None)] + ([(f", before (at {was})", str(before))] if before else [])
    return (floor if sample.daemon is None else []) + [
        Pair(
            f"read: {label}{case}{version} (sample project, {where})",
            sample.command(label, [ours, *argv], check, tree, path),
            sample.command("`coverage report`", [coverage, "report"], expect("TOTAL", "inventory/stock.py")),
        )
        for case, path in cases
        for label, argv, check in reads
        for version, tree in versions
    ]


def pairs(report: Path) -> list[Pair]:
    from coverage_cli.main import COMMANDS
    from coverage_core.version import version

    ours, coverage = script("coverage-mcp"), script("coverage")
    totals = manifest_totals(COBERTURA)
    lines, branches = totals["lines"], totals["branches"]
    eager = (
        "from coverage_cli.main import COMMANDS, cli, load\n"
        "for entry in COMMANDS.values(): load(entry.target)\n"
        "cli.main(['--version'], prog_name='coverage-mcp')\n"
    )
    return [
        Pair(
            "`--version`",
            Command(
                "`coverage-mcp --version`", [ours, "--version"], expect(f"coverage-mcp, version {version()}")
            ),
            Command("`coverage --version`", [coverage, "--version"], expect("Coverage.py, version")),
            START_TARGET,
        ),
        Pair(
            "`--help`",
            Command(
                "`coverage-mcp --help`", [ours, "--help"], expect("Commands:", *(f"  {n} " for n in COMMANDS))
            ),
            Command("`coverage --help`", [coverage, "--help"], expect("usage: coverage <command>")),
            START_TARGET,
        ),
        Pair(
            "before: every command imported, then `--version`",
            Command("eager `--version`", [sys.executable, "-c", eager], expect("coverage-mcp, version")),
            Command("`coverage --version`", [coverage, "--version"], expect("Coverage.py, version")),
        ),
        Pair(
            f"`parse` of the SQLite gcovr Cobertura ({report.stat().st_size / 1e6:.1f} MB)",
            Command(
                "`coverage-mcp parse`", [ours, "parse", str(report)], counters(lines=lines, branches=branches)
            ),
            Command(
                "`pycobertura show`",
                [script("pycobertura"), "show", str(report)],
                pycobertura_total(lines["found"]),
            ),
        ),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=21, help="runs per start-up command (medians are reported)")
    ap.add_argument("--parse-repeat", type=int, default=7, help="runs per parse command")
    ap.add_argument("--no-readme", action="store_true", help="print the table without writing the README")
    ap.add_argument("--only", choices=("all", "reads"), default="all", help="reads: the sample reads alone")
    ap.add_argument(
        "--notebooks-path",
        help="a folder holding rfc3987_syntax (pip install --target DIR rfc3987-syntax): the reads again with "
        "it importable, as with the [notebooks] extra installed",
    )
    ap.add_argument(
        "--before",
        type=Path,
        help="also time the reads from this exported tree of earlier code (git archive COMMIT coverage_core "
        "coverage_cli coverage_daemon | tar -x -C DIR; git rev-parse COMMIT > DIR/.commit), in the same turns",
    )
    args = ap.parse_args()
    trees = [ROOT / p for p in ("coverage_core", "coverage_cli", "coverage_daemon")]
    if args.before:
        args.before = args.before.resolve()
        trees += [args.before / p for p in ("coverage_core", "coverage_cli", "coverage_daemon")]
    for (
        tree
    ) in trees:  # bytecode, as an installed package has it (the shell may export PYTHONDONTWRITEBYTECODE)
        compileall.compile_dir(str(tree), quiet=1)
    if args.only != "all" and not args.no_readme:
        ap.error("--only reads measures part of the section: pass --no-readme")
    report = corpus_file(COBERTURA)
    scratch = tempfile.TemporaryDirectory(prefix="cli-bench-")
    owned = SampleReads(Path(scratch.name) / "owned")
    routed = SampleReads(Path(scratch.name) / "routed", daemon=True)
    measured = (
        (pairs(report) if args.only == "all" else [])
        + read_pairs(owned, args.notebooks_path, args.before)
        + read_pairs(routed, args.notebooks_path, args.before)
    )
    totals = manifest_totals(COBERTURA)
    lines, branches = totals["lines"], totals["branches"]
    loads = [load_average()[0]]
    for pair in measured:
        repeat = args.parse_repeat if "parse" in pair.ours.argv else args.repeat
        print(f"measuring {pair.title} ({repeat} runs each) ...", file=sys.stderr)
        for command in (pair.ours, pair.theirs):  # a warm-up each (page cache, .pyc files), not kept
            command.measure()
            command.walls.clear()
            command.cpus.clear()
            command.rss.clear()
        pair.ours.count_modules()
        for _ in range(repeat):
            pair.ours.measure()
            pair.theirs.measure()
        loads.append(load_average()[0])

    rows = []
    for pair in measured:
        ratio = median(pair.ours.walls) / median(pair.theirs.walls)
        verdict = ""
        if pair.target is not None:
            verdict = f" (target {pair.target}x: {'met' if ratio <= pair.target else 'NOT met'})"
        elif pair.title.startswith("read:"):
            met = median(pair.ours.walls) * 1000 < READ_GOAL_MS
            verdict = f" (goal < {READ_GOAL_MS} ms: {'met' if met else 'NOT met'})"
        modules = "" if pair.ours.modules is None else f"{pair.ours.modules:,}"
        rows.append(
            f"| {pair.title} | {pair.ours.label} | {median(pair.ours.walls) * 1000:,.0f} ms | "
            f"{median(pair.ours.cpus) * 1000:,.0f} ms | {modules} | "
            f"{median(pair.ours.rss):,.0f} MB | {pair.theirs.label} | "
            f"{median(pair.theirs.walls) * 1000:,.0f} ms | {median(pair.theirs.rss):,.0f} MB | "
            f"**{ratio:.2f}x**{verdict} |"
        )
    versions = (
        f"coverage.py {metadata.version('coverage')}, pycobertura {metadata.version('pycobertura')}, "
        f"click {metadata.version('click')}"
    )
    text = "\n".join(
        [
            "## Command line: start-up, `parse` and the reads, end to end",
            "",
            (
                f"`python benchmarks/cli.py`: each command a fresh process of its console script in "
                f"`{BIN}` (no shim), ours and theirs in turns after one warm-up each; median wall time (start to exit)"
                f", median CPU time (user + system, the steadier figure under load) "
                f"and median peak RSS of {args.repeat} runs ({args.parse_repeat} for `parse`). Every timed run exited 0 "
                "and printed what it should (the version; every command in `--help`; the Cobertura's totals as "
                "tests/corpus/MANIFEST.json records them). The ratio is ours / theirs by wall time: below 1 we are "
                f"faster. {machine()}; {versions}; {library_revision()}. Load average (1 minute) while measuring: "
                f"{' → '.join(f'{x:.2f}' for x in loads)} (the machine is shared)."
            ),
            "",
            "| what | ours | wall | CPU | modules | peak RSS | theirs | wall | peak RSS | ours / theirs |",
            "|---|---|---:|---:|---:|---:|---|---:|---:|---|",
            *rows,
            "",
            (
                "- CPU is the median user + system time of the command's process; modules is `sys.modules` at "
                "its exit, counted in one more run of the same command (its answer checked as well)"
                + (
                    f'; the rows "before" run the same console script on the code exported at {args.before} '
                    "(PYTHONPATH), in the same turns"
                    if args.before
                    else ""
                )
                + "."
            ),
            (
                "- `--help` and `--version` read the command table of `coverage_cli/main.py` and import click and "
                "nothing else of ours; a command's module is imported only to run it or show its own help "
                '(tests/test_cli_start.py asserts the module sets). The "before" row imports every command module '
                "first, as the group did before (DuckDB, NumPy, pygit2, cattrs)."
            ),
            (
                "- `parse` imports the parsers (NumPy, lxml) and no DuckDB, pygit2, cattrs or aiohttp. Both sides "
                "read the whole file; `pycobertura show` also prints every file's missed lines. Its TOTAL line "
                f"agrees on the statements ({lines['found']:,}) but counts a partly covered line as a miss, so its "
                f"Miss and Cover are not the report's line-rate; ours prints lines {lines['hit']:,}/{lines['found']:,} "
                f"and branches {branches['hit']:,}/{branches['found']:,}, the report's own totals."
            ),
            (
                "- The reads (issue 29) run on the bundled sample project with its step-3 report ingested into a "
                "store of their own home, twice. Where the command owns the store (no daemon), it opens it, "
                "validates its arguments and reads it: DuckDB, pygit2 (HEAD, the index, the measured files' "
                "content identity) and jsonschema are imported for that, and no NumPy, cattrs, runtime or "
                "composite modules, nor any review task's modules but its own (NumPy is imported by the "
                "functions that compute with columns; records are shaped without cattrs; project_context looks "
                "for a run, a command and a composite with one SELECT each; tasks resolve by a "
                '"module:function" name). Where '
                "the home's daemon holds the store, the command finds that from files alone (git's layout, the "
                "store's and the daemon's leases) and the daemon's /health, and imports none of them "
                "(`coverage_daemon.rest_client.owning_daemon`). `coverage report` reads coverage.py's "
                "data of the same tests and prints the whole table. The output schemas no longer import the "
                "execution and composite modules, and jsonschema loads on the first validation without the "
                "optional format libraries, so a `[notebooks]` install (rfc3987_syntax, 1.7 s) adds nothing "
                '(tests/test_cli_startup.py asserts the module sets). The rows "with rfc3987_syntax" run our '
                "command with that library (the [notebooks] extra's, `--notebooks-path`) importable"
                + ("" if args.notebooks_path else " (not measured in this run)")
                + (
                    "; every command could import it in this run"
                    if find_spec("rfc3987_syntax")
                    else "; the other rows ran without it"
                )
                + "."
            ),
        ]
    )
    if not routed.held_by_daemon():
        raise SystemExit(
            "the routed reads' store was not the daemon's at the end: they measured nothing routed"
        )
    routed.close()
    scratch.cleanup()
    print(text)
    if not args.no_readme:
        write_section("cli", text)


if __name__ == "__main__":
    main()
