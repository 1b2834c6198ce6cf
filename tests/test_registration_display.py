"""What a person reads is what runs (issue 21): refused characters, the one escaped display on a real terminal
emulator (pyte, through a pty), stored registrations that are no longer runnable, and the approved executable."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyte
import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.execution import commands
from coverage_core.execution.display import registration_lines
from coverage_core.execution.records import spec_of_json
from coverage_core.execution.words import quoted
from coverage_core.operations.execution_ops import ensure_runtime
from coverage_core.project import Project, open_project
from coverage_core.service import Service, answer_review
from coverage_core.storage.exec_db import exec_db

from .test_selectors import held, make_selector_repo, run


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_selector_repo(tmp_path, monkeypatch)


@pytest.fixture
def project(repo: Path) -> Iterator[Project]:
    with open_project(repo) as opened:
        yield opened


PY = sys.executable
BASE = {"name": "unit", "argv": [PY, "-c", "pass"], "artifacts": [{"path": "cov.info", "suite": "unit"}]}
REFUSED = [
    "\x1b[2K",
    "a\rb",
    "\x7f",
    "\x85",
    "\x9b31m",
    "\u202eevil",
    "\u2066x\u2069",
    "zero\u200bwidth",
    "\ufeffbom",
    "\u115f",
    "\u1160",
    "\u3164",
    "\u2800",
    "\uffa0",
    "line\u2028sep",
]


def register(project: Project, **changes: Any) -> dict[str, Any]:
    return Service(project).call("register_test_command", {**BASE, **changes})["data"]["command"]


def refused_registration(project: Project, **changes: Any) -> CoverageError:
    with pytest.raises(CoverageError) as caught:
        register(project, **changes)
    return caught.value


# -- refused characters ------------------------------------------------------------------------------------------


def test_control_format_bidi_and_invisible_characters_are_refused_in_every_part_of_a_registration(
    project: Project,
) -> None:
    """Seed: "Coverage reports, source files, logs, command strings, and database contents must be treated
    as potentially hostile input." """
    for bad in REFUSED:
        for changes in (
            {"name": "unit" + bad},
            {"cwd": "sub" + bad},
            {"env": {"A" + bad: "1"}},
            {"env": {"A": "1" + bad}},
            {"argv": [PY, "-c", "pass", bad]},
            {"argv": [PY + bad]},
            {"artifacts": [{"path": "cov" + bad + ".info", "suite": "unit"}]},
            {"artifacts": [{"path": "cov.info", "suite": "unit" + bad}]},
        ):
            error = refused_registration(project, **changes)
            assert error.code == ErrorCode.INVALID_ARGUMENT, (bad, changes)
            assert bad not in error.message, (bad, changes)  # the message shows it escaped too
    assert commands.list_commands(project) == []


def test_lf_and_tab_are_allowed_only_in_argv_words_and_env_values(project: Project) -> None:
    for changes in (
        {"name": "unit\ntests"},
        {"name": "unit\ttests"},
        {"env": {"A\n": "1"}},
        {"artifacts": [{"path": "cov\t.info", "suite": "unit"}]},
        {"artifacts": [{"path": "cov.info", "suite": "u\nnit"}]},
    ):
        assert refused_registration(project, **changes).code == ErrorCode.INVALID_ARGUMENT, changes
    script = "import sys\nfor a in sys.argv:\n\tprint(a)\n"
    command = register(project, argv=[PY, "-c", script], env={"NOTE": "two\nlines\tand a tab"})
    assert command["argv"][2] == script
    lines = command["display"]
    assert f"  argv[2]: {quoted(script)}" in lines
    assert quoted(script) == "'import sys\\nfor a in sys.argv:\\n\\tprint(a)\\n'"
    assert "  env: 'NOTE' = 'two\\nlines\\tand a tab'" in lines


def test_an_empty_program_or_a_word_that_is_not_a_string_is_invalid_argument(project: Project) -> None:
    for changes in ({"argv": [""]}, {"argv": ["", "-c"]}, {"argv": [PY, None]}, {"argv": [PY, 3]}):
        assert refused_registration(project, **changes).code == ErrorCode.INVALID_ARGUMENT, changes


