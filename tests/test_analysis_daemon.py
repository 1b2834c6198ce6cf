"""The notebooks' helpers while the daemon holds the store, and coverage_loss across a rename (issue 24).

Real coverage.py reports of a real package with real history
(``tests/sidesfixture.py``, then c2 renames ``shop/cart.py`` to
``shop/basket.py`` and drops one test). The helpers are asked twice: of the
store directly, and through ``coverage_daemon.client.open_project`` while a real
``coverage-mcp serve`` holds the store; the answers must be the same rows, names
and types.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from coverage_core import coverage_loss, file_history, history, open_project
from coverage_core.analysis import to_columns
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_daemon.client import DaemonProject
from coverage_daemon.client import open_project as routed_open_project

from .daemons import ServeProcess, in_process
from .gitrepo import commit, git, write
from .realcov import measure
from .sidesfixture import build
from .test_notebooks import _printed, _run, _tables

pytest_plugins = ["tests.test_daemon_support"]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], dict[str, Path]]:
    """The repository at c2 and coverage.py's JSON report of each commit (kept outside the checkout)."""
    root = tmp_path_factory.mktemp("renamed")
    repo, commits, c0_report = build(root)
    reports = {"c0": c0_report, "c1": Path(shutil.copy(measure(repo)["json"], root / "reports" / "c1.json"))}
    git(repo, "mv", "shop/cart.py", "shop/basket.py")
    tests = (repo / "tests/test_cart.py").read_text().replace("shop.cart", "shop.basket")
    dropped = tests.replace(
        'def test_half_coupon():\n    assert total([10, 10], coupon="HALF") == 10\n', "", 1
    )
    assert dropped != tests
    write(repo, {"tests/test_cart.py": dropped})
    commits["c2"] = commit(repo, "cart.py becomes basket.py; the coupon test goes")
    reports["c2"] = Path(shutil.copy(measure(repo)["json"], root / "reports" / "c2.json"))
    for name in ("coverage.json", "coverage.lcov", "coverage.xml", ".coverage"):
        (repo / name).unlink(missing_ok=True)
    return repo, commits, reports


@pytest.fixture(scope="module")
def repo(
    measured: tuple[Path, dict[str, str], dict[str, Path]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The checkout with the three reports stored, once for the module: every test here only reads it (each
    through a daemon of its own home, or directly)."""
    root = tmp_path_factory.mktemp("stored")
    checkout = Path(shutil.copytree(measured[0], root / "repo"))
    _, commits, reports = measured
    with pytest.MonkeyPatch.context() as env:  # a home of its own: the tests' homes come later
        env.setenv("COVERAGE_MCP_HOME", str(root / "home"))
        env.setenv("COVERAGE_MCP_PORT", "0")
        with open_project(checkout) as project:
            for step in ("c0", "c1", "c2"):
                local = Path(shutil.copy(reports[step], checkout / f"{step}.json"))
                project.ingest(local, suite="unit", commit=commits[step])
    return checkout


def answers(project: object) -> dict[str, dict]:
    return {
        "history": to_columns(history(project, suite="unit")),
        "file_history": to_columns(file_history(project, last_commits=3, suite="unit")),
        "coverage_loss": to_columns(coverage_loss(project, last=3, suite="unit")),
        "branches": to_columns(history(project, suite="unit", counter="branches")),
    }


def test_the_helpers_give_the_same_relations_with_the_daemon_holding_the_store_as_without(
    repo: Path, serve_process: ServeProcess
) -> None:
    with open_project(repo) as project:
        direct = answers(project)
    client = serve_process.client(repo=str(repo))
    pid = client.register(repo)["project_id"]
    client.call(pid, "project_context", {})  # the daemon opens the store, and holds it
    with pytest.raises(CoverageError) as held:
        open_project(repo)
    assert held.value.code == ErrorCode.STORE_LOCKED
    with routed_open_project(repo) as project:
        assert isinstance(project, DaemonProject)
        through = answers(project)
        loss = coverage_loss(project, last=3, suite="unit")  # a DuckDB relation, as without a daemon
        assert loss.columns == direct["coverage_loss"]["names"]
        assert [str(t) for t in loss.types] == direct["coverage_loss"]["types"]
    assert through == direct
    assert len(direct["history"]["values"][0]) == 3 and len(direct["file_history"]["values"][0]) > 3


def test_coverage_loss_follows_a_rename_instead_of_counting_a_lost_file_and_a_new_one(
    repo: Path, measured: tuple[Path, dict[str, str], dict[str, Path]]
) -> None:
    with open_project(repo) as project:
        rows = coverage_loss(project, last=2, suite="unit").fetchall()
        names = coverage_loss(project, last=2, suite="unit").columns
    found = [dict(zip(names, r)) for r in rows]
    assert [r["path"] for r in found] == ["shop/basket.py"]  # never shop/cart.py as lost
    [basket] = found
    assert basket["previous_path"] == "shop/cart.py"
    assert (
        basket["first_found"] == basket["last_found"] > 0
    )  # the same statements, followed across the rename
    assert basket["lost"] == basket["first_hit"] - basket["last_hit"] > 0  # the coupon test's lines
    assert basket["from_commit"] == measured[1]["c1"] and basket["to_commit"] == measured[1]["c2"]


def test_the_notebooks_show_the_same_figures_while_the_daemon_holds_the_store(
    repo: Path, serve_process: ServeProcess, tmp_path: Path
) -> None:
    alone = {
        name: (_tables(out), _printed(out))
        for name in ("coverage-history.ipynb", "coverage-loss.ipynb")
        for out in [
            _run(name, tmp_path, REPO=str(repo), SUITE="unit", **({"LAST": 3} if "loss" in name else {}))
        ]
    }
    client = serve_process.client(repo=str(repo))
    pid = client.register(repo)["project_id"]
    client.call(pid, "project_context", {})  # the daemon opens the store, and holds it
    held = {
        name: (_tables(out), _printed(out))
        for name in ("coverage-history.ipynb", "coverage-loss.ipynb")
        for out in [
            _run(name, tmp_path, REPO=str(repo), SUITE="unit", **({"LAST": 3} if "loss" in name else {}))
        ]
    }
    assert held == alone
    assert "shop/basket.py" in alone["coverage-loss.ipynb"][0][0]


async def test_the_helpers_through_the_daemon_hand_their_read_connection_back(
    repo: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An analysis the daemon runs reads on its call's pooled connection and gives it back: with a pool of
    one connection every helper answers, again and again, and afterwards none is lent (a kept one would
    hold the pool's only slot, keep the daemon from its idle exit and be interrupted by its watchdog)."""
    monkeypatch.setenv("COVERAGE_MCP_DB_POOL_SIZE", "1")
    with open_project(repo) as project:
        direct = answers(project)
    async with in_process(Settings.from_env(port=0)) as running_daemon:
        client = running_daemon.client(repo=str(repo))

        def ask() -> list[dict[str, dict]]:
            pid = client.register(repo)["project_id"]
            client.call(pid, "project_context", {})  # the daemon opens the store, and holds it
            with routed_open_project(repo) as project:
                assert isinstance(project, DaemonProject)
                return [answers(project) for _ in range(3)]

        through = await asyncio.to_thread(ask)
        [handle] = running_daemon.daemon.projects._handles.values()
        assert handle.store.pool.size == 1
        assert handle.store.pool.busy == 0
    assert through == [direct] * 3
