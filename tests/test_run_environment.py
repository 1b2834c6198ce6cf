"""A run's environment is declared (issue 23): a documented base, runner presets, the registered env and an
inherit allow-list; the daemon's other variables (secrets among them) never reach a run."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from coverage_cli.main import cli
from coverage_core.execution import commands
from coverage_core.execution.records import spec_of_json
from coverage_core.project import Project, open_project
from coverage_core.storage.exec_db import exec_db

from . import systemtools
from .gitrepo import make_repo
from .test_runs import FILES, PY, approved, register, run

# Writes its whole environment to env.json and a one-line LCOV report, so the run has an artifact.
ENVDUMP = """\
import json, os
open("env.json", "w").write(json.dumps(dict(os.environ)))
open("cov.info", "w").write("SF:app.py\\nDA:1,1\\nend_of_record\\n")
"""
NODE_ENVDUMP = (
    "const fs = require('fs'); fs.writeFileSync('env.json', JSON.stringify(process.env)); "
    "fs.writeFileSync('cov.info', 'SF:app.py\\nDA:1,1\\nend_of_record\\n');"
)
ENV_FILES = {
    **FILES,
    "envdump.py": ENVDUMP,
    "envdump.go": (
        'package main\n\nimport (\n\t"encoding/json"\n\t"os"\n\t"strings"\n)\n\n'
        "func main() {\n\tenv := map[string]string{}\n\tfor _, kv := range os.Environ() {\n"
        '\t\tparts := strings.SplitN(kv, "=", 2)\n\t\tenv[parts[0]] = parts[1]\n\t}\n'
        '\tdata, _ := json.Marshal(env)\n\tos.WriteFile("env.json", data, 0o644)\n'
        '\tos.WriteFile("cov.info", []byte("SF:app.py\\nDA:1,1\\nend_of_record\\n"), 0o644)\n}\n'
    ),
    ".gitignore": FILES[".gitignore"] + "env.json\n",
}
pytest_plugins = ["tests.test_daemon_support"]
SECRET = "AKIA-not-a-real-key-0123456789"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", ENV_FILES)


@pytest.fixture
def project(repo: Path) -> Iterator[Project]:
    with open_project(repo) as opened:
        yield opened


@pytest.fixture
def daemon_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment of the process that runs the commands: the usual variables plus secrets and toolchains."""
    for name, value in {
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "COVERAGE_MCP_TOKEN": "the-client-token-someone-exported",
        "UNRELATED_SETTING": "x",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "CI": "true-or-not",
        "MY_TOOL_HOME": "/opt/mytool",
        "PYTHONPATH": "/somewhere/python",
        "GOPATH": "/somewhere/go",
        "GOFLAGS": "-mod=mod",
        "NODE_OPTIONS": "--max-old-space-size=256",
        "npm_config_cache": "/somewhere/npm",
        "CARGO_HOME": "/somewhere/cargo",
    }.items():
        monkeypatch.setenv(name, value)


def _env_of(repo: Path) -> dict[str, str]:
    return json.loads((repo / "env.json").read_text())


@pytest.mark.usefixtures("daemon_env")
def test_a_run_gets_the_base_its_presets_its_env_and_its_inherit_list_and_never_a_secret(
    project: Project, repo: Path
) -> None:
    command_id = approved(
        project,
        [PY, "envdump.py"],
        env={"PYTHONHASHSEED": "0"},
        inherit=["MY_TOOL_HOME"],
        runners=["python"],
    )
    done = run(project, command_id=command_id, wait=True)
    assert done["state"] == "succeeded", done
    env = _env_of(repo)
    for name in (
        "AWS_SECRET_ACCESS_KEY",
        "COVERAGE_MCP_TOKEN",
        "COVERAGE_MCP_HOME",
        "UNRELATED_SETTING",
        "GOPATH",
    ):
        assert name not in env, name
    assert SECRET not in json.dumps(env)
    assert env["PATH"] == os.environ["PATH"] and env["HOME"] == os.environ["HOME"]
    assert (env["LANG"], env["LC_ALL"], env["TZ"], env["CI"]) == ("C.UTF-8", "C.UTF-8", "UTC", "true-or-not")
    assert env["PYTHONPATH"] == "/somewhere/python"  # the python preset
    assert env["MY_TOOL_HOME"] == "/opt/mytool"  # the inherit allow-list
    assert env["PYTHONHASHSEED"] == "0"  # its registered env
    assert env["COVERAGE_MCP_RUN_ID"] == done["id"]  # the watchdog's marker still reaches it


