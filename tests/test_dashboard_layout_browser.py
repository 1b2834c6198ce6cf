"""How the dashboard reads at a glance, looked at in real headless Chromium: assertions on the laid-out page.

The history is the shop package's two measured commits plus a subset run of
the second (``scope=subset``): the timeline must draw lines (never filled
areas), leave the subset run out of them and mark current and baseline; at a
desktop and a phone width nothing may be wider than the viewport.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from coverage_core.config import Settings

from .browser import Live, ready, store, until
from .commandline import cli as command
from .conftest import StoredCheckout
from .daemons import in_process
from .gitrepo import git, make_repo, write
from .realcov import measure
from .systemtools import require
from .test_dashboard_tests import CONTEXTS

# Unbreakable ids: a test function's name and its parameters' id, hundreds of characters without a space.
LONG = "test_" + "unbreakable" * 20
LONG_TESTS = (
    "import pytest\n\nfrom shop.cart import total\n\n\n"
    f"@pytest.mark.parametrize('n', [1, 2, 3], ids=['{'x' * 300}', 'b', 'c'])\n"
    f"def {LONG}(n):\n    assert total([n]) == n\n"
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Every laid-out element of the page that is wider than the viewport or whose content spills out of its box,
# unless a scrolling (or clipping) box holds it: what a person would have to scroll sideways to read.
OVERFLOW = """() => {
  const viewport = document.documentElement.clientWidth;
  const holds = (e) => ["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(e).overflowX);
  const found = [];
  for (const e of document.querySelectorAll("body *")) {
    if (e.closest("[hidden]") || (e.closest("svg") && e.tagName.toLowerCase() !== "svg")) continue;
    const style = getComputedStyle(e);
    if (style.display === "none" || style.display === "inline" || style.position === "absolute") continue;
    let held = false;
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) if (holds(a)) { held = true; break; }
    const name = e.tagName.toLowerCase() + (e.id ? "#" + e.id : "");
    if (!held && e.getBoundingClientRect().right > viewport + 0.5) found.push(name + " is wider than the viewport");
    if (!held && !holds(e) && e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1 && !["table", "svg"].includes(e.tagName.toLowerCase()))
      found.push(name + " spills out of its box (" + e.scrollWidth + " > " + e.clientWidth + ")");
  }
  return { scrollWidth: document.documentElement.scrollWidth, viewport, found };
}"""


async def prepared(session: Live, reports: dict[str, tuple[Path, str]]) -> Live:
    """The stored c0 and c1 plus a subset run of c1 (two of the tests) and a suite "pytest" of real pytest
    node ids with their phase (as pytest-cov names contexts), unbreakable ones among them."""
    repo = session.repo
    path, _ = reports["c0"]  # two of the tests, stored as a subset run of c1
    await session.cli("ingest", str(path), "--commit", reports["c1"][1], "--scope", "subset")
    write(repo, {"tests/conftest.py": CONTEXTS, "tests/test_long.py": LONG_TESTS})
    write(repo, {".coveragerc": "[run]\nbranch = True\nsource = shop\n"})
    report = (await asyncio.to_thread(measure, repo, "tests/test_long.py", "tests/test_cart.py"))["json"]
    git(repo, "checkout", "--", ".coveragerc")
    await session.cli("ingest", str(report), "--suite", "pytest")
    return session


class SharedLive(Live):
    """A ``Live`` whose commands name its daemon's home: the module's daemon outlives each test's own home."""

    def __init__(self, running: Any, repo: Path, reports: dict[str, tuple[Path, str]], home: Path) -> None:
        super().__init__(running, repo, reports)
        self.home = home

    async def cli(self, *args: str) -> dict[str, Any]:
        return await asyncio.to_thread(self._cli, *args)

    def _cli(self, *args: str) -> dict[str, Any]:
        cut = args.index("--") if "--" in args else len(args)  # as browser.cli: our options first
        out = command(
            *args[:cut],
            "--json",
            "--repo",
            str(self.repo),
            *args[cut:],
            cwd=self.repo,
            env={"COVERAGE_MCP_HOME": str(self.home), "COVERAGE_MCP_PORT": "0"},
        )
        assert out.returncode == 0, out.stderr + out.stdout
        return json.loads(out.stdout)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(
    shop_history: tuple[Path, dict[str, tuple[Path, str]]],
    shop_stored: StoredCheckout,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Live]:
    """One daemon and history for the tests that only read them (the page's state is each test's own:
    a fresh browser context per test); a test that changes what the store holds takes ``live``."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("COVERAGE_MCP_HOME", str(home))
        env.setenv("COVERAGE_MCP_PORT", "0")
        settings = Settings.from_env(port=0, dashboard_refresh_s=60)
    repo = shop_stored.fresh()  # c0 and c1, complete
    async with in_process(settings) as running:
        yield await prepared(SharedLive(running, repo, shop_history[1], home), shop_history[1])


@pytest_asyncio.fixture(loop_scope="module")
async def live(
    shop_history: tuple[Path, dict[str, tuple[Path, str]]], isolated_home: Path, tmp_path: Path
) -> AsyncIterator[Live]:
    """The same history in a checkout and daemon of this test's own, for a test that writes to the store."""
    repo = Path(shutil.copytree(shop_history[0], tmp_path / "repo"))
    store(repo, shop_history[1], "c0", "c1")
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=60)) as running:
        yield await prepared(Live(running, repo, shop_history[1]), shop_history[1])


