from __future__ import annotations

from pathlib import Path

import pytest

from . import corpus


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tests never touch the user's home: every test gets its own COVERAGE_MCP_HOME."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("COVERAGE_MCP_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session folder where compressed corpus files are decompressed once."""
    if not corpus.CORPUS.exists():
        pytest.skip(f"shared corpus not found at {corpus.CORPUS}")
    return tmp_path_factory.mktemp("corpus")
