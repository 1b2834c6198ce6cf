"""Statements of the architecture seed that no other test proved (docs/seed-invariants.md names each).

Small and real: a git repository made here, its store opened in process, and for the transports an
in-process daemon on an ephemeral loopback port with a real connector subprocess.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from coverage_core import open_project
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.project import Project
from coverage_core.service import Service

from .daemons import Running, post_mcp
from .gitrepo import git, lcov, make_repo
from .test_connector_support import Connector, env_for
from .test_runs import approved

GEN = (
    "import sys\n"
    "open('cov.info', 'w').write('SF:app.py\\nDA:1,1\\nDA:2,%d\\nDA:3,0\\nend_of_record\\n' % len(sys.argv[1:]))\n"
)
FILES = {
    "app.py": "a = 1\nb = 2\nc = 3\n",
    "gen.py": GEN,
    "test_a.py": "",
    ".gitignore": "*.info\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    with open_project(make_repo(tmp_path / "repo", FILES)) as opened:
        yield opened


def put(project: Project, report: str, name: str = "r.info", **args: Any) -> str:
    (project.checkout.worktree_path / name).write_text(report)
    answer = Service(project).call("coverage_import", {"report_path": name, **args})
    return str(answer["data"]["snapshot"]["snapshot_id"])


def without_stats(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer apart from its timing, which no two calls share."""
    out = copy.deepcopy(answer)
    out.get("context", {}).pop("stats", None)
    return out


def test_the_defaults_are_the_loopback_port_and_the_home_under_the_users_own() -> None:
    """Seed: "The defaults are `127.0.0.1:59471`, `~/.coverage-mcp/common.duckdb`, and
    `~/.coverage-mcp/daemon.lock`." Settings read from an environment that names none of them."""
    settings = Settings.from_env({})
    home = Path.home() / ".coverage-mcp"
    assert (settings.host, settings.port) == ("127.0.0.1", 59471)
    assert settings.common_db.expanduser() == home / "common.duckdb"
    assert settings.daemon_lock.expanduser() == home / "daemon.lock"


def test_the_dashboard_checks_its_revision_every_ten_seconds_by_default() -> None:
    """Seed: "It subscribes to `GET /api/dashboard/events`, which checks the server-side revision every ten
    seconds and emits a refresh event only when it changes." The interval, unless a setting names another."""
    assert Settings.from_env({}).dashboard_refresh_s == 10


def test_a_linked_worktree_reads_the_compaction_policy_set_from_the_main_one(tmp_path: Path) -> None:
    """Seed: "Project settings are scoped to the canonical repository key, so linked worktrees use the same
    compaction policy and coverage history." A policy set through the main checkout is the linked
    worktree's, and a snapshot imported there is in the main checkout's history."""
    repo = make_repo(tmp_path / "main", FILES)
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    with open_project(repo) as main:
        main.set_compaction_policy(after_days=14, batch_size=3)
    with open_project(linked) as other:
        assert (other.compaction_policy().after_days, other.compaction_policy().batch_size) == (14, 3)
        snapshot_id = put(other, lcov({"app.py": {1: 1, 2: 0}}))
    with open_project(repo) as main:
        assert snapshot_id in [s.snapshot_id for s in main.store.snapshots()]


def test_a_change_against_a_baseline_of_another_suite_is_refused(project: Project) -> None:
    """Seed: "Comparisons require compatible repository, suite, and lineage identity." A change review of an
    integration snapshot against a unit one is refused by code, naming both suites."""
    unit = put(project, lcov({"app.py": {1: 1, 2: 0}}), suite="unit")
    integration = put(project, lcov({"app.py": {1: 1, 2: 1}}), name="i.info", suite="integration")
    with pytest.raises(CoverageError) as refused:
        Service(project).call(
            "coverage_review",
            {
                "task": "change",
                "measurement": {"snapshot_id": integration},
                "baseline": {"kind": "explicit", "snapshot_id": unit},
            },
        )
    assert refused.value.code == ErrorCode.INCOMPATIBLE_SNAPSHOTS
    assert "'unit'" in refused.value.message and "'integration'" in refused.value.message


