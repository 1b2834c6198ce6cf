"""A registered command that declares a composite inventory as its artifact (issues 13 and 16).

The command really builds and measures the multi-language fixture of
tests/compositefixture.py (clang source-based coverage in two variants,
coverage.py, c8, a regions-v1 file) in its own process; when the run ends the
composite is built from the reports it refreshed. Expected figures come from
``composite.build`` over the same report files, the path ``coverage-mcp
composite build`` takes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from coverage_core import composite
from coverage_core.composite.records import (
    Blocking,
    ComponentSummary,
    EvidenceReport,
    Registration,
    Remediation,
)
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.execution import commands, runs
from coverage_core.execution.records import ReportUse
from coverage_core.model import from_json, to_json
from coverage_core.output_schemas import RUN_ARTIFACT
from coverage_core.project import Project, open_project
from coverage_core.service import Service

from .compositefixture import make_product, measure, regions_report, specs
from .systemtools import require
from .test_surface_drift import closed

PY = sys.executable
INVENTORY = "coverage-inventory.json"
TESTS_ROOT = str(Path(__file__).resolve().parents[1])  # holds tests/compositefixture.py for the command
REPORTS = [
    {"component": "native", "variant": "fast", "path": "reports/native-fast.json"},
    {"component": "native", "variant": "safe", "path": "reports/native-safe.json"},
    {"component": "python", "path": "reports/python.json"},
    {"component": "js", "path": "reports/js/coverage-final.json"},
    {"component": "shaders", "path": "reports/shaders.json"},
]
# The command: build and measure every component of the product, in the run's own processes.
MEASURE_ALL = "import pathlib; from tests.compositefixture import measure; measure(pathlib.Path.cwd())"
# The command: rewrite only the shader's regions-v1 report.
SHADERS_ONLY = (
    "import json, pathlib; from tests.compositefixture import regions_report; root = pathlib.Path.cwd(); "
    "(root / 'reports').mkdir(exist_ok=True); "
    "(root / 'reports/shaders.json').write_text(json.dumps(regions_report(root)))"
)


def toolchains() -> None:
    for tool in ("clang-14", "llvm-profdata", "llvm-cov", "node", "c8"):
        require(tool)


@pytest.fixture
def product(tmp_path: Path) -> Path:
    return make_product(tmp_path / "product")


@pytest.fixture
def project(product: Path) -> Iterator[Project]:
    with open_project(product) as opened:
        yield opened


def approved_composite(
    project: Project, code: str, reports: list[dict[str, Any]] = REPORTS, **extra: Any
) -> str:
    answer = Service(project).call(
        "register_test_command",
        {
            "name": "measure",
            "argv": [PY, "-c", code],
            "timeout_s": 600,
            "env": {"PYTHONPATH": TESTS_ROOT},
            "artifacts": [
                {"composite": {"inventory": INVENTORY, "reports": reports}},
                *extra.pop("artifacts", []),
            ],
            **extra,
        },
    )
    command = answer["data"]["command"]
    assert command["status"] == "pending"
    commands.approve(project, command["id"], approved_by="ann", via="cli")
    return command["id"]


def run(project: Project, command_id: str) -> dict[str, Any]:
    done = Service(project).call(
        "run_test", {"command_id": command_id, "wait": True, "reuse_if_unchanged": False}
    )["data"]["run"]
    for artifact in done["artifacts"]:
        Draft202012Validator(closed(RUN_ARTIFACT)).validate(artifact)
    return done


def comparable(record: composite.Composite) -> dict[str, Any]:
    data = record.to_dict()
    for key in ("composite_snapshot_id", "created_at", "provenance", "registration"):
        data.pop(key)
    data["artifacts"] = sorted(
        (a["component"], a["variant"], a["sha256"], a["status"]) for a in data["artifacts"]
    )
    return data


def stored_parts_round_trip(project: Project, stored: composite.Composite) -> None:
    """A stored composite's parts are records that unstructure to exactly its JSON columns and read back equal;
    its run artifact's report uses likewise."""
    columns = (
        project.store.con.cursor()
        .execute(
            "SELECT registration, artifacts, components, blocking, remediation FROM composite_snapshots "
            "WHERE composite_id = ?",
            [stored.composite_id],
        )
        .fetchone()
    )
    parts = (stored.registration, stored.artifacts, stored.components, stored.blocking, stored.remediation)
    kinds = (
        Registration,
        tuple[EvidenceReport, ...],
        tuple[ComponentSummary, ...],
        tuple[Blocking, ...],
        Remediation,
    )
    for column, part, kind in zip(columns, parts, kinds, strict=True):
        assert json.dumps(to_json(part)) == column
        assert from_json(json.loads(column), kind) == part
    [(reports,)] = (
        project.store.con.cursor()
        .execute("SELECT reports FROM run_artifacts WHERE composite_snapshot_id = ?", [stored.composite_id])
        .fetchall()
    )
    uses = from_json(json.loads(reports), tuple[ReportUse, ...])
    assert json.dumps(to_json(uses)) == reports


