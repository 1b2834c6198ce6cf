"""The execution records against real stored rows, and the run-state transition table (issue 28).

A real pytest suite runs under coverage.py in a real git checkout through a registered, approved command;
every record read back from the store (the command, its spec and decisions, the run, its artifacts and
transitions) unstructures to exactly the JSON the store holds or the surfaces answer, and structures back
to an equal record. The transition table is the one place a run's state changes are judged: every move it
allows happens, every other one is refused with a code and leaves the row as it was.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.execution import commands, runs
from coverage_core.execution.records import Command, CommandSpec, Decision, Run, Transition, spec_of_json
from coverage_core.model import converter
from coverage_core.project import Project, open_project
from coverage_core.service import Service
from coverage_core.storage.exec_db import exec_db
from coverage_core.vocabulary import RUN_STATES

from .gitrepo import make_repo

PY = sys.executable
# One argv word runs the suite under coverage.py and writes its JSON report, whatever the suite's outcome.
RUN_SUITE = """\
import subprocess, sys
code = subprocess.call([sys.executable, "-m", "coverage", "run", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "tests"])
subprocess.check_call([sys.executable, "-m", "coverage", "json", "-o", "coverage.json"])
sys.exit(code)
"""
FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef unused():\n    return 0\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "run_suite.py": RUN_SUITE,
    ".gitignore": ".coverage\ncoverage.json\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    with open_project(make_repo(tmp_path / "repo", FILES)) as opened:
        yield opened


def test_the_records_of_a_real_pytest_run_read_back_from_their_json_shapes_unchanged(
    project: Project,
) -> None:
    service = Service(project)
    registered = service.call(
        "register_test_command",
        {
            "name": "unit tests",
            "argv": [PY, "run_suite.py"],
            "env": {"PYTHONHASHSEED": "0"},
            "artifacts": [{"path": "coverage.json", "suite": "unit"}, {"path": "never.json", "suite": "x"}],
        },
    )["data"]["command"]
    command_id = registered["id"]
    commands.approve(project, command_id, approved_by="ann", via="cli", note="read it")
    done = service.call("run_test", {"command_id": command_id, "wait": True})["data"]["run"]
    assert done["state"] == "succeeded", done

    # The command: its spec's JSON is byte for byte the stored canonical registration, its hash the stored one.
    command = commands.command(project, command_id)
    stored_spec, stored_hash = exec_db(project.store).one(
        "SELECT spec, content_hash FROM commands WHERE command_id = ?", [command_id]
    )
    assert json.dumps(converter.unstructure(command.spec)) == stored_spec
    assert commands.content_hash(command.spec) == stored_hash == command.content_hash
    assert spec_of_json(json.loads(stored_spec)) == command.spec
    assert isinstance(command.spec, CommandSpec) and command.spec.artifact_paths() == [
        "coverage.json",
        "never.json",
    ]
    assert converter.structure(converter.unstructure(command), Command) == command
    assert (
        command.status == "approved" and command.decision is not None and command.decision.note == "read it"
    )
    # Its decisions are the history the full view shows, in its shape.
    decisions = commands.decisions(project, command_id)
    assert converter.unstructure(decisions) == commands.show_command(project, command_id)["decisions"]
    assert [converter.structure(converter.unstructure(d), Decision) for d in decisions] == decisions

    # The run: a record that survives its JSON shape, and whose views are what run_review answers.
    run = runs.get(project.store, done["id"])
    assert isinstance(run, Run) and run.state == "succeeded" and run.exit_code == 0 and run.args == ()
    assert converter.structure(converter.unstructure(run), Run) == run
    status = service.call("run_review", {"run_id": run.run_id, "view": "status"})["data"]["run"]
    assert {k: status[k] for k in runs.brief(run)} == runs.brief(run)
    assert status["duration_ms"] == run.duration_ms is not None

    # Its artifacts: one ingested snapshot of the real coverage.json, one absent report.
    artifacts = runs.artifacts(project.store, run.run_id)
    assert converter.unstructure(artifacts) == status["artifacts"] == done["artifacts"]
    assert [(a.path, a.status) for a in artifacts] == [
        ("coverage.json", "ingested"),
        ("never.json", "skipped_stale"),
    ]
    assert status["artifacts"][1] == {
        "path": "never.json",
        "status": "skipped_stale",
        "snapshot_id": None,
        "detail": "absent",
    }
    assert [converter.structure(converter.unstructure(a), type(a)) for a in artifacts] == artifacts
    fmt, metadata = exec_db(project.store).one(
        "SELECT format, metadata FROM snapshots WHERE snapshot_id = ?", [artifacts[0].snapshot_id]
    )
    assert fmt == "coveragepy" and json.loads(metadata)["run"] == converter.unstructure(run.registration())

    # Its transitions: queued, running, succeeded, each one event in order.
    transitions = runs.events(project.store, run.run_id)
    assert [t.state for t in transitions] == ["queued", "running", "succeeded"]
    assert converter.unstructure(transitions) == status["events"]
    assert [converter.structure(converter.unstructure(t), Transition) for t in transitions] == transitions


# -- the transition table ----------------------------------------------------------------------------------

# How a run reaches each state from queued, by moves the table allows.
PATHS = {
    "queued": [],
    "running": ["running"],
    **{
        state: (["cancelled"] if state == "cancelled" else ["running", state])
        for state in RUN_STATES
        if state not in runs.ACTIVE
    },
}


def _queued(project: Project) -> str:
    run_id, _ = runs.enqueue(
        project.store,
        command_id="cmd-0000000000000000",
        command_hash="0" * 64,
        args=[],
        baseline=None,
        idempotency_key=None,
        fingerprint="f",
        worktree_path=str(project.checkout.worktree_path),
    )
    return run_id


def _moved(project: Project, state: str) -> str:
    """A run that reached ``state`` by the table's moves."""
    run_id = _queued(project)
    for step in PATHS[state]:
        assert runs.transition(project.store, run_id, step, expect=tuple(RUN_STATES), detail=step)
    return run_id