async def test_the_timeline_draws_lines_leaves_the_subset_run_out_and_marks_current_and_baseline(
    shared: Live, chromium: Any
) -> None:
    async with chromium() as context:
        page = await shared.sign_in(context)
        listed = (await shared.cli("snapshots", "--suite", "default"))["data"]["snapshots"]
        subset = [s for s in listed if s["scope"] == "subset"]
        assert len(listed) == 3 and len(subset) == 1
        for name in ("lines", "branches", "functions"):
            line = page.locator(f"#timeline-chart polyline.s-{name}")
            assert await line.evaluate("e => getComputedStyle(e).fill") == "none", name
            # the line joins the two complete snapshots only; the subset run is a hollow point of its own
            assert len((await line.get_attribute("points") or "").split()) == 2, name
            hollow = page.locator(
                f'#timeline-chart circle.s-{name}.subset[data-snapshot="{subset[0]["snapshot_id"]}"]'
            )
            assert await hollow.count() == 1, name
        # current is the newest complete snapshot (a subset never wins as a default), baseline the one before
        complete = [s for s in listed if s["scope"] == "complete"]
        assert await page.locator("#timeline-chart text.m-current").text_content() == "current"
        assert await page.locator("#timeline-chart text.m-baseline").text_content() == "baseline"
        # each snapshot's commit labels the x axis; pointing at a snapshot names it
        labels = await page.locator("#timeline-chart text.xlabel:not(.date)").all_text_contents()
        assert [s["commit"][:7] for s in reversed(complete)] == [labels[0], labels[-1]]
        await page.locator(f'#timeline-chart rect.hover[data-snapshot="{subset[0]["snapshot_id"]}"]').hover()
        readout = await page.locator("#timeline-readout").text_content() or ""
        assert readout.startswith(subset[0]["snapshot_id"]) and "a subset of the tests" in readout
        # the headline sits first, the other counters beside it on the same row
        boxes = [
            await page.locator(f"#metric-{n}").bounding_box() for n in ("headline", "lines", "functions")
        ]
        assert boxes[0] and boxes[1] and boxes[2]
        assert boxes[0]["y"] == boxes[1]["y"] == boxes[2]["y"] and boxes[0]["width"] > boxes[1]["width"]
        assert page.errors == []


