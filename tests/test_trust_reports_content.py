"""What a report's content can do to the importer: long paths, echoed text, memory (issue 9)."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import FORMATS, parse
from coverage_core.parsers.memory_budget import PARSE_BUDGET, ByteBudget
from coverage_core.parsers.reading import EXCERPT_CHARS
from coverage_core.service import Service
from coverage_core.storage.paths import map_paths

from .test_trust_reports import bounded

LONG = "a/" * 400_000 + "inventory/stock.py"  # 800 KB: once enough to hang the daemon for minutes


def test_an_800_kb_path_maps_by_its_suffix_in_bounded_time() -> None:
    tracked = [f"src/pkg{i}/mod{j}.py" for i in range(50) for j in range(50)] + ["inventory/stock.py"]
    mapping = bounded(lambda: map_paths([LONG, "x/" * 400_000], checkout_root="/r", tracked=tracked))
    assert mapping.paths[0] == "inventory/stock.py"
    assert mapping.status == ("mapped", "unmapped")


@pytest.mark.parametrize("fmt", ["lcov", "go", "coveragepy", "cobertura"])
def test_a_report_path_longer_than_4096_bytes_is_refused_naming_its_line(fmt: str) -> None:
    path = "d/" * 2100 + "x.c"
    doc = {
        "lcov": f"TN:\nSF:ok.c\nDA:1,1\nend_of_record\nSF:{path}\nDA:1,1\nend_of_record\n",
        "go": f"mode: set\nok.go:1.1,2.2 1 1\n{path}:1.1,2.2 1 1\n",
        "coveragepy": json.dumps({"meta": {"format": 3}, "files": {path: {"executed_lines": [1]}}}, indent=1),
        "cobertura": f'<?xml version="1.0"?>\n<coverage>\n<packages><package name="p"><classes>\n'
        f'<class name="c" filename="{path}"><lines><line number="1" hits="1"/></lines></class>'
        f"</classes></package></packages></coverage>\n",
    }[fmt]
    with pytest.raises(CoverageError) as info:
        bounded(lambda: parse(doc.encode(), format=fmt))
    error = info.value
    assert error.code is ErrorCode.MALFORMED_REPORT
    assert "longer than 4,096" in error.message
    assert error.details["line"] == {"lcov": 5, "go": 3, "coveragepy": 6, "cobertura": 4}[fmt]


def test_an_import_with_an_800_kb_path_is_refused_and_the_repository_stays_usable(sample_repo: Path) -> None:
    (sample_repo / "long.info").write_text(f"TN:\nSF:{LONG}\nDA:1,1\nend_of_record\n")
    with open_project(sample_repo) as project:
        service = Service(project)
        with pytest.raises(CoverageError) as info:
            bounded(lambda: service.call("coverage_import", {"report_path": "long.info"}))
        assert info.value.code is ErrorCode.MALFORMED_REPORT and info.value.details["line"] == 2
        assert bounded(lambda: service.call("coverage_import", {"report_path": "step3.coverage.json"}))


SECRET = "password=hunter2-" + "s3cr3t" * 40  # a first line longer than any excerpt


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_parser_error_shows_at_most_a_short_labelled_excerpt_of_the_report(fmt: str) -> None:
    for doc in (
        SECRET + "\n" + SECRET + "\n",
        f"mode: set\n{SECRET}\n",
        f"TN:\nSF:a.c\n{SECRET}\nend_of_record\n",
    ):
        try:
            parse(doc.encode(), format=fmt)
        except CoverageError as error:
            text = json.dumps(error.to_dict())
            assert "s3cr3t" * 14 not in text  # never more than EXCERPT_CHARS of it
            if "s3cr3t" in text:
                assert "excerpt: " in error.message
                quoted = error.message.split("excerpt: ", 1)[1]
                assert len(quoted.split(")", 1)[0].removesuffix(" (cut")) <= EXCERPT_CHARS


def wait_until(ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not ready():
        assert time.monotonic() < deadline, "condition not reached in 10 s"
        time.sleep(0.001)


def test_the_parse_budget_admits_claims_in_arrival_order_within_its_bytes() -> None:
    budget = ByteBudget(100)
    order: list[str] = []
    release = threading.Event()

    def worker(name: str, nbytes: int) -> None:
        with budget.claim(nbytes):
            order.append(name)
            release.wait(10)

    threads = {
        name: threading.Thread(target=worker, args=(name, n))
        for name, n in (("first", 80), ("big", 500), ("small", 10))
    }  # big is more than the budget: it runs alone
    for expected_tickets, name in enumerate(threads, start=1):
        threads[name].start()
        wait_until(lambda n=expected_tickets: budget._next_ticket == n)
    wait_until(lambda: order == ["first"])
    assert budget.in_flight == 80  # small would fit in the bytes left, but waits behind big
    release.set()
    for thread in threads.values():
        thread.join(10)
    assert order == ["first", "big", "small"] and budget.in_flight == 0


def test_a_gzip_bomb_is_refused_as_too_large_and_leaves_nothing_in_the_budget(
    sample_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COVERAGE_MCP_MAX_REPORT_BYTES", str(1 << 20))
    (sample_repo / "bomb.info.gz").write_bytes(gzip.compress(b"\n" * (64 << 20)))
    with open_project(sample_repo) as project:
        service = Service(project)
        with pytest.raises(CoverageError) as info:
            bounded(lambda: service.call("coverage_import", {"report_path": "bomb.info.gz"}))
        assert info.value.code is ErrorCode.REPORT_TOO_LARGE
        assert PARSE_BUDGET.in_flight == 0
        assert bounded(lambda: service.call("coverage_import", {"report_path": "step3.coverage.json"}))
