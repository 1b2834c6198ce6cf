"""Comparisons refuse to mislead: the current side is HEAD's measurement, of the baseline's format, in scope.

A real package in a real git repository, measured by real coverage.py runs at
three commits (``tests/realcov.py``); every command runs as a subprocess of the
CLI, the way CI runs it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .gitrepo import commit, git, write
from .realcov import REPORTS, cli, copy_checkout, make_package, measure

NOT_MEASURED = "current_not_measured"

# c1: a discount function and its test.
C1_CART_TAIL = """

def discount(amount, percent):
    if percent <= 0:
        return amount
    return amount * (100 - percent) / 100
"""
C1_TESTS_TAIL = """

def test_discount_takes_a_percentage():
    from shop.cart import discount
    assert discount(200, 10) == 180
"""
# c2: a new subpackage with an empty __init__.py, and a new test (in tests/, which --source=shop never measures).
TAX = """def sales_tax(amount, rate=0.2):
    if amount <= 0:
        return 0
    return round(amount * rate, 2)
"""
C2_TESTS_TAIL = """

def test_sales_tax_is_a_fifth():
    from shop.extra.tax import sales_tax
    assert sales_tax(10) == 2 and sales_tax(0) == 0
"""


def _keep(repo: Path, out: dict[str, Path], into: Path) -> dict[str, Path]:
    into.mkdir(parents=True)
    return {kind: Path(shutil.copy(path, into / path.name)) for kind, path in out.items()}


@pytest.fixture(scope="module")
def measured(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, str], dict[str, dict[str, Path]]]:
    """The package at c0, c1 (HEAD~1) and c2 (HEAD), with coverage.py's JSON, LCOV and Cobertura of each commit,
    and ``partial``: HEAD's JSON with shop/cart.py left out (``coverage json --omit``)."""
    root = tmp_path_factory.mktemp("measured")
    repo = make_package(root / "repo")
    saved = {"c0": _keep(repo, measure(repo), root / "c0")}
    commits = {"c0": git(repo, "rev-parse", "HEAD")}
    cart = (repo / "shop/cart.py").read_text()
    tests = (repo / "tests/test_cart.py").read_text()
    write(repo, {"shop/cart.py": cart + C1_CART_TAIL, "tests/test_cart.py": tests + C1_TESTS_TAIL})
    commits["c1"] = commit(repo, "discount")
    saved["c1"] = _keep(repo, measure(repo), root / "c1")
    write(
        repo,
        {
            "shop/extra/__init__.py": "",
            "shop/extra/tax.py": TAX,
            "tests/test_cart.py": tests + C1_TESTS_TAIL + C2_TESTS_TAIL,
        },
    )
    commits["c2"] = commit(repo, "sales tax")
    saved["c2"] = _keep(repo, measure(repo), root / "c2")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "coverage",
            "json",
            "-o",
            "partial.json",
            "--show-contexts",
            "--omit",
            "shop/cart.py",
        ],
        cwd=repo,
        check=True,
        capture_output=True,
        timeout=60,
    )
    saved["partial"] = {"json": Path(shutil.move(repo / "partial.json", root / "partial.json"))}
    return repo, commits, saved


@pytest.fixture
def repo(measured, tmp_path: Path) -> Path:
    return copy_checkout(measured[0], tmp_path)


