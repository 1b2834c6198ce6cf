"""Gates people use: `gate` and `diff` in CI, through the real console script in subprocesses.

A real package in a real git repository (``tests/realcov.py``) at three
commits: c0 measured by coverage.py, c1 an unmeasured edit, c2 (HEAD) adding
one tested and one untested function, measured. Every command runs as
``python -m coverage_cli ...``, the way CI runs it; each test has its own
checkout and store. Totals are checked against coverage.py's own JSON totals.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest

from coverage_core import headline
from coverage_core.config import Settings
from coverage_core.display import percent

from .daemons import in_process
from .gitrepo import commit, git, write
from .realcov import REPORTS, cli, copy_checkout, make_package, measure

C1_CART_HEAD = '"""A shopping cart: totals, descriptions and shipping."""\n'
C2_CART_TAIL = """

def refund(amount, fee=0):
    if fee > amount:
        raise ValueError("fee above amount")
    return amount - fee


def tax(amount):
    return round(amount * 0.2, 2)
"""
C2_TESTS_TAIL = """

def test_tax_is_a_fifth():
    from shop.cart import tax
    assert tax(10) == 2
"""
UNCOVERED = '        raise ValueError("fee above amount")'  # a new line no test runs


def _keep(out: dict[str, Path], into: Path) -> dict[str, Path]:
    into.mkdir(parents=True)
    return {kind: Path(shutil.copy(path, into / path.name)) for kind, path in out.items()}


@pytest.fixture(scope="module")
def measured(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, str], dict[str, dict[str, Path]]]:
    """The package at c0 (measured), c1 (an edit nobody measured) and c2 = HEAD (measured): the repository, the
    commits and coverage.py's reports of c0 and c2."""
    root = tmp_path_factory.mktemp("gates")
    repo = make_package(root / "repo")
    commits = {"c0": git(repo, "rev-parse", "HEAD")}
    saved = {"c0": _keep(measure(repo), root / "c0")}
    cart = (repo / "shop/cart.py").read_text()
    write(repo, {"shop/cart.py": C1_CART_HEAD + cart.split("\n", 1)[1]})
    commits["c1"] = commit(repo, "docstring")
    write(
        repo,
        {
            "shop/cart.py": (repo / "shop/cart.py").read_text() + C2_CART_TAIL,
            "tests/test_cart.py": (repo / "tests/test_cart.py").read_text() + C2_TESTS_TAIL,
        },
    )
    commits["c2"] = commit(repo, "refund and tax")
    saved["c2"] = _keep(measure(repo), root / "c2")
    return repo, commits, saved


@pytest.fixture
def repo(measured, tmp_path: Path) -> Path:
    return copy_checkout(measured[0], tmp_path)


