"""Composite production coverage over a real multi-language product built and measured in the test run.

The fixture (tests/compositefixture.py) compiles a C library with clang's
source-based coverage in two variants, measures a Python package with
coverage.py (arcs) and a JavaScript module with c8, and writes one regions-v1
report. Every expected figure here is counted from the raw reports, not by the
code under test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from coverage_core import open_project
from coverage_core.composite import build, persistence
from coverage_core.composite.build import ReportSpec
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.service import Service
from coverage_core.storage import compaction
from tests import commandline
from tests.compositefixture import make_product, measure, specs
from tests.gitrepo import commit, git

INVENTORY = "coverage-inventory.json"


# -- independent hand counts from the raw reports ------------------------------------------------


def _llvm(path: Path) -> dict[str, tuple[int, int]]:
    data = json.loads(path.read_text())["data"][0]
    spans: dict[tuple, int] = {}
    for fn in data["functions"]:
        for r in fn["regions"]:
            if r[7] == 0:  # CodeRegion
                key = tuple(r[:4])
                spans[key] = spans.get(key, 0) + r[4]
    outcomes = [c for f in data["files"] for b in f["branches"] for c in (b[4], b[5])]
    functions = [fn["count"] for fn in data["functions"]]
    return {
        "code": (len(spans), sum(1 for v in spans.values() if v)),
        "branch": (len(outcomes), sum(1 for c in outcomes if c)),
        "function": (len(functions), sum(1 for c in functions if c)),
    }


def _coveragepy(path: Path) -> dict[str, tuple[int, int]]:
    files = json.loads(path.read_text())["files"]
    code = [
        (len(f["executed_lines"]) + len(f["missing_lines"]), len(f["executed_lines"])) for f in files.values()
    ]
    arcs = [
        (len(f["executed_branches"]) + len(f["missing_branches"]), len(f["executed_branches"]))
        for f in files.values()
    ]
    fns = [
        (1, int(bool(fn["executed_lines"])))
        for f in files.values()
        for name, fn in f["functions"].items()
        if name and (fn["executed_lines"] or fn["missing_lines"])
    ]
    return {
        "code": tuple(map(sum, zip(*code))),
        "branch": tuple(map(sum, zip(*arcs))),
        "function": tuple(map(sum, zip(*fns))),
    }


def _istanbul_aliased(path: Path) -> dict[str, tuple[int, int]]:
    """The two aliased copies of one source, as one: each item identified by its location, covered when either
    copy's count is. (c8 reports only the blocks V8 saw, so the copies' branch maps differ.)"""
    entries = list(json.loads(path.read_text()).values())
    assert len(entries) == 2

    def loc(x: dict) -> tuple:
        return (x["start"]["line"], x["start"]["column"], x["end"]["line"], x["end"]["column"])

    items: dict[str, dict[tuple, int]] = {"code": {}, "branch": {}, "function": {}}
    for e in entries:
        for k, n in e["s"].items():
            key = loc(e["statementMap"][k])
            items["code"][key] = max(items["code"].get(key, 0), n)
        for k, outcomes in e["b"].items():
            for i, n in enumerate(outcomes):
                key = (*loc(e["branchMap"][k]["loc"]), i)
                items["branch"][key] = max(items["branch"].get(key, 0), n)
        for k, n in e["f"].items():
            key = loc(e["fnMap"][k]["loc"])
            items["function"][key] = max(items["function"].get(key, 0), n)
    return {kind: (len(v), sum(1 for n in v.values() if n)) for kind, v in items.items()}


SHADER = {"code": (3, 2), "branch": (1, 1), "function": (0, 0)}


def _combined(*counts: dict[str, tuple[int, int]]) -> dict[str, int]:
    found = sum(c[k][0] for c in counts for k in ("code", "branch"))
    hit = sum(c[k][1] for c in counts for k in ("code", "branch"))
    return {"found": found, "hit": hit}


def _as_counter(pair: tuple[int, int]) -> dict[str, int]:
    return {"found": pair[0], "hit": pair[1]}


@pytest.fixture(scope="module")
def measured_product(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Path]]:
    """The product built and measured once for this file (two clang builds, coverage.py, c8): its checkout,
    a pristine copy of it and the reports."""
    base = tmp_path_factory.mktemp("composite")
    root = make_product(base / "product")
    reports = measure(root)
    pristine = base / "pristine"
    shutil.copytree(root, pristine, symlinks=True)
    return root, pristine, reports


@pytest.fixture
def product(measured_product: tuple[Path, Path, dict[str, Path]]) -> tuple[Path, dict[str, Path]]:
    """A fresh measured product for each test: the pristine checkout and reports put back where they were
    measured (the reports name their sources by absolute path), so what one test edits, commits or stores
    never reaches the next."""
    root, pristine, reports = measured_product
    shutil.rmtree(root)
    shutil.copytree(pristine, root, symlinks=True)
    return root, reports


def _build(root: Path, reports, **kw):
    with open_project(root) as project:
        return build(project, INVENTORY, reports, **kw)


# -- the exact figure ----------------------------------------------------------------------------


def test_the_combined_percentage_is_the_hand_count_over_every_report(product) -> None:
    """Seed: "LLVM/native/WASM, coverage.py, Istanbul, and `coverage-mcp-regions-v1` evidence map into one
    canonical region model." """
    root, reports = product
    comp = _build(root, specs(reports))
    fast, safe = _llvm(reports["native-fast"]), _llvm(reports["native-safe"])
    py, js = _coveragepy(reports["python"]), _istanbul_aliased(reports["js"])
    assert comp.status == "complete" and comp.blocking == () and comp.denominator_known
    assert comp.totals["combined"] == _combined(fast, safe, py, js, SHADER)
    for kind in ("code", "branch", "function"):
        assert comp.totals[kind] == _as_counter(
            tuple(sum(c[kind][i] for c in (fast, safe, py, js, SHADER)) for i in (0, 1))
        )
    by_id = {c.id: c for c in comp.components}
    assert by_id["native"].totals["combined"] == _combined(fast, safe)
    assert by_id["python"].totals["combined"] == _combined(py)
    assert by_id["js"].totals["combined"] == _combined(js)
    assert by_id["shaders"].totals["combined"] == _combined(SHADER)
    # Facts of the sources themselves: three C functions, never_called never runs; the safe
    # variant has one more decision (b == 0) than the fast one.
    assert fast["function"] == (3, 2) and safe["function"] == (3, 2)
    assert safe["branch"][0] == fast["branch"][0] + 2
    c = comp.totals["combined"]
    assert comp.percent() == round(100.0 * c["hit"] / c["found"], 2)
    assert comp.commit == git(root, "rev-parse", "HEAD") and comp.dirty is False
    assert {a.sha256 for a in comp.artifacts} == {
        __import__("hashlib").sha256(p.read_bytes()).hexdigest() for p in reports.values()
    }
    assert comp.toolchains.get("llvm:llvm-cov") and comp.inventory_path == INVENTORY


