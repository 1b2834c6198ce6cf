"""The fault matrix: real damaged files, real races, a real full disk; each ends in its code, never a traceback.

Every cell asserts the code, that the message names the file, that nothing
partial was written, and that the store works again once the fault is gone.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from coverage_core import open_project
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import opening
from coverage_core.service import Service

from . import commandline
from .daemons import in_process
from .test_connector_support import free_port

STORE = Path(".coverage-mcp") / "coverage.duckdb"


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """``coverage-mcp ARGS --repo REPO`` in this process: what these cells check is the code, the message and
    the exit code. ``dashboard`` starts its daemon as a process of its own all the same (the launcher's),
    which ``_stop_daemon`` stops."""
    return commandline.cli(*args, repo=repo)


def _error(done: subprocess.CompletedProcess) -> dict:
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stderr)["error"]


def _ingest(repo: Path, report: str = "step3.coverage.json") -> subprocess.CompletedProcess:
    return cli(repo, "ingest", str(repo / report), "--json")


def _damage(path: Path, how: str) -> bytes:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 3])
    else:
        path.write_bytes(os.urandom(len(data)))
    return data


# -- a damaged store file ------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_a_damaged_store_is_store_damaged_in_the_cli_naming_the_file_and_left_untouched(
    sample_repo: Path, how: str
) -> None:
    assert _ingest(sample_repo).returncode == 0
    store = sample_repo / STORE
    good = _damage(store, how)
    damaged = store.read_bytes()
    for args in (("ingest", str(sample_repo / "step1.coverage.json")), ("snapshots",), ("review", "insight")):
        done = cli(sample_repo, *args, "--json")
        assert done.returncode == 1, (args, done.stderr)
        error = _error(done)
        assert error["code"] == "store_damaged" and str(store) in error["message"], (args, error)
        assert error["details"]["path"] == str(store) and "backup" in error["suggestion"]
    human = cli(sample_repo, "snapshots")
    assert human.returncode == 1 and "Traceback" not in human.stderr and "store_damaged" in human.stderr
    assert store.read_bytes() == damaged  # named, never touched
    store.write_bytes(good)  # restored from the "backup": it works again
    assert _ingest(sample_repo, "step1.coverage.json").returncode == 0


@pytest.mark.parametrize("how", ["truncated", "garbage"])
async def test_a_damaged_store_is_store_damaged_in_the_daemon_and_its_dashboard(
    sample_repo: Path, how: str
) -> None:
    assert _ingest(sample_repo).returncode == 0
    store = sample_repo / STORE
    good = _damage(store, how)
    async with in_process(Settings.from_env(port=0)) as d:
        with pytest.raises(CoverageError) as caught:
            await asyncio.to_thread(d.client().register, sample_repo)
        assert caught.value.code is ErrorCode.STORE_DAMAGED and str(store) in caught.value.message
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{d.url}/api/dashboard", headers=d.admin) as response:
                body = await response.json()
        assert response.status != 500, body
        assert "internal" not in json.dumps(body)
    store.write_bytes(good)
    assert _ingest(sample_repo, "step1.coverage.json").returncode == 0


# -- a path that changes under us --------------------------------------------------------------


def _swap(target: Path, how: str) -> None:
    """What another process does between our resolving the path and opening it."""
    target.unlink()
    if how == "link_out":
        target.symlink_to("/etc/hostname")
    elif how == "directory":
        target.mkdir()
    # "gone": left missing


@pytest.mark.parametrize(
    ("how", "code"),
    [("link_out", "report_changed"), ("directory", "invalid_argument"), ("gone", "not_found")],
)
def test_a_report_swapped_between_resolving_and_opening_is_a_coded_refusal_and_nothing_is_stored(
    sample_repo: Path, how: str, code: str
) -> None:
    report = sample_repo / "step3.coverage.json"
    with open_project(sample_repo) as project:
        service = Service(project)
        opening.BEFORE_OPEN = lambda path: _swap(path, how) if path == report else None
        try:
            with pytest.raises(CoverageError) as caught:
                service.call("coverage_import", {"report_path": "step3.coverage.json"})
        finally:
            opening.BEFORE_OPEN = None
        assert caught.value.code.value == code and str(report) in caught.value.message
        assert project.store.con.execute("SELECT count(*) FROM snapshots").fetchone() == (0,)
        (sample_repo / "step1.coverage.json").rename(sample_repo / "again.json")
        done = service.call("coverage_import", {"report_path": "again.json"})
        assert done["data"]["snapshot"]["snapshot_id"]


def test_a_report_path_that_loops_while_it_is_resolved_is_report_changed_never_internal(
    sample_repo: Path,
) -> None:
    loop = sample_repo / "loop.json"
    loop.symlink_to(sample_repo / "loop2.json")
    (sample_repo / "loop2.json").symlink_to(loop)
    with open_project(sample_repo) as project:
        with pytest.raises(CoverageError) as caught:
            Service(project).call("coverage_import", {"report_path": "loop.json"})
        assert caught.value.code is ErrorCode.REPORT_CHANGED and "loop.json" in caught.value.message
        assert project.store.con.execute("SELECT count(*) FROM snapshots").fetchone() == (0,)


# -- a full disk ------------------------------------------------------------------------------------


def _composite_sample(root: Path) -> Path:
    import hashlib

    from .gitrepo import make_repo

    shader = b"fn main() {\n  if (x) {\n    y();\n  }\n}\n"
    inventory = {
        "inventory_version": 1,
        "components": [
            {
                "id": "gpu",
                "language": "other",
                "format": "regions-v1",
                "sources": ["shaders/*.wgsl"],
                "variants": ["vulkan"],
            }
        ],
    }
    repo = make_repo(root, {"shaders/main.wgsl": shader.decode(), "inventory.json": json.dumps(inventory)})
    # vk.json, and vk0-vk2.json for the disk-full cell's three imports: other evidence each time, since an
    # identical composite is a duplicate and writes nothing.
    for name, hits in (("vk", 1), ("vk0", 1), ("vk1", 2), ("vk2", 3)):
        region = {"start_line": 1, "start_col": 1, "end_line": 5, "end_col": 2, "hits": hits}
        f = {
            "path": "shaders/main.wgsl",
            "source_sha256": hashlib.sha256(shader).hexdigest(),
            "regions": [region],
        }
        (repo / f"{name}.json").write_text(
            json.dumps({"format": "coverage-mcp-regions-v1", "version": 1, "files": [f]})
        )
    return repo


# cell -> (where the home lives, the size of the tmpfs)
CELLS = {
    "ingest": ("beside", "12m"),
    "import_mcp": ("beside", "12m"),
    "compact": ("beside", "12m"),
    "composite": ("beside", "12m"),
    "token_rotate": ("tmpfs", "2m"),
    "dashboard": ("tmpfs", "12m"),
    "report_html": ("beside", "12m"),
}


@pytest.fixture(scope="module")
def cells() -> Iterator[Any]:
    """The cells' server inside one private mount namespace (``diskfull.Forks``): each cell runs in a fork of
    it, on a tmpfs of its own. Its interpreter and imports are paid once for the seven cells; OpenBLAS
    (NumPy's) is asked for no thread of its own, since the server must have none when it forks."""
    from . import diskfull

    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_MCP_")}
    env["PYTHONPATH"] = str(root)
    env["OPENBLAS_NUM_THREADS"] = "1"
    with diskfull.Forks([sys.executable, "-m", "tests.diskfull_cells", "serve"], env=env) as forks:
        yield forks


@pytest.mark.parametrize("cell", list(CELLS))
def test_a_full_disk_is_disk_full_naming_the_path_nothing_partial_and_the_store_works_once_space_is_freed(
    sample_repo: Path, tmp_path: Path, cell: str, cells: Any
) -> None:
    home, size = CELLS[cell]
    sample = _composite_sample(tmp_path / "gpu") if cell == "composite" else sample_repo
    folder = tmp_path / "full"
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_MCP_")}
    env["PYTHONPATH"] = str(root)
    env["COVERAGE_MCP_PORT"] = str(free_port())  # never the user's port
    where = "tmpfs" if home == "tmpfs" else str(tmp_path / "home")
    done = cells.run(
        folder, [cell, str(folder), str(sample), where], size=size, env=env, output=tmp_path / "cell"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["first"]["rc"] == 0, seen
    full = seen["full"]
    assert not full.get("traceback"), seen
    assert full["rc"] == 1, seen
    error = full["error"]
    assert error["code"] == "disk_full", error
    assert str(folder) in error["message"] and error["details"]["path"].startswith(str(folder)), error
    assert seen["after_full"] == seen["before"], seen  # nothing partial
    assert seen["again"]["rc"] == 0, seen  # the store works once the space is back


# -- every operation of the matrix on a damaged store file --------------------------------------


def _refused_naming(done: subprocess.CompletedProcess, store: Path) -> dict:
    assert done.returncode == 1, done.stderr
    error = _error(done)
    assert error["code"] == "store_damaged" and str(store) in error["message"], error
    assert error["details"]["path"] == str(store), error
    return error


def _stop_daemon(repo: Path) -> None:
    commandline.cli("stop", cwd=repo)


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_on_a_damaged_store_compact_report_dashboard_and_token_rotate_answer_coded_and_leave_it_untouched(
    sample_repo: Path, tmp_path: Path, how: str
) -> None:
    assert _ingest(sample_repo).returncode == 0
    store = sample_repo / STORE
    good = _damage(store, how)
    damaged = store.read_bytes()
    html = tmp_path / "html"
    _refused_naming(cli(sample_repo, "compact", "--older-than", "0", "--json"), store)
    _refused_naming(cli(sample_repo, "report", "--html", str(html), "--json"), store)
    assert not html.exists() or not any(html.iterdir())  # nothing partial
    try:
        _refused_naming(cli(sample_repo, "dashboard", "--no-open", "--json"), store)
    finally:
        _stop_daemon(sample_repo)
    # The store is not token rotate's business: it succeeds, from inside the checkout too.
    rotated = commandline.cli("token", "rotate", "--json", cwd=sample_repo)
    assert rotated.returncode == 0 and "Traceback" not in rotated.stderr, rotated.stderr
    assert store.read_bytes() == damaged
    store.write_bytes(good)  # replaced by a good one: every operation works again
    assert cli(sample_repo, "compact", "--older-than", "0", "--json").returncode == 0
    done = cli(sample_repo, "report", "--html", str(html), "--json")
    assert done.returncode == 0 and (html / "index.html").is_file(), done.stderr
    try:
        signed = cli(sample_repo, "dashboard", "--no-open", "--json")
        assert signed.returncode == 0, signed.stderr
    finally:
        _stop_daemon(sample_repo)


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_a_composite_build_on_a_damaged_store_is_store_damaged_and_builds_again_once_it_is_replaced(
    tmp_path: Path, how: str
) -> None:
    repo = _composite_sample(tmp_path / "gpu")
    build = (
        "composite",
        "build",
        "--inventory",
        str(repo / "inventory.json"),
        f"gpu:vulkan={repo / 'vk.json'}",
    )
    build = (*build, "--json")
    assert cli(repo, *build).returncode == 0
    store = repo / STORE
    good = _damage(store, how)
    damaged = store.read_bytes()
    _refused_naming(cli(repo, *build), store)
    assert store.read_bytes() == damaged
    store.write_bytes(good)
    again = cli(repo, *build)
    assert again.returncode == 0, again.stderr
    listed = cli(repo, "composite", "show", "--json")
    assert listed.returncode == 0, listed.stderr


@pytest.mark.parametrize("how", ["truncated", "garbage"])
async def test_an_mcp_import_and_a_daemon_compaction_on_a_damaged_store_are_store_damaged(
    sample_repo: Path, how: str
) -> None:
    from .daemons import sdk_client
    from .test_daemon_rest import register

    async with in_process(Settings.from_env(port=0)) as d:
        pid = await register(d, sample_repo)  # the registry knows it; the next daemon opens it afresh
        async with sdk_client(d, f"{d.url}/p/{pid}/mcp", "auto") as client:
            assert not (
                await client.call_tool("coverage_import", {"report_path": "step3.coverage.json"})
            ).is_error
    store = sample_repo / STORE
    good = _damage(store, how)
    damaged = store.read_bytes()
    async with in_process(Settings.from_env(port=0)) as d:
        for url, headers in (
            (f"{d.url}/p/{pid}/mcp", {}),
            (f"{d.url}/mcp", {"x-coverage-mcp-repo": str(sample_repo)}),
        ):
            async with sdk_client(d, url, "auto", **headers) as client:
                result = await client.call_tool("coverage_import", {"report_path": "step1.coverage.json"})
            assert result.is_error, result
            error = (result.structured_content or {})["error"]
            assert error["code"] == "store_damaged" and str(store) in error["message"], error
        async with aiohttp.ClientSession() as http:
            async with http.post(
                f"{d.url}/api/projects/{pid}/ops/compact", json={"older_than": "0"}, headers=d.admin
            ) as response:
                body = await response.json()
        assert response.status != 500 and body["error"]["code"] == "store_damaged", body
        assert str(store) in body["error"]["message"]
        assert store.read_bytes() == damaged
    store.write_bytes(good)
    async with in_process(Settings.from_env(port=0)) as d:
        async with sdk_client(d, f"{d.url}/p/{pid}/mcp", "auto") as client:
            result = await client.call_tool("coverage_import", {"report_path": "step1.coverage.json"})
        assert not result.is_error, result.structured_content
        async with aiohttp.ClientSession() as http:
            async with http.post(
                f"{d.url}/api/projects/{pid}/ops/compact", json={"older_than": "0"}, headers=d.admin
            ) as response:
                assert response.status == 200, await response.text()