def ingest(repo: Path, report: Path, *args: str) -> str:
    """Store a report (copied into the checkout under coverage.py's own, ignored, name); its snapshot id."""
    name = REPORTS[{".json": "json", ".lcov": "lcov", ".xml": "xml"}[report.suffix]]
    if report != repo / name:
        shutil.copy(report, repo / name)
    done = cli(repo, "ingest", name, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["data"]["snapshot"]["snapshot_id"]


def gate(repo: Path, *args: str) -> tuple[int, dict]:
    done = cli(repo, "gate", *args, "--json")
    return done.returncode, json.loads(done.stdout) if done.stdout else json.loads(done.stderr)


def diff(repo: Path, *args: str) -> dict:
    done = cli(repo, "diff", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["data"]


def test_a_gate_after_a_backfilled_ingest_exits_1_because_head_is_not_measured(repo: Path, measured) -> None:
    _repo, commits, saved = measured
    ingest(repo, saved["c1"]["json"], "--commit", "HEAD~1")
    ingest(repo, saved["c0"]["json"], "--commit", "HEAD~2")  # backfilled: now the latest snapshot
    code, env = gate(repo, "--baseline", "HEAD~1")
    data = env["data"]
    assert code == 1
    assert data["passed"] is False and data["checks"] == []
    assert data["claim_status"] == "stale" and data["reason_codes"] == [NOT_MEASURED]
    assert data["current"]["snapshot_ids"] == [] and data["current"]["commit"] == commits["c2"][:12]
    assert commits["c2"][:12] in data["reasons"][0]
    text = cli(repo, "gate", "--baseline", "HEAD~1")
    assert text.returncode == 1 and "PASS" not in text.stdout
    assert f"claim: stale [{NOT_MEASURED}]" in text.stdout and "--current snap-" in text.stdout
    # task=all says it at its top too: its change part compared nothing
    review = json.loads(cli(repo, "review", "all", "--baseline", "HEAD~1", "--json").stdout)["data"]
    assert review["claim_status"] == "stale" and review["reason_codes"] == [NOT_MEASURED]
    # Once HEAD is measured, the same gate compares HEAD with HEAD~1, forwards, and passes.
    head = ingest(repo, saved["c2"]["json"])
    code, env = gate(repo, "--baseline", "HEAD~1")
    assert code == 0 and env["data"]["current"]["snapshot_ids"] == [head]
    assert env["data"]["claim_status"] == "supported"
    assert "claim: supported" in cli(repo, "gate", "--baseline", "HEAD~1").stdout.splitlines()


def test_a_gate_and_a_diff_exit_1_when_head_was_never_ingested(repo: Path, measured) -> None:
    _repo, _commits, saved = measured
    only = ingest(repo, saved["c0"]["json"], "--commit", "HEAD~2")
    code, env = gate(repo, "--baseline", "HEAD~2")
    assert code == 1 and env["data"]["reason_codes"] == [NOT_MEASURED]
    assert env["data"]["current"]["latest"] == {"snapshot_id": only, "commit": _commits["c0"][:12]}
    done = cli(repo, "diff", "--baseline", "HEAD~2", "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["data"]["claim_status"] == "stale"
    table = cli(repo, "diff", "--baseline", "HEAD~2")
    assert table.returncode == 1 and "not compared" in table.stdout and NOT_MEASURED in table.stdout


def test_naming_the_current_snapshot_compares_it_as_asked(repo: Path, measured) -> None:
    _repo, commits, saved = measured
    older = ingest(repo, saved["c1"]["json"], "--commit", "HEAD~1")
    ingest(repo, saved["c0"]["json"], "--commit", "HEAD~2")
    code, env = gate(repo, "--baseline", "HEAD~2", "--current", older, "--fail-under-total", "50")
    data = env["data"]
    assert code == 0 and data["passed"] is True
    assert data["current"]["snapshot_ids"] == [older] and data["current"]["commit"] == commits["c1"][:12]
    assert data["baseline"]["commit"] == commits["c0"][:12]
    assert data["claim_status"] == "stale" and "reason_codes" not in data  # compared, and says it is not HEAD
    assert data["categories"]["GNC"] > 0  # discount's new lines, covered: the diff runs forwards
    text = cli(repo, "gate", "--baseline", "HEAD~2", "--current", older, "--fail-under-total", "50")
    assert text.returncode == 0 and "claim: stale" in text.stdout and commits["c1"][:12] in text.stdout


def test_a_gate_exits_1_when_head_does_not_descend_from_the_baseline(repo: Path, measured) -> None:
    """Seed: "Comparisons require compatible repository, suite, and lineage identity." """
    _repo, commits, saved = measured
    ingest(repo, saved["c2"]["json"])
    git(repo, "checkout", "-q", "--detach", commits["c1"])  # back to HEAD~1, which is measured too
    older = ingest(repo, saved["c1"]["json"])
    code, env = gate(repo, "--baseline", commits["c2"])
    data = env["data"]
    assert code == 1 and data["reason_codes"] == [NOT_MEASURED]
    assert data["current"]["snapshot_ids"] == [older] and data["baseline"]["commit"] == commits["c2"][:12]
    assert "does not descend" in data["reasons"][-1]


def test_a_dirty_tree_snapshot_is_current_while_the_tree_is_unchanged(repo: Path, measured) -> None:
    _repo, _commits, saved = measured
    ingest(repo, saved["c1"]["json"], "--commit", "HEAD~1")
    cart = (repo / "shop/cart.py").read_text()
    write(repo, {"shop/cart.py": cart + "\n\ndef unused():\n    return 1\n"})  # not committed
    dirty = ingest(repo, measure(repo)["json"])
    code, env = gate(repo, "--baseline", "HEAD~1", "--fail-under-total", "50")
    assert code == 0 and env["data"]["current"]["snapshot_ids"] == [dirty]
    data = diff(repo, "--baseline", "HEAD~1")
    assert data["categories"]["UNC"] >= 1  # the uncommitted function, read in the working tree
    write(repo, {"shop/cart.py": cart + "\n\ndef unused():\n    return 2\n"})  # the tree moved on
    code, env = gate(repo, "--baseline", "HEAD~1", "--fail-under-total", "50")
    assert code == 1 and env["data"]["reason_codes"] == [NOT_MEASURED]


def test_a_cobertura_baseline_and_a_coveragepy_json_current_are_refused_naming_both(
    repo: Path, measured
) -> None:
    _repo, _commits, saved = measured
    ingest(repo, saved["c1"]["xml"], "--commit", "HEAD~1")
    ingest(repo, saved["c2"]["json"])
    code, body = gate(repo, "--baseline", "HEAD~1")
    assert code == 1 and body["error"]["code"] == "incompatible_snapshots"
    assert "cobertura" in body["error"]["message"] and "coveragepy" in body["error"]["message"]
    assert body["error"]["details"]["baseline_format"] == "cobertura"
    assert body["error"]["details"]["current_format"] == "coveragepy"
    # With a JSON report of HEAD~1 stored as well, the baseline is that one, whatever was stored last.
    same = ingest(repo, saved["c1"]["json"], "--commit", "HEAD~1")
    ingest(repo, saved["c2"]["json"])
    code, env = gate(repo, "--baseline", "HEAD~1")
    assert code == 0 and env["data"]["baseline"]["snapshot_ids"] == [same]
    assert not any(env["data"]["categories"][c] for c in ("UIC", "EUB", "ECB"))


def test_a_tests_tree_never_measured_is_outside_scope_and_the_claim_stays_supported(
    repo: Path, measured
) -> None:
    _repo, _commits, saved = measured
    ingest(repo, saved["c1"]["json"], "--commit", "HEAD~1")
    ingest(repo, saved["c2"]["json"])
    data = diff(repo, "--baseline", "HEAD~1")
    status = {f["path"]: f["status"] for f in data["files"]}
    assert status["tests/test_cart.py"] == "outside_scope"
    assert data["outside_scope"] == {"count": 1, "examples": ["tests/test_cart.py"]}
    assert data["not_measured"] == {"files": 0}
    assert data["claim_status"] == "supported"
    table = cli(repo, "diff", "--baseline", "HEAD~1").stdout
    assert "claim: supported" in table and "outside its measured scope" in table


def test_an_empty_init_py_is_measured_not_not_measured(repo: Path, measured) -> None:
    _repo, _commits, saved = measured
    ingest(repo, saved["c1"]["json"], "--commit", "HEAD~1")
    ingest(repo, saved["c2"]["json"])
    data = diff(repo, "--baseline", "HEAD~1")
    status = {f["path"]: f["status"] for f in data["files"]}
    assert status["shop/extra/__init__.py"] == "added" and status["shop/extra/tax.py"] == "added"


def test_a_file_measured_before_and_missing_now_limits_the_claim(repo: Path, measured) -> None:
    _repo, _commits, saved = measured
    ingest(repo, saved["c1"]["json"], "--commit", "HEAD~1")
    ingest(repo, saved["partial"]["json"])  # HEAD, without shop/cart.py
    data = diff(repo, "--baseline", "HEAD~1")
    status = {f["path"]: f["status"] for f in data["files"]}
    assert status["shop/cart.py"] == "not_measured" and status["tests/test_cart.py"] == "outside_scope"
    assert data["not_measured"] == {"files": 1} and data["outside_scope"]["count"] == 1
    assert data["claim_status"] == "limited"
    assert any("not_measured, not unchanged" in r for r in data["reasons"])


def test_incremental_answers_name_the_tests(repo: Path, measured) -> None:
    _repo, _commits, saved = measured
    base = ingest(repo, saved["c1"]["json"], "--commit", "HEAD~1")
    run = ingest(repo, saved["c2"]["json"])
    done = cli(repo, "review", "incremental", "--snapshot", run, "--baseline", base, "--json")
    assert done.returncode == 0, done.stderr
    tests = json.loads(done.stdout)["data"]["tests"]
    new = tests["only_current"]
    assert new["count"] == 1 and len(new["names"]) == len(new["ids"]) == 1
    assert "test_sales_tax_is_a_fifth" in new["names"][0] and new["ids"][0].startswith("t-")
    attributed = json.loads(done.stdout)["data"]["attribution"]["tests"]
    assert any("test_sales_tax_is_a_fifth" in name for name in attributed["names"])
