"""The dashboard's composite coverage view, in headless Chromium, on a real multi-language product.

The product of ``tests/compositefixture.py`` (C in two variants, Python, JavaScript, WGSL) is built and
measured once; two composite snapshots are stored: one without the JavaScript evidence (so an entry
blocks), then the complete one. The page must show what ``coverage-mcp composite show`` shows.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from coverage_core.config import Settings

from . import commandline
from .browser import Live, chromium, shots_dir, text, until
from .compositefixture import make_product, measure, specs
from .daemons import in_process


def composite_cli(repo: Path, *args: str) -> dict[str, Any]:
    out = commandline.cli("composite", *args, "--json", repo=repo, process=True, timeout=300)
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def product(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    root = make_product(tmp_path_factory.mktemp("dashboard-composite") / "product")
    return root, measure(root)


@pytest.fixture
async def live(product: tuple[Path, dict[str, Path]], isolated_home: Path) -> AsyncIterator[Live]:
    root, reports = product
    ids = []
    for without in ("js", None):
        built = composite_cli(
            root, "build", "--inventory", "coverage-inventory.json", *specs(reports, without=without)
        )
        ids.append(built["data"]["composite"]["composite_snapshot_id"])
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        live = Live(running, root, {})
        live.composites = ids
        yield live


async def test_the_composite_view_shows_the_percentage_components_and_blocking_reasons_of_the_cli(
    live: Live, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Seed: "It accepts independent ordinary and composite current and baseline IDs, and presents one
    exact production-region percentage plus Rust/WGSL, Python, and JavaScript component summaries,
    blocking reasons, and remediation buckets." """
    incomplete, complete = live.composites
    shown = await asyncio.to_thread(composite_cli, live.repo, "show", complete)
    before = await asyncio.to_thread(composite_cli, live.repo, "show", incomplete)
    comp, base = shown["data"]["composite"], before["data"]["composite"]
    async with chromium() as context:
        page = await live.sign_in(context)
        headline = page.locator("#composite-headline")
        combined = comp["totals"]["combined"]
        assert await text(page, "#composite-headline .percent") == f"{comp['percent']:.2f}%"
        assert (await text(page, "#composite-headline .counts")).startswith(
            f"{combined['hit']} of {combined['found']} covered · {comp['status']}"
        )
        # The earlier composite withholds its own percentage (the JavaScript entries' denominator is unknown):
        # the two count different members, so no delta is honest and none is shown; the page says why.
        shown_delta = page.locator("#composite-headline .delta")
        assert await shown_delta.get_attribute("data-withheld") == "members_differ"
        said = await text(page, "#composite-headline .delta")
        assert said.startswith("delta withheld: ") and "baseline has no denominator for js" in said
        assert "points" not in said
        answer = await page.evaluate(
            "(q) => fetch('/api/dashboard?' + q).then((r) => r.json())",
            f"composite={complete}&composite_baseline={incomplete}",
        )
        section = answer["data"]["composite"]
        assert section["delta"] is None and section["delta_withheld"]["reason"] == "members_differ"
        # The same members on both sides (the complete composite against itself): a delta, none withheld.
        same = await page.evaluate(
            "(q) => fetch('/api/dashboard?' + q).then((r) => r.json())",
            f"composite={complete}&composite_baseline={complete}",
        )
        assert same["data"]["composite"]["delta"] == 0.0
        assert same["data"]["composite"]["delta_withheld"] is None
        for component in comp["components"]:
            row = page.locator(f'#composite-components tr[data-component="{component["id"]}"] td')
            cells = await row.all_text_contents()
            c = component["totals"]["combined"]
            assert cells[4] == f"{100 * c['hit'] / c['found']:.2f}% ({c['hit']}/{c['found']})"
        assert await headline.count() == 1
        await page.locator("#composite").screenshot(
            path=str(shots_dir(tmp_path_factory) / "view-composite-full.png")
        )
        # the earlier composite, chosen on its own: its blocking reason is the missing JavaScript evidence
        await page.select_option("#pick-composite", incomplete)
        await until(page, "document.querySelector('#composite-blocking') !== null")
        blocking = await text(page, "#composite-blocking")
        assert base["blocking"][0]["component"] == "js" and "js" in blocking and "missing" in blocking
        # The earlier composite withholds its total (an entry's denominator is unknown): the page shows none.
        assert base["percent"] is None and base["total_withheld"]["reason"] == "denominator_unknown"
        assert await text(page, "#composite-headline .percent") == "—"
        assert f"composite={incomplete}" in page.url
        assert page.errors == []
        await page.locator("#composite").screenshot(
            path=str(shots_dir(tmp_path_factory) / "view-composite-blocking.png")
        )
