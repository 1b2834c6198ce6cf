"""The dashboard's fixes in a real browser: what Approve shows and asks, where focus goes, which project a
sign-in link opens, the worst files of a large project, hostile text in the static report, the change view."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from coverage_core.config import Settings
from coverage_core.execution import commands
from coverage_core.project import open_project

from .browser import WAIT_MS, Live, cli, ready, shots_dir, store, text, until
from .daemons import in_process
from .gitrepo import commit, git, lcov, make_repo, write
from .realcov import copy_checkout, make_package, measure

# One Chromium for the file (conftest.py `chromium`): its tests and fixtures share the module's event loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "s3cr3t-value-never-in-a-report"


def register(repo: Path, name: str, argv: list[str], **extra: Any) -> str:
    project = open_project(repo)
    try:
        registered = commands.register(
            project,
            {
                "name": name,
                "argv": argv,
                "artifacts": [{"path": "coverage.json", "suite": "default"}],
                **extra,
            },
        )
        return registered.command.id
    finally:
        project.close()


@pytest_asyncio.fixture(loop_scope="module")
async def pending(
    shop_history: tuple[Path, dict[str, tuple[Path, str]]],
    tmp_path: Path,
    isolated_home: Path,
) -> AsyncIterator[tuple[Live, list[str]]]:
    """Two look-alike pending commands, one with an env value that is not harmless."""
    repo = copy_checkout(shop_history[0], tmp_path)
    store(repo, shop_history[1], "c0", "c1")
    ids = [
        register(
            repo,
            "one word",
            ["python", "-m pytest", "tests"],
            env={"PYTHONPATH": "/tmp/attacker-site", "API_TOKEN": SECRET},
            timeout_s=77,
            args_policy="selectors",
        ),
        register(repo, "three words", ["python", "-m", "pytest", "tests"]),
    ]
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        yield Live(running, repo, shop_history[1]), ids


async def test_approve_shows_exactly_what_runs_and_asks_to_confirm_then_keeps_the_keyboard_s_place(
    pending: tuple[Live, list[str]], tmp_path_factory: pytest.TempPathFactory, chromium: Any
) -> None:
    live, (spaced, split) = pending
    async with chromium() as context:
        page = await live.sign_in(context)
        one = page.locator(f'#approvals-table tr[data-command="{spaced}"]')
        three = page.locator(f'#approvals-table tr[data-command="{split}"]')
        # the argv as `coverage-mcp command show` prints it: the two never look alike
        shown = (await live.cli("command", "show", spaced))["data"]["command"]
        spaced_lines = (await one.locator("pre.registration").text_content() or "").splitlines()
        split_lines = (await three.locator("pre.registration").text_content() or "").splitlines()
        assert spaced_lines == shown["display"]  # the one display (issue 21): one quoted word per line
        assert "  argv[1]: '-m pytest'" in spaced_lines and "  argv[2]: 'tests'" in spaced_lines
        assert "  argv[1]: '-m'" in split_lines and "  argv[2]: 'pytest'" in split_lines
        details = await one.text_content() or ""
        assert "'PYTHONPATH' = '/tmp/attacker-site'" in details and f"'API_TOKEN' = '{SECRET}'" in details
        assert (
            "77 s" in details
            and "selectors" in details
            and "artifact: 'coverage.json' suite 'default'" in details
        )
        assert shown["argv"] == ["python", "-m pytest", "tests"]
        await page.locator("#approvals").screenshot(
            path=str(shots_dir(tmp_path_factory) / "view-approvals-details.png")
        )
        # one Enter does not approve: it asks, with the focus on the confirmation
        await one.locator("button.approve").focus()
        await page.keyboard.press("Enter")
        assert await page.evaluate("document.activeElement.textContent") == f"Confirm approve {spaced}"
        assert (await live.cli("command", "show", spaced))["data"]["command"]["status"] == "pending"
        # Cancel goes back, still nothing approved
        await page.keyboard.press("Tab")
        await page.keyboard.press("Enter")
        assert await page.evaluate("document.activeElement.className") == "approve"
        assert (await live.cli("command", "show", spaced))["data"]["command"]["status"] == "pending"
        # confirm: approved, and the focus moves to the next pending command, never lost to the body
        await page.keyboard.press("Enter")
        await page.keyboard.press("Enter")
        await until(page, f"document.querySelector('tr[data-command=\"{spaced}\"]') === null")
        assert (await live.cli("command", "show", spaced))["data"]["command"]["status"] == "approved"
        await until(page, "document.activeElement.tagName !== 'BODY'")
        assert await page.evaluate("document.activeElement.closest('tr').dataset.command") == split
        assert f"Approved {spaced}" in await text(page, "#approvals-status")
        # the last one: the focus goes to the section's heading
        await page.keyboard.press("Enter")
        await page.keyboard.press("Enter")
        await until(page, "document.querySelector('#approvals-table') === null")
        await until(page, "document.activeElement.id === 'h-approvals'")
        assert page.errors == []


async def test_the_static_report_never_carries_a_pending_command_or_its_env_values(
    pending: tuple[Live, list[str]], tmp_path: Path
) -> None:
    live, _ = pending
    answer = await live.cli("report", "--html", str(tmp_path / "report"))
    page = Path(answer["report"]).read_text()
    assert SECRET not in page and "attacker-site" not in page
    assert "2 command(s) waited for approval" in page


async def test_the_sign_in_link_opens_the_repository_the_command_ran_in_and_the_address_keeps_it(
    shop_history: tuple[Path, dict[str, tuple[Path, str]]],
    tmp_path: Path,
    isolated_home: Path,
    chromium: Any,
) -> None:
    first = copy_checkout(shop_history[0], tmp_path / "a")
    second = copy_checkout(shop_history[0], tmp_path / "b")
    store(first, shop_history[1], "c0")
    store(second, shop_history[1], "c0", "c1")
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        live = Live(running, first, shop_history[1])
        await live.cli("snapshots")  # the daemon sees the first repository ...
        await asyncio.to_thread(cli, second, "snapshots")  # ... and then the second, most recently
        async with chromium() as context:
            page = await live.sign_in(context)  # `coverage-mcp dashboard` run in the first
            answer = await live.cli("dashboard", "--no-open")
            wanted = answer["project_id"]
            assert await page.locator("#pick-project").input_value() == wanted
            assert (await text(page, "#where")).startswith(str(first))
            assert f"project={wanted}" in page.url
            await page.reload()
            await ready(page)
            assert await page.locator("#pick-project").input_value() == wanted
            assert page.errors == []


def big_lcov(root: Path, count: int) -> Path:
    """``count`` files; the one that sorts last by path covers nothing."""
    records = {f"pkg/m{i:04d}.py": {1: 1, 2: 1, 3: 1, 4: 0} for i in range(count - 1)}
    records["zz/worst.py"] = {n: 0 for n in range(1, 41)}
    path = root / "big.info"
    path.write_text(lcov(records))
    return path


async def test_the_worst_file_of_a_large_project_comes_first_on_the_first_click_on_missed_lines(
    tmp_path: Path, isolated_home: Path, chromium: Any
) -> None:
    files = {f"pkg/m{i:04d}.py": "a = 1\nb = 2\nc = 3\nd = 4\n" for i in range(2999)}
    files["zz/worst.py"] = "x = 1\n" * 40
    repo = make_repo(tmp_path / "large", files)
    project = open_project(repo)
    try:
        project.ingest(big_lcov(tmp_path, 3000))
    finally:
        project.close()
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        live = Live(running, repo, {})
        async with chromium() as context:
            page = await live.sign_in(context)
            assert await page.locator('#files-table tr[data-path="zz/worst.py"]').count() == 0  # cut by path
            missed = page.locator("#files-table th button", has_text="Missed lines")
            await missed.focus()
            await page.keyboard.press("Enter")  # one press: most missed first, over all 3000 files
            await until(
                page, "document.querySelector('#files-table tbody tr').dataset.path === 'zz/worst.py'"
            )
            assert (
                await page.locator("#files-table th[aria-sort=descending] button").text_content()
                == "Missed lines"
            )
            cells = await page.locator("#files-table tbody tr").first.locator("td").all_text_contents()
            assert cells[1] == "0.00% (0/40)" and cells[2] == "40"
            assert "order=uncovered" in page.url
            assert await page.evaluate("document.activeElement.dataset.sort") == "lines.missed"
            # the cut is flagged: how many of how many files, in which order
            await until(
                page, "document.querySelector('#files-more').textContent.startsWith('Showing 500 of 3000')"
            )
            assert "by missed lines, largest first" in await text(page, "#files-more")
            assert await page.locator("#files-next").count() == 1  # the next page, through the row's cursor
            assert page.errors == []


HOSTILE = "<!-- <script src=a.js>"


async def test_hostile_names_and_source_lines_in_the_static_report_stay_text(
    tmp_path: Path, chromium: Any
) -> None:
    path = "evil<!--<script>.py"
    repo = make_repo(
        tmp_path / "hostile", {path: f'x = "{HOSTILE}"\ny = "</script><script>alert(1)</script>"\n'}
    )
    report = tmp_path / "hostile.info"
    report.write_text(lcov({path: {1: 1, 2: 0}}, test=HOSTILE + "&amp; \u2028"))
    project = open_project(repo)
    try:
        project.ingest(report)
    finally:
        project.close()
    answer = await asyncio.to_thread(cli, repo, "report", "--single-file", "--html", str(tmp_path / "out"))
    async with chromium(offline=True) as context:
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: errors.append("dialog " + d.message))
        await page.goto(Path(answer["report"]).as_uri())
        await ready(page)
        assert await page.locator("#files-table tbody tr").first.get_attribute("data-path") == path
        await page.locator("#files-table tbody tr button.link").first.click()
        await page.wait_for_selector("#source-path", timeout=WAIT_MS)
        assert HOSTILE in await text(page, "#source pre")
        assert "</script><script>alert(1)</script>" in await text(page, "#source pre")
        named = await page.locator("#tests-table tbody td").first.text_content()
        assert named == HOSTILE + "&amp; \u2028"
        assert (
            await page.locator("script").count() == 2
        )  # the data and the page's own script, nothing injected
        assert errors == []


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[Path, str]]]:
    """The package measured, then changed in code and in a file no snapshot measures (a README)."""
    root = tmp_path_factory.mktemp("outside")
    repo = make_package(root / "repo")
    reports: dict[str, tuple[Path, str]] = {}
    out = measure(repo, "tests/test_cart.py::test_total_sums_prices")
    reports["c0"] = (Path(shutil.copy(out["json"], root / "c0.json")), git(repo, "rev-parse", "HEAD"))
    write(
        repo,
        {
            "shop/extra_long_module_name_for_wrapping.py": "def twice(x):\n    return 2 * x\n",
            "docs/README.md": "# shop\n",
        },
    )
    commit(repo, "extra and a readme")
    out = measure(repo)
    reports["c1"] = (Path(shutil.copy(out["json"], root / "c1.json")), git(repo, "rev-parse", "HEAD"))
    return repo, reports


async def test_the_change_view_says_in_plain_words_what_changed_and_fits_1280_pixels(
    outside: tuple[Path, dict[str, tuple[Path, str]]],
    tmp_path: Path,
    isolated_home: Path,
    tmp_path_factory: pytest.TempPathFactory,
    chromium: Any,
) -> None:
    repo = copy_checkout(outside[0], tmp_path)
    store(repo, outside[1], "c0", "c1")
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        live = Live(running, repo, outside[1])
        async with chromium() as context:
            page = await live.sign_in(context)
            body = await text(page, "#change-body")
            assert "data.outside_scope" not in body and "outside_scope" not in body
            assert "1 changed file lies outside what suite “default” has ever measured" in body
            assert "docs/README.md" in body
            statuses = await page.locator(
                '#change-body table[aria-label="Changed files"] td.status-word'
            ).all_text_contents()
            assert statuses and all("_" not in s for s in statuses)
            assert "added" in statuses
            # a path wraps only at its slashes: each part of the name stays whole on its line
            names = page.locator('#change-body table[aria-label="Changed files"] button.path')
            for i in range(await names.count()):
                assert await names.nth(i).evaluate("b => getComputedStyle(b).overflowWrap") == "normal"
                assert await names.nth(i).locator("wbr").count() == (await names.nth(i).text_content()).count(
                    "/"
                )
            rows = page.locator('#change-body table[aria-label="Changed files"] tbody tr')
            for i in range(await rows.count()):
                assert (await rows.nth(i).bounding_box())["height"] < 60
            assert await page.evaluate("document.documentElement.scrollWidth") <= 1280
            await page.locator("#change").screenshot(
                path=str(shots_dir(tmp_path_factory) / "view-change-1280.png")
            )
            assert page.errors == []