def test_every_declared_variant_is_required_even_for_one_shared_source(product) -> None:
    """Seed: "Every declared package/backend variant is required even when variants share a logical
    source." """
    root, reports = product
    comp = _build(root, specs(reports, without="native-safe"))
    assert comp.status == "incomplete"
    assert [(b.component, b.variant, b.logical_source_id, b.reason) for b in comp.blocking] == [
        ("native", "safe", "native/src/mathlib.c", "missing")
    ]


# -- completeness never lowers the denominator ---------------------------------------------------


def test_removing_one_component_report_is_incomplete_with_its_reason_and_the_same_denominator(
    product,
) -> None:
    """Seed: "Missing, stale, malformed, unsupported, or source-mismatched evidence makes the composite
    incomplete and never lowers its denominator." """
    root, reports = product
    whole = _build(root, specs(reports))
    part = _build(root, specs(reports, without="python"))
    assert part.status == "incomplete"
    assert {(b.component, b.reason, b.denominator) for b in part.blocking} == {
        ("python", "missing", "carried")
    }
    assert sorted(b.logical_source_id for b in part.blocking) == [
        "py/fixpkg/__init__.py",
        "py/fixpkg/api.py",
    ]
    assert part.totals["combined"]["found"] == whole.totals["combined"]["found"]
    py = _coveragepy(reports["python"])
    assert part.totals["combined"]["hit"] == whole.totals["combined"]["hit"] - py["code"][1] - py["branch"][1]
    assert part.remediation.measure[0].component == "python"


def test_without_any_earlier_measurement_an_unmeasured_entry_says_its_denominator_is_unknown(product) -> None:
    root, reports = product
    comp = _build(root, specs(reports, without="js"))
    assert comp.status == "incomplete" and comp.denominator_known is False
    assert [(b.logical_source_id, b.reason, b.denominator) for b in comp.blocking] == [
        ("js-shapes", "missing", "unknown")
    ]