def test_a_parent_commit_baseline_of_a_root_commit_is_an_error(project: Project) -> None:
    """Seed: "Unknown parents are errors." The checkout's only commit has no parent: a change against
    ``parent_commit`` is ``baseline_unavailable``, never a comparison with nothing."""
    current = put(project, lcov({"app.py": {1: 1, 2: 0}}))
    with pytest.raises(CoverageError) as refused:
        Service(project).call(
            "coverage_review",
            {
                "task": "change",
                "measurement": {"snapshot_id": current},
                "baseline": {"kind": "parent_commit"},
            },
        )
    assert refused.value.code == ErrorCode.BASELINE_UNAVAILABLE
    assert "no parent" in refused.value.message


def test_a_compact_insight_shows_three_files_and_five_targets_by_default(tmp_path: Path) -> None:
    """Seed: "Agent-facing projections are compact by default." and "Compact coverage reviews default to
    three files and five ranked targets". Four files with three untested functions each: an insight that
    names no representation is the compact one (tuples a legend names), and lists three files and five
    targets, saying how many there are."""
    source = "".join(f"def f{i}():\n    x = {i}\n    return x\n\n" for i in range(3))
    names = [f"m{k}.py" for k in range(4)]
    repo = make_repo(tmp_path / "repo", {**{n: source for n in names}, ".gitignore": "*.info\n"})
    records = []
    for name in names:
        records.append(f"SF:{name}")
        for i in range(3):
            records.append(f"FN:{4 * i + 1},f{i}")
        for i in range(3):
            records.append(f"FNDA:0,f{i}")
        for i in range(3):
            records += [f"DA:{4 * i + 1},1", f"DA:{4 * i + 2},0", f"DA:{4 * i + 3},0"]
        records.append("end_of_record")
    (repo / "r.info").write_text("\n".join(records) + "\n")
    with open_project(repo) as project:
        service = Service(project)
        service.call("coverage_import", {"report_path": "r.info"})
        answer = service.call("coverage_review", {"task": "insight"})
        compact = service.call("coverage_review", {"task": "insight", "representation": "compact"})
    assert answer["data"] == compact["data"]  # the cursors differ: each is scoped to its own query
    data = answer["data"]
    assert "legend" in data and isinstance(data["files"][0], list)
    assert (data["files_with_gaps"], len(data["files"])) == (4, 3)
    assert (data["target_count"], len(data["targets"])) == (12, 5)
    assert answer["page"]["next_cursor"]


def test_the_largest_budget_keeps_the_command_page_at_eight(project: Project) -> None:
    """Seed: "Detailed mode does not lift either normal page cap." ``project_context`` takes no
    representation at all, and its largest word budget still lists eight commands and a cursor."""
    service = Service(project)
    for i in range(9):
        service.call(
            "register_test_command",
            {
                "name": f"cmd{i}",
                "argv": [sys.executable, "gen.py", str(i)],
                "artifacts": [{"path": "cov.info", "suite": "unit"}],
            },
        )
    with pytest.raises(CoverageError) as refused:
        service.call("project_context", {"representation": "audit"})
    assert refused.value.code == ErrorCode.INVALID_ARGUMENT
    widest = service.call("project_context", {"max_words": 50000})
    assert len(widest["data"]["commands"]) == 8 and widest["page"]["next_cursor"]


