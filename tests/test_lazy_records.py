"""The pieces a read imports lazily give the answers they gave when they were imported at start (issue 29).

A read that only prints records shapes snapshots and file summaries without cattrs (``snapshot_to_dict``,
``summary_to_dict``): on real stored records they give exactly the converter's shape of the record. The
converter itself is built on first use and is the one every record registers its hooks on. Review tasks are
named "module:function" and resolved when asked: every task resolves to its module's function. NumPy is
imported by the functions that compute with columns, not by the modules a read imports; the dtypes the
report's schemas name are NumPy's. Module sets are read in child interpreters (``sys.modules``); nothing is
timed here (benchmarks/cli.py measures).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from coverage_core import model
from coverage_core.model import snapshot_to_dict, summary_to_dict, the_converter
from coverage_core.operations import review_tasks
from coverage_core.operations.review_task_table import BY_NAME, TASK_NAMES
from coverage_core.project import Project, open_project
from coverage_core.report import SCHEMAS
from coverage_core.vocabulary import COUNTERS

from .environment import test_env


def converted_snapshot(snapshot: model.Snapshot) -> dict[str, Any]:
    """The snapshot's JSON shape as it was built before: the converter's, totals in counter order, the
    warnings as a list and the headline last."""
    body: dict[str, Any] = the_converter().unstructure(snapshot)
    body["totals"] = {k: snapshot.totals[k].to_dict() for k in COUNTERS if k in snapshot.totals}
    head = snapshot.headline
    body["headline"] = head.to_dict() if head else None
    body["warnings"] = list(snapshot.warnings)
    return body


@pytest.fixture
def stored(sample_repo: Path) -> Any:
    with open_project(sample_repo) as project:
        project.ingest(sample_repo / "step3.coverage.json", suite="unit")
        project.ingest(sample_repo / "step3.coverage.lcov", suite="lcov")
        yield project


def test_a_snapshot_shaped_by_hand_is_the_converters_shape_of_it(stored: Project) -> None:
    snapshots = stored.snapshots()
    assert {s.format for s in snapshots} == {"coveragepy", "lcov"}
    for snapshot in snapshots:
        warned = attrs.evolve(snapshot, warnings=({"code": "w", "message": "a warning"},), duplicate=True)
        for record in (snapshot, warned):
            shaped = snapshot_to_dict(record)
            assert shaped == converted_snapshot(record)
            assert list(shaped) == list(converted_snapshot(record))  # the same keys in the same order
            assert json.loads(json.dumps(shaped)) == shaped


def test_a_file_summary_shaped_by_hand_is_the_converters_shape_of_it(stored: Project) -> None:
    for snapshot in stored.snapshots():
        files = stored.files(snapshot.snapshot_id).files
        assert files
        for summary in files:
            for record in (summary, attrs.evolve(summary, headline=None), attrs.evolve(summary, excluded=3)):
                shaped = summary_to_dict(record)
                assert shaped == the_converter().unstructure(record)
                assert list(shaped) == list(the_converter().unstructure(record))


def test_the_converter_is_built_once_and_carries_the_execution_records_hooks() -> None:
    from coverage_core.execution.records import CommandSpec, ReportArtifact, spec_json

    assert model.converter is the_converter() is the_converter()
    artifact = ReportArtifact(path="c.info", format=None, suite="unit", scope="complete")
    spec = CommandSpec(
        argv=("python", "-m", "pytest"),
        cwd=".",
        timeout_s=60,
        env={},
        artifacts=(artifact,),
        args_policy="none",
    )
    assert model.to_json(spec) == spec_json(spec)
    assert model.from_json(model.to_json(spec), CommandSpec) == spec
    with pytest.raises(AttributeError):
        model.no_such_record  # noqa: B018


def test_every_review_task_resolves_to_its_modules_function() -> None:
    for task in TASK_NAMES:
        found = review_tasks.handler(task)
        named = {**review_tasks.TASKS, **review_tasks.UNSELECTED}[task]
        module, _, name = named.partition(":")
        owner = review_tasks if module == "-" else importlib.import_module(f"coverage_core.review.{module}")
        assert found is getattr(owner, name), task
        assert callable(found)
    assert set(review_tasks.TASKS) | set(review_tasks.UNSELECTED) == set(TASK_NAMES)
    assert all(BY_NAME[t].measured for t in review_tasks.TASKS)


def test_the_schemas_dtype_names_are_numpys_dtypes() -> None:
    wanted = {"int32": np.int32, "int64": np.int64, "int8": np.int8, "object": object}
    for table in SCHEMAS.values():
        for name in table.values():
            assert np.dtype(name) == np.dtype(wanted[name])


IMPORTS = """\
import json, sys
import coverage_core.model, coverage_core.report, coverage_core.counts, coverage_core.diffmap
import coverage_core.storage.store, coverage_core.storage.payload, coverage_core.project
import coverage_core.operations.review_tasks
import coverage_core.review.insight, coverage_core.review.listing, coverage_core.review.context
before = sorted(sys.modules)
coverage_core.model.converter
print(json.dumps([before, sorted(sys.modules)]))
"""


def test_the_modules_a_read_imports_import_neither_numpy_nor_cattrs_nor_every_task(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-c", IMPORTS],
        capture_output=True,
        text=True,
        env=test_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert process.returncode == 0, process.stderr[-2000:]
    before, after = map(set, json.loads(process.stdout))
    assert {"numpy", "cattrs", "coverage_core.review.history", "coverage_core.review.audit"}.isdisjoint(
        before
    )
    assert not {m for m in before if m.startswith(("coverage_core.execution", "coverage_core.composite"))}
    assert "cattrs" in after  # the converter, built on first use


def test_the_heap_trim_is_looked_up_on_the_first_release_and_then_kept() -> None:
    from coverage_core.parsers import memory_budget

    memory_budget.release_memory()
    memory_budget.release_memory()
    assert len(memory_budget._TRIM) == 1
    if sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION"):
        assert callable(memory_budget._TRIM[0])  # glibc has malloc_trim


def test_a_lease_held_through_portalocker_is_seen_held_by_the_flock_look_and_free_once_released(
    tmp_path: Path,
) -> None:
    from coverage_core.locks import Lease, is_held

    path = tmp_path / "x.lock"
    assert not is_held(path)  # no file: nobody holds it
    lease = Lease.acquire(path, {"owner": "test"}, what="the test lease", suggestion="none")
    try:
        assert is_held(path)
        assert is_held(path)  # the look takes nothing: still held by the lease
    finally:
        lease.release()
    assert not is_held(path)
    again = Lease.acquire(
        path, {"owner": "test"}, what="the test lease", suggestion="none"
    )  # the look let go
    again.release()
