"""Real headless Chromium for the dashboard's tests: Debian's ``chromium`` driven by Playwright's Python API.

Playwright never downloads a browser here: it launches the system's
``chromium`` (declared in ``scripts/system-packages``). A missing browser or
Playwright skips the test, naming the fix; under ``CI=true`` it fails it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from .systemtools import require


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
async def chromium(**context_options: Any) -> AsyncIterator[Any]:
    """A fresh browser context of headless Chromium (its own cookies), closed after."""
    executable = require("chromium")
    api = playwright_api()
    async with api.async_playwright() as driver:
        # Root (as in CI containers) cannot use Chromium's user-namespace sandbox.
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = await driver.chromium.launch(executable_path=executable, args=args, headless=True)
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 900}, **context_options)
            try:
                yield context
            finally:
                await context.close()
        finally:
            await browser.close()


def shots_dir(factory: pytest.TempPathFactory) -> Path:
    """Where the tests save each view's screenshot: an artifact of the run, never committed."""
    path = factory.getbasetemp() / "dashboard-screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path