def test_runners_and_the_inherit_list_are_part_of_the_content_hash_and_shown_at_approval(
    project: Project,
) -> None:
    plain = register(project, [PY, "envdump.py"], runners=["python"])
    more = register(project, [PY, "envdump.py"], runners=["python"], inherit=["MY_TOOL_HOME"])
    other = register(project, [PY, "envdump.py"], runners=["node"])
    assert len({plain, more, other}) == 3
    shown = commands.show_command(project, more)
    assert shown["runners"] == ["python"] and shown["inherit"] == ["MY_TOOL_HOME"]
    assert "PYTHONPATH" in shown["environment"]["runner_variables"]
    assert "PATH" in shown["environment"]["base"]


def test_an_unknown_runner_or_a_coverage_mcp_name_in_the_inherit_list_is_refused(project: Project) -> None:
    from coverage_core.errors import CoverageError

    with pytest.raises(CoverageError) as unknown:
        register(project, [PY, "envdump.py"], runners=["cobol"])
    assert "python" in unknown.value.suggestion
    with pytest.raises(CoverageError):
        register(project, [PY, "envdump.py"], inherit=["COVERAGE_MCP_TOKEN"])


@pytest.mark.usefixtures("daemon_env")
def test_a_go_command_and_a_node_command_run_with_their_own_preset_only(project: Project, repo: Path) -> None:
    what = "go run"
    go = approved(project, [systemtools.require("go"), "run", "envdump.go"], name="go")
    assert commands.show_command(project, go)["runners"] == ["go"], "go is detected from the program's name"
    done = run(project, command_id=go, wait=True)
    assert done["state"] == "succeeded", (what, done)
    env = _env_of(repo)
    assert (env["GOPATH"], env["GOFLAGS"]) == ("/somewhere/go", "-mod=mod"), what
    assert not {
        "NODE_OPTIONS",
        "npm_config_cache",
        "PYTHONPATH",
        "CARGO_HOME",
        "AWS_SECRET_ACCESS_KEY",
    } & set(env)

    node = systemtools.require("node")
    js = approved(project, [node, "-e", NODE_ENVDUMP], name="node")
    assert commands.show_command(project, js)["runners"] == ["node"]
    done = run(project, command_id=js, wait=True)
    assert done["state"] == "succeeded", done
    env = _env_of(repo)
    assert (env["NODE_OPTIONS"], env["npm_config_cache"]) == ("--max-old-space-size=256", "/somewhere/npm")
    assert not {"GOPATH", "GOFLAGS", "PYTHONPATH", "CARGO_HOME", "AWS_SECRET_ACCESS_KEY"} & set(env)


@pytest.mark.usefixtures("daemon_env")
def test_command_show_lists_which_of_the_daemons_variables_are_not_passed(
    project: Project, repo: Path
) -> None:
    command_id = register(project, [PY, "envdump.py"], inherit=["MY_TOOL_HOME"])
    project.store.close()
    done = CliRunner().invoke(cli, ["command", "show", command_id, "--repo", str(repo)])
    assert done.exit_code == 0, done.output
    not_passed = next(line for line in done.output.splitlines() if "not passed" in line)
    names = set(not_passed.split(": ", 1)[1].split(", "))
    assert {"AWS_SECRET_ACCESS_KEY", "UNRELATED_SETTING", "COVERAGE_MCP_TOKEN"} <= names
    assert not {"MY_TOOL_HOME", "PATH", "HOME", "LANG"} & names
    assert SECRET not in done.output  # names, never values
    assert "inherit: MY_TOOL_HOME" in done.output


