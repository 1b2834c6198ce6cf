"""One cell of the disk-full fault matrix, run inside a private tmpfs (``tests/diskfull.py``).

``python -m tests.diskfull_cells CELL FOLDER SAMPLE HOME``: FOLDER is the small
tmpfs, SAMPLE a prepared sample repository (on the ordinary disk) that the
cell copies onto it, HOME the daemon home (``tmpfs``: on it). ``python -m
tests.diskfull_cells serve`` runs each cell it is sent in a fork of itself
(``tests/diskfull.py``'s ``Forks``). The cell does its operation once so the store exists,
fills the tmpfs to the last byte, does the operation again (which must fail
with ``disk_full`` naming a file on the tmpfs, leaving nothing partial),
frees the space and does it a third time (which must succeed). It prints one
JSON object of what it saw; tests/test_faults.py judges it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

FILLER = "filler"


def fill(folder: Path) -> Path:
    """Write FOLDER's free space full (down to single bytes) and return the filler file."""
    filler = folder / FILLER
    with open(filler, "wb", buffering=0) as out:
        for size in (1 << 20, 1 << 12, 1):
            chunk = b"\0" * size
            while True:
                try:
                    out.write(chunk)
                except OSError:
                    break
    return filler


def cli(repo: Path, *args: str, env: dict[str, str], process: bool = False) -> dict[str, Any]:
    """``coverage-mcp ARGS --json`` in ``repo``: in this process (click's CliRunner), which is already the one
    inside the namespace (what a cell checks is the code, the message and what is left on the disk, as
    ``tests/commandline.py`` runs such commands), or with ``process`` as a child (``dashboard`` starts a
    daemon and leaves it running)."""
    if process:
        done = subprocess.run(
            [sys.executable, "-m", "coverage_cli", *args, "--json"],
            capture_output=True,
            text=True,
            env=env,
            cwd=repo,
            timeout=300,
        )
    else:
        done = _in_process(repo, [*args, "--json"], env)
    seen: dict[str, Any] = {"rc": done.returncode, "traceback": "Traceback" in done.stderr}
    if done.returncode == 0:
        with contextlib.suppress(ValueError):
            seen["out"] = json.loads(done.stdout)
    else:
        with contextlib.suppress(ValueError, KeyError):
            seen["error"] = json.loads(done.stderr)["error"]
        seen.setdefault("error", {"code": None, "message": done.stderr[-2000:]})
    return seen


def _in_process(repo: Path, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command line under CliRunner with ``env`` and ``repo`` as its folder; an exception it lets out
    is a traceback on its standard error, as the installed command would print it."""
    from click.testing import CliRunner

    from coverage_cli.main import cli as application

    with contextlib.chdir(repo):
        result = CliRunner(env=env).invoke(application, argv, prog_name="coverage-mcp", catch_exceptions=True)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
        return subprocess.CompletedProcess(argv, 1, result.stdout, stderr)
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, stderr)


def _contents(folder: Path) -> dict[str, str]:
    """Each entry directly in ``folder``: a file's name and the SHA-256 of its bytes, a folder's name."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
        for p in sorted(folder.iterdir())
    }


def snapshots(repo: Path, env: dict[str, str]) -> int:
    listed = cli(repo, "snapshots", env=env)
    return len(listed["out"]["data"]["snapshots"]) if "out" in listed else -1


def _three(folder: Path, op: Callable[[int], dict[str, Any]], count: Callable[[], Any]) -> dict[str, Any]:
    first = op(0)
    before = count()
    filler = fill(folder)
    full = op(1)
    after_full = count() if full.get("count_on_full", True) else None
    filler.unlink()
    again = op(2)
    return {"first": first, "full": full, "before": before, "after_full": after_full, "again": again}


def cell_ingest(folder: Path, repo: Path, env: dict[str, str]) -> dict[str, Any]:
    reports = ["step1.coverage.json", "step3.coverage.json", "step3.coverage.lcov"]
    return _three(
        folder,
        lambda i: cli(repo, "ingest", str(repo / reports[i]), env=env),
        lambda: snapshots(repo, env),
    )


def cell_report_html(folder: Path, repo: Path, env: dict[str, str]) -> dict[str, Any]:
    assert cli(repo, "ingest", str(repo / "step3.coverage.json"), env=env)["rc"] == 0
    out = folder / "html"

    def op(i: int) -> dict[str, Any]:
        seen = cli(repo, "report", "--html", str(out), env=env)
        seen["files"] = sorted(p.name for p in out.iterdir()) if out.exists() else []
        return seen

    (folder / "html").mkdir()
    # Names and contents: a page rewritten in place and cut short would keep every name.
    return _three(folder, op, lambda: _contents(out))


def cell_token_rotate(folder: Path, repo: Path, env: dict[str, str]) -> dict[str, Any]:
    token = Path(env["COVERAGE_MCP_HOME"]) / "client.token"

    def op(i: int) -> dict[str, Any]:
        seen = cli(repo, "token", "rotate", env=env)
        seen["token_bytes"] = len(token.read_bytes()) if token.exists() else None
        return seen

    def count() -> dict[str, str]:
        # The token itself too: a rotation that failed keeps the previous token whole.
        return {k: v for k, v in _contents(token.parent).items() if k != FILLER}

    return _three(folder, op, count)


def cell_dashboard(folder: Path, repo: Path, env: dict[str, str]) -> dict[str, Any]:
    home = Path(env["COVERAGE_MCP_HOME"])
    try:
        return _three(
            folder,
            # In this process too: the daemon it starts is a process of its own either way (the launcher's).
            lambda i: cli(repo, "dashboard", "--no-open", env=env),
            lambda: sorted(
                p.name for p in home.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")
            ),
        )
    finally:
        _in_process(repo, ["stop"], env)


