"""The dashboard in a real browser: headless Chromium on a real daemon, a real measured repository and the CLI.

Each test signs in as a person does (``coverage-mcp dashboard`` writes the
one-time link into a private file; the browser opens that file), then checks
what the page shows against what the CLI prints for the same snapshots.
Screenshots of every view are saved under the run's pytest temp folder
(``dashboard-screenshots``): artifacts, never committed.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from coverage_core.config import Settings

from .browser import WAIT_MS, Live, ready, shots_dir, store, text, until
from .categories_oracle import oracle
from .conftest import StoredCheckout
from .daemons import in_process
from .realcov import copy_checkout

# One Chromium for the file (conftest.py `chromium`): its tests and fixtures share the module's event loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")

VIEWS = ("overview", "timeline", "change", "files", "tests", "runs", "approvals", "compaction", "composite")


@pytest_asyncio.fixture(loop_scope="module")
async def live(
    shop_history: tuple[Path, dict[str, tuple[Path, str]]], shop_stored: StoredCheckout, isolated_home: Path
) -> AsyncIterator[Live]:
    repo = shop_stored.fresh()  # c0 and c1 stored once for the module, a pristine copy per test
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        yield Live(running, repo, shop_history[1])


@pytest_asyncio.fixture(loop_scope="module")
async def live_c0(
    shop_history: tuple[Path, dict[str, tuple[Path, str]]], tmp_path: Path, isolated_home: Path
) -> AsyncIterator[Live]:
    repo = copy_checkout(shop_history[0], tmp_path)
    store(repo, shop_history[1], "c0")
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        yield Live(running, repo, shop_history[1])


def percent(hit: int, found: int) -> str:
    return f"{100 * hit / found:.2f}%"


async def assert_metrics_match(page: Any, totals: dict[str, dict[str, int]]) -> None:
    for name in ("lines", "branches", "functions"):
        counter = totals[name]
        assert await text(page, f"#metric-{name} .percent") == percent(counter["hit"], counter["found"]), name
        assert (
            await text(page, f"#metric-{name} .counts") == f"{counter['hit']} of {counter['found']} covered"
        )


async def test_the_page_shows_the_numbers_the_cli_shows_for_the_same_snapshots(
    live: Live, tmp_path_factory: pytest.TempPathFactory, chromium: Any
) -> None:
    async with chromium() as context:
        page = await live.sign_in(context)
        listed = (await live.cli("snapshots"))["data"]["snapshots"]
        current, baseline = listed[0], listed[1]
        await assert_metrics_match(page, current["totals"])
        delta = (
            100 * current["totals"]["lines"]["hit"] / current["totals"]["lines"]["found"]
            - 100 * baseline["totals"]["lines"]["hit"] / baseline["totals"]["lines"]["found"]
        )
        sign = "+" if round(delta, 2) > 0 else "−" if round(delta, 2) < 0 else "±"
        assert (await text(page, "#metric-lines .delta")).startswith(f"{sign}{abs(delta):.2f} points")
        # the file table is `show`'s listing
        shown = (await live.cli("show", current["snapshot_id"]))["data"]["files"]
        rows = page.locator("#files-table tbody tr")
        assert await rows.count() == len(shown)
        for f in shown:
            row = page.locator(f'#files-table tbody tr[data-path="{f["path"]}"]')
            cells = await row.locator("td").all_text_contents()
            lines = f["lines"]
            assert cells[1] == (
                f"{percent(lines['hit'], lines['found'])} ({lines['hit']}/{lines['found']})"
                if lines["found"]
                else "—"
            )
            assert cells[2] == str(lines["found"] - lines["hit"])
        # the change review is `review change` against the same baseline
        change = (await live.cli("review", "change", "--baseline", baseline["snapshot_id"]))["data"]
        for code, count in change["categories"].items():
            assert await text(page, f"#category-{code} td:nth-child(3)") == str(count), code
        patch = change["patch"]
        assert await text(page, "#patch-coverage") == (
            percent(patch["hit"], patch["found"]) if patch["found"] else "no new lines"
        )
        # named tests: the count `review tests` reports
        tests = (await live.cli("review", "tests"))["data"]
        assert (await text(page, "#tests-summary")).startswith(f"{tests['named_tests']} named tests")
        # the timeline draws one point per snapshot and counter
        assert await page.locator("#timeline-chart circle.s-lines").count() == len(listed)
        assert page.errors == []
        shots = shots_dir(tmp_path_factory)
        await page.screenshot(path=str(shots / "dashboard-full.png"), full_page=True)
        await page.screenshot(path=str(shots / "dashboard-top.png"))  # 1280 x 900, as docs/dashboard.png
        for view in VIEWS:
            await page.locator(f"#{view}").screenshot(path=str(shots / f"view-{view}.png"))


async def test_choosing_another_baseline_changes_the_comparison_and_none_removes_it(
    live: Live, chromium: Any
) -> None:
    async with chromium() as context:
        page = await live.sign_in(context)
        await page.select_option("#pick-baseline", "none")
        await until(page, "document.querySelector('#metric-lines .delta').textContent === 'no baseline'")
        assert "Pick a baseline" in await text(page, "#change-body")
        assert "baseline=none" in page.url


async def test_a_file_drills_down_to_its_annotated_source(
    live: Live, tmp_path_factory: pytest.TempPathFactory, chromium: Any
) -> None:
    async with chromium() as context:
        page = await live.sign_in(context)
        await page.locator('#files-table tr[data-path="shop/cart.py"] button').click()
        await page.wait_for_selector("#source-path", timeout=WAIT_MS)
        current = (await live.cli("snapshots"))["data"]["snapshots"][0]["snapshot_id"]
        detail = (
            await live.cli(
                "review",
                "source",
                "--snapshot",
                current,
                "--file",
                "shop/cart.py",
                "--lines",
                "1-200",
                "--representation",
                "review",
                "--max-words",
                "50000",
            )
        )["data"]
        expected = [line for r in detail["ranges"] for line in r["lines"]]
        shown = page.locator("#source pre .ln")
        assert await shown.count() == len(expected)
        for i in (0, len(expected) // 2, len(expected) - 1):
            line = expected[i]
            assert await shown.nth(i).get_attribute("title") == line["status"]
            assert (await shown.nth(i).text_content()) == f"{line['line']}{line['text']}"
        await page.locator("#source").screenshot(path=str(shots_dir(tmp_path_factory) / "view-source.png"))


async def test_the_source_view_marks_each_code_line_with_its_change_category_partial_lines_as_run(
    live: Live, chromium: Any
) -> None:
    """lcov's rule, against categories derived from coverage.py's own JSON of both runs: an unchanged
    partial line ran, so it is CBC (not UBC); a blank line inside a change range has no category."""
    want, partial = oracle(live.reports, "shop/cart.py")
    async with chromium() as context:
        page = await live.sign_in(context)
        await page.locator('#files-table tr[data-path="shop/cart.py"] button').click()
        await until(page, "document.querySelector('#source pre .ln[data-cat]') !== null")
        shown = await page.eval_on_selector_all(
            "#source pre .ln", "lines => lines.map((l) => [Number(l.dataset.line), l.dataset.cat || null])"
        )
        assert {n: c for n, c in shown if c} == want
        assert partial and all(want[n] in ("CBC", "GBC", "GIC", "GNC") for n in partial)
        assert any(want[n] == "CBC" for n in partial)
        assert page.errors == []


async def test_the_file_table_sorts_from_the_keyboard(live: Live, chromium: Any) -> None:
    async with chromium() as context:
        page = await live.sign_in(context)
        # the server's first answer redraws the table (and its buttons): focus a button of that one
        await until(page, "document.getElementById('files-more').textContent.startsWith('Showing')")
        missed = page.locator("#files-table th button", has_text="Missed lines")
        await missed.focus()
        await page.keyboard.press("Enter")  # the first press: most missed first
        assert await page.locator("#files-table th[aria-sort=descending]").count() == 1
        values = [
            int(v) for v in await page.locator("#files-table tbody td:nth-child(3)").all_text_contents()
        ]
        assert values == sorted(values, reverse=True) and values[0] > 0
        await page.keyboard.press("Enter")  # again: fewest first
        assert await page.locator("#files-table th[aria-sort=ascending]").count() == 1
        values = [
            int(v) for v in await page.locator("#files-table tbody td:nth-child(3)").all_text_contents()
        ]
        assert values == sorted(values)


async def test_a_new_ingest_reaches_the_open_page_through_the_event_stream_without_a_reload(
    live_c0: Live,
    chromium: Any,
) -> None:
    async with chromium() as context:
        page = await live_c0.sign_in(context)
        before = (await live_c0.cli("snapshots"))["data"]["snapshots"]
        assert len(before) == 1
        await assert_metrics_match(page, before[0]["totals"])
        await page.evaluate("window.__notReloaded = true")
        await until(page, "window.__dashboard.streamsOpened >= 1")
        revision = await page.evaluate("document.body.dataset.revision")
        await live_c0.ingest("c1")
        after = (await live_c0.cli("snapshots"))["data"]["snapshots"][0]
        await until(
            page,
            f"document.body.dataset.revision !== {json.dumps(revision)} && window.__dashboard.events >= 1",
        )
        await ready(page)
        assert await page.evaluate("window.__notReloaded === true")  # the same document, updated in place
        await assert_metrics_match(page, after["totals"])
        assert "no baseline" not in await text(page, "#metric-lines .delta")
        # nothing polled: one load at the start, one per refresh event
        stats = await page.evaluate("window.__dashboard")
        assert stats["loads"] == 1 + stats["events"]


async def wait_server(live: Live, predicate: Any) -> None:
    for _ in range(400):  # a bounded wait, up to ~40 s
        if predicate(live.running.daemon.streams):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the server never saw it: {live.running.daemon.streams}")


async def test_the_stream_is_open_only_while_the_tab_is_visible_and_the_server_sees_it_close(
    live: Live,
    chromium: Any,
) -> None:
    """Seed: "The browser keeps the stream and automatic refresh active only while the tab is
    foregrounded; it never polls individual REST projections or reruns tests." """
    async with chromium() as context:
        page = await live.sign_in(context)
        await wait_server(live, lambda s: s.open == 1)
        # headless Chromium never hides a tab by itself: say it is hidden, as the browser would
        await page.evaluate("""() => {
            Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'hidden'});
            document.dispatchEvent(new Event('visibilitychange'));
        }""")
        await wait_server(live, lambda s: s.open == 0 and s.closed >= 1)
        loads = await page.evaluate("window.__dashboard.loads")
        await asyncio.sleep(2.5)  # over two revision checks: a hidden page asks nothing
        assert live.running.daemon.streams.open == 0
        assert await page.evaluate("window.__dashboard.loads") == loads
        await page.evaluate("""() => {
            Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'visible'});
            document.dispatchEvent(new Event('visibilitychange'));
        }""")
        await wait_server(live, lambda s: s.open == 1)


