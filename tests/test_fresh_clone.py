"""A fresh clone, with nothing beside it, collects the whole suite: the README's test command works anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .systemtools import require

ROOT = Path(__file__).resolve().parents[1]


def test_a_fresh_clone_with_nothing_beside_it_collects_every_test_without_errors(tmp_path: Path) -> None:
    git = require("git")
    if not (ROOT / ".git").exists():
        pytest.skip("not running from a git checkout, so there is nothing to clone")
    lonely = tmp_path / "empty" / "coverage-mcp"  # nothing beside the clone: no corpus, no design folder
    subprocess.run([git, "clone", "-q", str(ROOT), str(lonely)], check=True, capture_output=True)
    assert sorted(p.name for p in lonely.parent.iterdir()) == ["coverage-mcp"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COVERAGE_MCP_", "PYTEST_"))}
    # The collection step of scripts/test, which is the README's test command.
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q"],
        cwd=lonely,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "error" not in summary.lower(), summary
    collected = int(summary.split()[0])
    assert collected > 500, summary


def test_the_readme_the_ci_script_and_the_test_script_name_one_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\nscripts/test " in readme
    assert "exec scripts/test" in ci
    assert "pip install" in (ROOT / "scripts" / "test").read_text()


def test_a_missing_system_tool_skips_naming_its_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"sudo apt-get install -y lcov"):
        require("lcov")


def test_under_ci_a_missing_system_tool_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"CI=true and needs lcov"):
        require("lcov")


def test_a_missing_npm_tool_skips_naming_its_pinned_install_and_fails_under_ci(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from tests import systemtools

    monkeypatch.setattr(systemtools, "NPM_BIN", tmp_path / "empty-bin")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"npm install --prefix \.cache/npm-tools --no-save c8@"):
        require("c8")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"CI=true and needs c8"):
        require("c8")


def test_the_test_script_installs_the_declared_npm_tools_inside_the_checkout() -> None:
    script = (ROOT / "scripts" / "test").read_text()
    assert "scripts/npm-packages" in script and "npm_prefix=.cache/npm-tools" in script
    assert (
        'npm install --prefix "$npm_prefix"' in script
        and "-g" not in script.split("npm install")[1].split("\n")[0]
    )