def _legacy(project: Project, argv: list[str]) -> str:
    """A registration stored under the old inherit-everything rule: its spec has no runners or inherit list."""
    spec = {
        "argv": argv,
        "cwd": ".",
        "timeout_s": 600,
        "env": {},
        "artifacts": [{"path": "cov.info", "format": None, "suite": "unit", "scope": "complete"}],
        "args_policy": "none",
    }
    digest = commands.content_hash(spec_of_json(spec))
    command_id = "cmd-" + digest[:16]
    with exec_db(project.store).transaction() as con:
        con.execute(
            "INSERT INTO commands VALUES (?, ?, ?, ?, ?)",
            [command_id, digest, "legacy", json.dumps(spec), dt.datetime.now(dt.UTC)],
        )
    commands.approve(project, command_id, approved_by="tester", via="cli")
    return command_id


@pytest.mark.usefixtures("daemon_env")
def test_a_registration_from_the_inherit_everything_era_runs_with_the_base_and_says_re_registering_restores_more(
    project: Project, repo: Path
) -> None:
    command_id = _legacy(project, [PY, "envdump.py"])
    done = run(project, command_id=command_id, wait=True)
    assert done["state"] == "succeeded", done
    env = _env_of(repo)
    assert "PATH" in env and "LANG" in env
    assert not {"AWS_SECRET_ACCESS_KEY", "PYTHONPATH", "MY_TOOL_HOME", "UNRELATED_SETTING"} & set(env)
    shown = commands.show_command(project, command_id)
    assert "re-register" in shown["environment"]["note"]


@pytest.mark.usefixtures("daemon_env")
def test_a_command_that_fails_to_start_says_which_variables_it_did_not_get(project: Project) -> None:
    # The approved program exists (approval resolves it) but cannot be executed: its interpreter is gone, so
    # exec fails with ENOENT when the run starts.
    script = project.checkout.worktree_path / "orphan.sh"
    script.write_text("#!/no/such/interpreter\n")
    script.chmod(0o755)
    missing = approved(project, ["./orphan.sh"], name="missing")
    done = run(project, command_id=missing, wait=True)
    # The supervisor's exec fails, so the run ends as a shell's "not found" does: 127, naming the variables.
    assert done["state"] == "failed" and done["exit_code"] == 127, done
    assert "AWS_SECRET_ACCESS_KEY" in done["reason"] and "GOPATH" in done["reason"], done["reason"]
    assert SECRET not in done["reason"]
    # A program found but exiting 127 (a shell's "command not found") says it too.
    shell = approved(project, ["sh", "-c", "no-such-program-on-path"], name="sh")
    done = run(project, command_id=shell, wait=True)
    assert done["state"] == "failed" and done["exit_code"] == 127
    assert "UNRELATED_SETTING" in done["reason"], done["reason"]


async def test_no_variable_carrying_the_daemons_token_or_capability_reaches_a_run_whatever_its_name(
    daemon: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coverage_daemon.credentials import client_token

    from .test_daemon_rest import call
    from .test_daemon_rest import register as register_project

    home = daemon.daemon.settings.home
    monkeypatch.setenv("MY_TOKEN", f"Bearer {client_token(home)}")  # a user's copy under another name
    monkeypatch.setenv("MY_CAPABILITY", daemon.daemon.capability)
    monkeypatch.setenv("MY_HARMLESS", "kept")
    pid = await register_project(daemon, repo)
    args = {
        "name": "envdump",
        "argv": [PY, "envdump.py"],
        "artifacts": [{"path": "cov.info", "suite": "unit"}],
        "inherit": ["MY_*"],
    }
    status, _, body = await call(daemon, "POST", f"/api/projects/{pid}/ops/register_test_command", body=args)
    assert status in (200, 201), body
    command_id = body["data"]["command"]["id"]
    status, _, body = await call(
        daemon,
        "POST",
        f"/api/projects/{pid}/ops/command_approve",
        body={"command_id": command_id, "by": "ann"},
        headers=daemon.admin,
    )
    assert status == 200, body
    status, _, body = await call(
        daemon, "POST", f"/api/projects/{pid}/ops/run_test", body={"command_id": command_id, "wait": True}
    )
    assert status in (200, 201) and body["data"]["run"]["state"] == "succeeded", body
    env = _env_of(repo)
    assert env["MY_HARMLESS"] == "kept"
    assert "MY_TOKEN" not in env and "MY_CAPABILITY" not in env
    dumped = json.dumps(env)
    assert client_token(home) not in dumped and daemon.daemon.capability not in dumped