async def test_a_person_approves_a_pending_command_on_the_page_and_its_run_and_log_appear(
    live_c0: Live, tmp_path_factory: pytest.TempPathFactory, chromium: Any
) -> None:
    report, _ = live_c0.reports["c1"]
    script = (
        f"import shutil; print('hello from the managed run'); shutil.copy({str(report)!r}, 'coverage.json')"
    )
    registered = await live_c0.cli(
        "command",
        "register",
        "--name",
        "copy the report",
        "--artifact",
        "coverage.json:default",
        "--",
        sys.executable,
        "-c",
        script,
    )
    command_id = registered["data"]["command"]["id"]
    assert registered["data"]["command"]["status"] == "pending"
    async with chromium() as context:
        page = await live_c0.sign_in(context)
        row = page.locator(f'#approvals-table tr[data-command="{command_id}"]')
        assert "copy the report" in (await row.text_content() or "")
        await page.locator("#approvals").screenshot(
            path=str(shots_dir(tmp_path_factory) / "view-approvals-pending.png")
        )
        await row.locator("button.approve").click()
        await row.locator("button.confirm").click()  # Approve asks first
        await until(page, "document.querySelector('#approvals-table') === null")
        shown = (await live_c0.cli("command", "show", command_id))["data"]["command"]
        assert shown["status"] == "approved"
        assert shown["decisions"][-1]["via"] == "dashboard" and shown["decisions"][-1]["by"]
        assert "No command waits" in await text(page, "#approvals-body")
        # the approved command runs (CLI, through the daemon); the page follows without a reload
        ran = await live_c0.cli("run", command_id)
        run_id = ran["data"]["run"]["id"]
        # the page may show it queued or running first; the stream brings its end
        cell = f"document.querySelector('#runs-table tr[data-run=\"{run_id}\"] td:nth-child(2)')"
        await until(page, f"{cell} !== null && {cell}.textContent === 'succeeded'")
        cells = await page.locator(f'#runs-table tr[data-run="{run_id}"] td').all_text_contents()
        assert cells[1] == "succeeded" and cells[6] == "0"
        assert cells[2] == "copy the report"  # the command's name, never only its id
        await page.locator(f'#runs-table tr[data-run="{run_id}"] button').click()
        await until(page, "document.querySelector('#run-log-text') !== null")
        assert "hello from the managed run" in await text(page, "#run-log-text")
        assert "null" not in (await text(page, "#run-log"))
        # its report became the current snapshot, delta against the one before
        after = (await live_c0.cli("snapshots"))["data"]["snapshots"][0]
        await until(
            page, f"document.querySelector('#pick-current').value === {json.dumps(after['snapshot_id'])}"
        )
        await assert_metrics_match(page, after["totals"])
        # the measurement says which run made it, never shown like an import
        where = await text(page, "#where")
        assert (
            f"current: run {run_id} of {command_id} (full)" in where
            and "baseline: imported coveragepy" in where
        )
        await page.locator("#runs").screenshot(path=str(shots_dir(tmp_path_factory) / "view-runs-log.png"))
        assert page.errors == []


