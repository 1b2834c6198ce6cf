"""The dashboard's file view never hides a cut: a file longer than the view carries (MAX_SOURCE_LINES)
shows the lines it carries and says how many the file has, in the single-file static report in a real browser
(the site gives each file a page of its whole text: tests/test_no_hidden_cuts.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from coverage_core.operations.dashboard_view import MAX_SOURCE_LINES
from coverage_core.project import open_project

from .browser import WAIT_MS, chromium, cli, ready, text
from .gitrepo import lcov, make_repo

LINES = MAX_SOURCE_LINES + 5


async def test_a_file_longer_than_the_view_says_how_much_is_shown_and_of_how_many_lines(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "long", {"long.py": "".join(f"x{i} = {i}\n" for i in range(LINES))})
    report = tmp_path / "long.info"
    report.write_text(lcov({"long.py": {n: n % 2 for n in range(1, LINES + 1)}}))
    project = open_project(repo)
    try:
        project.ingest(report)
    finally:
        project.close()
    answer = await asyncio.to_thread(cli, repo, "report", "--html", str(tmp_path / "out"), "--single-file")
    async with chromium(offline=True) as context:
        page = await context.new_page()
        await page.goto(Path(answer["report"]).as_uri())
        await ready(page)
        await page.locator("#files-table tbody tr button.link").first.click()
        await page.wait_for_selector("#source-path", timeout=WAIT_MS)
        # the view draws the carried lines a window at a time (issue 30), from the first
        drawn = await page.locator("#source pre .ln").count()
        assert 0 < drawn <= MAX_SOURCE_LINES
        assert (await page.locator("#source pre .ln").first.inner_text()).startswith("1x0 = 0")
        said = await text(page, "#source")
        assert f"This report carries the first {MAX_SOURCE_LINES} of {LINES} lines" in said