def ingest(repo: Path, report: Path, *args: str) -> str:
    name = REPORTS["json"]
    shutil.copy(report, repo / name)
    done = cli(repo, "ingest", name, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["data"]["snapshot"]["snapshot_id"]


def lines_of(report: Path) -> tuple[int, int]:
    """(covered, statements) as coverage.py's own JSON totals count them."""
    totals = json.loads(report.read_text())["totals"]
    return totals["covered_lines"], totals["num_statements"]


def total_of(report: Path) -> tuple[int, int]:
    """(covered, statements + branches): coverage.py's own total (``coverage report``'s Cover) with branch data."""
    totals = json.loads(report.read_text())["totals"]
    return totals["covered_lines"] + totals["covered_branches"], totals["num_statements"] + totals[
        "num_branches"
    ]


def shown(pair: tuple[int, int], precision: int = 2) -> str:
    """A coverage.py total as coverage.py prints it at ``precision``."""
    return headline.shown_at(
        headline.Headline("", pair[1], pair[0], headline.RULES[("coveragepy", None)]), precision
    )


def line_number(repo: Path, text: str) -> int:
    return (repo / "shop/cart.py").read_text().splitlines().index(text) + 1


def both_measured(repo: Path, saved) -> None:
    ingest(repo, saved["c0"]["json"], "--commit", "HEAD~2")
    ingest(repo, saved["c2"]["json"])


# -- --fail-under-total and --baseline none -----------------------------------------------------


def test_gate_fail_under_total_checks_the_current_total_without_a_baseline(repo: Path, measured) -> None:
    _repo, _commits, saved = measured
    ingest(repo, saved["c2"]["json"])
    # coverage.py's own total (statements and branches) at its default precision 0, as its --fail-under.
    hit, found = total_of(saved["c2"]["json"])
    passed = cli(repo, "gate", "--fail-under-total", "50")
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.splitlines()[0] == (
        f"PASS total: total coverage (statements+branches, coverage.py JSON's) {hit}/{found} "
        f"({shown((hit, found), 0)}) meets the minimum 50%"
    )
    failed = cli(repo, "gate", "--fail-under-total", "99.5", "--json")
    assert failed.returncode == 3
    assert json.loads(failed.stdout)["data"]["checks"] == [
        {
            "name": "total",
            "passed": False,
            "detail": f"total coverage (statements+branches, coverage.py JSON's) {hit}/{found} "
            f"({shown((hit, found), 0)}) is under the minimum 99.5%",
        }
    ]
    assert json.loads(failed.stderr)["error"]["code"] == "threshold_not_met"


@pytest.mark.parametrize(
    "args, mention",
    [
        ([], "none was given"),
        (["--fail-under-patch", "80"], "fail_under_patch needs a baseline"),
        (["--fail-under-total", "50", "--ratchet"], "ratchet needs a baseline"),
        (
            ["--fail-under-total", "50", "--baseline-fallback", "ancestor"],
            "baseline_fallback needs a baseline",
        ),
    ],
)
def test_a_gate_without_a_baseline_that_asks_for_a_comparison_is_bad_usage_exit_2(
    repo: Path, measured, args: list[str], mention: str
) -> None:
    ingest(repo, measured[2]["c2"]["json"])
    done = cli(repo, "gate", *args)
    assert done.returncode == 2 and done.stdout == ""
    assert "invalid_argument" in done.stderr and mention in done.stderr


def test_gate_accepts_baseline_none_as_review_change_does(repo: Path, measured) -> None:
    ingest(repo, measured[2]["c2"]["json"])
    hit, found = lines_of(measured[2]["c2"]["json"])
    gate = cli(repo, "gate", "--baseline", "none", "--fail-under-total", "50", "--json")
    assert gate.returncode == 0, gate.stderr
    data = json.loads(gate.stdout)["data"]
    review = json.loads(cli(repo, "review", "change", "--baseline", "none", "--json").stdout)["data"]
    assert data["baseline"]["kind"] == review["baseline"]["kind"] == "none"
    assert data["current"]["lines"] == review["current"]["lines"] == [hit, found]
    assert data["categories"] == review["categories"] and data["categories"]["UIC"] == found - hit


# -- no baseline yet, and the fallback to the nearest measured ancestor --------------------------


def test_no_baseline_yet_is_exit_1_with_baseline_unavailable_in_json_and_one_line_on_stderr(
    repo: Path, measured
) -> None:
    _repo, commits, saved = measured
    both_measured(repo, saved)  # HEAD~1 (c1) was never measured
    for command in ("gate", "diff"):
        done = cli(repo, command, "--baseline", "HEAD~1", "--json")
        assert done.returncode == 1
        error = json.loads(done.stdout)["error"]  # stdout is the machine answer CI reads
        assert error["code"] == "baseline_unavailable" and error["details"]["commit"] == commits["c1"]
        assert len(done.stderr.splitlines()) == 1
        assert done.stderr.startswith("error [baseline_unavailable]: ")
        assert commits["c1"][:12] in done.stderr and "--baseline-fallback ancestor" in done.stderr
        text = cli(repo, command, "--baseline", "HEAD~1")
        assert text.returncode == 1 and text.stdout == "" and text.stderr == done.stderr
    # An internal failure is exit 1 too, but its code says so: not a repository here.
    elsewhere = cli(repo.parent, "gate", "--baseline", "HEAD~1", "--json")
    assert elsewhere.returncode == 1 and "baseline_unavailable" not in elsewhere.stdout + elsewhere.stderr


def test_baseline_fallback_ancestor_compares_with_the_nearest_measured_ancestor_and_names_it(
    repo: Path, measured
) -> None:
    _repo, commits, saved = measured
    both_measured(repo, saved)
    done = cli(
        repo,
        "gate",
        "--baseline",
        "HEAD~1",
        "--baseline-fallback",
        "ancestor",
        "--fail-under-patch",
        "50",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["data"]
    assert data["baseline"]["commit"] == commits["c0"][:12]
    fallback = data["baseline"]["fallback"]
    assert fallback["kind"] == "ancestor" and fallback["asked"] == {"kind": "ref", "ref": "HEAD~1"}
    assert fallback["asked_commit"] == commits["c1"] and fallback["commit"] == commits["c0"]
    assert fallback["commits_back"] == 1
    # The same comparison as naming the ancestor.
    direct = json.loads(
        cli(repo, "gate", "--baseline", commits["c0"], "--fail-under-patch", "50", "--json").stdout
    )
    assert data["categories"] == direct["data"]["categories"] and data["patch"] == direct["data"]["patch"]
    text = cli(
        repo, "gate", "--baseline", "HEAD~1", "--baseline-fallback", "ancestor", "--fail-under-patch", "50"
    )
    assert text.returncode == 0
    assert text.stdout.splitlines()[0] == (
        f"baseline fallback: no snapshot of suite 'default' measures the baseline commit {commits['c1'][:12]}; "
        f"compared with its nearest measured ancestor {commits['c0'][:12]}, 1 commit back"
    )
    table = cli(repo, "diff", "--baseline", "HEAD~1", "--baseline-fallback", "ancestor")
    assert table.returncode == 0 and f"nearest measured ancestor {commits['c0'][:12]}" in table.stdout
    markdown = cli(
        repo, "diff", "--baseline", "HEAD~1", "--baseline-fallback", "ancestor", "--format", "markdown"
    )
    assert (
        f"> Baseline fallback: no snapshot of suite 'default' measures the baseline commit "
        f"{commits['c1'][:12]}; compared with its nearest measured ancestor {commits['c0'][:12]}"
        in markdown.stdout
    )


def test_baseline_fallback_without_a_measured_ancestor_is_still_baseline_unavailable(
    repo: Path, measured
) -> None:
    _repo, _commits, saved = measured
    ingest(repo, saved["c2"]["json"])  # only HEAD is measured
    done = cli(repo, "gate", "--baseline", "HEAD~1", "--baseline-fallback", "ancestor", "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["error"]["code"] == "baseline_unavailable"
    assert "nor does any of its ancestors" in done.stderr and len(done.stderr.splitlines()) == 1


async def test_baseline_fallback_works_when_the_daemon_holds_the_store(repo: Path, measured) -> None:
    _repo, commits, saved = measured
    both_measured(repo, saved)
    async with in_process(Settings.from_env(port=0)) as d:
        await asyncio.to_thread(d.client().register, repo)  # the daemon now holds the store
        done = await asyncio.to_thread(
            cli,
            repo,
            "gate",
            "--baseline",
            "HEAD~1",
            "--baseline-fallback",
            "ancestor",
            "--fail-under-patch",
            "50",
            "--json",
            process=True,  # routed to the daemon in this event loop
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"]["baseline"]["fallback"]["commit"] == commits["c0"]


# -- annotations: standard error or a file, never standard output --------------------------------


def test_annotations_go_to_stderr_and_json_on_stdout_stays_valid(repo: Path, measured) -> None:
    both_measured(repo, measured[2])
    start = line_number(repo, "    if fee > amount:")
    for fmt in (["--format", "json"], ["--json"]):
        done = cli(repo, "diff", "--baseline", "HEAD~2", *fmt, "--annotations")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)  # the whole of stdout is one JSON document
        assert ("data" in data) == (fmt == ["--json"])
        assert "::" not in done.stdout
        assert done.stderr.splitlines() == [
            (
                f"::warning file=shop/cart.py,line={start},endLine={start + 2},title=UNC uncovered new code::"
                "3 new or changed lines not covered by any test"
            )
        ]


def test_json_and_a_format_never_silently_override_each_other(repo: Path, measured) -> None:
    both_measured(repo, measured[2])
    for fmt in ("markdown", "table", "json"):
        done = cli(repo, "diff", "--baseline", "HEAD~2", "--json", "--format", fmt)
        assert done.returncode == 2 and "give one of them" in done.stderr and done.stdout == ""
    table = cli(repo, "diff", "--baseline", "HEAD~2")
    assert table.returncode == 0 and "category" in table.stdout and not table.stdout.startswith("{")


def test_annotations_can_go_to_a_file_with_markdown_on_stdout(repo: Path, measured, tmp_path: Path) -> None:
    both_measured(repo, measured[2])
    target = tmp_path / "annotations.txt"
    done = cli(repo, "diff", "--baseline", "HEAD~2", "--format", "markdown", "--annotations", str(target))
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("### Coverage change\n") and "::warning" not in done.stdout
    assert target.read_text().startswith("::warning file=shop/cart.py,line=")
    unwritable = cli(
        repo, "diff", "--baseline", "HEAD~2", "--annotations", str(tmp_path / "no" / "such" / "dir")
    )
    assert (
        unwritable.returncode == 2
        and unwritable.stdout == ""
        and "cannot write the annotations" in unwritable.stderr
    )


# -- the Markdown pull-request comment ------------------------------------------------------------


def test_the_markdown_report_reads_like_a_pull_request_comment(repo: Path, measured) -> None:
    _repo, commits, saved = measured
    both_measured(repo, saved)
    done = cli(repo, "diff", "--baseline", "HEAD~2", "--format", "markdown")
    assert done.returncode == 0, done.stderr
    md = done.stdout
    before, after = lines_of(saved["c0"]["json"]), lines_of(saved["c2"]["json"])
    assert after[0] * before[1] < before[0] * after[1]  # the untested refund lowers the total
    data = json.loads(cli(repo, "diff", "--baseline", "HEAD~2", "--json").stdout)["data"]
    patch = data["patch"]
    # Total before -> after with the change, and patch coverage, in the first line under the title.
    first = md.splitlines()[2]
    totals = total_of(saved["c0"]["json"]), total_of(saved["c2"]["json"])  # coverage.py's own totals
    assert first.startswith(f"**Total coverage: {shown(totals[0])} → {shown(totals[1])} (-")
    assert (
        f"**Patch coverage: {percent(patch['hit'], patch['found'])}** ({patch['hit']} of {patch['found']} "
        "added or changed lines covered)" in first
    )
    assert f"Baseline `{commits['c0'][:12]}` (ref `HEAD~2`, {before[0]}/{before[1]} lines covered)" in md
    # The per-file delta of the one changed source file.
    row = next(line for line in md.splitlines() if line.startswith("| `shop/cart.py` |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "modified" and cells[4].startswith("-") and cells[4].endswith("%")
    assert cells[3].endswith(f"/{after[1]})") and cells[6] == "3"
    # The uncovered new lines with their measured source, marked.
    n = line_number(repo, UNCOVERED)
    assert f"`shop/cart.py`: lines {n - 1}-{n + 1}" in md
    assert f"! {n}  {UNCOVERED}" in md.splitlines()
    assert re.search(r"^```python$", md, re.MULTILINE)
    # The same comment from the report itself, compared without storing it: the text it measured is the tree's.
    unstored = cli(repo, "diff", "--baseline", "HEAD~2", "--current", REPORTS["json"], "--format", "markdown")
    assert unstored.returncode == 0 and f"! {n}  {UNCOVERED}" in unstored.stdout.splitlines()
    # Plain words beside lcov's codes.
    assert "#### UNC uncovered new code" in md and "| GNC gained new code |" in md
    assert "\n_Claim: supported._\n" in md  # the claim and its reasons close the comment
