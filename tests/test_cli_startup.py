"""CLI commands import what they use: schemas without the modules they describe, validation without the
optional format libraries a ``[notebooks]`` install brings (issue 29).

Every check runs in a child interpreter and asserts on the modules it imported (``sys.modules`` at its
exit); how long anything takes is measured in benchmarks/cli.py, never asserted here. The ``[notebooks]``
extra installs ``rfc3987_syntax`` (through jupyter's jsonschema[format-nongpl]), whose import builds a
grammar for 1.7 s: a stand-in of that name on the child's ``PYTHONPATH`` records whether anything imported
it, so the case is tested whether or not the extra is installed here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from coverage_core.project import open_project
from coverage_core.service import Service

from .commandline import cli
from .daemons import ServeProcess
from .environment import test_env

STAND_IN = """\
import os, pathlib
pathlib.Path(os.environ["STAND_IN_MARKER"]).write_text("imported")


def is_valid_syntax(*args, **kwargs):
    return True
"""

# The child runs ``coverage-mcp ARGV`` as the console script does and writes, at its exit, which modules
# it had imported.
CHILD = """\
import atexit, json, os, sys
atexit.register(lambda: open(os.environ["MODULES_OUT"], "w").write(json.dumps(sorted(sys.modules))))
{body}
"""
RUN_CLI = "from coverage_cli.entry import main\nmain(sys.argv[1:])"


def child(
    tmp_path: Path, body: str, *argv: str, cwd: Path | None = None, home: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``body`` in a fresh interpreter with the stand-in ``rfc3987_syntax`` importable (and ``home`` as
    its COVERAGE_MCP_HOME); its result and the set of modules it had imported at exit."""
    stand_in = tmp_path / "stand-in"
    stand_in.mkdir(exist_ok=True)
    (stand_in / "rfc3987_syntax.py").write_text(STAND_IN)
    out = tmp_path / "modules.json"
    env = test_env(
        home=home,
        PYTHONPATH=os.pathsep.join([str(stand_in), *filter(None, [os.environ.get("PYTHONPATH")])]),
        STAND_IN_MARKER=str(tmp_path / "stand-in-imported"),
        MODULES_OUT=str(out),
    )
    process = subprocess.run(
        [sys.executable, "-c", CHILD.format(body=body), *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or tmp_path,
        timeout=120,
        check=False,
    )
    assert out.exists(), f"the child wrote no module list: {process.stderr[-2000:]}"  # evidence, or a failure
    return process, set(json.loads(out.read_text()))


def packages(modules: set[str], *names: str) -> set[str]:
    """The modules of ``modules`` that are one of ``names`` or inside one."""
    return {m for m in modules if any(m == n or m.startswith(n + ".") for n in names)}


def test_help_imports_neither_jsonschema_nor_a_format_library_nor_numpy_or_duckdb(tmp_path: Path) -> None:
    process, modules = child(tmp_path, RUN_CLI, "--help")
    assert process.returncode == 0, process.stderr[-2000:]
    assert "Commands:" in process.stdout
    assert packages(modules, "jsonschema", "rfc3987_syntax", "numpy", "duckdb") == set()
    assert not (tmp_path / "stand-in-imported").exists()


def test_the_output_schemas_are_built_without_the_execution_and_composite_modules_they_describe(
    tmp_path: Path,
) -> None:
    process, modules = child(
        tmp_path,
        "import coverage_core.output_schemas, coverage_core.operations.review_task_table as t\n"
        "assert t.BY_NAME['insight'].summary",
    )
    assert process.returncode == 0, process.stderr[-2000:]
    assert "coverage_core.output_schemas" in modules
    assert (
        packages(
            modules,
            "coverage_core.execution",
            "coverage_core.composite",
            "coverage_core.storage",
            "duckdb",
            "numpy",
            "pygit2",
            "jsonschema",
        )
        == set()
    )


def test_importing_the_read_commands_imports_neither_the_library_nor_a_validator_nor_a_format_library(
    tmp_path: Path,
) -> None:
    process, modules = child(tmp_path, "import coverage_cli.review_cmds, coverage_cli.store_cmds")
    assert process.returncode == 0, process.stderr[-2000:]
    assert {
        "coverage_cli.review_cmds",
        "coverage_cli.store_cmds",
        "coverage_core.operations.table",
    } <= modules
    assert (
        packages(
            modules, "jsonschema", "rfc3987_syntax", "duckdb", "numpy", "pygit2", "coverage_core.service"
        )
        == set()
    )
    assert not (tmp_path / "stand-in-imported").exists()


def test_a_read_that_owns_the_store_validates_its_arguments_without_importing_a_format_library(
    tmp_path: Path, sample_repo: Path
) -> None:
    ingested = cli("ingest", str(sample_repo / "step3.coverage.json"), "--suite", "unit", repo=sample_repo)
    assert ingested.returncode == 0, ingested.stderr
    for argv in (["context"], ["snapshots"], ["review", "insight", "--suite", "unit"]):
        expected = cli(*argv, repo=sample_repo)
        process, modules = child(tmp_path, RUN_CLI, *argv, "--repo", str(sample_repo), cwd=sample_repo)
        assert (process.returncode, process.stdout) == (expected.returncode, expected.stdout), process.stderr
        assert process.returncode == 0
        assert "jsonschema" in modules  # the arguments were validated in this process
        assert packages(modules, "rfc3987_syntax") == set()
        assert not (tmp_path / "stand-in-imported").exists()


def test_a_read_of_a_store_the_daemon_holds_goes_to_it_without_importing_duckdb_numpy_or_pygit2(
    tmp_path: Path, sample_repo: Path, shared_serve_process: ServeProcess
) -> None:
    daemon = shared_serve_process
    daemon.client().register(sample_repo)  # the daemon now holds the store
    stored = daemon.cli(
        "ingest", str(sample_repo / "step3.coverage.json"), "--repo", str(sample_repo), "--json"
    )
    assert stored.returncode == 0, stored.stderr
    snapshot_id = json.loads(stored.stdout)["data"]["snapshot"]["snapshot_id"]
    for argv in (["context"], ["snapshots"], ["review", "insight"], ["show", snapshot_id]):
        expected = daemon.cli(*argv, "--repo", str(sample_repo))
        process, modules = child(
            tmp_path, RUN_CLI, *argv, "--repo", str(sample_repo), cwd=sample_repo, home=daemon.home
        )
        assert (process.returncode, process.stdout) == (expected.returncode, expected.stdout), process.stderr
        assert process.returncode == 0 and snapshot_id in process.stdout
        assert "coverage_daemon.rest_client" in modules
        heavy = ("duckdb", "numpy", "pygit2", "jsonschema", "cattrs", "coverage_core.service", "portalocker")
        assert packages(modules, *heavy) == set(), argv


def test_a_read_of_a_store_nobody_holds_opens_it_in_process_while_a_daemon_runs(
    tmp_path: Path, sample_repo: Path, shared_serve_process: ServeProcess
) -> None:
    # The daemon runs but has never opened this repository's store: the command owns it, as before.
    ingested = cli("ingest", str(sample_repo / "step3.coverage.json"), repo=sample_repo)
    assert ingested.returncode == 0, ingested.stderr
    process, modules = child(
        tmp_path,
        RUN_CLI,
        "context",
        "--repo",
        str(sample_repo),
        cwd=sample_repo,
        home=shared_serve_process.home,
    )
    assert process.returncode == 0, process.stderr
    assert {"duckdb", "coverage_core.service"} <= modules
    assert "suite default" in process.stdout


def test_an_invalid_argument_is_still_refused_with_its_coded_message_after_the_lazy_import(
    tmp_path: Path,
) -> None:
    process, modules = child(
        tmp_path,
        "from coverage_core.errors import CoverageError\n"
        "from coverage_core.validation import Validator\n"
        "v = Validator({'type': 'object', 'properties': {'n': {'type': 'integer'}}, 'additionalProperties': False})\n"
        "v.check({'n': 1}, what='args')\n"
        "try:\n"
        "    v.check({'n': 'x'}, what='args')\n"
        "except CoverageError as e:\n"
        "    print(e.code.value, e.message)\n",
    )
    assert process.returncode == 0, process.stderr[-2000:]
    assert process.stdout == "invalid_argument args: $.n: expected integer, got str 'x'\n"
    assert "jsonschema" in modules and "rfc3987_syntax" not in modules


def test_a_format_library_kept_out_of_jsonschema_stays_importable_for_everyone_else(tmp_path: Path) -> None:
    process, modules = child(
        tmp_path,
        "from coverage_core.validation import Validator\n"
        "Validator({'type': 'integer'}).check(1, what='n')\n"
        "import rfc3987_syntax\n"
        "assert rfc3987_syntax.is_valid_syntax('iri', 'x')",
    )
    assert process.returncode == 0, process.stderr[-2000:]
    assert {"jsonschema", "rfc3987_syntax"} <= modules
    assert (tmp_path / "stand-in-imported").read_text() == "imported"


THREADS_VALIDATE = """\
import threading
from coverage_core.service import Service, _VALIDATORS
start, errors = threading.Barrier(16), []
def first_call(n):
    start.wait()
    try:
        _VALIDATORS["coverage_review"].check({"task": "insight"}, what="coverage_review")
    except Exception as error:
        errors.append(repr(error))
threads = [threading.Thread(target=first_call, args=(n,)) for n in range(16)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(errors))
"""


def test_a_daemons_first_calls_on_many_threads_at_once_all_validate(tmp_path: Path) -> None:
    # jsonschema loads on the first validation: threads that validate at once while one imports it must
    # wait for the whole module, never use a partly imported one (it made a daemon's first call internal).
    process, modules = child(tmp_path, THREADS_VALIDATE)
    assert process.returncode == 0, process.stderr[-2000:]
    assert json.loads(process.stdout.splitlines()[-1]) == []
    assert "jsonschema" in modules


# What a read that owns the store may not import: the columns' library, the records' converter, the HTTP client
# (no daemon to talk to), the modules of the runtime and the composites (project_context looks for a run, a
# command and a composite with one SELECT each first), and every review task's modules but its own.
NOT_FOR_READS = (
    "numpy",
    "cattrs",
    "rfc3987_syntax",
    "http.client",
    "coverage_core.execution",
    "coverage_core.composite",
)
OTHER_TASKS = {
    "context": ("insight", "listing", "change", "incremental", "history", "audit", "named_tests"),
    "snapshots": ("insight", "change", "incremental", "history", "audit", "named_tests", "annotated_source"),
    "review": ("listing", "change", "incremental", "history", "audit", "named_tests", "annotated_source"),
}


def test_a_read_that_owns_the_store_imports_no_numpy_cattrs_runtime_composites_or_other_tasks(
    tmp_path: Path, sample_repo: Path
) -> None:
    ingested = cli("ingest", str(sample_repo / "step3.coverage.json"), "--suite", "unit", repo=sample_repo)
    assert ingested.returncode == 0, ingested.stderr
    snapshot_id = json.loads(cli("snapshots", "--json", repo=sample_repo).stdout)["data"]["snapshots"][0][
        "snapshot_id"
    ]
    for argv in (["context"], ["snapshots"], ["review", "insight", "--suite", "unit"]):
        process, modules = child(tmp_path, RUN_CLI, *argv, "--repo", str(sample_repo), cwd=sample_repo)
        assert process.returncode == 0, process.stderr
        assert snapshot_id in process.stdout  # the real answer, read in this process
        assert {"duckdb", "coverage_core.service"} <= modules
        assert packages(modules, *NOT_FOR_READS) == set(), argv
        others = [f"coverage_core.review.{name}" for name in OTHER_TASKS[argv[0]]]
        assert packages(modules, *others) == set(), argv
        assert not (tmp_path / "stand-in-imported").exists()


def test_a_read_that_owns_the_store_lists_its_runs_commands_and_composite_once_there_are_some(
    tmp_path: Path, sample_repo: Path
) -> None:
    # The other side of the SELECTs that keep the runtime's modules out: with a command registered the
    # context lists it (and imports what reads it).
    ingested = cli("ingest", str(sample_repo / "step3.coverage.json"), repo=sample_repo)
    assert ingested.returncode == 0, ingested.stderr
    with open_project(sample_repo) as project:
        args = {
            "name": "unit",
            "argv": [sys.executable, "-c", "pass"],
            "artifacts": [{"path": "c.info", "suite": "unit"}],
        }
        Service(project).call("register_test_command", args)
    process, modules = child(
        tmp_path, RUN_CLI, "context", "--json", "--repo", str(sample_repo), cwd=sample_repo
    )
    assert process.returncode == 0, process.stderr
    commands = json.loads(process.stdout)["data"]["commands"]
    assert [c["name"] for c in commands] == ["unit"]
    assert "coverage_core.execution.commands" in modules


SPAWNS = """\
import atexit, os, sys
spawned = []
sys.addaudithook(lambda event, args: spawned.append([event, repr(args)[:200]]) if event in (
    "subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork", "os.system") else None)
atexit.register(lambda: open(os.environ["MODULES_OUT"] + ".spawned", "w").write(json.dumps(spawned)))
from coverage_cli.entry import main
main(sys.argv[1:])
"""


def test_a_read_that_owns_the_store_starts_no_process(tmp_path: Path, sample_repo: Path) -> None:
    # git is read through libgit2 and the heap trim is looked up on first use: ctypes.util.find_library ran
    # `ldconfig -p` in a subprocess at every import of the project (12 ms of each command's start).
    ingested = cli("ingest", str(sample_repo / "step3.coverage.json"), "--suite", "unit", repo=sample_repo)
    assert ingested.returncode == 0, ingested.stderr
    for argv in (["context"], ["snapshots"], ["review", "insight", "--suite", "unit"]):
        process, modules = child(tmp_path, SPAWNS, *argv, "--repo", str(sample_repo), cwd=sample_repo)
        assert process.returncode == 0, process.stderr
        assert "coverage_core.service" in modules and "snap-" in process.stdout  # read in this process
        assert json.loads((tmp_path / "modules.json.spawned").read_text()) == [], argv
