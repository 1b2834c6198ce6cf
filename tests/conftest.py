from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from coverage_core.config import Settings
from coverage_core.execution.worker import running_runtimes

from .daemons import Running, ServeProcess, StoreHolder, in_process
from .environment import scrub
from .gitrepo import commit, git, make_repo, write
from .realcov import make_package, measure

SAMPLE = Path(__file__).resolve().parents[1] / "coverage_core" / "sample"


@pytest.hookimpl(trylast=True)  # after the tmp_path plugin has made this run's temporary folder
def pytest_configure(config: pytest.Config) -> None:
    """The run's environment is the suite's before any test or subprocess starts (``environment.scrub``)."""
    scrub(config._tmp_path_factory.getbasetemp() / "environment")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tests never touch the user's home or port: every test gets its own COVERAGE_MCP_HOME, and port 0, so a
    daemon a test starts binds an ephemeral port and its commands find it through the home's lease. The
    default port may be held by anyone's daemon on this machine (a command would meet daemon_conflict)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("COVERAGE_MCP_HOME", str(home))
    monkeypatch.setenv("COVERAGE_MCP_PORT", "0")
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


# -- daemons ------------------------------------------------------------------------------


@pytest.fixture
async def daemon(isolated_home: Path) -> AsyncIterator[Running]:
    """A real daemon in this test's event loop, on an ephemeral loopback port, with its lock taken."""
    async with in_process(Settings.from_env(port=0)) as running_daemon:
        yield running_daemon


@pytest.fixture
def serve_process(isolated_home: Path) -> Iterator[ServeProcess]:
    proc = ServeProcess(isolated_home)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def store_holder(sample_repo: Path) -> Iterator[StoreHolder]:
    holder = StoreHolder(sample_repo)
    try:
        yield holder
    finally:
        holder.close()


# -- a measured history -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def shop_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[Path, str]]]:
    """The realcov package measured twice: c0 by two of its tests, c1 (one more file) by all of them; their
    JSON reports and commits. Built once per worker; tests copy the checkout (realcov.copy_checkout)."""
    root = tmp_path_factory.mktemp("dashboard")
    repo = make_package(root / "repo")
    reports: dict[str, tuple[Path, str]] = {}
    out = measure(
        repo, "tests/test_cart.py::test_total_sums_prices", "tests/test_cart.py::test_standard_shipping"
    )
    reports["c0"] = (Path(shutil.copy(out["json"], root / "c0.json")), git(repo, "rev-parse", "HEAD"))
    write(repo, {"shop/extra.py": "def twice(x):\n    if x:\n        return 2 * x\n    return 0\n"})
    commit(repo, "extra")
    out = measure(repo)
    reports["c1"] = (Path(shutil.copy(out["json"], root / "c1.json")), git(repo, "rev-parse", "HEAD"))
    return repo, reports