def test_a_malformed_or_unsupported_report_blocks_its_entries_with_that_reason(product) -> None:
    """Seed: "Missing, stale, malformed, unsupported, or source-mismatched evidence makes the composite
    incomplete and never lowers its denominator." """
    root, reports = product
    broken = root / "reports" / "broken.json"
    broken.write_text('{"result": {}, "coverage-final": ')
    lcov = root / "reports" / "native.info"
    lcov.write_text("TN:\nSF:native/src/mathlib.c\nDA:4,1\nend_of_record\n")
    given = [s for s in specs(reports) if not s.startswith(("js=", "native:safe="))]
    comp = _build(root, [*given, f"js={broken}", f"native:safe={lcov}"])
    reasons = {(b.component, b.variant): b.reason for b in comp.blocking}
    assert reasons == {("js", "default"): "malformed", ("native", "safe"): "unsupported"}
    assert "takes llvm evidence" in next(b.detail for b in comp.blocking if b.component == "native")


def test_a_report_of_another_commit_is_stale(product) -> None:
    """Seed: "Missing, stale, malformed, unsupported, or source-mismatched evidence makes the composite
    incomplete and never lowers its denominator." """
    root, reports = product
    first = git(root, "rev-parse", "HEAD")
    (root / "NOTES.md").write_text("a commit that changes no source\n")
    commit(root, "notes")
    given = [ReportSpec(str(reports["python"]), "python", commit=first)]
    given += [s for s in specs(reports) if not s.startswith("python=")]
    comp = _build(root, given)
    assert {(b.component, b.reason) for b in comp.blocking} == {("python", "stale")}
    assert comp.totals["combined"]["found"] == _build(root, specs(reports)).totals["combined"]["found"]


# -- aliases and source identity -----------------------------------------------------------------


def test_an_alias_counts_a_shared_source_once(product) -> None:
    """Seed: "Its authoritative inventory owns the denominator" """
    root, reports = product
    aliased = _build(root, specs(reports))
    js = _istanbul_aliased(reports["js"])
    by_id = {c.id: c for c in aliased.components}
    assert by_id["js"].totals["combined"] == _combined(js)
    inventory = json.loads((root / INVENTORY).read_text())
    del inventory["aliases"]
    (root / INVENTORY).write_text(json.dumps(inventory))
    commit(root, "no alias")
    twice = _build(root, specs(reports))
    by_id = {c.id: c for c in twice.components}
    assert by_id["js"].entries == 2
    # Without the alias the two copies are two sources, each with its own items.
    each = list(json.loads(reports["js"].read_text()).values())
    separately = sum(len(e["s"]) + sum(len(b) for b in e["b"].values()) for e in each)
    assert by_id["js"].totals["combined"]["found"] == separately > _combined(js)["found"]


def test_a_source_edited_after_its_report_is_source_mismatched(product) -> None:
    """Seed: "Missing, stale, malformed, unsupported, or source-mismatched evidence makes the composite
    incomplete and never lowers its denominator." """
    root, reports = product
    _build(root, specs(reports))
    c_file = root / "native/src/mathlib.c"
    c_file.write_text(c_file.read_text().replace("return x * 3;", "return x * 4;"))
    comp = _build(root, specs(reports))
    mismatched = {(b.component, b.variant) for b in comp.blocking if b.reason == "source_mismatched"}
    assert mismatched == {("native", "fast"), ("native", "safe")}
    assert all(b.denominator == "zeroed_evidence" for b in comp.blocking)
    assert comp.dirty is True


def test_a_regions_report_whose_source_sha256_differs_is_source_mismatched(product) -> None:
    root, reports = product
    whole = _build(root, specs(reports))
    shader = root / "shaders/kernel.wgsl"
    shader.write_text(shader.read_text() + "// tuned\n")
    commit(root, "tune the shader")
    comp = _build(root, specs(reports))
    assert [(b.component, b.reason) for b in comp.blocking] == [("shaders", "source_mismatched")]
    assert "source_sha256" in comp.blocking[0].detail
    assert comp.totals["combined"]["found"] == whole.totals["combined"]["found"]


# -- surfaces: coverage_import, coverage_review, project_context, the CLI ------------------------