def test_the_table_names_every_state_and_an_ended_run_never_changes() -> None:
    """Seed: "Coverage snapshots, registered command approvals, and completed runs are immutable records." """
    assert set(runs.TRANSITIONS) == set(RUN_STATES)
    assert all(set(after) <= set(RUN_STATES) for after in runs.TRANSITIONS.values())
    assert [s for s, after in runs.TRANSITIONS.items() if after] == list(runs.ACTIVE)


@pytest.mark.parametrize(
    ("before", "after"), [(b, a) for b, following in runs.TRANSITIONS.items() for a in following]
)
def test_every_move_the_transition_table_allows_happens_and_is_recorded(
    project: Project, before: str, after: str
) -> None:
    run_id = _moved(project, before)
    assert runs.transition(project.store, run_id, after, expect=(before,), detail="why")
    moved = runs.get(project.store, run_id)
    assert moved.state == after
    last = runs.events(project.store, run_id)[-1]
    assert (last.state, last.detail) == (after, "why")


def test_every_move_the_transition_table_does_not_allow_is_refused_with_a_code_and_the_row_is_unchanged(
    project: Project,
) -> None:
    """Seed: "Queue state is mutable only while a managed run is queued or active." """
    refused = 0
    for before in RUN_STATES:
        run_id = _moved(project, before)
        row, events = runs.get(project.store, run_id), runs.events(project.store, run_id)
        for after in RUN_STATES:
            if after in runs.TRANSITIONS[before]:
                continue
            with pytest.raises(CoverageError) as caught:
                runs.transition(
                    project.store, run_id, after, expect=tuple(RUN_STATES), reason="no", exit_code=9
                )
            error = caught.value
            assert error.code is ErrorCode.INVALID_ARGUMENT
            assert error.details == {
                "run_id": run_id,
                "state": before,
                "refused": after,
                "reason": "illegal_transition",
            }
            assert error.suggestion
            assert runs.get(project.store, run_id) == row and runs.events(project.store, run_id) == events
            refused += 1
    assert refused == len(RUN_STATES) ** 2 - sum(len(a) for a in runs.TRANSITIONS.values())


def test_a_cancel_of_an_ended_run_changes_nothing_and_a_claim_takes_only_queued_runs(
    project: Project,
) -> None:
    ended = _moved(project, "succeeded")
    row = runs.get(project.store, ended)
    assert runs.request_cancel(project.store, ended) == "succeeded"
    assert runs.get(project.store, ended) == row
    queued = _queued(project)
    claimed = runs.claim(project.store)
    assert claimed is not None and claimed.run_id == queued and claimed.state == "running"
    assert runs.claim(project.store) is None