def test_a_run_builds_the_composite_its_command_declares_equal_to_composite_build_of_the_same_reports(
    project: Project, product: Path
) -> None:
    toolchains()
    command_id = approved_composite(project, MEASURE_ALL)
    done = run(project, command_id)
    assert done["state"] == "succeeded", done
    [artifact] = done["artifacts"]
    assert (
        artifact["kind"] == "composite" and artifact["path"] == INVENTORY and artifact["status"] == "ingested"
    )
    assert artifact["snapshot_id"] is None and artifact["composite_status"] == "complete"
    assert [(r["path"], r["status"]) for r in artifact["reports"]] == [(r["path"], "used") for r in REPORTS]
    stored = composite.get(project.store, artifact["composite_snapshot_id"])
    assert stored.provenance == "run"
    # The toolchain versions its reports name, as an import records them (not none).
    assert stored.toolchains["llvm:export-format"] and stored.toolchains["coveragepy:coverage.py"]
    stored_parts_round_trip(project, stored)
    assert to_json(stored.registration) == {
        "run_id": done["id"],
        "command_id": command_id,
        "args": [],
        "command_hash": commands.show_command(project, command_id)["content_hash"],
    }
    # The same reports through the build `coverage-mcp composite build` makes.
    by_role = {
        "native-fast": product / "reports/native-fast.json",
        "native-safe": product / "reports/native-safe.json",
        "python": product / "reports/python.json",
        "js": product / "reports/js/coverage-final.json",
        "shaders": product / "reports/shaders.json",
    }
    expected = composite.build(project, INVENTORY, specs(by_role))
    assert expected.status == "complete" and comparable(stored) == comparable(expected)
    # measurement {"run_id"} keeps meaning the run's ordinary snapshots: this run has none.
    with pytest.raises(CoverageError) as caught:
        Service(project).call("coverage_review", {"task": "insight", "measurement": {"run_id": done["id"]}})
    assert caught.value.code == ErrorCode.NOT_FOUND
    insight = Service(project).call(
        "coverage_review",
        {"task": "insight", "measurement": {"composite_snapshot_id": artifact["composite_snapshot_id"]}},
    )["data"]
    assert insight["composite"]["composite_snapshot_id"] == artifact["composite_snapshot_id"]


def test_reports_the_run_did_not_refresh_are_skipped_stale_and_the_composite_keeps_its_denominator(
    project: Project, product: Path
) -> None:
    toolchains()
    reports = measure(product)  # written before the run: the run refreshes the shader's report only
    whole = composite.build(project, INVENTORY, specs(reports))
    reports["js"].unlink()  # and one report is absent
    command_id = approved_composite(project, SHADERS_ONLY)
    done = run(project, command_id)
    assert done["state"] == "succeeded", done
    [artifact] = done["artifacts"]
    assert artifact["status"] == "ingested" and artifact["composite_status"] == "incomplete"
    statuses = {r["path"]: (r["status"], r.get("detail")) for r in artifact["reports"]}
    assert statuses == {
        "reports/native-fast.json": ("skipped_stale", "not created or modified by the run"),
        "reports/native-safe.json": ("skipped_stale", "not created or modified by the run"),
        "reports/python.json": ("skipped_stale", "not created or modified by the run"),
        "reports/js/coverage-final.json": ("skipped_stale", "absent"),
        "reports/shaders.json": ("used", None),
    }
    stored = composite.get(project.store, artifact["composite_snapshot_id"])
    stored_parts_round_trip(project, stored)
    reasons = {(b.component, b.variant): b.reason for b in stored.blocking}
    assert reasons == {
        ("native", "fast"): "stale",
        ("native", "safe"): "stale",
        ("python", "default"): "stale",
        ("js", "default"): "missing",
    }
    assert all(
        "not refreshed by run " + done["id"] in b.detail for b in stored.blocking if b.reason == "stale"
    )
    # Never a lowered denominator: every entry keeps its regions (carried from the earlier composite).
    assert stored.totals["combined"]["found"] == whole.totals["combined"]["found"]
    assert stored.denominator_known and {b.denominator for b in stored.blocking} == {"carried"}
    assert stored.totals["combined"]["hit"] < whole.totals["combined"]["hit"]
    # A run that refreshes none of the reports builds nothing.
    nothing = approved_composite(project, "print('measured nothing')")
    before = composite.latest(project.store).composite_id
    [skipped] = run(project, nothing)["artifacts"]
    assert (skipped["status"], skipped["composite_snapshot_id"]) == ("skipped_stale", None)
    assert composite.latest(project.store).composite_id == before