async def test_a_sign_in_link_works_once_and_a_browser_without_the_session_gets_nothing(
    live: Live, chromium: Any
) -> None:
    answer = await live.cli("dashboard", "--no-open")
    opener = Path(answer["open_file"])
    assert oct(opener.stat().st_mode & 0o777) == "0o600"
    async with chromium() as first:
        page = await first.new_page()
        response = await page.goto(opener.as_uri())
        await page.wait_for_url(live.running.url + "/?project=*", timeout=WAIT_MS)
        await ready(page)
        main = await page.request.get(live.running.url + "/")
        policy = main.headers["content-security-policy"]
        assert (
            "script-src 'self'" in policy
            and "'unsafe-inline'" not in policy
            and "default-src 'none'" in policy
        )
        cookies = await first.cookies()
        session = [c for c in cookies if c["name"] == "coverage_mcp_session"]
        assert session and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict"
        assert response is not None
    async with chromium() as second:
        page = await second.new_page()
        await page.goto(opener.as_uri())  # the same link again, in another browser
        await page.wait_for_url(live.running.url + "/session?ticket=*", timeout=WAIT_MS)
        body = json.loads(await page.locator("body").text_content() or "{}")
        assert body["error"]["code"] == "forbidden" and "not valid" in body["error"]["message"]
        for path in ("/", "/dashboard.js", "/api/dashboard", "/api/dashboard/events"):
            got = await page.request.get(live.running.url + path)
            assert got.status == 403, path
            assert "coverage" not in (await got.text()).lower().replace("coverage-mcp dashboard", "")