def _svc_call(root: Path, name: str, args: dict) -> dict:
    with open_project(root) as project:
        return Service(project).call(name, args)


def test_composite_change_review_between_two_commits(product) -> None:
    """Seed: "Composite region comparisons load all stored canonical rows for exact category counts before
    applying response limits." """
    root, reports = product
    rel = [s.replace(f"{root}/", "") for s in specs(reports)]
    first = _svc_call(root, "coverage_import", {"inventory_path": INVENTORY, "reports": rel})
    base_id = first["data"]["composite"]["composite_snapshot_id"]
    assert first["data"]["claim_status"] == "supported"
    # Commit 2: the Python driver exercises unused(); remeasure everything.
    driver = root / "drivers/run_py.py"
    driver.write_text(driver.read_text() + "from fixpkg.api import unused\nassert unused(1) == 1\n")
    commit(root, "test unused")
    reports = measure(root)
    second = _svc_call(
        root,
        "coverage_import",
        {"inventory_path": INVENTORY, "reports": [s.replace(f"{root}/", "") for s in specs(reports)]},
    )
    cur_id = second["data"]["composite"]["composite_snapshot_id"]
    ctx = _svc_call(root, "project_context", {})
    assert ctx["data"]["latest_composite"]["composite_snapshot_id"] == cur_id
    answer = _svc_call(
        root,
        "coverage_review",
        {
            "task": "change",
            "measurement": {"composite_snapshot_id": cur_id},
            "baseline": {"kind": "explicit", "composite_snapshot_id": base_id},
        },
    )
    data = answer["data"]
    assert (
        data["baseline"]["composite_snapshot_id"] == base_id
        and data["current"]["composite_snapshot_id"] == cur_id
    )
    combined = data["categories"]["combined"]
    # unused() ran: its statements (if, return 1) and the arc into `return 1` were gained; nothing was lost.
    assert combined["lost"] == 0 and combined["gained"] >= 3
    assert data["comparison"]["delta"]["combined"]["hit"] == combined["gained"] - combined["lost"]
    total = sum(combined.values()) - combined["removed_covered"] - combined["removed_uncovered"]
    assert total == second["data"]["composite"]["totals"]["combined"]["found"]
    inc = _svc_call(
        root,
        "coverage_review",
        {
            "task": "incremental",
            "measurement": {"composite_snapshot_id": cur_id},
            "baseline": {"kind": "explicit", "composite_snapshot_id": base_id},
        },
    )["data"]
    assert inc["projection"] == "baseline_union_current"
    assert (
        inc["comparison"]["union"]["combined"]["hit"]
        >= second["data"]["composite"]["totals"]["combined"]["hit"]
    )
    insight = _svc_call(
        root, "coverage_review", {"task": "insight", "measurement": {"composite_snapshot_id": cur_id}}
    )["data"]
    assert insight["composite"]["composite_snapshot_id"] == cur_id and insight["targets"]
    assert all(len(t["ranges"]) <= 3 for t in insight["targets"])


def test_composites_of_different_inventories_do_not_compare(product) -> None:
    """Seed: "composite comparisons additionally require the same mapping version and inventory hash." """
    root, reports = product
    a = _build(root, specs(reports))
    inventory = json.loads((root / INVENTORY).read_text())
    inventory["components"][0]["variants"] = ["fast", "safe", "debug"]
    (root / INVENTORY).write_text(json.dumps(inventory))
    commit(root, "a third variant")
    b = _build(root, specs(reports))
    assert b.status == "incomplete"
    with open_project(root) as project, pytest.raises(CoverageError) as err:
        Service(project).call(
            "coverage_review",
            {
                "task": "change",
                "measurement": {"composite_snapshot_id": b.composite_id},
                "baseline": {"kind": "explicit", "composite_snapshot_id": a.composite_id},
            },
        )
    assert err.value.code is ErrorCode.INCOMPATIBLE_SNAPSHOTS and "inventory hash" in err.value.message