def test_a_component_the_inventory_does_not_declare_fails_the_artifact_with_its_code(
    project: Project, product: Path
) -> None:
    command_id = approved_composite(
        project,
        SHADERS_ONLY,
        [
            {"component": "shaders", "path": "reports/shaders.json"},
            {"component": "gpu", "path": "reports/shaders.json"},
        ],
    )
    done = run(project, command_id)
    assert done["state"] == "succeeded"  # the run's own exit state stands
    [artifact] = done["artifacts"]
    assert artifact["status"] == "failed" and artifact["error_code"] == "invalid_argument"
    assert "gpu" in artifact["detail"] and artifact["composite_snapshot_id"] is None
    assert composite.latest(project.store) is None  # nothing half-written
    # An undeclared variant, likewise.
    other = approved_composite(
        project, SHADERS_ONLY, [{"component": "shaders", "variant": "webgpu", "path": "reports/shaders.json"}]
    )
    [artifact] = run(project, other)["artifacts"]
    assert artifact["status"] == "failed" and "webgpu" in artifact["detail"]
    assert composite.latest(project.store) is None
    assert json.loads((product / "reports/shaders.json").read_text()) == regions_report(product)


def test_a_composite_artifact_is_part_of_the_content_hash(project: Project) -> None:
    first = approved_composite(
        project, SHADERS_ONLY, [{"component": "shaders", "path": "reports/shaders.json"}]
    )
    second = approved_composite(
        project,
        SHADERS_ONLY,
        [{"component": "shaders", "variant": "default", "path": "reports/shaders.json"}],
    )
    assert first != second
    shown = commands.show_command(project, first)
    assert shown["artifacts"] == [
        {
            "composite": {
                "inventory": INVENTORY,
                "reports": [{"component": "shaders", "variant": None, "path": "reports/shaders.json"}],
            }
        }
    ]


@pytest.mark.parametrize(
    ("composite_artifact", "code"),
    [
        (
            {"inventory": "../elsewhere.json", "reports": [{"component": "python", "path": "c.json"}]},
            ErrorCode.PATH_OUTSIDE_CHECKOUT,
        ),
        (
            {"inventory": INVENTORY, "reports": [{"component": "python", "path": "/tmp/c.json"}]},
            ErrorCode.PATH_OUTSIDE_CHECKOUT,
        ),
        ({"inventory": INVENTORY, "reports": [{"path": "c.json"}]}, ErrorCode.INVALID_ARGUMENT),
        (
            {"inventory": INVENTORY, "reports": [{"component": "../python", "path": "c.json"}]},
            ErrorCode.INVALID_ARGUMENT,
        ),
        (
            {"inventory": INVENTORY, "reports": [{"component": "python", "variant": "", "path": "c.json"}]},
            ErrorCode.INVALID_ARGUMENT,
        ),
        ({"inventory": INVENTORY, "reports": []}, ErrorCode.INVALID_ARGUMENT),
        (
            {"inventory": INVENTORY, "reports": [{"component": "python", "path": "c.json"}] * 2},
            ErrorCode.INVALID_ARGUMENT,
        ),
        (
            {"inventory": INVENTORY, "reports": [{"component": "python", "path": INVENTORY}]},
            ErrorCode.INVALID_ARGUMENT,
        ),
        (
            {"inventory": INVENTORY, "reports": [{"component": "python", "path": "c.json", "suite": "x"}]},
            ErrorCode.INVALID_ARGUMENT,
        ),
        ({"reports": [{"component": "python", "path": "c.json"}]}, ErrorCode.INVALID_ARGUMENT),
        (
            {
                "inventory": INVENTORY,
                "reports": [{"component": "python", "path": "c.json"}],
                "format": "llvm",
            },
            ErrorCode.INVALID_ARGUMENT,
        ),
    ],
)
def test_a_bad_composite_artifact_is_refused_with_a_clear_error_and_nothing_registered(
    project: Project, composite_artifact: dict[str, Any], code: ErrorCode
) -> None:
    with pytest.raises(CoverageError) as caught:
        Service(project).call(
            "register_test_command",
            {"name": "bad", "argv": [PY, "-c", "pass"], "artifacts": [{"composite": composite_artifact}]},
        )
    assert caught.value.code == code, caught.value.message
    assert caught.value.details["argument"] in ("artifacts", "composite inventory", "composite report path")
    assert commands.list_commands(project) == []


def test_a_composite_beside_an_ordinary_artifact_of_the_same_path_is_refused(project: Project) -> None:
    with pytest.raises(CoverageError) as caught:
        Service(project).call(
            "register_test_command",
            {
                "name": "bad",
                "argv": [PY, "-c", "pass"],
                "artifacts": [
                    {
                        "composite": {
                            "inventory": INVENTORY,
                            "reports": [{"component": "python", "path": "c.json"}],
                        }
                    },
                    {"path": INVENTORY, "suite": "unit"},
                ],
            },
        )
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT and "listed twice" in caught.value.message
    with pytest.raises(CoverageError) as caught:
        Service(project).call(
            "register_test_command",
            {
                "name": "bad",
                "argv": [PY, "-c", "pass"],
                "artifacts": [
                    {
                        "composite": {
                            "inventory": INVENTORY,
                            "reports": [{"component": "python", "path": "c.json"}],
                        },
                        "path": "c.json",
                        "suite": "unit",
                    }
                ],
            },
        )
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT
    assert commands.list_commands(project) == [] and runs.list_runs(project) == []
