"""A real PyPI package with a real git history, measured by its own test suite under coverage.py.

The source distribution of toolz 1.0.0 (``tests/fixtures/toolz``, with its licence) is
extracted and committed in steps, each a real edit of its sources:

- c0: the package as released (its own ``setup.cfg`` says what coverage.py measures);
- c1: ``measure.py`` (the script a registered command runs: coverage.py over pytest with
  branch coverage, then its JSON report; case arguments reach pytest as a test selection)
  and a ``.gitignore`` for its outputs; a module docstring at the top of
  ``toolz/itertoolz.py``, which moves every line below it; ``dissoc_in`` appended to
  ``toolz/dicttoolz.py``, a function no test calls;
- c2: ``toolz/recipes.py`` renamed to ``toolz/grouping.py`` (its importers follow) and
  the ``partitionby`` test dropped.

Every step is measured by the package's own tests in a subprocess, and c2 also by one test
file alone (the subset an agent runs), so every number comes from coverage.py. The JSON
reports are kept outside the checkout and are the tests' oracle.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from functools import cached_property
from pathlib import Path
from typing import Any

import attrs

from .gitrepo import commit, git, write
from .realcov import measuring

SDIST = Path(__file__).resolve().parent / "fixtures" / "toolz" / "toolz-1.0.0.tar.gz"
SDIST_SHA256 = "2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02"
PY = sys.executable
# `coverage run --branch -m pytest TESTS` then `coverage json -o coverage.json`: the same report, line for line
# and branch for branch, in one interpreter instead of three.
MEASURE = measuring(
    arguments='tests = sys.argv[1:] or ["toolz/tests"]',
    options="branch=True",
    reports='cov.json_report(outfile="coverage.json")',
)
IGNORED = ".coverage\ncoverage.json\n__pycache__/\n"
# The package's own tests are plain pytest: none of this suite's plugins (xdist, asyncio...) loads.
MEASURE_ENV = {"PYTHONPATH": ".", "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
MEASURE_COMMAND = {
    "name": "measure",
    "argv": [PY, "measure.py"],
    "env": MEASURE_ENV,
    "args_policy": "selectors",
    "artifacts": [{"path": "coverage.json", "suite": "unit"}],
}
# One test file of the suite: the subset run, which never reaches most of the package.
SUBSET = "toolz/tests/test_recipes.py"
RENAMED = ("toolz/recipes.py", "toolz/grouping.py")
MOVED = "toolz/itertoolz.py"
DOCSTRING = '"""Functions on iterables: take, drop, group, join and friends.\n\nAll are lazy where they can be.\n"""\n'
MOVED_BY = DOCSTRING.count("\n")  # the lines c1 puts at the top of MOVED
UNTESTED = "toolz/dicttoolz.py"
DISSOC_IN = '''

def dissoc_in(d, keys, factory=dict):
    """ Return a copy of nested dictionary ``d`` without the value at path ``keys``

    >>> dissoc_in({'a': {'b': 1, 'c': 2}}, ['a', 'b'])
    {'a': {'c': 2}}
    """
    if not keys:
        return d
    key, rest = keys[0], keys[1:]
    if key not in d:
        return d
    rv = factory()
    rv.update(d)
    if rest:
        rv[key] = dissoc_in(d[key], rest, factory)
    else:
        del rv[key]
    return rv
'''
PARTITIONBY_TEST = "\n\ndef test_partitionby():\n"


@attrs.frozen
class Measured:
    """One coverage.py JSON report (kept outside the checkout) and the commit it measured."""

    path: Path
    commit: str

    @cached_property
    def data(self) -> dict[str, Any]:
        return json.loads(self.path.read_text())

    def statements(self) -> tuple[int, int]:
        """(covered, total) statements: coverage.py's own totals."""
        totals = self.data["totals"]
        return totals["covered_lines"], totals["num_statements"]

    def total_display(self) -> str:
        """coverage.py's own total (statements and branches with --branch), as `coverage report
        --precision 2` prints it."""
        return f"{self.data['totals']['percent_covered']:.2f}%"

    def executed(self, path: str) -> set[int]:
        return set(self.data["files"][path]["executed_lines"])

    def missing(self, path: str) -> set[int]:
        return set(self.data["files"][path]["missing_lines"])

    def files(self) -> set[str]:
        return set(self.data["files"])


@attrs.frozen
class History:
    """The checkout at c2 (clean), its commits and coverage.py's reports (c0, c1, c2, and ``subset``)."""

    repo: Path
    commits: dict[str, str]
    reports: dict[str, Measured]


def measure_env() -> dict[str, str]:
    env = {**os.environ, **MEASURE_ENV}
    env.pop("COVERAGE_PROCESS_START", None)
    return env


def measure(repo: Path, kept: Path, *tests: str) -> Path:
    """Run the package's tests (or ``tests``) under coverage.py; its JSON report, moved to ``kept``."""
    subprocess.run(
        [PY, "-c", MEASURE, *tests], cwd=repo, env=measure_env(), check=True, capture_output=True, timeout=300
    )
    (repo / ".coverage").unlink()
    return Path(shutil.move(repo / "coverage.json", kept))


def extract(sdist: Path, into: Path) -> Path:
    """The archive's files under ``into``, its top folder (``toolz-1.0.0/``) stripped; the sha256 checked."""
    assert hashlib.sha256(sdist.read_bytes()).hexdigest() == SDIST_SHA256, "the vendored sdist changed"
    into.mkdir(parents=True)
    with tarfile.open(sdist) as archive:
        members = []
        for member in archive.getmembers():
            _, _, rest = member.name.partition("/")
            if rest:
                member.name = rest
                members.append(member)
        archive.extractall(into, members=members, filter="data")
    return into


def build(root: Path) -> History:
    repo = extract(SDIST, root / "repo")
    git(repo, "init", "-q", "-b", "main")
    kept = root / "reports"
    kept.mkdir()
    commits = {"c0": commit(repo, "toolz 1.0.0 as released")}
    reports = {"c0": Measured(measure(repo, kept / "c0.json"), commits["c0"])}

    moved = (repo / MOVED).read_text()
    untested = (repo / UNTESTED).read_text()
    write(
        repo,
        {
            "measure.py": MEASURE,
            ".gitignore": IGNORED,
            MOVED: DOCSTRING + moved,
            UNTESTED: untested + DISSOC_IN,
        },
    )
    commits["c1"] = commit(repo, "measure.py; itertoolz gets a docstring; dissoc_in, untested")
    reports["c1"] = Measured(measure(repo, kept / "c1.json"), commits["c1"])

    old, new = RENAMED
    git(repo, "mv", old, new)
    module, renamed = Path(old).stem, Path(new).stem
    edits = {
        "toolz/__init__.py": ("from .recipes import *", "from .grouping import *"),
        "toolz/tests/test_inspect_args.py": (f"toolz.{module}]", f"toolz.{renamed}]"),
    }
    for path, (before, after) in edits.items():
        text = (repo / path).read_text()
        assert before in text, (path, before)
        write(repo, {path: text.replace(before, after, 1)})
    tests = (repo / SUBSET).read_text()
    assert PARTITIONBY_TEST in tests
    write(repo, {SUBSET: tests[: tests.index(PARTITIONBY_TEST)] + "\n"})
    commits["c2"] = commit(repo, "recipes.py becomes grouping.py; the partitionby test goes")
    reports["c2"] = Measured(measure(repo, kept / "c2.json"), commits["c2"])
    reports["subset"] = Measured(measure(repo, kept / "subset.json", SUBSET), commits["c2"])
    assert git(repo, "status", "--porcelain") == ""
    return History(repo, commits, reports)