def test_the_cli_builds_and_shows_a_composite(product) -> None:
    root, reports = product
    # in process: the answers and exit codes are the point
    run = commandline.cli("composite", "build", "--inventory", INVENTORY, *specs(reports), "--json", cwd=root)
    assert run.returncode == 0, run.stderr
    comp = json.loads(run.stdout)["data"]["composite"]
    assert comp["status"] == "complete"
    shown = commandline.cli("composite", "show", cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert comp["composite_snapshot_id"] in shown.stdout and "component native" in shown.stdout


# -- immutability and ordinary compaction --------------------------------------------------------


def _composite_rows(root: Path, composite_id: str) -> dict[str, list]:
    """Every stored row of one composite, by table (its own key included)."""
    with open_project(root) as project:
        con = project.store.con
        comp = con.execute(
            "SELECT comp FROM composite_snapshots WHERE composite_id = ?", [composite_id]
        ).fetchall()[0][0]
        return {
            table: con.execute(f"SELECT * FROM {table} WHERE comp = ? ORDER BY ALL", [comp]).fetchall()
            for table in ("composite_snapshots", "composite_entries", "composite_regions")
        }


def _ordinary(root: Path, records: list[str], suites: list[str] | None = None) -> list[str]:
    """Ordinary LCOV snapshots of the product's Python source, one per ``DA:`` record given."""
    ids = []
    for n, (record, suite) in enumerate(zip(records, suites or ["py"] * len(records), strict=True)):
        report = root / "reports" / f"ordinary{n}.info"
        report.write_text(f"TN:\nSF:py/fixpkg/api.py\nDA:{record}\nend_of_record\n")
        args = {"report_path": str(report.relative_to(root)), "suite": suite}
        ids.append(_svc_call(root, "coverage_import", args)["data"]["snapshot"]["snapshot_id"])
    return ids


def _composite_answers(root: Path, base_id: str, cur_id: str) -> list:
    out = []
    with open_project(root) as project:
        service = Service(project)
        for args in (
            {"task": "insight", "measurement": {"composite_snapshot_id": cur_id}},
            {"task": "insight", "measurement": {"composite_snapshot_id": base_id}, "representation": "audit"},
            {
                "task": "change",
                "measurement": {"composite_snapshot_id": cur_id},
                "baseline": {"kind": "explicit", "composite_snapshot_id": base_id},
            },
            {
                "task": "incremental",
                "measurement": {"composite_snapshot_id": cur_id},
                "baseline": {"kind": "explicit", "composite_snapshot_id": base_id},
                "representation": "audit",
            },
        ):
            envelope = json.loads(json.dumps(service.call("coverage_review", args), default=str))
            envelope["context"].pop("stats")
            out.append(envelope)
    return out


def test_a_stored_composite_never_changes_when_later_composites_and_snapshots_come_and_go(product) -> None:
    """Seed: "A composite snapshot is immutable and run-scoped." Rebuilding from the same reports stores a
    new composite; a second build, ordinary ingests and their deletion leave the first one's rows as
    they were."""
    root, reports = product
    first = _build(root, specs(reports))
    rows = _composite_rows(root, first.composite_id)
    again = _build(root, specs(reports))
    assert again.duplicate and again.composite_id == first.composite_id  # the stored one, as it was
    partial = _build(root, specs(reports, without="python"))
    ordinary = _ordinary(root, ["1,1"])
    with open_project(root) as project:
        project.delete_snapshots(ordinary, force=True)
    assert partial.status == "incomplete" and partial.composite_id != first.composite_id
    assert _composite_rows(root, first.composite_id) == rows
    with open_project(root) as project:
        assert persistence.get(project.store, first.composite_id) == first


def test_composites_answer_the_same_after_every_ordinary_snapshot_is_compacted(product) -> None:
    """Seed: "Composite rows are independent of ordinary zstd detail compaction" and "Composite snapshots and
    canonical composite regions are not part of the ordinary snapshot
    compaction transaction; their immutable rows remain directly queryable." """
    root, reports = product
    ordinary = _ordinary(root, ["1,0", "1,1", "2,1"], suites=["py", "py", "other"])
    base = _build(root, specs(reports, without="js"))
    cur = _build(root, specs(reports))
    rows = [_composite_rows(root, c.composite_id) for c in (base, cur)]
    before = _composite_answers(root, base.composite_id, cur.composite_id)
    with open_project(root) as project:
        done = project.compact(older_than="0")
        assert [c.snapshot_id for c in done.compacted] == ordinary[:1]
        for snapshot_id in ordinary[1:]:  # the protected newest of each suite too, by the mechanism
            snap = project.store.snap_key(snapshot_id)
            row = project.store.snapshot(snapshot_id)
            candidate = compaction.Candidate(snap, snapshot_id, row.suite, row.created_at)
            assert compaction.compact_snapshot(project.store, candidate) is not None
        assert project.compaction_inventory()["compacted"] == len(ordinary)
    assert [_composite_rows(root, c.composite_id) for c in (base, cur)] == rows
    assert _composite_answers(root, base.composite_id, cur.composite_id) == before


# -- evidence: identity, unknown denominators, toolchains, comparisons ---------------------------


def test_a_report_written_before_the_checkouts_head_is_stale_though_no_commit_is_named(product) -> None:
    """Seed: "Missing, stale, malformed, unsupported, or source-mismatched evidence makes the composite
    incomplete and never lowers its denominator." A report imported without its commit (coverage_import,
    as `composite build` does) is judged by its identity (written after HEAD was committed), not assumed to
    measure HEAD."""
    import os

    root, reports = product
    whole = _build(root, specs(reports)).totals["combined"]
    (root / "NOTES.md").write_text("a commit that changes no source\n")
    commit(root, "notes")
    head_time = int(git(root, "log", "-1", "--format=%ct"))
    for role, path in reports.items():  # the others measured again after the commit; python's before it
        when = head_time - 100 if role == "python" else head_time + 5
        os.utime(path, (when, when))
    rel = [s.replace(f"{root}/", "") for s in specs(reports)]
    comp = _svc_call(root, "coverage_import", {"inventory_path": INVENTORY, "reports": rel})["data"][
        "composite"
    ]
    assert {(b["component"], b["reason"]) for b in comp["blocking"]} == {("python", "stale")}
    assert all("written before" in (b["detail"] or "") for b in comp["blocking"]), comp["blocking"]
    assert comp["totals"]["combined"]["found"] == whole["found"]


def test_an_entry_with_no_evidence_and_nothing_to_carry_withholds_the_total_and_names_it(product) -> None:
    """Seed: "Its authoritative inventory owns the denominator" and "never lowers its denominator": with an
    entry whose denominator nobody measured, the composite states no percentage and names the entries
    that block one."""
    root, reports = product
    comp = _build(root, specs(reports, without="js"))
    shown = comp.to_dict()
    assert comp.percent() is None and shown["percent"] is None
    assert shown["total_withheld"] == {
        "reason": "denominator_unknown",
        "count": 1,
        "entries": [{"component": "js", "variant": "default", "logical_source_id": "js-shapes"}],
        "truncated": False,
    }
    assert comp.compact()["percent"] is None
    whole = _build(root, specs(reports))
    assert whole.percent() is not None and whole.to_dict()["total_withheld"] is None


def test_each_reports_toolchain_version_is_recorded_under_what_it_is(product) -> None:
    """Seed: "Composite snapshots persist mapping version, inventory hash, checkout revision/cleanliness,
    command registration, toolchain versions, and artifact hashes". coverage.py's own version, the
    regions tool's, llvm-cov's export format under that name (the report does not say LLVM's version), and
    an explicit "unrecorded" for a tool whose report names none (c8's coverage-final.json)."""
    root, reports = product
    comp = _build(root, specs(reports))
    python = json.loads(reports["python"].read_text())["meta"]["version"]
    export = json.loads(reports["native-fast"].read_text())["version"]
    assert comp.toolchains["coveragepy:coverage.py"] == python
    assert comp.toolchains["llvm:export-format"] == export
    assert comp.toolchains["llvm:llvm-cov"] == "unrecorded"
    assert comp.toolchains["regions-v1:wgsl-cov"] == "0.1"
    assert [v for k, v in comp.toolchains.items() if k.startswith("istanbul:")] == ["unrecorded"]


def test_a_composite_incremental_review_says_its_test_sets_and_attribution_are_unavailable(product) -> None:
    """Seed: "Both return grouped line categories, aggregate metric deltas, bounded opaque `test_id` set
    differences, and attribution status." A composite keeps no named-test observations (README, Composite
    coverage): its incremental review says so in both places instead of leaving them out."""
    root, reports = product
    base = _build(root, specs(reports, without="python"))
    cur = _build(root, specs(reports))
    data = _svc_call(
        root,
        "coverage_review",
        {
            "task": "incremental",
            "measurement": {"composite_snapshot_id": cur.composite_id},
            "baseline": {"kind": "explicit", "composite_snapshot_id": base.composite_id},
        },
    )["data"]
    assert data["tests"]["status"] == "unavailable" and "named-test" in data["tests"]["reason"]
    assert data["attribution"]["status"] == "unavailable" and data["attribution"]["reason"]