async def test_tests_are_grouped_by_function_and_duplicates_read_as_groups_of_names(
    shared: Live, chromium: Any
) -> None:
    async with chromium() as context:
        page = await shared.sign_in(context)
        await page.select_option("#pick-suite", "pytest")
        row = page.locator(f'#tests-table tr[data-function="tests/test_long.py::{LONG}"]')
        await until(page, "document.querySelector('#tests-table details') !== null")
        assert await row.locator("td").nth(1).text_content() == "3"
        await row.locator("summary").click()
        cases = await row.locator("ul.cases code").all_text_contents()
        assert cases == ["[b]|run", "[c]|run", f"[{'x' * 300}]|run"]  # in name order
        # the three cases and test_total_sums_prices cover the same items: one group, named by its functions and
        # their cases, never as JSON
        groups = page.locator("#duplicates > li")
        first = await groups.first.text_content() or ""
        assert first.startswith("4 tests cover the same") and LONG in first and "{" not in first
        assert page.errors == []


@pytest.mark.parametrize("width", [1280, 390])
async def test_nothing_on_the_page_is_wider_than_the_viewport(
    shared: Live, chromium: Any, width: int
) -> None:
    async with chromium() as context:
        page = await shared.sign_in(context)
        await page.set_viewport_size({"width": width, "height": 900})
        await page.reload()
        await ready(page)
        await page.locator('#files-table tr[data-path="shop/cart.py"] button').click()
        await page.wait_for_selector("#source-path")
        await ready(page)
        laid_out = await page.evaluate(OVERFLOW)
        assert laid_out["scrollWidth"] == laid_out["viewport"] == width
        assert laid_out["found"] == []
        # the tests view of unbreakable pytest ids, every test function opened onto its cases
        await page.select_option("#pick-suite", "pytest")
        await until(page, f"document.querySelector('#tests-table [data-function$=\"{LONG}\"]') !== null")
        await page.evaluate(
            "document.querySelectorAll('#tests-table details').forEach((d) => { d.open = true; })"
        )
        laid_out = await page.evaluate(OVERFLOW)
        assert laid_out["scrollWidth"] == laid_out["viewport"] == width
        assert laid_out["found"] == []
        items = page.locator("#tests-table thead th").last  # the last column is whole, never clipped
        box, table = await items.bounding_box(), await page.locator("#tests-table").bounding_box()
        assert box and table and box["x"] + box["width"] <= table["x"] + table["width"] + 0.5


async def rows(page: Any) -> list[str]:
    return await page.eval_on_selector_all("#files-table tbody tr", "rs => rs.map((r) => r.dataset.path)")


async def test_the_file_table_is_filtered_on_the_server_opens_directories_and_indexes_functions(
    shared: Live, chromium: Any
) -> None:
    async with chromium() as context:
        page = await shared.sign_in(context)
        current = await page.eval_on_selector("#pick-current", "s => s.value")  # the newest complete snapshot
        shown = (await shared.cli("show", current))["data"]["files"]
        await page.fill("#files-search", "CART")
        await until(page, "document.querySelectorAll('#files-table tbody tr').length === 1")
        assert await rows(page) == ["shop/cart.py"]
        assert f"of 1 matching ({len(shown)} in all)" in (
            await page.locator("#files-more").text_content() or ""
        )
        await page.fill("#files-search", "")
        await page.check("#files-hide")  # what is left to cover: never a file whose every item is hit
        left = [f["path"] for f in shown if f["lines"]["hit"] < f["lines"]["found"]]
        await until(page, f"document.querySelectorAll('#files-table tbody tr').length === {len(left)}")
        assert sorted(await rows(page)) == sorted(left)
        await page.uncheck("#files-hide")
        # the tree: shop/ with its files' figures summed; opening it puts it in the path above the table
        folder = page.locator('#tree-table tr[data-dir="shop/"]')
        await until(page, "document.querySelector('#tree-table tr[data-dir=\"shop/\"]') !== null")
        cells = await folder.locator("td").all_text_contents()
        hit = sum(f["lines"]["hit"] for f in shown)
        found = sum(f["lines"]["found"] for f in shown)
        assert cells[1] == str(len(shown)) and cells[2].endswith(f"({hit}/{found})")
        await folder.locator("button").click()
        await until(
            page, "document.querySelector('#files-crumbs [aria-current=location]').textContent === 'shop'"
        )
        # the function index over every file, then the never-called ones only
        await page.click("#show-functions")
        await until(page, "document.querySelector('#functions-body .functions-table') !== null")
        names = await page.locator(
            "#functions-body .functions-table tbody td:first-child"
        ).all_text_contents()
        assert {"total", "describe", "shipping"} <= set(names)
        assert page.errors == []


