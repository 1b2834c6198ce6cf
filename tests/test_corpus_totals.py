"""Every corpus report parses to the totals its producing tool reported (MANIFEST.json)."""

from __future__ import annotations

import json

import pytest

from . import corpus
from .commandline import cli

# Manifest counter names -> our counter names. Keys not listed (rates, percents,
# modes, display strings, excluded-line counts, gcovr's function summary which
# is not in the XML) are not totals a parser can or should reproduce.
RENAMES = {
    "lines": "lines",
    "branches": "branches",
    "functions": "functions",
    "statements": "statements",
    "regions": "regions",
    "instantiations": "instantiations",
    # JaCoCo report-level counters
    "instruction": "instructions",
    "branch": "branches",
    "line": "lines",
    "complexity": "complexity",
    "method": "functions",
    "class": "classes",
}


def expected_totals(entry: dict) -> dict:
    canon = entry["canonical_totals"]
    totals = {}
    for key, value in canon.items():
        if key in RENAMES and isinstance(value, dict):
            totals[RENAMES[key]] = {"found": value["found"], "hit": value["hit"]}
    if entry["format"].startswith("Go coverprofile"):
        # Our target is go test -cover's all-blocks view; `statements` is
        # go tool cover -func's, which needs the Go source.
        allb = canon["statements_all_blocks (go test -cover view)"]
        totals["statements"] = {"found": allb["found"], "hit": allb["hit"]}
    return totals


def expected_files(entry: dict) -> int | None:
    canon = entry["canonical_totals"]
    for key in ("files", "files (sourcefile elements)"):
        if key in canon:
            return canon[key]
    return None


REPORTS = corpus.entries()


@pytest.mark.parametrize("entry", REPORTS, ids=[e["file"] for e in REPORTS])
def test_parse_json_reproduces_the_producing_tools_totals(entry: dict) -> None:
    out = cli("parse", str(corpus.path(entry["file"])), "--json")  # in process: the totals are the point
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    for counter, value in expected_totals(entry).items():
        assert result["totals"].get(counter) == value, counter
    if (files := expected_files(entry)) is not None:
        assert result["files"] == files
    if "test_names" in entry["canonical_totals"]:
        assert result["tests"] == entry["canonical_totals"]["test_names"]
    if "class_rows" in entry["canonical_totals"]:  # JaCoCo's CSV: one row per class
        assert result["totals"]["classes"]["found"] == entry["canonical_totals"]["class_rows"]
