"""``coverage-mcp demo``: real answers from a sample repository, and nothing left behind."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pygit2


def _demo(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "user"),
        "COVERAGE_MCP_HOME": str(home),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    (tmp_path / "tmp").mkdir()
    process = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "demo", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == 0, process.stderr
    return process, cwd, home


def test_the_demo_answers_from_three_real_snapshots_and_leaves_nothing_behind(tmp_path: Path) -> None:
    process, cwd, home = _demo(tmp_path, "--json")
    result = json.loads(process.stdout)
    repo = result["repo"]
    assert repo.startswith(str(tmp_path / "tmp")) and not result["kept"]

    lines = [s["snapshot"]["totals"]["lines"] for s in result["snapshots"]]
    assert len(lines) == 3 and lines[0]["hit"] < lines[1]["hit"] < lines[2]["hit"]  # each step adds tests
    answers = result["answers"]
    latest = result["snapshots"][-1]["snapshot"]["snapshot_id"]
    assert [s["snapshot_id"] for s in answers["project_context"]["data"]["suites"]] == [latest]
    assert answers["insight"]["data"]["claim_status"] == "supported"
    assert answers["insight"]["data"]["targets"]
    assert answers["source"]["data"]["claim_status"] == "supported"
    assert answers["history"]["data"]["claim_status"] == "supported"

    mcp = result["mcp"]
    # The test's home is not the default one: the configuration names it, so it reaches the same daemon.
    assert mcp["claude_code"].startswith(f"claude mcp add coverage -e COVERAGE_MCP_HOME={home} ")
    assert mcp["env"]["COVERAGE_MCP_HOME"] == str(home)
    assert mcp["claude_code"].endswith(f"connect --repo {repo}")
    assert mcp["cursor"]["mcpServers"]["coverage"]["args"][-3:] == ["connect", "--repo", repo]
    assert mcp["vscode"]["servers"]["coverage"]["type"] == "stdio"
    assert mcp["stdio"][-3:] == ["connect", "--repo", repo]

    assert not Path(repo).exists()
    assert list(cwd.iterdir()) == [] and not home.exists() and not (tmp_path / "user").exists()
    assert list((tmp_path / "tmp").iterdir()) == []


def test_with_keep_the_demo_prints_where_the_repository_is_and_how_to_connect_an_agent(
    tmp_path: Path,
) -> None:
    process, cwd, _home = _demo(tmp_path, "--keep")
    kept = next((tmp_path / "tmp").iterdir()) / "inventory"
    try:
        out = process.stdout
        assert str(kept) in out
        assert "claude mcp add coverage -e COVERAGE_MCP_HOME=" in out and f"connect --repo {kept}" in out
        assert '"mcpServers"' in out and '"servers"' in out
        assert "insight: supported" in out
        git = pygit2.Repository(str(kept))
        assert len(list(git.walk(git.head.target))) == 3
        assert not git.status(untracked_files="no")  # a clean checkout: the report is ignored
        assert list(cwd.iterdir()) == []
    finally:
        shutil.rmtree(kept.parent)
