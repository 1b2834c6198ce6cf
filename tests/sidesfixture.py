"""A real package with real git history for the honest-sides tests (issue 24).

``tests/realcov.py``'s package (a shopping cart and its pytest suite) is
committed in steps, each step a real edit: c0 the package, c1 a ``discount``
function with its test and ``measure.py``, the script a registered command runs
(coverage.py over pytest, branch coverage with test contexts, then its JSON
report), passing case arguments on to pytest as a test selection. Every report
is coverage.py's own, of the tree as it was at that step.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from .gitrepo import commit, git, write
from .realcov import make_package, measure, measuring

PY = sys.executable
# `coverage run -m pytest TESTS` then `coverage json --show-contexts -o coverage.json`, in one interpreter.
MEASURE = measuring(
    arguments='tests = sys.argv[1:] or ["tests"]',
    reports='cov.json_report(outfile="coverage.json", show_contexts=True)',
)
DISCOUNT = """

def discount(amount, percent):
    if percent <= 0:
        return amount
    return amount * (100 - percent) / 100
"""
DISCOUNT_TEST = """

def test_discount_takes_a_percentage():
    from shop.cart import discount
    assert discount(200, 10) == 180
"""
# One test of the suite: a subset run that never reaches most of the cart.
ONE_TEST = "tests/test_cart.py::test_total_sums_prices"
MEASURE_COMMAND = {
    "name": "measure",
    "argv": [PY, "measure.py"],
    # The package's tests are plain pytest: none of the suite's plugins (xdist, asyncio, hypothesis...) loads.
    "env": {"PYTHONPATH": ".", "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    "args_policy": "selectors",
    "artifacts": [{"path": "coverage.json", "suite": "unit"}],
}


def build(root: Path) -> tuple[Path, dict[str, str], Path]:
    """(repository at c1, {c0, c1: commit}, coverage.py's JSON report of c0 kept outside the checkout)."""
    repo = make_package(root / "repo")
    commits = {"c0": git(repo, "rev-parse", "HEAD")}
    kept = root / "reports"
    kept.mkdir()
    c0_report = Path(shutil.copy(measure(repo)["json"], kept / "c0.coverage.json"))
    cart = (repo / "shop/cart.py").read_text()
    tests = (repo / "tests/test_cart.py").read_text()
    write(
        repo,
        {
            "shop/cart.py": cart + DISCOUNT,
            "tests/test_cart.py": tests + DISCOUNT_TEST,
            "measure.py": MEASURE,
        },
    )
    commits["c1"] = commit(repo, "discount, and the measuring script")
    for name in ("coverage.json", "coverage.lcov", "coverage.xml", ".coverage"):
        (repo / name).unlink(missing_ok=True)
    return repo, commits, c0_report
