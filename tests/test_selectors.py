"""Case-argument selectors on the real pytest: one canonical form, checked against the registered cwd, inside the
checkout with no link, again when the run starts (issue 21)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.execution import commands, runs
from coverage_core.operations.execution_ops import ensure_runtime
from coverage_core.project import Project, open_project
from coverage_core.service import Service, answer_review

from .gitrepo import make_repo
from .test_runs import wait_for

PY = sys.executable
PYTEST = [PY, "-m", "pytest", "-p", "no:cacheprovider", "-v"]
# The checkout's tests are plain pytest: none of this suite's plugins (xdist, asyncio, hypothesis...) loads
# in the runs (each would cost every run's pytest its import).
PLAIN_PYTEST = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
TESTS = """\
import pytest


@pytest.mark.parametrize("a", [1], ids=["a=1"])
def test_x(a):
    assert a == 1


@pytest.mark.parametrize("s", ["hello world"])
def test_hello(s):
    assert s


def test_café():
    pass


def test_plain():
    pass
"""
# Holds the queue (run_concurrency 1): says it started, then waits until the test lets it end.
BLOCK = """\
import os, time
open("held", "w").close()
while not os.path.exists("go"):
    time.sleep(0.05)
"""
FILES = {
    "tests/test_ok.py": TESTS,
    "tests/test_swap.py": "def test_swap():\n    pass\n",
    "sub/test_sub.py": "def test_sub():\n    pass\n",
    "setup.py": "raise SystemExit('setup.py imported')\n",
    "block.py": BLOCK,
    ".gitignore": "held\ngo\ncov.info\n",
}


def planted(marker: Path) -> str:
    """A test module that leaves ``marker`` behind when anything imports it."""
    return f"import os\nopen({str(marker)!r}, 'w').write(str(os.getuid()))\n\ndef test_planted():\n    pass\n"


def make_selector_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The checkout these tests run pytest in, with one run at a time (so a held run holds the queue)."""
    monkeypatch.setenv("COVERAGE_MCP_RUN_CONCURRENCY", "1")
    return make_repo(tmp_path / "repo", FILES)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_selector_repo(tmp_path, monkeypatch)


@pytest.fixture
def project(repo: Path) -> Iterator[Project]:
    with open_project(repo) as opened:
        yield opened


def approved(project: Project, argv: list[str], **extra: Any) -> str:
    args = {"name": "pytest", "argv": argv, "artifacts": [{"path": "cov.info", "suite": "unit"}], **extra}
    if argv == PYTEST:
        args.setdefault("env", PLAIN_PYTEST)
    command_id = Service(project).call("register_test_command", args)["data"]["command"]["id"]
    commands.approve(project, command_id, approved_by="tester", via="cli")
    return command_id


@pytest.fixture
def selectors(project: Project) -> str:
    return approved(project, PYTEST, args_policy="selectors")


def run(project: Project, **args: Any) -> dict[str, Any]:
    return Service(project).call("run_test", args)["data"]["run"]


def refused(project: Project, command_id: str, args: list[Any]) -> CoverageError:
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=command_id, args=args, wait=True)
    return caught.value


def logs_of(project: Project) -> bytes:
    """Every byte of every run's logs in this store."""
    folder = project.store.path.parent / "runs"
    return (
        b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()) if folder.exists() else b""
    )


def stdout_of(project: Project, run_id: str) -> str:
    answer = Service(project).call("run_review", {"run_id": run_id, "view": "logs", "stream": "stdout"})
    return "".join(part["text"] for part in answer["data"]["text"])


