"""``coverage-mcp report --html DIR``: a site of an index and one page per file, offline, within its size.

A real coverage.py history of the shop package (``shop_stored``); the site is
written by the console script and read back as files, and opened from disk in
headless Chromium with the network off.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from coverage_daemon.static_report import FILES_DIR, PAGE_COST, SIZE_FACTOR

from .browser import cli, ready
from .categories_oracle import oracle
from .conftest import StoredCheckout


@pytest.fixture
def repo(shop_stored: StoredCheckout) -> Path:
    return shop_stored.fresh()


def embedded(index: Path) -> dict[str, Any]:
    raw = index.read_text().split('<script type="application/json" id="dashboard-data">', 1)[1]
    return json.loads(raw.split("</script>", 1)[0])


def test_the_site_has_an_index_and_one_page_per_file_within_its_size_and_policy(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    out = tmp_path / "site"
    answer = cli(repo, "report", "--html", str(out), process=False)
    index = Path(answer["report"])
    data = embedded(index)
    shown = cli(repo, "show", answer["current"], process=False)["data"]["files"]
    # every file of the snapshot, each with a page of its own (never named after its path)
    assert sorted(data["pages"]) == sorted(f["path"] for f in shown)
    pages = sorted((out / FILES_DIR).iterdir())
    assert len(pages) == len(shown) and all(re.fullmatch(r"\d{5}\.html", p.name) for p in pages)
    assert (
        data["sources"] == {} and data.get("run_logs") == {}
    )  # no source in the index, no run log by default
    cart = (out / data["pages"]["shop/cart.py"]).read_text()
    assert (
        "connect-src 'none'" in cart
        and "'unsafe-inline'" not in cart
        and "//" not in cart.replace("<!doctype", "")
    )
    # its annotated source: every line of the file, in runs of one status; how many named tests ran it
    text = (repo / "shop/cart.py").read_text()
    drawn = re.sub(r"<[^>]+>", "", cart.split('<pre class="t">', 1)[1].split("</pre>", 1)[0])
    assert html.unescape(drawn) == text  # hostile text stays text: escaped, never markup
    assert '<span class="u">' in cart and '<span class="c">' in cart
    assert re.search(r" · \d+ named tests? ran it</p>", cart)
    # the budget: at most SIZE_FACTOR x the sources plus PAGE_COST a page (the index is one of them)
    source_bytes = sum(len((repo / f["path"]).read_bytes()) for f in shown)
    site_bytes = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert site_bytes <= SIZE_FACTOR * source_bytes + PAGE_COST * len(pages) + index.stat().st_size
    # the single file stays, as --single-file
    single = cli(repo, "report", "--single-file", "--html", str(tmp_path / "one"), process=False)
    assert "shop/cart.py" in embedded(Path(single["report"]))["sources"]
    assert not (tmp_path / "one" / FILES_DIR).exists()


@pytest.mark.asyncio(loop_scope="module")
async def test_the_site_opens_from_disk_offline_and_its_file_pages_number_their_lines(
    repo: Path, tmp_path: Path, isolated_home: Path, chromium: Any
) -> None:
    out = tmp_path / "site"
    answer = cli(repo, "report", "--html", str(out), process=False)
    async with chromium(offline=True) as context:
        page = await context.new_page()
        asked: list[str] = []
        errors: list[str] = []
        page.on("request", lambda r: asked.append(r.url))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        await page.goto(Path(answer["report"]).as_uri())
        await ready(page)
        await page.locator('#files-table tr[data-path="shop/cart.py"] a').click()
        await page.wait_for_selector("pre.g")
        lines = (repo / "shop/cart.py").read_text().count("\n")
        numbers = await page.eval_on_selector("pre.g", "g => g.textContent.split('\\n')")
        assert numbers == [str(n) for n in range(1, lines + 1)]
        assert await page.locator("h1").text_content() == "shop/cart.py"
        assert errors == [] and all(url.startswith("file://") or url.startswith("data:") for url in asked)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_file_page_names_missed_branches_and_each_lines_change_category_against_the_baseline(
    repo: Path,
    tmp_path: Path,
    isolated_home: Path,
    chromium: Any,
    shop_history: tuple[Path, dict[str, tuple[Path, str]]],
) -> None:
    out = tmp_path / "site"
    answer = cli(repo, "report", "--html", str(out), process=False)
    data = embedded(Path(answer["report"]))
    assert answer["baseline"] and answer["baseline"] != answer["current"]
    async with chromium(offline=True) as context:
        for path in ("shop/cart.py", "shop/extra.py"):
            want, partial = oracle(shop_history[1], path)
            assert partial or path == "shop/extra.py"
            page = await context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            await page.goto((out / data["pages"][path]).as_uri())
            await page.wait_for_function("document.querySelector('pre.k').textContent.length > 0")
            text = (repo / path).read_text()
            count = text.count("\n")
            gutter = await page.eval_on_selector("pre.k", "k => k.textContent.split('\\n')")
            assert len(gutter) == count
            assert {n: c for n, c in enumerate(gutter, 1) if c} == want  # every code line, nothing else
            # each partial line is its own element, titled with the branches missed; no other line is
            titled = await page.eval_on_selector_all(
                "pre.t span[title]",
                "spans => spans.map((s) => [s.textContent, s.getAttribute('title'), s.className])",
            )
            lines = text.split("\n")
            assert sorted(lines.index(t[:-1]) + 1 for t, _, _ in titled) == sorted(partial)
            assert all(c == "p" and title.startswith("missed branches: ") for _, title, c in titled)
            # the three columns are as tall as the text's lines: no line doubled, none lost
            heights = await page.evaluate(
                "['pre.k', 'pre.g', 'pre.t'].map((s) => document.querySelector(s).getBoundingClientRect().height)"
            )
            assert heights == [count * 18] * 3
            # n steps to the first missed block (uncovered or partial lines), p back to the last
            blocks = sorted(n for n, c in want.items() if c in ("UNC", "UBC", "UIC", "LBC")) + sorted(partial)
            if blocks:
                await page.keyboard.press("n")
                said = await page.locator("#at").text_content() or ""
                assert said.startswith("missed block 1 of ") and f"lines {min(blocks)}" in said
                assert await page.locator("pre.t span.h").count() >= 1
            # nothing wider than a phone's viewport: the text scrolls inside its own box
            await page.set_viewport_size({"width": 390, "height": 800})
            assert await page.evaluate("document.documentElement.scrollWidth") == 390
            assert errors == []
            await page.close()
    # the single file carries the same categories for the files it embeds
    single = cli(repo, "report", "--single-file", "--html", str(tmp_path / "one"), process=False)
    cart = embedded(Path(single["report"]))["sources"]["shop/cart.py"]
    want, partial = oracle(shop_history[1], "shop/cart.py")
    ranges = cart["categories"]["ranges"]
    assert cart["categories"]["available"]
    ranged = {n: c for c, start, end in ranges for n in range(start, end + 1) if n in want}  # code lines
    assert ranged == {n: c for n, c in want.items() if c not in ("CBC", "UBC")}
    assert {line["line"] for line in cart["lines"] if line.get("missed")} == partial
    # and its page draws them as the live view does, every code line's category and nothing else's
    async with chromium(offline=True) as context:
        page = await context.new_page()
        await page.goto(Path(single["report"]).as_uri())
        await ready(page)
        await page.locator('#files-table tr[data-path="shop/cart.py"] button').click()
        await page.wait_for_selector("#source pre .ln[data-cat]")
        shown = await page.eval_on_selector_all(
            "#source pre .ln", "lines => lines.map((l) => [Number(l.dataset.line), l.dataset.cat || null])"
        )
        assert {n: c for n, c in shown if c} == want


def test_a_site_without_a_baseline_draws_no_change_categories(
    repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    out = tmp_path / "site"
    answer = cli(repo, "report", "--html", str(out), "--baseline", "none", process=False)
    assert answer["baseline"] is None
    cart = (out / embedded(Path(answer["report"]))["pages"]["shop/cart.py"]).read_text()
    assert '<pre class="k"' not in cart and 'id="categories"' not in cart
    assert '<span class="p" title="missed branches: ' in cart  # the missed branches stay


@pytest.mark.asyncio(loop_scope="module")
async def test_the_site_has_a_function_index_overall_and_per_file_that_leads_to_each_functions_line(
    repo: Path,
    tmp_path: Path,
    isolated_home: Path,
    chromium: Any,
    shop_history: tuple[Path, dict[str, tuple[Path, str]]],
) -> None:
    out = tmp_path / "site"
    answer = cli(repo, "report", "--html", str(out), process=False)
    data = embedded(Path(answer["report"]))
    measured = json.loads(shop_history[1]["c1"][0].read_text())["files"]
    # every function coverage.py's own JSON names (module code aside), at its line, called or not as it says
    want = {
        (path, name): (f["start_line"], bool(f["executed_lines"]))
        for path, file in measured.items()
        for name, f in file["functions"].items()
        if name and f["summary"]["num_statements"]
    }
    got = {(f["path"], f["name"]): (f["start_line"], f["hits"] > 0) for f in data["functions"]["rows"]}
    assert got == want and data["functions"]["truncated"] is False
    async with chromium(offline=True) as context:
        page = await context.new_page()
        await page.goto(Path(answer["report"]).as_uri())
        await ready(page)
        await page.locator("#show-functions").click()
        await page.wait_for_selector(".functions-table")
        names = await page.locator(".functions-table tbody tr td:first-child").all_text_contents()
        assert sorted(names) == sorted(name for _, name in want)
        # a function's link opens its file's page at its line
        line, _ = want[("shop/cart.py", "shipping")]
        await page.locator(".functions-table a", has_text="shipping").first.click()
        await page.wait_for_url(f"**/{data['pages']['shop/cart.py']}#L{line}")
        await page.wait_for_function(f"document.getElementById('at').textContent === 'line {line}'")
        # the file page lists its own functions, each a link to its line
        listed = await page.eval_on_selector_all(
            "#functions tbody a", "links => links.map((a) => [a.textContent, a.getAttribute('href')])"
        )
        assert sorted(listed) == sorted(
            [name, f"#L{start}"] for (path, name), (start, _) in want.items() if path == "shop/cart.py"
        )


HOSTILE = "</script><img src=x onerror=alert(1)>"


@pytest.mark.asyncio(loop_scope="module")
async def test_hostile_function_names_and_source_text_stay_text_on_the_site(
    tmp_path: Path, isolated_home: Path, chromium: Any
) -> None:
    from .gitrepo import make_repo

    source = f"int a; /* {HOSTILE} </pre> */\nint b;\n"
    repo = make_repo(tmp_path / "repo", {"x.c": source})
    report = (
        "TN:\nSF:x.c\n"
        f"FN:1,{HOSTILE}\nFNDA:0,{HOSTILE}\nDA:1,1\nDA:2,0\nBRDA:1,0,0,1\nBRDA:1,0,1,0\nend_of_record\n"
    )
    (tmp_path / "r.lcov").write_text(report)
    cli(repo, "ingest", str(tmp_path / "r.lcov"), process=False)
    out = tmp_path / "site"
    answer = cli(repo, "report", "--html", str(out), process=False)
    data = embedded(Path(answer["report"]))
    assert [f["name"] for f in data["functions"]["rows"]] == [HOSTILE]
    async with chromium(offline=True) as context:
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: errors.append("dialog " + d.message))
        await page.goto((out / data["pages"]["x.c"]).as_uri())
        await page.wait_for_function("document.querySelector('pre.g').textContent.length > 0")
        assert await page.locator("img").count() == 0
        assert await page.locator("#functions tbody a").all_text_contents() == [HOSTILE]
        assert await page.eval_on_selector("pre.t", "t => t.textContent") == source
        assert await page.locator("pre.t span.p").get_attribute("title") == "missed branches: 0.1"
        await page.goto(Path(answer["report"]).as_uri())
        await ready(page)
        await page.locator("#show-functions").click()
        await page.wait_for_selector(".functions-table")
        assert await page.locator(".functions-table tbody a").all_text_contents() == [HOSTILE]
        assert await page.locator("img").count() == 0 and errors == []
