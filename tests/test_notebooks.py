"""The notebooks run from start to end, from any folder, and write nothing into the checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def _checkout_state() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--ignored"],
                          capture_output=True, text=True, check=True).stdout


def test_the_coverage_history_notebook_plots_a_rising_history_without_touching_the_checkout(tmp_path: Path) -> None:
    nb = nbformat.read(ROOT / "notebooks" / "coverage-history.ipynb", as_version=4)
    before = _checkout_state()
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert _checkout_state() == before
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "\n".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert text.count("snap-") == 3
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2
