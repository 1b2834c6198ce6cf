from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from coverage_core.execution.worker import running_runtimes

from .environment import scrub
from .gitrepo import make_repo

SAMPLE = Path(__file__).resolve().parents[1] / "coverage_core" / "sample"


@pytest.hookimpl(trylast=True)  # after the tmp_path plugin has made this run's temporary folder
def pytest_configure(config: pytest.Config) -> None:
    """The run's environment is the suite's before any test or subprocess starts (``environment.scrub``)."""
    scrub(config._tmp_path_factory.getbasetemp() / "environment")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tests never touch the user's home: every test gets its own COVERAGE_MCP_HOME."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("COVERAGE_MCP_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def runtimes_torn_down() -> Iterator[None]:
    """A run runtime a test started (an in-process CLI command, a daemon) stops with the test, not with the
    process: its threads would otherwise go on executing runs into the next test."""
    before = set(running_runtimes())
    yield
    for runtime in set(running_runtimes()) - before:
        runtime.stop()


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session folder where compressed corpus files are decompressed once."""
    return tmp_path_factory.mktemp("corpus")


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    """The bundled sample project as a git repository, with real coverage.py reports inside it (untracked)."""
    repo = tmp_path / "inventory"
    shutil.copytree(SAMPLE / "project", repo)
    make_repo(repo, {})
    for name in ("step3.coverage.lcov", "step3.coverage.json", "step1.coverage.json"):
        shutil.copy(SAMPLE / "reports" / name, repo / name)
    return repo