@pytest.fixture
def world_writable() -> Iterator[Path]:
    """A sticky world-writable folder every uid can reach (as /tmp is), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="cov21-pub-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# -- argument files ----------------------------------------------------------------------------------


def test_an_argument_file_selector_is_refused_and_the_secret_it_names_never_reaches_the_log(
    project: Project, selectors: str, tmp_path: Path
) -> None:
    # pytest 8.2+ reads each line of @FILE as an argument, and echoes an unusable one in its error: over MCP alone
    # an agent read a credentials file this way through run_review.
    secret = tmp_path / "credentials"
    secret.write_text("SECRET-7f3a9c\n")
    outcome: Any
    try:
        outcome = run(project, command_id=selectors, args=["@" + str(secret)], wait=True)
    except CoverageError as error:
        outcome = error
    assert b"SECRET-7f3a9c" not in logs_of(project)
    assert isinstance(outcome, CoverageError), outcome
    assert outcome.code == ErrorCode.INVALID_ARGUMENT
    assert runs.list_runs(project) == []


def test_a_module_planted_by_another_user_is_never_imported_through_an_argument_file(
    project: Project, selectors: str, world_writable: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("planting a module as uid nobody needs root to switch users; this run is not root")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv (util-linux) to write files as uid nobody")
    nobody = pwd.getpwnam("nobody")
    marker = world_writable / "imported"
    module, listing = world_writable / "test_planted.py", world_writable / "args"
    script = f"printf '%s' \"$1\" > {module} && printf '%s\\n' {module} > {listing}"
    subprocess.run(
        [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", "sh", "-c", script,
         "sh", planted(marker)],
        check=True,
        timeout=30,
    )  # fmt: skip
    assert module.stat().st_uid == nobody.pw_uid
    outcome: Any
    try:
        outcome = run(project, command_id=selectors, args=["@" + str(listing)], wait=True)
    except CoverageError as error:
        outcome = error
    assert not marker.exists(), "the planted module ran as the daemon's user"
    assert isinstance(outcome, CoverageError) and outcome.code == ErrorCode.INVALID_ARGUMENT, outcome


def test_options_and_prefixed_words_are_refused_and_a_plain_path_is_rewritten_to_its_canonical_form(
    project: Project, selectors: str, repo: Path
) -> None:
    for bad in ("-p", "--co", "+x", "~", "--", "-k=x", "@tests/test_ok.py"):
        assert refused(project, selectors, [bad]).code == ErrorCode.INVALID_ARGUMENT, bad
    done = run(
        project, command_id=selectors, args=[str(repo / "tests" / "test_ok.py") + "::test_plain"], wait=True
    )
    assert done["state"] == "succeeded", stdout_of(project, done["id"])
    assert done["args"] == ["./tests/test_ok.py::test_plain"]
    assert "1 passed" in stdout_of(project, done["id"])


def test_an_empty_or_malformed_case_argument_is_invalid_argument_never_internal(
    project: Project, selectors: str
) -> None:
    for bad in (
        [""],
        ["tests/test_ok.py", ""],
        [" "],
        ["::test_plain"],
        ["tests/test_ok.py::"],
        ["tests/test_ok.py::::test_plain"],
        ["tests/test_ok.py::test_x[a=1"],
        ["tests/test_ok.py::test_x[]"],
        ["tests/missing.py"],
    ):
        error = refused(project, selectors, bad)
        assert error.code == ErrorCode.INVALID_ARGUMENT, bad
        assert error.details["args_policy"] == "selectors", bad
    assert runs.list_runs(project) == []


# -- links and the registered cwd --------------------------------------------------------------------------


def test_a_selector_naming_a_link_inside_the_checkout_to_an_outside_file_is_refused(
    project: Project, selectors: str, repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = tmp_path / "imported"
    (outside / "test_out.py").write_text(planted(marker))
    (repo / "tests" / "test_link.py").symlink_to(outside / "test_out.py")
    error = refused(project, selectors, ["tests/test_link.py::test_planted"])
    assert error.code == ErrorCode.PATH_OUTSIDE_CHECKOUT
    assert not marker.exists()
    assert runs.list_runs(project) == []


def test_a_selector_through_a_link_is_refused_even_when_the_link_stays_inside_the_checkout(
    project: Project, selectors: str, repo: Path
) -> None:
    (repo / "tests" / "test_alias.py").symlink_to(repo / "tests" / "test_ok.py")
    (repo / "tests" / "again").symlink_to(repo / "tests")
    for bad in ("tests/test_alias.py", "tests/again/test_ok.py::test_plain"):
        error = refused(project, selectors, [bad])
        assert error.code == ErrorCode.INVALID_ARGUMENT, bad
        assert "link" in error.message, bad
    assert runs.list_runs(project) == []


def test_a_selector_is_resolved_against_the_registered_cwd_not_the_checkout_root(
    project: Project, repo: Path
) -> None:
    in_sub = approved(project, PYTEST, args_policy="selectors", cwd="sub")
    # tests/test_ok.py exists under the root, but the command runs in sub/, where pytest would not find it.
    error = refused(project, in_sub, ["tests/test_ok.py"])
    assert error.code == ErrorCode.INVALID_ARGUMENT
    assert "sub" in error.message
    assert runs.list_runs(project) == []
    done = run(project, command_id=in_sub, args=["../tests/test_ok.py::test_plain", "test_sub.py"], wait=True)
    assert done["state"] == "succeeded", stdout_of(project, done["id"])
    assert done["args"] == ["./../tests/test_ok.py::test_plain", "./test_sub.py"]
    assert "2 passed" in stdout_of(project, done["id"])


def test_selector_roots_bound_where_selectors_point_and_are_part_of_the_registration(
    project: Project, repo: Path
) -> None:
    bounded = approved(project, PYTEST, args_policy="selectors", selector_roots=["tests"])
    unbounded = approved(project, PYTEST, args_policy="selectors")
    assert bounded != unbounded  # selector_roots is part of the content hash
    shown = commands.show_command(project, bounded)
    assert shown["selector_roots"] == ["tests"]
    assert any("'tests'" in line for line in shown["display"] if "selector_roots" in line)
    for bad in ("setup.py", "sub/test_sub.py", "."):
        error = refused(project, bounded, [bad])
        assert error.code == ErrorCode.INVALID_ARGUMENT, bad
        assert "selector_roots" in error.message, bad
    done = run(project, command_id=bounded, args=["tests/test_ok.py::test_plain"], wait=True)
    assert done["state"] == "succeeded"
    for roots in (["../x"], ["missing"], ["tests", "tests"], [""], "tests"):
        with pytest.raises(CoverageError) as caught:
            approved(project, PYTEST, args_policy="selectors", selector_roots=roots)
        assert caught.value.code in (ErrorCode.INVALID_ARGUMENT, ErrorCode.PATH_OUTSIDE_CHECKOUT), roots
    with pytest.raises(CoverageError) as caught:
        approved(project, PYTEST, selector_roots=["tests"])  # args_policy none takes no selectors
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT


# -- real parametrised ids ---------------------------------------------------------------------------------


def test_real_parametrised_node_ids_with_equals_spaces_and_non_ascii_are_accepted_and_run(
    project: Project, selectors: str
) -> None:
    ids = [
        "tests/test_ok.py::test_x[a=1]",
        "tests/test_ok.py::test_hello[hello world]",
        "tests/test_ok.py::test_café",
    ]
    done = run(project, command_id=selectors, args=ids, wait=True)
    out = stdout_of(project, done["id"])
    assert done["state"] == "succeeded", out
    assert done["args"] == ["./" + i for i in ids]
    for node in ("test_x[a=1] PASSED", "test_hello[hello world] PASSED", "test_café PASSED", "3 passed"):
        assert node in out, out


def test_a_parameter_id_a_word_splitting_wrapper_would_turn_into_an_option_or_a_path_is_refused(
    project: Project, selectors: str
) -> None:
    for bad in (
        "tests/test_ok.py::test_x[a -p evil]",
        "tests/test_ok.py::test_x[a @args]",
        "tests/test_ok.py::test_x[a /etc/passwd]",
        "tests/test_ok.py::test_x[a  b]",
        "tests/test_ok.py::test_x[a\tb]",
        "tests/test_ok.py::test_x[a\nb]",
        "tests/test_ok.py::test_x[a\u00a0b]",
    ):
        assert refused(project, selectors, [bad]).code == ErrorCode.INVALID_ARGUMENT, bad
    assert runs.list_runs(project) == []


# -- checked again when the run starts --------------------------------------------------------------------


def held(project: Project, repo: Path) -> dict[str, Any]:
    """A running run that holds the queue (run_concurrency 1) until ``go`` exists."""
    blocker = approved(project, [PY, "block.py"])
    first = run(project, command_id=blocker, wait=False)
    wait_for(lambda: (repo / "held").exists(), "the blocking run to start")
    return first


def test_a_selector_file_swapped_for_a_link_while_the_run_was_queued_is_refused_when_it_starts(
    project: Project, selectors: str, repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "test_evil.py").write_text(planted(marker))
    first = held(project, repo)
    queued = run(project, command_id=selectors, args=["tests/test_swap.py"], wait=False)
    assert queued["state"] == "queued" and queued["args"] == ["./tests/test_swap.py"]
    link = repo / "tests" / "link.tmp"
    link.symlink_to(tmp_path / "test_evil.py")
    os.replace(link, repo / "tests" / "test_swap.py")
    (repo / "go").touch()
    runtime = ensure_runtime(project, answer_review)
    assert runtime.wait(first["id"], 60).state == "succeeded"
    done = runtime.wait(queued["id"], 60)
    assert done.state == "failed", done
    assert "tests/test_swap.py" in done.reason and "checkout" in done.reason, done.reason
    assert not marker.exists(), "the swapped-in module ran"
