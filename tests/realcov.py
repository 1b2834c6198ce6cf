"""Real coverage.py runs inside a test: a small package in a git repository, measured as people measure it.

``measure(repo)`` runs the package's own pytest suite under coverage.py
(branch coverage, per-test contexts) in a subprocess and writes the three
reports coverage.py makes of that one run: JSON, LCOV and Cobertura XML. Tests
then move lines, rename files or leave the tree dirty with ``gitrepo`` and
measure again, so every comparison is between reports a real tool produced.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import commandline
from .gitrepo import make_repo

# A package with branches (if/elif/else, loops, early returns), a nested
# function and a closure, partially tested: enough for categories, partial
# branches and innermost-function attribution.
PACKAGE = {
    "shop/__init__.py": "",
    "shop/cart.py": '''\
"""A shopping cart."""


def total(prices, coupon=None):
    amount = 0
    for price in prices:
        if price < 0:
            raise ValueError("negative price")
        amount += price
    if coupon == "HALF":
        amount = amount / 2
    elif coupon == "TENOFF":
        amount = max(0, amount - 10)
    return amount


def describe(items):
    def label(item):
        if item.get("gift"):
            return f"{item['name']} (gift)"
        return item["name"]

    names = [label(item) for item in items]
    if not names:
        return "empty"
    return ", ".join(names)


def shipping(weight, express=False):
    if express:
        return 20 if weight > 5 else 12
    if weight > 10:
        return 8
    return 4
''',
    "tests/test_cart.py": """\
from shop.cart import describe, shipping, total


def test_total_sums_prices():
    assert total([1, 2, 3]) == 6


def test_half_coupon():
    assert total([10, 10], coupon="HALF") == 10


def test_describe_names_items():
    assert describe([{"name": "tea"}, {"name": "mug", "gift": True}]) == "tea, mug (gift)"


def test_standard_shipping():
    assert shipping(3) == 4
""",
    ".coveragerc": "[run]\nbranch = True\ndynamic_context = test_function\nsource = shop\n",
    ".gitignore": ".coverage\n.coverage.*\ncoverage.json\ncoverage.lcov\ncoverage.xml\n__pycache__/\n",
}

REPORTS = {"json": "coverage.json", "lcov": "coverage.lcov", "xml": "coverage.xml"}


def measuring(*, arguments: str, reports: str, options: str = "") -> str:
    """A script doing what ``coverage run [options] -m pytest -q -p no:cacheprovider TESTS`` then coverage.py's
    report commands do, in one interpreter (coverage.py's API; pytest imported once measurement runs, the
    package's configuration read as `coverage run` reads it): ``arguments`` binds ``tests`` (and any report
    names) from ``sys.argv``; ``reports`` writes the reports of ``cov``, made of the saved data file."""
    return f"""import sys
import coverage
{arguments}
cov = coverage.Coverage({options})
cov.start()
import pytest
code = pytest.main(["-q", "-p", "no:cacheprovider", *tests])
cov.stop()
cov.save()
if code != 0:
    sys.exit(f"pytest exited {{code}}")
cov = coverage.Coverage()  # the reports read the saved data file, as the `coverage` commands do
cov.load()
{reports}
"""


# `coverage run -m pytest TESTS`, then `coverage json --show-contexts`, `coverage lcov` and `coverage xml`.
MEASURED = measuring(
    arguments="json_name, lcov_name, xml_name, *tests = sys.argv[1:]",
    reports="cov.json_report(outfile=json_name, show_contexts=True)\n"
    "cov.lcov_report(outfile=lcov_name)\ncov.xml_report(outfile=xml_name)",
)


def make_package(root: Path) -> Path:
    """The package above as a git repository with one commit."""
    return make_repo(root, PACKAGE)


def measure(repo: Path, *tests: str) -> dict[str, Path]:
    """Run the suite (or ``tests``) under coverage.py; the JSON, LCOV and Cobertura reports of that run."""
    # The package's tests are plain pytest: none of the suite's plugins (xdist, asyncio, hypothesis...) loads.
    env = {
        **os.environ,
        "PYTHONPATH": str(repo),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    env.pop("COVERAGE_PROCESS_START", None)
    subprocess.run(
        [sys.executable, "-c", MEASURED, *REPORTS.values(), *(tests or ("tests",))],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return {kind: repo / name for kind, name in REPORTS.items()}


def copy_checkout(measured: Path, into: Path) -> Path:
    """A copy of a measured repository (same commits, reports beside it): each test its own checkout and store."""
    return Path(shutil.copytree(measured, into / "repo"))


def cli(repo: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    """The command line on ``repo``, in it (commandline.cli: in process unless ``process``)."""
    return commandline.cli(*args, repo=repo, process=process)