def test_the_dashboard_says_where_a_snapshots_detail_lives_and_which_run_made_it(project: Project) -> None:
    """Seed: "Ordinary measurements also present retention, relational-versus-compacted detail source,
    suite/format, persisted case arguments, and server-generated execution fingerprints so a full run and
    a case-specific incremental run are not visually conflated." (Retention: the dashboard browser test.) A full run and a run of one test file,
    the full one's snapshot compacted: the dashboard shows each with its detail source, format, case
    arguments and a fingerprint of its own."""
    service = Service(project)
    command_id = approved(project, [sys.executable, "gen.py"], name="gen", args_policy="selectors")
    full = service.call("run_test", {"command_id": command_id, "wait": True})["data"]["run"]
    case = service.call("run_test", {"command_id": command_id, "wait": True, "args": ["test_a.py"]})
    assert full["state"] == case["data"]["run"]["state"] == "succeeded"
    project.compact(older_than="0")  # the full run's snapshot; the newest of the suite stays relational
    points = service.call("dashboard", {})["data"]["timeline"]["points"]
    shown = {p["run"]["run_id"]: p for p in points}
    assert set(shown) == {full["id"], case["data"]["run"]["id"]}
    for snapshot in points:
        page = service.call("dashboard", {"current": snapshot["snapshot_id"], "baseline": "none"})["data"]
        current = page["selection"]["current"]
        assert page["suite"] == "unit" and current["format"] == "lcov"
        made_by = current["run"]
        if made_by["run_id"] == full["id"]:
            assert (
                current["detail"] == "compacted" and made_by["args"] == [] and current["scope"] == "complete"
            )
            full_print = made_by["fingerprint"]
        else:
            assert current["detail"] == "relational" and made_by["args"] == ["./test_a.py"]
            assert current["scope"] == "subset"
            case_print = made_by["fingerprint"]
    assert full_print and case_print and full_print != case_print


def test_the_project_id_is_a_short_sha256_of_the_repository_key(project: Project) -> None:
    """Seed: "Project summaries expose a stable short SHA-256 ID derived from the canonical repository key,
    so common-daemon project routes can resolve the project without a repository selection header." The id
    every answer's context carries is the first 16 hex digits of the key's SHA-256."""
    context = Service(project).call("project_context", {})["context"]
    assert context["project_id"] == hashlib.sha256(context["repo_key"].encode()).hexdigest()[:16]


def test_a_fresh_store_has_a_table_for_every_record_the_seed_lists(project: Project) -> None:
    """Seed: "**The database contains project settings**, repository registry rows, **ordinary and composite
    snapshots, canonical composite regions, files, lines, compacted payloads, worktrees, registered
    commands, runs, jobs, run execution contexts, artifacts, and run output metadata.**" The repository
    registry is the daemon's common database's (R1); a run row is its job, its execution context (case
    arguments, baseline, fingerprint) and its output metadata (bytes and truncation per stream)."""
    tables = {
        name for (name,) in project.relation("SELECT table_name FROM information_schema.tables").fetchall()
    }
    assert {
        "settings",
        "snapshots",
        "composite_snapshots",
        "composite_regions",
        "files",
        "lines",
        "snapshot_payloads",
        "worktrees",
        "commands",
        "runs",
        "run_artifacts",
    } <= tables
    columns = {
        name
        for (name,) in project.relation(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'"
        ).fetchall()
    }
    assert {"state", "queued_at", "args", "baseline", "fingerprint"} <= columns  # the job, its context
    assert {"stdout_bytes", "stderr_bytes", "stdout_truncated", "stderr_truncated"} <= columns  # its output


