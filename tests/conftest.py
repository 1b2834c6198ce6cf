from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .gitrepo import make_repo

SAMPLE = Path(__file__).resolve().parents[1] / "coverage_core" / "sample"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tests never touch the user's home: every test gets its own COVERAGE_MCP_HOME."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("COVERAGE_MCP_HOME", str(home))
    return home


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