def test_the_display_quotes_each_word_on_its_own_line_and_escapes_padding_and_non_ascii(
    project: Project,
) -> None:
    argv = [PY, "-m pytest", "a" + " " * 40 + "b", "кот", "x'y\\z", ""]
    command = register(project, argv=argv, name="tëst")
    lines = command["display"]
    assert lines == registration_lines(command)  # the MCP answer carries the one display
    assert "  name: 't\\u00ebst'" in lines
    assert [line for line in lines if line.startswith("  argv[")] == [
        f"  argv[0]: {quoted(PY)}",
        "  argv[1]: '-m pytest'",
        "  argv[2]: 'a" + "\\x20" * 40 + "b'",
        "  argv[3]: '\\u043a\\u043e\\u0442'",
        "  argv[4]: 'x\\'y\\\\z'",
        "  argv[5]: ''",
    ]
    assert all(line.isascii() and line.isprintable() for line in lines)


def test_the_dashboard_shows_a_pending_registration_through_the_same_display(project: Project) -> None:
    command = register(project, argv=[PY, "-c", "print(1)\n" + " " * 30 + "import os"])
    item = Service(project).call("dashboard")["data"]["approvals"]["items"][0]
    assert item["display"] == commands.show_command(project, command["id"])["display"]
    assert any("\\n" + "\\x20" * 30 + "import os" in line for line in item["display"])


# -- stored registrations with now-refused characters --------------------------------------------------------


HOSTILE_ARGV = ["sh", "-c", "touch PWNED", "\r\x1b[2K  argv: python run_tests.py\x1b[300C"]
HOSTILE_ENV = {"LD_PRELOAD": "/x/evil.so\r\x1b[2K  env: PYTHONDONTWRITEBYTECODE=1"}
HOSTILE_NAME = "unit \u202edetalpmet" + " " * 60 + "hidden"
DECOYS = ("  argv: python run_tests.py", "  env: PYTHONDONTWRITEBYTECODE=1")


def stored_before_the_rule(project: Project) -> str:
    """A registration holding escape sequences, CR, a bidi override and padding, as a store made before
    registrations refused them holds it."""
    spec = {
        "argv": HOSTILE_ARGV,
        "cwd": ".",
        "timeout_s": 600,
        "env": HOSTILE_ENV,
        "artifacts": [{"path": "cov.info", "format": None, "suite": "unit", "scope": "complete"}],
        "args_policy": "none",
    }
    digest = commands.content_hash(spec_of_json(spec))
    command_id = "cmd-" + digest[:16]
    with exec_db(project.store).transaction() as con:
        con.execute(
            "INSERT INTO commands VALUES (?, ?, ?, ?, now())",
            [command_id, digest, HOSTILE_NAME, json.dumps(spec)],
        )
    return command_id


def test_a_stored_registration_holding_now_refused_characters_cannot_be_approved_or_run(
    project: Project,
) -> None:
    command_id = stored_before_the_rule(project)
    shown = commands.show_command(project, command_id)
    assert "register it again" in shown["not_runnable"]
    assert all(line.isascii() and line.isprintable() for line in shown["display"])
    with pytest.raises(CoverageError) as caught:
        commands.approve(project, command_id, approved_by="ann", via="cli")
    assert caught.value.code == ErrorCode.NOT_APPROVED and "register" in caught.value.suggestion
    # approved anyway (a decision row written before the rule): still not runnable
    with exec_db(project.store).transaction() as con:
        con.execute(
            "INSERT INTO command_decisions (command_id, seq, decision, decided_by, via, note, decided_at) "
            "VALUES (?, 1, 'approved', 'ann', 'cli', NULL, now())",
            [command_id],
        )
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=command_id, wait=True)
    assert caught.value.code == ErrorCode.NOT_APPROVED and "again" in caught.value.message


# -- the screen of a real terminal emulator --------------------------------------------------------------------

COLUMNS, ROWS = 500, 300


