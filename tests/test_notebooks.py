"""The notebooks run from start to end, from any folder, on the bundled sample or on the user's own checkout.

Each runs in a real Jupyter kernel (nbclient) in this test's COVERAGE_MCP_HOME;
the assertions read what a person reads: the tables' rows and the plots.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from coverage_core import open_project

from .gitrepo import commit, git, write
from .realcov import PACKAGE, make_package, measure

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def _checkout_state() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--ignored"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _run(name: str, folder: Path, **parameters: object) -> list[dict]:
    """Execute a notebook from scratch in ``folder``, the parameter cell's values overridden as papermill would."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source += "".join(f"\n{key} = {value!r}" for key, value in parameters.items())
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    return outputs


def _printed(outputs: list[dict]) -> str:
    """What the notebook printed, exactly: the kernel may split one cell's output into several stream
    messages depending on timing, so the pieces are joined as they came (each print ends its own line)."""
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")


def _tables(outputs: list[dict]) -> list[str]:
    return [o["data"]["text/plain"] for o in outputs if o.get("output_type") == "execute_result"]


def _plots(outputs: list[dict]) -> int:
    return sum(1 for o in outputs if "image/png" in o.get("data", {}))


def _row(table: str, *cells: object) -> bool:
    """Whether one line of a drawn table holds these cells, in this order."""
    pattern = r"\s*│\s*".join(re.escape(str(c)) for c in cells)
    return any(re.search(rf"│\s*{pattern}\s*│", line) for line in table.splitlines())


def test_the_history_notebook_tabulates_and_plots_the_samples_rising_history_without_touching_the_checkout(
    tmp_path: Path,
) -> None:
    before = _checkout_state()
    outputs = _run("coverage-history.ipynb", tmp_path)
    assert _checkout_state() == before
    assert _printed(outputs).count("snap-") == 3
    trend, least = _tables(outputs)
    # The headline: coverage.py's own total, statements and branches together (30+7 of 48+20 ...).
    assert _row(trend, "unit") and _row(trend, "37", "68", "54.4")
    assert _row(trend, "47", "68", "69.1") and _row(trend, "53", "68", "77.9")
    assert trend.index("54.4") < trend.index("69.1") < trend.index("77.9")  # oldest first
    assert _row(least, "inventory/pricing.py", "18", "26", "8", "69.2")
    assert least.index("pricing.py") < least.index("stock.py") < least.index("__init__.py")
    assert _plots(outputs) == 2


def test_the_loss_notebook_ranks_and_plots_the_files_that_lost_coverage_when_the_sample_drops_tests(
    tmp_path: Path,
) -> None:
    before = _checkout_state()
    outputs = _run("coverage-loss.ipynb", tmp_path)
    assert _checkout_state() == before
    assert re.search(r"headline lost between [0-9a-f]{8} and [0-9a-f]{8}: 16\b", _printed(outputs))
    (ranking,) = _tables(outputs)
    # Each file's headline: statements and branches together, as coverage.py counts a file.
    assert _row(ranking, "inventory/pricing.py", "18/26", "4/26", "14", "-53.8")
    assert _row(ranking, "inventory/stock.py", "32/39", "30/39", "2", "-5.1")
    assert ranking.index("pricing.py") < ranking.index("stock.py")
    assert "__init__.py" not in ranking  # nothing lost there
    assert _plots(outputs) == 2  # the ranking, and the worst files commit by commit


def test_both_notebooks_read_the_users_own_checkout_when_repo_is_set(tmp_path: Path) -> None:
    repo = make_package(tmp_path / "mine")
    first = measure(repo)
    with open_project(repo) as project:
        project.ingest(first["json"], suite="unit")
    write(repo, {"tests/test_cart.py": PACKAGE["tests/test_cart.py"].split("def test_half_coupon")[0]})
    commit(repo, "drop the last three tests")
    second = measure(repo)
    with open_project(repo) as project:
        project.ingest(second["json"], suite="unit")
        found_hit = [(s.headline.hit, s.headline.found) for s in reversed(project.snapshots())]
    status = git(repo, "status", "--porcelain")

    history = _run("coverage-history.ipynb", tmp_path, REPO=str(repo))
    trend, least = _tables(history)
    assert all(_row(trend, "main", hit, found) for hit, found in found_hit)
    assert _row(least, "shop/cart.py")
    assert "inventory" not in trend + least + _printed(history)  # the sample was not built
    assert _plots(history) == 2

    loss = _run("coverage-loss.ipynb", tmp_path, REPO=str(repo), SUITE="unit", LAST=5)
    (ranking,) = _tables(loss)
    lost = (found_hit[1][1] - found_hit[1][0]) - (found_hit[0][1] - found_hit[0][0])
    (hit0, found0), (hit1, found1) = found_hit  # one file measured, so its counts are the totals
    assert lost > 0 and _row(ranking, "shop/cart.py", f"{hit0}/{found0}", f"{hit1}/{found1}", lost)
    assert _plots(loss) == 2
    assert git(repo, "status", "--porcelain") == status  # read only: the checkout is as it was
