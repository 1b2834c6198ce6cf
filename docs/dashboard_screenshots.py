"""Screenshots of every dashboard view on a real measured history, for ``docs/`` and the README.

    python docs/dashboard_screenshots.py [--out DIR] [--readme]

Builds the suite's small real package (``tests/realcov.py``) as a git
repository and measures it with coverage.py over nine commits: the code and
its tests grow (contexts named by pytest node id and phase), one commit is measured by a subset of its tests (stored with
``scope=subset``), and the last snapshot is of a dirty tree (an uncommitted
edit). A real ``coverage-mcp serve`` in a home of its own serves the page;
two test commands are registered: the whole suite under coverage.py, which
the script approves on the page and runs (a managed run with its log and
review, the current snapshot), and the tax tests, left pending for the
approvals view. Headless Chromium (the system's ``chromium``, driven by
Playwright) signs in through a one-time link and saves, at 1280 and 390 px wide, the whole page
and each view. ``--readme`` also writes the 1280 x 900 top of the page to
``docs/dashboard.png``. Not part of the test suite: its tests assert, this
script only shows.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coverage_core import open_project  # noqa: E402
from coverage_daemon.identity import CAPABILITY_HEADER  # noqa: E402
from coverage_daemon.rest_client import DaemonClient  # noqa: E402
from tests.gitrepo import commit, write  # noqa: E402
from tests.realcov import MEASURED, REPORTS, make_package, measure  # noqa: E402
from tests.test_dashboard_tests import CONTEXTS  # noqa: E402

VIEWS = ("overview", "timeline", "change", "files", "tests", "runs", "approvals", "compaction", "composite")
WIDTHS = (1280, 390)

# Each step: files written, then a commit (its message), then a measurement (None: the whole suite).
STEPS: list[tuple[dict[str, str], str, tuple[str, ...] | None, str]] = [
    ({}, "initial", ("tests/test_cart.py::test_total_sums_prices",), "complete"),
    (
        {},
        "measure two tests",
        ("tests/test_cart.py::test_total_sums_prices", "tests/test_cart.py::test_standard_shipping"),
        "complete",
    ),
    ({}, "the whole suite", None, "complete"),
    (
        {"shop/extra.py": "def twice(x):\n    if x:\n        return 2 * x\n    return 0\n"},
        "extra: twice",
        None,
        "complete",
    ),
    (
        {
            "tests/test_extra.py": (
                "import pytest\n\nfrom shop.extra import twice\n\n\n"
                "@pytest.mark.parametrize('x', [0, 1, 2, 3])\ndef test_twice(x):\n    assert twice(x) == 2 * x\n"
            )
        },
        "test twice",
        None,
        "complete",
    ),
    ({}, "a subset run", ("tests/test_extra.py",), "subset"),
    (
        {
            "shop/tax.py": (
                "def vat(amount, rate=0.2):\n    if amount < 0:\n        raise ValueError(amount)\n"
                "    if rate > 1:\n        rate = rate / 100\n    return round(amount * rate, 2)\n\n\n"
                "def gross(amount):\n    return amount + vat(amount)\n"
            )
        },
        "tax, untested",
        None,
        "complete",
    ),
    (
        {
            "tests/test_tax.py": "from shop.tax import gross, vat\n\n\ndef test_vat():\n    assert vat(10) == 2\n"
        },
        "test vat",
        None,
        "complete",
    ),
]


def build(root: Path) -> Path:
    repo = make_package(root / "repo")
    # contexts named as pytest-cov names them (node id and phase), so parametrised cases group by function
    write(repo, {"tests/conftest.py": CONTEXTS, ".coveragerc": "[run]\nbranch = True\nsource = shop\n"})
    commit(repo, "per-test contexts")
    with open_project(repo) as project:
        for files, message, tests, scope in STEPS:
            if files:
                write(repo, files)
            if message != "initial":
                commit(repo, message)
            report = measure(repo, *(tests or ()))
            project.ingest(report["json"], scope=scope)
        # The last snapshot: a dirty tree (an uncommitted test), measured as it is.
        write(
            repo,
            {
                "tests/test_tax.py": (repo / "tests/test_tax.py").read_text()
                + "\n\ndef test_gross():\n    assert gross(10) == 12\n"
            },
        )
        project.ingest(measure(repo)["json"])
    return repo


class Serve:
    def __init__(self, home: Path) -> None:
        self.home = home
        env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_MCP_")}
        self.env = {**env, "COVERAGE_MCP_HOME": str(home), "COVERAGE_MCP_PORT": "0"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "coverage_cli", "serve"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        announce = self.proc.stderr.readline()
        if "listening on " not in announce:
            self.proc.kill()
            raise RuntimeError(f"serve did not start: {announce}")
        self.url = announce.split("listening on ")[1].split(" ")[0]

    def ticket(self, project_id: str) -> str:
        capability = json.loads((self.home / "daemon.lock").read_text())["capability"]
        answer = DaemonClient.of_home(self.home, self.url).request(
            "POST", f"/api/dashboard/ticket?project={project_id}", headers={CAPABILITY_HEADER: capability}
        )
        return str(answer[1]["data"]["url"])

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def cli(serve: Serve, repo: Path, *args: str) -> dict[str, Any]:
    """``coverage-mcp ARGS`` with ``--json`` (before a ``--``) in ``repo``, through the script's daemon."""
    cut = args.index("--") if "--" in args else len(args)
    done = subprocess.run(
        [sys.executable, "-m", "coverage_cli", *args[:cut], "--json", *args[cut:]],
        cwd=repo,
        env=serve.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def register(serve: Serve, repo: Path, name: str, tests: str) -> str:
    """A test command measuring ``tests`` under coverage.py (pending until approved); its id."""
    answer = cli(
        serve,
        repo,
        "command",
        "register",
        "--name",
        name,
        "--artifact",
        f"{REPORTS['json']}:default",
        "--env",
        f"PYTHONPATH={repo}",
        "--env",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1",
        "--",
        sys.executable,
        "-c",
        MEASURED,
        *REPORTS.values(),
        tests,
    )
    return str(answer["data"]["command"]["id"])


def approve_and_run(serve: Serve, repo: Path, page: Any, command_id: str) -> None:
    """Approve ``command_id`` on the page as a person does, run it and wait for its review on the page."""
    row = page.locator(f'#approvals-table tr[data-command="{command_id}"]')
    row.locator("button.approve").click()
    row.locator("button.confirm").click()
    # the page's CSP forbids eval, so waits are selectors, never wait_for_function
    row.wait_for(state="detached", timeout=60_000)
    run_id = cli(serve, repo, "run", command_id)["data"]["run"]["id"]
    page.wait_for_selector(
        f'#runs-table tr[data-run="{run_id}"] td:nth-child(2):text-is("succeeded")', timeout=300_000
    )
    page.locator(f'#runs-table tr[data-run="{run_id}"] button').click()
    page.wait_for_selector("#run-log-text", timeout=60_000)


def shoot(serve: Serve, project_id: str, out: Path, readme: bool, run: Callable[[Any], None]) -> list[Path]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("needs Debian's chromium: sudo apt-get install -y chromium")
    saved: list[Path] = []
    with sync_playwright() as driver:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = driver.chromium.launch(executable_path=chromium, args=args, headless=True)
        for width in WIDTHS:
            context = browser.new_context(viewport={"width": width, "height": 900})
            page = context.new_page()
            page.goto(serve.ticket(project_id))
            page.wait_for_selector("body[data-ready=true]", timeout=60_000)
            if width == WIDTHS[0]:
                run(page)  # once: the run is stored, every later page shows it
            page.locator("#files-table tbody tr button").nth(1).click()
            page.wait_for_selector("#source-path", timeout=60_000)
            page.mouse.move(0, 0)  # no hover highlight in the pictures
            full = out / f"dashboard-{width}-full.png"
            page.screenshot(path=str(full), full_page=True)
            saved.append(full)
            if width == 1280:
                page.evaluate("window.scrollTo(0, 0)")
                top = out / "dashboard-1280-top.png"
                page.screenshot(path=str(top))
                saved.append(top)
                if readme:
                    shutil.copy(top, ROOT / "docs" / "dashboard.png")
            for view in VIEWS:
                shot = out / f"view-{width}-{view}.png"
                page.locator(f"#{view}").screenshot(path=str(shot))
                saved.append(shot)
            context.close()
        browser.close()
    return saved


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "dashboard-screenshots")
    parser.add_argument("--readme", action="store_true", help="also write docs/dashboard.png")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dashboard-shots-") as tmp:
        root = Path(tmp)
        repo = build(root)
        with open_project(repo) as project:
            project_id = project.checkout.project_id
        serve = Serve(root / "home")
        try:
            DaemonClient.of_home(serve.home, serve.url).register(repo)
            suite = register(serve, repo, "the whole suite", "tests")
            register(serve, repo, "the tax tests", "tests/test_tax.py")  # left pending
            run = functools.partial(approve_and_run, serve, repo, command_id=suite)
            for path in shoot(serve, project_id, args.out, args.readme, run):
                print(path)
        finally:
            serve.stop()


if __name__ == "__main__":
    main()