def on_screen(repo: Path, *words: str) -> tuple[list[str], int]:
    """The CLI run in a pty (``coverage-mcp WORDS --repo REPO``) as a terminal shows it: pyte's screen lines."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS)}
    process = subprocess.Popen(
        [PY, "-m", "coverage_cli", *words, "--repo", str(repo)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    data = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every holder of the pty's other end has closed it
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    code = process.wait(60)
    screen = pyte.Screen(COLUMNS, ROWS)
    pyte.ByteStream(screen).feed(bytes(data))
    return [line.rstrip() for line in screen.display], code


def every_word_escaped(screen: list[str], argv: list[str], env: dict[str, str], name: str) -> None:
    text = "\n".join(screen)
    for word in [*argv, *env, *env.values(), name]:
        assert quoted(word) in text, (word, text)
    for decoy in DECOYS:
        assert not any(line.startswith(decoy) for line in screen), text
    assert not any("hidden" in line and "\\x20" not in line for line in screen), text


def test_command_show_and_list_on_a_terminal_show_every_word_escaped(repo: Path) -> None:
    with open_project(repo) as opened:
        command_id = stored_before_the_rule(opened)
    screen, code = on_screen(repo, "command", "show", command_id)
    assert code == 0, screen
    every_word_escaped(screen, HOSTILE_ARGV, HOSTILE_ENV, HOSTILE_NAME)
    assert any("NOT RUNNABLE" in line for line in screen)
    screen, code = on_screen(repo, "command", "list")
    assert code == 0, screen
    every_word_escaped(screen, HOSTILE_ARGV, HOSTILE_ENV, HOSTILE_NAME)


def test_command_approve_on_a_terminal_shows_every_word_escaped_and_refuses_a_now_refused_registration(
    repo: Path,
) -> None:
    padded = ["sh", "-c", "echo ok\n" + " " * 80 + "touch PWNED", "\tкот", "x" + " " * 50 + "y"]
    padded_env = {"NOTE": "ok\n" + " " * 40 + "LD_PRELOAD=/x/evil.so"}
    with open_project(repo) as opened:
        hostile = stored_before_the_rule(opened)
        plain = register(opened, argv=padded, env=padded_env, name="padded")["id"]
    screen, code = on_screen(repo, "command", "approve", plain)
    assert code == 0, screen
    every_word_escaped(screen, padded, padded_env, "padded")
    assert any(line.startswith("  approved by ") for line in screen), screen
    screen, code = on_screen(repo, "command", "approve", hostile)
    assert code != 0
    every_word_escaped(screen, HOSTILE_ARGV, HOSTILE_ENV, HOSTILE_NAME)
    assert any("register" in line for line in screen), screen
    with open_project(repo) as opened:
        assert commands.show_command(opened, hostile)["status"] == "pending"
        assert commands.show_command(opened, plain)["status"] == "approved"


# -- the approved executable ------------------------------------------------------------------------------------


def tool(repo: Path, body: str = "exit 0") -> Path:
    folder = repo / "bin"
    folder.mkdir(exist_ok=True)
    path = folder / "tool"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_approval_binds_the_executable_argv0_resolves_to_through_path_with_its_identity(
    project: Project, repo: Path
) -> None:
    path = tool(repo)
    command = register(project, argv=["tool"], env={"PATH": f"{repo / 'bin'}:{os.environ['PATH']}"})
    pending = commands.show_command(project, command["id"])
    assert pending["executable"]["path"] == str(path) and not pending["executable"]["approved"]
    approved = commands.approve(project, command["id"], approved_by="ann", via="cli")
    identity = approved["executable"]
    assert identity == {
        "path": str(path),
        "real_path": os.path.realpath(path),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "approved": True,
    }
    assert f"  executable approved: {quoted(str(path))}" in approved["display"]
    assert f"    sha256: {identity['sha256']}" in approved["display"]
    assert run(project, command_id=command["id"], wait=True)["state"] == "succeeded"
    tool(repo, "exit 0 # replaced")
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=command["id"], wait=True)
    assert caught.value.code == ErrorCode.NOT_APPROVED and "changed since approval" in caught.value.message
    commands.approve(project, command["id"], approved_by="ann", via="cli", note="checked the new tool")
    assert run(project, command_id=command["id"], wait=True, reuse_if_unchanged=False)["state"] == "succeeded"


def test_an_executable_found_earlier_on_path_or_through_a_retargeted_link_is_not_the_approved_one(
    project: Project, repo: Path
) -> None:
    # The same bytes are not the same approval: a copy placed earlier on the run's PATH, or the link argv[0]
    # resolves through pointed at another file, is refused, each with its own reason.
    folder, first = repo / "bin", repo / "first"
    folder.mkdir()
    first.mkdir()
    for name in ("tool.a", "tool.b"):
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
        (folder / name).chmod(0o755)
    (folder / "tool").symlink_to("tool.a")
    command = register(project, argv=["tool"], env={"PATH": f"{first}:{folder}:{os.environ['PATH']}"})
    commands.approve(project, command["id"], approved_by="ann", via="cli")
    assert run(project, command_id=command["id"], wait=True)["state"] == "succeeded"

    retarget = folder / "tool.tmp"
    retarget.symlink_to("tool.b")
    os.replace(retarget, folder / "tool")
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=command["id"], wait=True, reuse_if_unchanged=False)
    assert caught.value.code == ErrorCode.NOT_APPROVED, caught.value
    assert "now leads to" in caught.value.message and "tool.b" in caught.value.message, caught.value.message

    (folder / "tool").unlink()
    (folder / "tool").symlink_to("tool.a")
    shadow = first / "tool"
    shadow.write_bytes((folder / "tool.a").read_bytes())
    shadow.chmod(0o755)
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=command["id"], wait=True, reuse_if_unchanged=False)
    assert caught.value.code == ErrorCode.NOT_APPROVED, caught.value
    assert "now resolves to" in caught.value.message and str(shadow) in caught.value.message

    shadow.unlink()  # back to the approved one: it runs again
    assert run(project, command_id=command["id"], wait=True, reuse_if_unchanged=False)["state"] == "succeeded"


def test_an_approval_made_before_executables_were_recorded_must_be_made_again(project: Project) -> None:
    command = register(project)
    commands.approve(project, command["id"], approved_by="ann", via="cli")
    with exec_db(project.store).transaction() as con:
        con.execute("UPDATE command_decisions SET executable = NULL WHERE command_id = ?", [command["id"]])
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=command["id"], wait=True)
    assert caught.value.code == ErrorCode.NOT_APPROVED and "approve" in caught.value.suggestion
    commands.approve(project, command["id"], approved_by="ann", via="cli")
    assert run(project, command_id=command["id"], wait=True)["state"] == "succeeded"


def test_an_executable_changed_while_the_run_was_queued_is_refused_when_it_starts(
    project: Project, repo: Path
) -> None:
    tool(repo)
    command = register(project, argv=["./bin/tool"])
    commands.approve(project, command["id"], approved_by="ann", via="cli")
    first = held(project, repo)
    queued = run(project, command_id=command["id"], wait=False)
    assert queued["state"] == "queued"
    tool(repo, "touch PWNED")
    (repo / "go").touch()
    runtime = ensure_runtime(project, answer_review)
    assert runtime.wait(first["id"], 60).state == "succeeded"
    done = runtime.wait(queued["id"], 60)
    assert done.state == "failed" and "changed since approval" in done.reason, done
    assert not (repo / "PWNED").exists()


def test_a_cwd_or_artifact_folder_swapped_for_a_link_while_the_run_was_queued_is_refused_when_it_starts(
    project: Project, repo: Path, tmp_path: Path
) -> None:
    (repo / "out").mkdir()
    in_sub = register(project, cwd="sub")["id"]
    into_out = register(project, artifacts=[{"path": "out/cov.info", "suite": "unit"}])["id"]
    for command_id in (in_sub, into_out):
        commands.approve(project, command_id, approved_by="ann", via="cli")
    first = held(project, repo)
    queued = [run(project, command_id=c, wait=False) for c in (in_sub, into_out)]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rename(repo / "sub", repo / "sub.real")
    (repo / "sub").symlink_to(repo / "sub.real")
    (repo / "out").rmdir()
    (repo / "out").symlink_to(elsewhere)
    (repo / "go").touch()
    runtime = ensure_runtime(project, answer_review)
    assert runtime.wait(first["id"], 60).state == "succeeded"
    for run_ in queued:
        done = runtime.wait(run_["id"], 60)
        assert done.state == "failed" and "when the run starts" in done.reason, done
    assert not (elsewhere / "cov.info").exists()