def _tool(name: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def _over_http(daemon: Running, repo: Path, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each message's JSON-RPC answer from the daemon's ``/mcp``, after a handshake of its own."""
    async with aiohttp.ClientSession(headers=daemon.auth) as http:
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        }
        _, headers, _ = await post_mcp(http, daemon.url + "/mcp", init, repo=repo)
        session = {"Mcp-Session-Id": headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-06-18"}
        await post_mcp(
            http,
            daemon.url + "/mcp",
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=session,
        )
        answers = []
        for message in messages:
            status, _, body = await post_mcp(http, daemon.url + "/mcp", message, headers=session, repo=repo)
            assert status == 200, body
            answers.append(body)
        return answers


async def test_a_tool_results_text_is_the_json_of_its_structured_content(
    daemon: Running, sample_repo: Path
) -> None:
    """Seed: "`structuredContent` is the canonical JSON-RPC success payload; text content is only a
    compatibility hint." A successful tool call over HTTP: its one text content decodes to exactly its
    ``structuredContent``, the envelope."""
    [answer] = await _over_http(daemon, sample_repo, [_tool("project_context", {})])
    result = answer["result"]
    assert result["isError"] is False
    assert set(result["structuredContent"]) == {"context", "data", "page"}
    [text] = result["content"]
    assert text["type"] == "text" and json.loads(text["text"]) == result["structuredContent"]


async def test_a_call_over_stdio_and_over_http_gets_the_same_answer_and_the_same_error(
    daemon: Running, sample_repo: Path, isolated_home: Path
) -> None:
    """Seed: "HTTP and stdio MCP calls use the same daemon-side `mcp::dispatch_json_rpc` function and
    therefore **cannot diverge in tool behavior or error handling**." A connector on this daemon and a
    direct HTTP client ask the same success and the same mistake: the same results, apart from timing."""
    messages = [
        _tool("project_context", {}, 1),
        _tool("coverage_review", {"task": "insight", "measurement": {"snapshot_id": "snap-00000000"}}, 2),
        _tool("coverage_review", {"task": "insight", "no_such_argument": 1}, 3),
    ]
    over_http = await _over_http(daemon, sample_repo, messages)

    def over_stdio() -> list[dict[str, Any]]:
        connector = Connector(sample_repo, env_for(isolated_home, daemon.daemon.port))
        try:
            connector.initialize()
            return [connector.request(message) for message in messages]
        finally:
            connector.close()

    over_connector = await asyncio.to_thread(over_stdio)
    assert [a["result"]["isError"] for a in over_http] == [False, True, True]
    for direct, bridged in zip(over_http, over_connector, strict=True):
        assert direct["id"] == bridged["id"]
        assert without_stats(direct["result"]["structuredContent"]) == without_stats(
            bridged["result"]["structuredContent"]
        )
        if direct["result"]["isError"]:
            assert direct["result"]["content"] == bridged["result"]["content"]


SHADER = "".join(f"fn f{i}() {{ y(); }}\n" for i in range(8))
GPU = {
    "inventory_version": 1,
    "components": [{"id": "gpu", "language": "other", "format": "regions-v1", "sources": ["shaders/*.wgsl"]}],
}


def _regions(hits: list[int]) -> str:
    """A regions-v1 report of the shader: one region per line, with these hits."""
    regions = [
        {"start_line": i + 1, "start_col": 1, "end_line": i + 1, "end_col": 10, "hits": h}
        for i, h in enumerate(hits)
    ]
    source = hashlib.sha256(SHADER.encode()).hexdigest()
    files = [{"path": "shaders/main.wgsl", "source_sha256": source, "regions": regions}]
    return json.dumps({"format": "coverage-mcp-regions-v1", "version": 1, "files": files})


def test_a_composite_change_counts_every_region_whatever_the_response_limits(tmp_path: Path) -> None:
    """Seed: "Composite region comparisons load all stored canonical rows for exact category counts before
    applying response limits." Three regions lost between two composites: with ``max_regions`` 1 the
    answer lists one range and says it cut the rest, and its categories still count all three."""
    repo = make_repo(
        tmp_path / "gpu",
        {"shaders/main.wgsl": SHADER, "inventory.json": json.dumps(GPU), ".gitignore": "*.rj\n"},
    )
    (repo / "base.rj").write_text(_regions([1] * 8))
    (repo / "now.rj").write_text(_regions([1, 0, 1, 0, 1, 0, 1, 1]))
    with open_project(repo) as project:
        service = Service(project)
        ids = [
            service.call("coverage_import", {"inventory_path": "inventory.json", "reports": [f"gpu={name}"]})[
                "data"
            ]["composite"]["composite_snapshot_id"]
            for name in ("base.rj", "now.rj")
        ]
        sides = {
            "task": "change",
            "measurement": {"composite_snapshot_id": ids[1]},
            "baseline": {"kind": "explicit", "composite_snapshot_id": ids[0]},
        }
        whole = service.call("coverage_review", sides)["data"]
        cut = service.call("coverage_review", {**sides, "limits": {"max_regions": 1}})["data"]
    assert whole["categories"] == cut["categories"] and cut["categories"]["code"]["lost"] == 3
    assert (len(whole["ranges"]), whole["ranges_truncated"]) == (3, False)
    assert (len(cut["ranges"]), cut["ranges_truncated"]) == (1, True)