async def test_n_and_p_step_through_the_missed_blocks_of_a_file(shared: Live, chromium: Any) -> None:
    async with chromium() as context:
        page = await shared.sign_in(context)
        await page.locator('#files-table tr[data-path="shop/cart.py"] button').click()
        await page.wait_for_selector("#source-path")
        await until(page, "document.querySelector('#source-block').textContent.endsWith('missed blocks')")
        await page.focus("#source-text")
        await page.keyboard.press("n")
        said = await page.locator("#source-block").text_content() or ""
        assert said.startswith("missed block 1 of ")
        here = await page.eval_on_selector_all("#source-text .ln.here", "ls => ls.map((l) => l.className)")
        assert here and all("uncovered" in c or "partial" in c or "not-code" in c for c in here)
        await page.keyboard.press("p")  # back from the first: the last
        total = said.split(" of ")[1].split(":")[0]
        assert (await page.locator("#source-block").text_content() or "").startswith(
            f"missed block {total} of"
        )


BIG_LINES = 30_000


def big_lcov(hit_at_end: int) -> str:
    """One file of BIG_LINES lines: every line hit but a missed block near the end (29,001-29,010), a partial
    line at 29,500 (one branch never taken) and line 29,990 hit ``hit_at_end`` times."""
    out = ["TN:", "SF:big.c"]
    for n in range(1, BIG_LINES + 1):
        hits = 0 if 29_001 <= n <= 29_010 else hit_at_end if n == 29_990 else 1
        out.append(f"DA:{n},{hits}")
    out += ["BRDA:29500,0,0,1", "BRDA:29500,0,1,0", "end_of_record"]
    return "\n".join(out) + "\n"


@pytest_asyncio.fixture(loop_scope="module")
async def big(tmp_path_factory: pytest.TempPathFactory, isolated_home: Path) -> AsyncIterator[Live]:
    root = tmp_path_factory.mktemp("big")
    repo = make_repo(root / "repo", {"big.c": "".join(f"line {n}\n" for n in range(1, BIG_LINES + 1))})
    (root / "base.lcov").write_text(big_lcov(0))
    (root / "cur.lcov").write_text(big_lcov(1))
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=60)) as running:
        session = Live(running, repo, {})
        await session.cli("ingest", str(root / "base.lcov"))
        await session.cli("ingest", str(root / "cur.lcov"))
        yield session


