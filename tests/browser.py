"""Real headless Chromium for the dashboard's tests: Debian's ``chromium`` driven by Playwright's Python API,
and what the dashboard's tests share (a daemon with a measured repository, the CLI's answers, waits on the page).

Playwright never downloads a browser here: it launches the system's
``chromium`` (declared in ``scripts/system-packages``). A missing browser or
Playwright skips the test, naming the fix; under ``CI=true`` it fails it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from coverage_core.project import open_project

from .commandline import cli as command
from .daemons import Running
from .systemtools import require

WAIT_MS = 30_000  # generous bounds: the machine may be busy; nothing here is a timing assertion


def playwright_api() -> Any:
    try:
        from playwright import async_api
    except ImportError:
        reason = "needs Playwright's Python package: pip install -e '.[test]'"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)
    return async_api


@asynccontextmanager
async def launched() -> AsyncIterator[Any]:
    """Headless Chromium (the system's), closed after: one per browser-test file (the ``chromium`` fixture of
    conftest.py), as its driver and launch cost more than a test's page."""
    executable = require("chromium")
    api = playwright_api()
    async with api.async_playwright() as driver:
        # Root (as in CI containers) cannot use Chromium's user-namespace sandbox.
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = await driver.chromium.launch(executable_path=executable, args=args, headless=True)
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def fresh_context(browser: Any, **context_options: Any) -> AsyncIterator[Any]:
    """A fresh browser context (its own cookies, storage, cache and permissions), closed after: what one test
    does in it never reaches the next test's, though both use the same Chromium."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900}, **context_options)
    try:
        yield context
    finally:
        await context.close()


@asynccontextmanager
async def chromium(**context_options: Any) -> AsyncIterator[Any]:
    """A fresh browser context of a Chromium of its own, for a file that does not share one."""
    async with launched() as browser, fresh_context(browser, **context_options) as context:
        yield context


def shots_dir(factory: pytest.TempPathFactory) -> Path:
    """Where the tests save each view's screenshot: an artifact of the run, never committed."""
    path = factory.getbasetemp() / "dashboard-screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def store(repo: Path, reports: dict[str, tuple[Path, str]], *names: str) -> None:
    """Ingest reports straight into the repository's store (no daemon holds it yet)."""
    project = open_project(repo)
    try:
        for name in names:
            path, sha = reports[name]
            project.ingest(path, commit=sha)
    finally:
        project.close()


def cli(repo: Path, *args: str, process: bool = True) -> dict[str, Any]:
    """A coverage-mcp command's --json answer (through the daemon when it holds the store). A child process
    by default: called from a test's event loop, an in-process command would block the daemon it reaches."""
    cut = args.index("--") if "--" in args else len(args)  # our options go before a command's own words
    out = command(*args[:cut], "--json", "--repo", str(repo), *args[cut:], cwd=repo, process=process)
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


class Live:
    def __init__(self, running: Running, repo: Path, reports: dict[str, tuple[Path, str]]) -> None:
        self.running, self.repo, self.reports = running, repo, reports

    async def cli(self, *args: str) -> dict[str, Any]:
        """In this process, on a thread: the daemon's event loop goes on serving while the command waits on
        it. What the tests compare is the command's answer; routing has its own tests (test_cli_routing)."""
        return await asyncio.to_thread(cli, self.repo, *args, process=False)

    async def sign_in(self, context: Any) -> Any:
        """``coverage-mcp dashboard`` as a person runs it; the browser opens the file it wrote."""
        answer = await self.cli("dashboard", "--no-open")
        page = await context.new_page()
        page.errors = []
        page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.on(
            "response",
            lambda r: (
                page.errors.append(f"{r.status} {r.request.method} {r.url}") if r.status >= 400 else None
            ),
        )
        await page.goto(Path(answer["open_file"]).as_uri())
        await page.wait_for_url(self.running.url + "/?project=*", timeout=WAIT_MS)  # the repository's project
        await ready(page)
        return page

    async def ingest(self, name: str) -> None:
        path, sha = self.reports[name]
        await self.cli("ingest", str(path), "--commit", sha)


async def until(page: Any, expression: str) -> None:
    """Wait (bounded) until ``expression`` is true in the page. Polled from here: the page's CSP forbids the
    string evaluation Playwright's own wait_for_function would use."""
    for _ in range(WAIT_MS // 100):
        if await page.evaluate(expression):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(
        f"never true in the page: {expression}; "
        f"{await page.evaluate('JSON.stringify(window.__dashboard)')} "
        f"{await page.locator('#status').text_content()}"
    )


async def ready(page: Any) -> None:
    await page.wait_for_selector("body[data-ready=true]", timeout=WAIT_MS)


async def text(page: Any, selector: str) -> str:
    return (await page.locator(selector).first.text_content() or "").strip()