async def test_the_static_report_opens_from_disk_with_the_network_off(
    live: Live, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, chromium: Any
) -> None:
    out = tmp_path / "report"
    answer = await live.cli("report", "--single-file", "--html", str(out))
    index = Path(answer["report"])
    assert index == out / "index.html"
    listed = (await live.cli("snapshots"))["data"]["snapshots"]
    # a copy far from the daemon: the page must not need it
    copied = tmp_path / "elsewhere" / "index.html"
    copied.parent.mkdir()
    shutil.copy(index, copied)
    async with chromium(offline=True) as context:
        page = await context.new_page()
        requested: list[str] = []
        page.on("request", lambda r: requested.append(r.url))
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        await page.goto(copied.as_uri())
        await ready(page)
        await assert_metrics_match(page, listed[0]["totals"])
        assert requested == [copied.as_uri()]
        assert errors == []
        assert await page.locator('meta[http-equiv="Content-Security-Policy"]').count() == 1
        # the drill-down works from the embedded sources
        await page.locator('#files-table tr[data-path="shop/cart.py"] button').click()
        await page.wait_for_selector("#source-path", timeout=WAIT_MS)
        assert await page.locator("#source pre .ln.uncovered").count() > 0
        assert requested == [copied.as_uri()]
        await page.screenshot(path=str(shots_dir(tmp_path_factory) / "static-report.png"), full_page=True)


