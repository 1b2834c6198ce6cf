"""Inventory globs: the matcher answers like the glob's regular expression, and a hostile glob cannot stall it.

A committed inventory is repository content (a cloned repository, an agent's
``coverage_import``), so its globs are bounded and matched without backtracking.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from coverage_core.composite.globs import MAX_GLOB_CHARS, MAX_GLOB_WILDCARDS, Glob
from coverage_core.composite.inventory import MAX_INVENTORY_WILDCARDS, load
from coverage_core.errors import CoverageError


def reference(pattern: str) -> re.Pattern[str]:
    """The documented meaning as a (backtracking) regular expression: fine for small inputs."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


PIECES = st.sampled_from(["a", "b", "/", ".", "*", "**", "**/", "?", "ab", "/a"])


@settings(max_examples=600, deadline=None)
@given(st.lists(PIECES, max_size=8).map("".join), st.text(alphabet="ab/.", max_size=12))
def test_the_matcher_agrees_with_the_globs_regular_expression(pattern: str, path: str) -> None:
    assert Glob(pattern).match(path) == bool(reference(pattern).fullmatch(path))


def test_the_documented_examples_match_as_documented() -> None:
    assert Glob("py/fixpkg/**/*.py").match("py/fixpkg/a.py")
    assert Glob("py/fixpkg/**/*.py").match("py/fixpkg/sub/deep/a.py")
    assert not Glob("py/fixpkg/**/*.py").match("py/other/a.py")
    assert Glob("native/src/*.c").match("native/src/m.c")
    assert not Glob("native/src/*.c").match("native/src/sub/m.c")
    assert Glob("js/**").match("js/a/b.js")
    assert Glob("shaders/?.wgsl").match("shaders/a.wgsl") and not Glob("shaders/?.wgsl").match(
        "shaders/ab.wgsl"
    )
    assert not Glob("**/x").match("/x")  # a segment is never empty


HOSTILE = [
    ("*" * 3000 + "x", "a" * 3000),
    ("**/" * 10 + "x", "a/" * 30 + "b"),
    ("*a" * 200 + "b", "a" * 400),
    ("?*" * 100 + "/", "a" * 300),
]


def test_hostile_globs_finish_in_a_subprocess() -> None:
    code = (
        "import json, sys\nfrom coverage_core.composite.globs import Glob\n"
        "cases = json.loads(sys.stdin.read())\n"
        "print(json.dumps([Glob(p).match(s) for p, s in cases]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(HOSTILE),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == [False, False, False, False]


def _refusal(glob: str) -> dict[str, str]:
    doc = {
        "inventory_version": 1,
        "components": [{"id": "py", "language": "python", "format": "coveragepy", "sources": ["a.py", glob]}],
    }
    try:
        load(json.dumps(doc).encode(), "inv.json", ["a.py", "b" * 3000])
    except CoverageError as err:
        assert err.details["reason"] == "invalid_inventory"
        return err.details["errors"][0]
    raise AssertionError("the inventory was accepted")


def test_the_reviewers_hostile_inventory_is_refused_with_its_json_path() -> None:
    error = _refusal("*" * 3000 + "x")
    assert error["path"] == "$.components[0].sources[1]"
    assert f"over the {MAX_GLOB_CHARS}-character limit" in error["message"]
    assert len(error["message"]) < 200


def test_a_glob_with_too_many_wildcards_is_refused() -> None:
    error = _refusal("*/" * (MAX_GLOB_WILDCARDS + 1) + "x")
    assert error["path"] == "$.components[0].sources[1]"
    assert f"limit of {MAX_GLOB_WILDCARDS}" in error["message"]


def test_an_inventory_with_too_many_wildcards_in_all_is_refused() -> None:
    globs = [f"d{i}/*.py" for i in range(MAX_INVENTORY_WILDCARDS + 1)]
    doc = {
        "inventory_version": 1,
        "components": [{"id": "py", "language": "python", "format": "coveragepy", "sources": globs}],
    }
    tracked = [f"d{i}/m.py" for i in range(len(globs))]
    try:
        load(json.dumps(doc).encode(), "inv.json", tracked)
    except CoverageError as err:
        assert [e["path"] for e in err.details["errors"]] == [
            f"$.components[0].sources[{MAX_INVENTORY_WILDCARDS}]"
        ]
        assert f"over {MAX_INVENTORY_WILDCARDS} wildcards in all" in err.details["errors"][0]["message"]
    else:
        raise AssertionError("the inventory was accepted")
    # Literal paths are looked up, not matched: any number is fine, and a repeated glob counts once.
    doc["components"][0]["sources"] = [f"d{i}/m.py" for i in range(len(globs))] + ["d1/*.py"] * 300
    assert len(load(json.dumps(doc).encode(), "inv.json", tracked).entries) == len(globs)
