"""The smaller items of issue 25, each as a person or an agent meets it (CLI, MCP, files on disk, the README)."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import aiohttp

from coverage_cli.daemon_cmds import client_configs, stdio_configs
from coverage_cli.output import EXIT_CODES
from coverage_cli.review_cmds import _legend_names
from coverage_core.config import Settings
from coverage_core.display import counted
from coverage_core.errors import ErrorCode
from coverage_core.project import Project, open_project
from coverage_core.service import Service

from .commandline import cli, cli_json
from .daemons import Running, ServeProcess
from .gitrepo import commit, lcov, make_repo, write
from .test_composite_mcp import _repo as gpu_repo

README = Path(__file__).resolve().parents[1] / "README.md"
SAMPLE_REPORTS = Path(__file__).resolve().parents[1] / "coverage_core" / "sample" / "reports"


def service_of(repo: Path) -> tuple[Project, Service]:
    project = open_project(repo)
    return project, Service(project)


# -- show ----------------------------------------------------------------------------------------


def test_show_draws_its_rules_as_wide_as_the_columns_not_as_the_longest_missing_text(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "wide", {"app.py": "x = 1\n" * 600})
    (repo / "cov.lcov").write_text(lcov({"app.py": {n: n % 2 for n in range(1, 601)}}))  # 300 gaps
    snap = cli_json("ingest", "cov.lcov", "--json", repo=repo)["data"]["snapshot"]["snapshot_id"]
    shown = cli("show", snap, repo=repo)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("Name"))
    rules = [line for line in lines if set(line.strip()) == {"-"}]
    assert rules and all(len(rule) == len(header) for rule in rules)
    assert max(len(line) for line in lines) > 1000  # the Missing text itself is long
    assert f"{snap}: 1 file, suite" in shown.stdout  # and one file is "1 file"


# -- the suite notice ------------------------------------------------------------------------------


def test_the_only_suite_is_used_without_a_notice_and_a_choice_among_suites_is_named(
    sample_repo: Path,
) -> None:
    project, service = service_of(sample_repo)
    with project:
        service.call("coverage_import", {"report_path": "step3.coverage.json", "suite": "unit"})
        alone = service.call("coverage_review", {"task": "insight"})["data"]
        assert not any("no snapshot in suite" in r for r in alone["reasons"]), alone["reasons"]
    done = cli("review", "insight", repo=sample_repo)
    assert done.returncode == 0 and "no snapshot in suite" not in done.stdout + done.stderr
    project, service = service_of(sample_repo)
    with project:
        service.call("coverage_import", {"report_path": "step1.coverage.json", "suite": "integration"})
        chosen = service.call("coverage_review", {"task": "insight"})["data"]
        assert (
            "no snapshot in suite 'default'; using the latest snapshot, of suite 'integration'"
            in (chosen["reasons"])
        )


# -- review history and review tests ------------------------------------------------------------


def test_history_rows_name_their_snapshot_and_scope_and_the_change_has_a_unit(sample_repo: Path) -> None:
    project, service = service_of(sample_repo)
    with project:
        for report in ("step1", "step2", "step3"):
            (sample_repo / f"{report}.json").write_bytes(
                (SAMPLE_REPORTS / f"{report}.coverage.json").read_bytes()
            )
            service.call("coverage_import", {"report_path": f"{report}.json", "suite": "unit"})
        data = service.call("coverage_review", {"task": "history"})["data"]
    [row] = data["rows"]  # the one point between the newest and the oldest
    assert row[0].startswith("snap-") and row[4] == "complete"
    assert _legend_names(data["legend"]["rows"], len(row)) == [
        "snapshot_id",
        "commit",
        "hit",
        "found",
        "scope",
        "run_id",
    ]
    text = cli("review", "history", repo=sample_repo).stdout

    # The unit is the headline's counter: coverage.py's statements and branches together (its own reports).
    def covered(report: str) -> int:
        totals = json.loads((SAMPLE_REPORTS / f"{report}.coverage.json").read_text())["totals"]
        return int(totals["covered_lines"] + totals["covered_branches"])

    assert data["window"]["change"] == covered("step3") - covered("step1")
    assert f"change: {covered('step3') - covered('step1'):+} covered statements+branches" in text
    assert "snapshot id" in text and row[0] in text


def test_every_column_of_review_tests_has_a_name(sample_repo: Path) -> None:
    project, service = service_of(sample_repo)
    with project:
        service.call("coverage_import", {"report_path": "step3.coverage.json"})
        legend = service.call("coverage_review", {"task": "tests"})["data"]["legend"]
    names = _legend_names(legend["duplicates"], 2)
    assert names == ["item_count", "tests"]


# -- plurals -------------------------------------------------------------------------------------


def test_one_is_singular_in_counts_and_in_a_claim_s_distance_from_head(sample_repo: Path) -> None:
    assert (counted(1, "file"), counted(0, "file"), counted(2, "commit")) == (
        "1 file",
        "0 files",
        "2 commits",
    )
    project, service = service_of(sample_repo)
    with project:
        service.call("coverage_import", {"report_path": "step3.coverage.json"})
    write(sample_repo, {"NOTES.md": "a commit after the measurement\n"})
    commit(sample_repo, "one more")
    project, service = service_of(sample_repo)
    with project:
        reasons = service.call("project_context")["data"]["reasons"]
    assert any(r.endswith("(1 commit behind)") for r in reasons), reasons


# -- errors a person reads -----------------------------------------------------------------------


def test_an_invalid_snapshot_id_gets_a_plain_message_on_the_command_line(sample_repo: Path) -> None:
    for argv in (("show", "nope"), ("review", "insight", "--snapshot", "snap-XYZ")):
        done = cli(*argv, repo=sample_repo)
        assert done.returncode == EXIT_CODES[ErrorCode.INVALID_ARGUMENT], done.stderr
        assert "is not a snapshot id" in done.stderr and "`coverage-mcp snapshots` lists them" in done.stderr
        assert "pattern" not in done.stderr and "$." not in done.stderr


def test_an_unknown_run_suggests_listing_runs_not_the_context(sample_repo: Path) -> None:
    done = cli("runs", "show", "run-0000000000000000", "--json", repo=sample_repo)
    assert done.returncode == EXIT_CODES[ErrorCode.NOT_FOUND]
    error = json.loads(done.stderr)["error"]
    assert "coverage-mcp runs" in error["suggestion"] and "context" not in error["suggestion"]
    assert error["remedy"] is None


# -- client configurations -------------------------------------------------------------------------


def test_pasted_client_configs_reach_the_same_daemon_when_its_home_and_port_are_not_the_defaults(
    tmp_path: Path,
) -> None:
    settings = Settings.from_env(
        {"COVERAGE_MCP_HOME": str(tmp_path / "elsewhere"), "COVERAGE_MCP_PORT": "61234"}
    )
    env = {"COVERAGE_MCP_HOME": str(tmp_path / "elsewhere"), "COVERAGE_MCP_PORT": "61234"}
    configs = stdio_configs("/some/repo", settings)
    assert configs["env"] == env
    assert configs["cursor"]["mcpServers"]["coverage"]["env"] == env
    assert configs["vscode"]["servers"]["coverage"]["env"] == env
    assert (
        f"-e COVERAGE_MCP_HOME={tmp_path / 'elsewhere'} -e COVERAGE_MCP_PORT=61234 -- "
        in configs["claude_code"]
    )
    printed = client_configs("http://127.0.0.1:61234", settings)  # what serve prints on a terminal
    assert f"COVERAGE_MCP_HOME={tmp_path / 'elsewhere'}" in printed and "COVERAGE_MCP_PORT=61234" in printed
    defaults = stdio_configs("/some/repo", Settings.from_env({}))
    assert defaults["env"] == {} and "env" not in defaults["cursor"]["mcpServers"]["coverage"]
    assert " -e " not in defaults["claude_code"]


def test_the_demo_prints_configs_naming_the_home_and_port_it_ran_with(isolated_home: Path) -> None:
    done = cli("demo", "--json", env={"COVERAGE_MCP_HOME": str(isolated_home), "COVERAGE_MCP_PORT": "0"})
    assert done.returncode == 0, done.stderr
    mcp = json.loads(done.stdout)["mcp"]
    assert mcp["cursor"]["mcpServers"]["coverage"]["env"] == {
        "COVERAGE_MCP_HOME": str(isolated_home),
        "COVERAGE_MCP_PORT": "0",
    }


# -- command register --env -------------------------------------------------------------------------


def test_command_register_takes_env_like_the_tool_and_refuses_a_word_without_a_value(
    sample_repo: Path,
) -> None:
    argv = ("command", "register", "--name", "unit", "--artifact", "coverage.json:unit")
    answer = cli_json(
        *argv,
        "--env",
        "PYTHONHASHSEED=0",
        "--env",
        "FLAGS=a=b",
        "--json",
        "--",
        sys.executable,
        "-V",
        repo=sample_repo,
    )
    command = answer["data"]["command"]
    assert command["env"] == {"PYTHONHASHSEED": "0", "FLAGS": "a=b"}  # what the tool's env records
    assert sorted(command["environment"]["env"]) == ["FLAGS", "PYTHONHASHSEED"]
    bad = cli(*argv, "--env", "PYTHONHASHSEED", "--", sys.executable, "-V", repo=sample_repo)
    assert bad.returncode == EXIT_CODES[ErrorCode.INVALID_ARGUMENT] and "NAME=VALUE" in bad.stderr


# -- composites -------------------------------------------------------------------------------------


def test_a_composite_s_reports_take_one_shape_and_an_identical_reimport_is_a_duplicate(
    tmp_path: Path,
) -> None:
    repo = gpu_repo(tmp_path)
    texts = ["gpu:vulkan=vk.json", "gpu:metal=mtl.json"]
    records = [{"component": "gpu", "variant": "vulkan", "path": "vk.json"}]
    records.append({"component": "gpu", "variant": "metal", "path": "mtl.json"})
    project, service = service_of(repo)
    with project:
        first = service.call("coverage_import", {"inventory_path": "inventory.json", "reports": texts})[
            "data"
        ]
        again = service.call("coverage_import", {"inventory_path": "inventory.json", "reports": records})[
            "data"
        ]
        assert first["duplicate"] is False and again["duplicate"] is True
        assert again["composite"]["composite_snapshot_id"] == first["composite"]["composite_snapshot_id"]
        (repo / "mtl.json").write_text((repo / "vk.json").read_text())  # other evidence: a new composite
        other = service.call("coverage_import", {"inventory_path": "inventory.json", "reports": texts})[
            "data"
        ]
        assert other["duplicate"] is False
        assert other["composite"]["composite_snapshot_id"] != first["composite"]["composite_snapshot_id"]
        # A registration takes both spellings too, and records the one shape.
        registered = [
            service.call(
                "register_test_command",
                {
                    "name": "gpu",
                    "argv": [sys.executable, "-V"],
                    "artifacts": [{"composite": {"inventory": "inventory.json", "reports": reports}}],
                },
            )["data"]["command"]
            for reports in (texts, records)
        ]
    assert registered[0]["id"] == registered[1]["id"]


# -- files on disk -----------------------------------------------------------------------------------


def _private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_daemon_s_store_files_its_wal_included_are_0600_and_its_runs_keep_the_person_s_umask(
    serve_process: ServeProcess, sample_repo: Path
) -> None:
    client = serve_process.client()
    project_id = client.register(sample_repo)["project_id"]
    client.call(project_id, "coverage_import", {"report_path": "step3.coverage.json"})
    store = sample_repo / ".coverage-mcp"
    wal = store / "coverage.duckdb.wal"
    assert wal.exists(), sorted(p.name for p in store.iterdir())  # the daemon holds the store open
    files = [p for p in store.iterdir() if p.is_file()]
    assert all(_private(p) for p in files), {p.name: oct(p.stat().st_mode) for p in files}
    # A run's command makes its files as the person's umask says, not as the daemon's 077.
    made = "open('made.txt', 'w').close(); open('coverage.json', 'w').close()"
    command = client.call(
        project_id,
        "register_test_command",
        {
            "name": "make",
            "argv": [sys.executable, "-c", made],
            "artifacts": [{"path": "coverage.json", "suite": "unit"}],
        },
    )["data"]["command"]
    approved = serve_process.cli("command", "approve", command["id"], "--repo", str(sample_repo))
    assert approved.returncode == 0, approved.stderr
    client.call(project_id, "run_test", {"command_id": command["id"], "wait": True})
    person = os.umask(0o022)
    os.umask(person)
    assert stat.S_IMODE((sample_repo / "made.txt").stat().st_mode) == 0o666 & ~person


def test_the_daemon_log_a_connector_starts_a_daemon_with_is_0600(isolated_home: Path) -> None:
    from coverage_daemon import launcher
    from coverage_daemon.identity import DAEMON_LOG

    log = isolated_home / DAEMON_LOG
    log.write_text("an older log, made under a looser umask\n")
    log.chmod(0o644)
    try:
        launcher.Launcher(launcher.Settings.from_env(), log=lambda _line: None).connect()
    finally:
        cli("stop", process=True)
    assert _private(log) and log.read_text().startswith("an older log")


# -- the README ---------------------------------------------------------------------------------------


async def test_health_says_exactly_what_the_readme_says_it_does(daemon: Running) -> None:
    async with aiohttp.ClientSession() as http, http.get(daemon.url + "/health") as response:
        health = await response.json()
    text = README.read_text()
    said = text[text.index("`/health` says only") :].split("\n-")[0]
    named = set(re.findall(r"`([a-z_]+)`", said))
    assert set(health) == named, (sorted(health), sorted(named))


def test_the_readme_s_set_up_runs_serve_in_a_terminal_of_its_own() -> None:
    text = README.read_text()
    setup = text[text.index("## Set up") : text.index("### Connect an MCP client")]
    blocks = re.findall(r"```bash\n(.*?)```", setup, re.S)
    serve = [line for block in blocks for line in block.splitlines() if "coverage-mcp serve" in line]
    assert serve and all(line.startswith("coverage-mcp serve") and "&&" not in line for line in serve)
    assert "own terminal" in serve[0]
    later = setup[setup.index(serve[0]) :]
    assert "another terminal" in later and "coverage-mcp demo" in later


# -- the dashboard ------------------------------------------------------------------------------------


def test_the_dashboard_opens_on_the_default_suite_when_a_newer_snapshot_is_of_another(
    sample_repo: Path,
) -> None:
    project, service = service_of(sample_repo)
    with project:
        default = service.call("coverage_import", {"report_path": "step1.coverage.json"})["data"]["snapshot"]
        service.call("coverage_import", {"report_path": "step3.coverage.json", "suite": "integration"})
        shown = service.call("dashboard")["data"]
    assert shown["suite"] == "default"
    assert shown["selection"]["current"]["snapshot_id"] == default["snapshot_id"]