async def test_a_long_file_is_drawn_in_windows_with_its_missed_branches_and_change_categories(
    big: Live, chromium: Any
) -> None:
    async with chromium() as context:
        page = await big.sign_in(context)
        await page.locator('#files-table tr[data-path="big.c"] button').click()
        await page.wait_for_selector("#source-path")
        drawn = await page.locator("#source pre .ln").count()
        assert 0 < drawn <= 1500  # the lines in view and a margin, never the file
        # the box is as tall as the whole file; scrolled to its end, the last lines are drawn
        await page.eval_on_selector("#source-text", "s => { s.scrollTop = s.scrollHeight; }")
        await until(page, f"document.querySelector('#source pre .ln[data-line=\"{BIG_LINES}\"]') !== null")
        assert await page.locator("#source pre .ln").count() <= 1500
        # the partial line names its missed branch; against the baseline, line 29,990 is covered now (GBC)
        await page.eval_on_selector("#source-text", "s => { s.scrollTop = 29480 * 18; }")  # 18 px a line
        await until(page, "document.querySelector('#source pre .ln[data-line=\"29500\"]') !== null")
        partial = page.locator('#source pre .ln[data-line="29500"]')
        assert (
            await partial.get_attribute("title") == "partial"
            and await partial.get_attribute("data-missed") == "0.1"
        )
        await until(
            page, "document.querySelector('#source pre .ln[data-line=\"29990\"]').dataset.cat === 'GBC'"
        )
        assert await page.locator('#source pre .ln[data-line="29989"]').get_attribute("data-cat") == "CBC"
        # n goes to the one missed block, from the top of the file
        await page.eval_on_selector("#source-text", "s => { s.scrollTop = 0; }")
        await until(page, "document.querySelector('#source-block').textContent === '2 missed blocks'")
        await page.focus("#source-text")
        await page.keyboard.press("n")
        assert await page.locator("#source-block").text_content() == "missed block 1 of 2: lines 29001–29010"
        await until(page, "document.querySelectorAll('#source pre .ln.here').length === 10")
        assert page.errors == []


async def test_a_line_s_number_opens_the_named_tests_that_ran_it(shared: Live, chromium: Any) -> None:
    async with chromium() as context:
        page = await shared.sign_in(context)
        await ready(page)
        renders = await page.evaluate("window.__dashboard.renders")
        await page.select_option("#pick-suite", "pytest")
        # the chosen suite's projection drawn (until then the table is the default suite's, with its file too)
        await until(page, f"window.__dashboard.renders > {renders}")
        await until(page, "document.querySelector('#files-table tr[data-path=\"shop/cart.py\"]') !== null")
        await page.locator('#files-table tr[data-path="shop/cart.py"] button').click()
        await page.wait_for_selector("#source-path")
        await page.locator('#source pre .ln[data-line="5"] .no').click()  # amount = 0: every total() test
        await until(page, "document.querySelector('#line-tests-title') !== null")
        names = await page.locator("#line-tests-list li").all_text_contents()
        assert f"tests/test_long.py::{LONG}[b]|run" in names
        assert "tests/test_cart.py::test_total_sums_prices|run" in names
        title = await page.locator("#line-tests-title").text_content()
        assert title == f"Line 5: {len(names)} named tests ran it"