LAYOUT_SHIFTS = """() => new Promise((resolve) => {
    new PerformanceObserver((list) => resolve(list.getEntries().filter((e) => !e.hadRecentInput)
        .map((e) => ({value: e.value, sources: (e.sources || []).map((s) => s.node ? (s.node.id || s.node.className || s.node.nodeName) : "?")}))))
        .observe({type: "layout-shift", buffered: true});
    setTimeout(() => resolve([]), 1000);
})"""


async def test_the_page_does_not_shift_while_its_data_loads_and_fits_1280_pixels(
    live: Live, chromium: Any
) -> None:
    async with chromium() as context:
        page = await live.sign_in(context)
        shifts = await page.evaluate(LAYOUT_SHIFTS)
        assert sum(s["value"] for s in shifts) < 0.01, shifts
        assert await page.evaluate("document.documentElement.scrollWidth") <= 1280
        # a laptop's narrower window still fits without sideways scrolling
        await page.set_viewport_size({"width": 1024, "height": 700})
        assert await page.evaluate("document.documentElement.scrollWidth") <= 1024


async def test_the_page_follows_the_system_s_dark_and_light_preference(
    live: Live, tmp_path_factory: pytest.TempPathFactory, chromium: Any
) -> None:
    backgrounds = {}
    for scheme in ("light", "dark"):
        async with chromium(color_scheme=scheme) as context:
            page = await live.sign_in(context)
            backgrounds[scheme] = await page.evaluate("getComputedStyle(document.body).backgroundColor")
            await page.screenshot(path=str(shots_dir(tmp_path_factory) / f"dashboard-{scheme}.png"))
    light, dark = ([int(v) for v in re.findall(r"\d+", backgrounds[k])[:3]] for k in ("light", "dark"))
    assert sum(light) > 600 and sum(dark) < 150, backgrounds


async def test_a_timeline_point_picked_from_the_keyboard_becomes_the_current_snapshot(
    live: Live, chromium: Any
) -> None:
    async with chromium() as context:
        page = await live.sign_in(context)
        listed = (await live.cli("snapshots"))["data"]["snapshots"]
        oldest = listed[-1]
        point = page.locator("#timeline-chart circle.s-lines").first  # oldest first, left to right
        await point.focus()
        await page.keyboard.press("Enter")
        await until(
            page, f"document.querySelector('#pick-current').value === {json.dumps(oldest['snapshot_id'])}"
        )
        await until(page, "document.body.dataset.ready === 'true' && window.__dashboard.renders >= 2")
        await assert_metrics_match(page, oldest["totals"])
        assert f"current={oldest['snapshot_id']}" in page.url


async def test_the_compaction_view_shows_the_inventory_the_cli_shows(
    live: Live, tmp_path_factory: pytest.TempPathFactory, chromium: Any
) -> None:
    done = await live.cli("compact", "--older-than", "0")
    inventory = (await live.cli("compact", "--status"))["data"]
    assert inventory["compacted"] == 1, done  # the older snapshot; the newest of the suite is protected
    async with chromium() as context:
        page = await live.sign_in(context)
        rows = page.locator("#compaction-table tbody tr")
        assert await rows.count() == 4
        counts = [(await rows.nth(i).locator("td").all_text_contents())[1] for i in range(4)]
        assert counts == [str(inventory[k]) for k in ("relational", "compacted", "eligible", "protected")]
        assert "Last pass" in await text(page, "#compaction-body")
        where = await text(page, "#where")
        assert "baseline: imported coveragepy, detail compacted" in where
        assert (
            "current: imported coveragepy ·" in where + " ·"
            and "current: imported coveragepy, detail" not in where
        )
        # the compacted baseline still gives the same change review
        assert await text(page, "#patch-coverage") == "0.00%"
        await page.locator("#compaction").screenshot(
            path=str(shots_dir(tmp_path_factory) / "view-compaction-full.png")
        )
        assert page.errors == []