def cell_composite(folder: Path, repo: Path, env: dict[str, str]) -> dict[str, Any]:
    from coverage_core import open_project
    from coverage_core.errors import CoverageError

    def op(i: int) -> dict[str, Any]:
        try:
            with open_project(repo) as project:
                from coverage_core.service import Service

                env_ = Service(project).call(
                    "coverage_import",
                    {"inventory_path": "inventory.json", "reports": [f"gpu:vulkan=vk{i}.json"]},
                )
                return {"rc": 0, "composite": env_["data"]["composite"]["composite_snapshot_id"]}
        except CoverageError as error:
            return {"rc": 1, "error": error.to_dict()}

    def count() -> int:
        with open_project(repo) as project:
            return project.store.con.execute("SELECT count(*) FROM composite_snapshots").fetchone()[0]

    return _three(folder, op, count)


def _big_lcov(repo: Path) -> Path:
    """A report whose compacted payload is far larger than a page: random counts do not compress."""
    import random

    rng = random.Random(23)
    lines = "".join(f"DA:{n},{rng.randrange(1 << 40)}\n" for n in range(1, 60_001))
    records = ["SF:inventory/pricing.py\n" + lines + "end_of_record\n"]
    path = repo / "big.info"
    path.write_text("".join(records))
    return path


def _daemon_cell(folder: Path, repo: Path, env: dict[str, str], kind: str) -> dict[str, Any]:
    os.environ.update(env)
    from coverage_core.config import Settings
    from tests.daemons import in_process, sdk_client
    from tests.test_daemon_rest import register

    async def main() -> dict[str, Any]:
        async with in_process(Settings.from_env(port=0)) as d:
            pid = await register(d, repo)

            async def op(i: int) -> dict[str, Any]:
                reports = ["step1.coverage.json", "step3.coverage.json", "step3.coverage.lcov"]
                if kind == "compact" and i == 0:
                    reports[0] = _big_lcov(repo).name
                if kind == "import" or i == 0:
                    for report in reports[i : i + 1] if kind == "import" else reports[:2]:
                        async with sdk_client(d, f"{d.url}/p/{pid}/mcp", "auto") as client:
                            result = await client.call_tool("coverage_import", {"report_path": report})
                        if result.is_error:
                            return {"rc": 1, "error": (result.structured_content or {}).get("error")}
                    return {"rc": 0}
                import aiohttp

                async with (
                    aiohttp.ClientSession() as http,
                    http.post(
                        f"{d.url}/api/projects/{pid}/ops/compact", json={"older_than": "0"}, headers=d.admin
                    ) as response,
                ):
                    body = await response.json()
                    return {"rc": 0 if response.status == 200 else 1, "status": response.status, **body}

            def count() -> Any:
                listed = d.client().call(pid, "coverage_review", {"task": "snapshots"})
                payloads = d.client().call(pid, "compaction_inventory")["data"]
                return [len(listed["data"]["snapshots"]), payloads.get("compacted")]

            first = await op(0)
            before = await asyncio.to_thread(count)
            filler = fill(folder)
            full = await op(1)
            after_full = await asyncio.to_thread(count)
            filler.unlink()
            again = await op(2)
            return {"first": first, "full": full, "before": before, "after_full": after_full, "again": again}

    return asyncio.run(main())


CELLS: dict[str, Callable[[Path, Path, dict[str, str]], dict[str, Any]]] = {
    "ingest": cell_ingest,
    "import_mcp": lambda f, r, e: _daemon_cell(f, r, e, "import"),
    "compact": lambda f, r, e: _daemon_cell(f, r, e, "compact"),
    "composite": cell_composite,
    "token_rotate": cell_token_rotate,
    "dashboard": cell_dashboard,
    "report_html": cell_report_html,
}


def run_cell(argv: list[str]) -> int:
    """``CELL FOLDER SAMPLE HOME``: the cell's JSON object on standard output; 0."""
    cell, folder, sample, home = argv[0], Path(argv[1]), Path(argv[2]), argv[3]
    repo = folder / "repo"
    shutil.copytree(sample, repo, symlinks=True)
    env = dict(os.environ)
    # The home on the tmpfs where the cell fills it (token, sign-in file), else beside the test.
    env["COVERAGE_MCP_HOME"] = str(folder / "home") if home == "tmpfs" else home
    Path(env["COVERAGE_MCP_HOME"]).mkdir(parents=True, exist_ok=True)
    os.chmod(env["COVERAGE_MCP_HOME"], 0o700)
    print(json.dumps(CELLS[cell](folder, repo, env)))
    return 0


# What the cells import, imported once by the server (``serve``) for every fork: the command line's commands,
# the daemon and the test helpers that drive it (about a second of CPU per cell otherwise).
PRELOADED = (
    "click.testing",
    "coverage_cli.main",
    "coverage_cli.store_cmds",
    "coverage_core.service",
    "coverage_daemon.server",
    "tests.daemons",
    "tests.test_daemon_rest",
)


def main() -> None:
    if sys.argv[1:] == ["serve"]:  # tests/diskfull.py's Forks: one cell per job, each in a fork
        import importlib

        from tests import diskfull

        for name in PRELOADED:
            importlib.import_module(name)
        diskfull.serve(run_cell)
    else:
        sys.exit(run_cell(sys.argv[1:]))


if __name__ == "__main__":
    main()
