"""The execution runtime's records: a registered command (its spec and decisions), a run, its artifacts and
its state transitions.

Inside the core these are passed around as frozen records; JSON exists only at the edge. The one converter
(``coverage_core.model.converter``) turns each into exactly the shape the surfaces answer and the store's
JSON columns hold (field order is key order; a field that is absent from a shape when unset is omitted, never
written as null), and back. A spec's JSON is also its identity: ``commands.content_hash`` hashes it, so
``CommandSpec``'s shape is the registration's canonical content, key for key.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ..composite.records import Registration
from ..model import the_converter

converter = the_converter()  # the one converter (coverage_core.model), built when records are first needed


@attrs.frozen
class ReportArtifact:
    """A report a command writes: stored as one snapshot of ``suite`` (``format`` None: detected)."""

    path: str
    format: str | None
    suite: str
    scope: str


@attrs.frozen
class CompositeReport:
    """One report of a composite artifact and the inventory component (and variant) it measures."""

    component: str
    variant: str | None
    path: str


@attrs.frozen
class CompositeArtifact:
    """A composite artifact: the inventory and the reports the command writes (JSON ``{composite: {...}}``)."""

    inventory: str
    reports: tuple[CompositeReport, ...]


SpecArtifact = ReportArtifact | CompositeArtifact


@attrs.frozen(kw_only=True)
class CommandSpec:
    """A registration's canonical content (``commands.canonical_spec``). ``runners`` and ``inherit`` are None
    for a registration made before they existed, ``selector_roots`` when none were declared: absent from its
    JSON, so its content hash stays the one it was registered with."""

    argv: tuple[str, ...]
    cwd: str
    timeout_s: int
    env: dict[str, str]
    runners: tuple[str, ...] | None = None
    inherit: tuple[str, ...] | None = None
    artifacts: tuple[SpecArtifact, ...]
    args_policy: str
    selector_roots: tuple[str, ...] | None = None

    @property
    def legacy(self) -> bool:
        """Registered before ``runners`` and ``inherit`` existed: such a run takes the base environment only."""
        return self.runners is None

    def artifact_paths(self) -> list[str]:
        """Every report path the command writes: ordinary artifacts and the reports of composite ones."""
        out: list[str] = []
        for artifact in self.artifacts:
            if isinstance(artifact, CompositeArtifact):
                out.extend(r.path for r in artifact.reports)
            else:
                out.append(artifact.path)
        return list(dict.fromkeys(out))


@attrs.frozen
class Decision:
    """One decision on a command, append-only: approved or rejected, by whom, through what, when."""

    decision: str
    by: str
    via: str
    note: str | None
    at: dt.datetime


@attrs.frozen
class Command:
    """A registered command with its status (its latest decision's, ``pending`` before any)."""

    id: str
    name: str
    content_hash: str
    spec: CommandSpec
    registered_at: dt.datetime
    status: str
    decision: Decision | None  # the latest, which made the status


@attrs.frozen
class Run:
    """A run's row, its JSON columns decoded (``args``, ``baseline``, ``incremental_review``)."""

    run_id: str
    command_id: str
    command_hash: str
    args: tuple[str, ...]
    baseline: tuple[str, ...] | None
    idempotency_key: str | None
    fingerprint: str
    worktree_path: str
    state: str
    reason: str | None
    exit_code: int | None
    pgid: int | None
    cancel_requested: bool
    queued_at: dt.datetime
    started_at: dt.datetime | None
    ended_at: dt.datetime | None
    stdout_bytes: int | None
    stderr_bytes: int | None
    stdout_truncated: bool | None
    stderr_truncated: bool | None
    incremental_review: dict[str, Any] | None

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return round((self.ended_at - self.started_at).total_seconds() * 1000)

    def registration(self) -> Registration:
        """Which run made a snapshot: its id, its command (and the command's content hash), its arguments."""
        return Registration(self.run_id, self.command_id, self.command_hash, self.args)


@attrs.frozen
class Transition:
    """One ``run_events`` row: the state a run entered, when, and why."""

    state: str
    at: dt.datetime
    detail: str | None


@attrs.frozen
class ReportUse:
    """What a run's composite artifact did with one of its reports: ``used`` or ``skipped_stale`` (why)."""

    component: str
    variant: str | None
    path: str
    status: str
    detail: str | None = None


@attrs.frozen(kw_only=True)
class Artifact:
    """One artifact of a run (``output_schemas.RUN_ARTIFACT``): ingested, skipped_stale or failed. A composite
    one (``kind``) also names the composite it built, that composite's status and what each report was."""

    path: str
    status: str
    snapshot_id: str | None
    kind: str = "report"
    composite_snapshot_id: str | None = None
    composite_status: str | None = None
    reports: tuple[ReportUse, ...] = ()
    error_code: str | None = None
    detail: str | None = None


# -- the JSON shapes ------------------------------------------------------------------------------------------

converter.register_unstructure_hook(
    ReportUse, make_dict_unstructure_fn(ReportUse, converter, detail=override(omit_if_default=True))
)


def _spec(spec: CommandSpec) -> dict[str, Any]:
    # Written out: a generated hook puts omitted-when-unset keys last, and the key order is the stored one.
    out: dict[str, Any] = {
        "argv": list(spec.argv),
        "cwd": spec.cwd,
        "timeout_s": spec.timeout_s,
        "env": dict(spec.env),
    }
    if spec.runners is not None:
        out["runners"] = list(spec.runners)
    if spec.inherit is not None:
        out["inherit"] = list(spec.inherit)
    out["artifacts"] = [converter.unstructure(a) for a in spec.artifacts]
    out["args_policy"] = spec.args_policy
    if spec.selector_roots is not None:
        out["selector_roots"] = list(spec.selector_roots)
    return out


converter.register_unstructure_hook(CommandSpec, _spec)
_composite_body = make_dict_unstructure_fn(CompositeArtifact, converter)
converter.register_unstructure_hook(CompositeArtifact, lambda a: {"composite": _composite_body(a)})
_composite_structure = make_dict_structure_fn(CompositeArtifact, converter)


def _spec_artifact(value: dict[str, Any], _: Any) -> SpecArtifact:
    if "composite" in value:
        return _composite_structure(value["composite"], CompositeArtifact)
    return converter.structure(value, ReportArtifact)


converter.register_structure_hook(SpecArtifact, _spec_artifact)


def _artifact(a: Artifact) -> dict[str, Any]:
    out: dict[str, Any] = {"path": a.path, "status": a.status, "snapshot_id": a.snapshot_id}
    if a.kind == "composite":
        out.update(
            {
                "kind": "composite",
                "composite_snapshot_id": a.composite_snapshot_id,
                "composite_status": a.composite_status,
                "reports": [converter.unstructure(r) for r in a.reports],
            }
        )
    if a.error_code:
        out["error_code"] = a.error_code
    if a.detail:
        out["detail"] = a.detail
    return out


converter.register_unstructure_hook(Artifact, _artifact)


def spec_json(spec: CommandSpec) -> dict[str, Any]:
    """A spec as its canonical JSON content (what is hashed and stored)."""
    out: dict[str, Any] = converter.unstructure(spec)
    return out


def spec_of_json(value: dict[str, Any]) -> CommandSpec:
    return converter.structure(value, CommandSpec)