async def test_a_person_rejects_a_command_and_edits_the_compaction_policy_with_the_session_s_csrf_token(
    live: Live, chromium: Any
) -> None:
    """Seed: "`PATCH /api/projects/{id}`, the dashboard, and the one-shot CLI pass handle later changes." and
    "Ordinary measurements also present retention, relational-versus-compacted detail source, suite/format,
    persisted case arguments, and server-generated execution fingerprints so a full run and a case-specific
    incremental run are not visually conflated." Reject beside Approve, the policy edited on the page, and
    each measurement's retention against it."""
    registered = await live.cli(
        "command",
        "register",
        "--name",
        "refuse me",
        "--artifact",
        "coverage.json:default",
        "--",
        sys.executable,
        "-c",
        "pass",
    )
    command_id = registered["data"]["command"]["id"]
    async with chromium() as context:
        page = await live.sign_in(context)
        row = page.locator(f'#approvals-table tr[data-command="{command_id}"]')
        await row.locator("button.reject").click()
        await row.locator("button.confirm").click()  # Reject asks first, as Approve does
        await until(page, "document.querySelector('#approvals-table') === null")
        shown = (await live.cli("command", "show", command_id))["data"]["command"]
        assert shown["status"] == "rejected" and shown["decisions"][-1]["via"] == "dashboard"
        # the policy form writes project_settings_update; the stored policy is what the CLI reads back
        renders = await page.evaluate("window.__dashboard.renders")
        await page.fill('#settings-form input[name="compaction_after_days"]', "7")
        await page.click("#settings-form button[type=submit]")
        # saved, and the page drawn again from the stored policy
        await until(page, f"window.__dashboard.renders > {renders}")
        await until(page, "document.querySelector('#settings-status').textContent === 'Saved.'")
        settings = (await live.cli("settings"))["data"]["settings"]
        assert settings["compaction_after_days"] == 7
        # a value the setting does not admit is refused with the setting's own words, and nothing changes
        await until(
            page,
            "document.querySelector('#settings-form input[name=\"compaction_after_days\"]').value === '7'",
        )
        await page.eval_on_selector(
            '#settings-form input[name="compaction_after_days"]', "i => { i.min = ''; i.value = '0'; }"
        )
        await page.click("#settings-form button[type=submit]")
        await until(page, "document.querySelector('#settings-status').textContent.startsWith('Not saved')")
        assert (
            "compaction_after_days must be a whole number"
            in await page.locator("#settings-status").text_content()
        )
        assert (await live.cli("settings"))["data"]["settings"]["compaction_after_days"] == 7
        # every measurement's retention against that policy: the newest of the suite is protected
        await page.click("#retention summary")
        newest = page.locator("#retention-table tbody tr").first
        assert await newest.get_attribute("data-state") == "protected"
        assert "the newest snapshot of its suite" in (await newest.text_content() or "")
        assert page.errors == [] or all("400" in e for e in page.errors)  # the refused save, and only it


async def test_the_incremental_review_of_a_subset_run_shows_its_groups_as_the_cli_does(
    shared: Live, chromium: Any
) -> None:
    listed = (await shared.cli("snapshots", "--suite", "default"))["data"]["snapshots"]
    subset = next(s for s in listed if s["scope"] == "subset")["snapshot_id"]
    complete = next(s for s in listed if s["scope"] == "complete")["snapshot_id"]  # the newest complete one
    review = (await shared.cli("review", "incremental", "--snapshot", subset, "--baseline", complete))["data"]
    async with chromium() as context:
        page = await shared.sign_in(context)
        for picker, chosen in (("#pick-current", subset), ("#pick-baseline", complete)):
            renders = await page.evaluate("window.__dashboard.renders")
            await page.select_option(picker, chosen)
            await until(page, f"window.__dashboard.renders > {renders}")  # drawn for that choice
        await page.click("#incremental summary")
        await until(page, "document.querySelector('#incremental-groups') !== null")
        for group in ("kept", "gained", "lost", "not_observed"):
            cell = page.locator(f'#incremental-groups tr[data-group="{group}"] td.num')
            assert await cell.text_content() == str(review["categories"][group]), group
        assert review["categories"]["not_observed"] > 0  # the subset did not run the rest: never "lost"
        assert page.errors == []


async def test_axe_finds_no_serious_or_critical_violation_in_either_colour_scheme(
    shared: Live, chromium: Any
) -> None:
    axe = Path(require("axe-core/axe.min.js"))  # scripts/npm-packages: skips, or fails under CI=true
    for scheme in ("light", "dark"):
        # a context of its own that bypasses the page's CSP (axe is injected as a script); the CSP has its own tests
        async with chromium(bypass_csp=True, color_scheme=scheme) as context:
            page = await shared.sign_in(context)
            await page.locator('#files-table tr[data-path="shop/cart.py"] button').click()
            await page.wait_for_selector("#source-path")
            await page.add_script_tag(content=axe.read_text())
            found = await page.evaluate(
                "async () => (await axe.run(document)).violations"
                ".filter((v) => v.impact === 'serious' || v.impact === 'critical')"
                ".map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', '))"
            )
            assert found == [], scheme
