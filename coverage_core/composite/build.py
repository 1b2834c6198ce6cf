"""Building a composite snapshot: read the inventory and reports, judge the evidence, aggregate, store.

    from coverage_core import open_project
    from coverage_core.composite import build, ReportSpec
    with open_project(".") as project:
        record = build(project, "coverage-inventory.json",
                       ["native:debug=build/debug.json", "python=coverage.json"])

A report is given as ``COMPONENT[:VARIANT]=PATH`` or a bare ``PATH``; a bare
path (and a variant left out) is assigned when exactly one inventory
component takes the report's format and has one variant. Reports are parsed
by the ordinary parsers (``coverage_core.parsers``) and never stored as
ordinary snapshots.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import CoverageError, ErrorCode
from ..git import Git
from ..parsers import Limits, detect, parse_bytes, read_report
from ..parsers.memory_budget import PARSE_BUDGET
from ..report import NormalizedReport
from ..storage.paths import MAPPED, UNMAPPED, Mapping, map_paths
from . import inventory as inv_mod
from .aggregate import MALFORMED, STALE, UNSUPPORTED, Evidence, aggregate
from .persistence import Composite, CompositeProvenance, carry_from_earlier, identical, save
from .records import Registration

if TYPE_CHECKING:
    from ..project import Project


@attrs.frozen
class ReportSpec:
    path: str
    component: str | None = None
    variant: str | None = None
    commit: str | None = None  # the commit the report measured; default: the checkout revision
    stale: str | None = None  # why the report is known not to measure the checkout (a run did not refresh it)


def parse_spec(text: str) -> ReportSpec:
    """``COMPONENT[:VARIANT]=PATH`` or ``PATH``."""
    head, sep, tail = text.partition("=")
    if sep and head and "/" not in head and os.sep not in head:
        component, _, variant = head.partition(":")
        if not tail:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"report {text!r} names no path after '='",
                "Write COMPONENT[:VARIANT]=PATH, e.g. native:debug=build/llvm.json.",
            )
        return ReportSpec(tail, component, variant or None)
    return ReportSpec(text)


REPORT_KEYS = frozenset({"component", "variant", "path"})


def report_spec(item: Any) -> ReportSpec:
    """One composite report in either of its one shape's two spellings, the same in coverage_import's
    ``reports`` and in a registered composite artifact's: ``{component, variant?, path}``, or the text
    ``COMPONENT[:VARIANT]=PATH`` (``PATH`` alone for an import)."""
    if isinstance(item, str):
        return parse_spec(item)
    if (
        not isinstance(item, dict)
        or set(item) - REPORT_KEYS
        or not isinstance(item.get("path"), str)
        or not all(isinstance(item.get(k), (str, type(None))) for k in ("component", "variant"))
    ):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"a composite report is {{component, variant?, path}} or COMPONENT[:VARIANT]=PATH, not {item!r:.200}",
            'e.g. {"component": "native", "variant": "debug", "path": "build/llvm.json"} or '
            '"native:debug=build/llvm.json".',
            {"argument": "reports"},
        )
    return ReportSpec(item["path"], item.get("component"), item.get("variant"))


def _inside(project: Project, path: str | os.PathLike[str]) -> tuple[Path, str]:
    root = Path(project.checkout.worktree_path)
    p = Path(path)
    full = p if p.is_absolute() else root / p
    real = Path(os.path.realpath(full))
    if not real.is_relative_to(Path(os.path.realpath(root))):
        raise CoverageError(
            ErrorCode.PATH_OUTSIDE_CHECKOUT,
            f"the inventory {str(path)!r} is outside the checkout {root}",
            "Commit the inventory file in the repository and pass its path inside the checkout.",
            {"path": str(path)},
        )
    return full, real.relative_to(Path(os.path.realpath(root))).as_posix()


def _assign(spec: ReportSpec, inv: inv_mod.Inventory, fmt: str | None) -> tuple[str, str]:
    if spec.component is None:
        fits = [c for c in inv.components if c.format == fmt]
        if len(fits) != 1 or len(fits[0].variants) != 1:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"report {spec.path!r} ({fmt or 'unknown format'}) does not say which component and variant it "
                "measures",
                "Pass it as COMPONENT:VARIANT=PATH; components: "
                + ", ".join(f"{c.id} ({c.format}; {', '.join(c.variants)})" for c in inv.components)
                + ".",
                {"path": spec.path, "reason": "unassigned_report"},
            )
        return fits[0].id, fits[0].variants[0]
    comp = inv.component(spec.component)
    variant = spec.variant
    if variant is None:
        if len(comp.variants) != 1:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"component {comp.id!r} has variants {', '.join(comp.variants)}; "
                f"report {spec.path!r} does not say which one it measures",
                f"Pass it as {comp.id}:VARIANT=PATH.",
                {"path": spec.path, "reason": "unknown_variant"},
            )
        variant = comp.variants[0]
    _check_variant(comp, variant, spec.path)
    return comp.id, variant


def _check_variant(comp: inv_mod.Component, variant: str, where: str) -> None:
    if variant not in comp.variants:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{where}: variant {variant!r} is not declared for component {comp.id!r} (declared: "
            f"{', '.join(comp.variants)})",
            "Declare the variant in the inventory or name one of the declared variants.",
            {
                "component": comp.id,
                "variant": variant,
                "variants": list(comp.variants),
                "reason": "unknown_variant",
            },
        )


# What a report's identity misses for it to measure the checkout now (one sentence each; none: it does):
# ``review.evidence.report_identity``'s rules, passed in by the caller (a floor above this one).
Identity = Callable[[NormalizedReport, Mapping, bytes, Path], Sequence[str]]
# A toolchain whose report names no version says so rather than being left out.
UNRECORDED = "unrecorded"


def build(
    project: Project,
    inventory_path: str | os.PathLike[str],
    reports: Sequence[ReportSpec | str],
    *,
    provenance: str = "import",
    registration: Registration | None = None,
    toolchains: dict[str, str] | None = None,
    also: Any = None,
    judge_identity: Identity | None = None,
) -> Composite:
    """Build and store one immutable composite snapshot of the checkout's HEAD; returns its record.

    ``registration``: the approved command's registration when a managed run produced the reports;
    ``toolchains``: tool -> version, recorded beside what the reports say of their tools; ``also(con,
    composite_id)``: more rows written in the composite's own transaction (a run's artifact row).
    A ``ReportSpec`` with ``stale`` is evidence known not to measure the checkout: its entries are
    ``stale`` (their denominator kept), never measured. ``judge_identity`` judges a report named without its
    commit: what it misses makes it ``stale`` (a managed run's refreshed reports need none: the run
    wrote them)."""
    git: Git = project.git
    revision = git.head_commit()
    if revision is None:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "the repository has no commit yet",
            "Commit the sources and the inventory first; a composite measures a checkout revision.",
        )
    full, label = _inside(project, inventory_path)
    try:
        with open(full, "rb") as fh:  # one byte past the cap is enough to refuse it
            data = fh.read(inv_mod.MAX_INVENTORY_BYTES + 1)
    except OSError as exc:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            f"cannot read the inventory {label!r} ({exc.strerror})",
            "Pass the path of the inventory file inside the checkout.",
            {"path": label},
        ) from None
    blobs = git.blob_ids(revision)
    inv = inv_mod.load(data, label, blobs.keys())
    changed = git.changed_paths()
    identity: dict[str, str | None] = {}
    texts: dict[str, bytes | None] = {}
    for path in inv.owners:
        if path in changed:
            text = git.worktree_file(path)
            texts[path] = text
            identity[path] = None if text is None else Git.blob_id(text)
        else:
            identity[path] = blobs.get(path)
    specs = [parse_spec(r) if isinstance(r, str) else r for r in reports]
    if not specs:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "a composite needs at least one report",
            "Pass the reports that measure the inventory's components.",
        )
    parsed: dict[
        tuple[str, str], Any
    ] = {}  # one parse per distinct artifact (one build given for two variants)
    evidence = [
        _evidence(project, spec, inv, revision, blobs, changed, texts, parsed, judge_identity)
        for spec in specs
    ]
    agg = aggregate(inv, evidence, identity, carry_from_earlier(project.store, inv.sha256))
    tools = dict(toolchains or {})
    for ev in evidence:
        for k, v in ev.toolchain.items():
            if tools.get(k, UNRECORDED) == UNRECORDED:  # a version one report names beats another's silence
                tools[k] = v
    prov = CompositeProvenance(
        inventory_sha256=inv.sha256,
        inventory_path=label,
        commit=revision,
        dirty=bool(changed),
        branch=git.branch(),
        worktree_id=project.checkout.worktree_id,
        worktree_path=str(project.checkout.worktree_path),
        provenance=provenance,
        registration=registration,
        toolchains=tools,
        artifacts=tuple(ev.to_record() for ev in evidence),
    )
    if also is None:  # an import; a run's artifact row needs a composite of its own
        earlier = identical(project.store, agg, prov)
        if earlier is not None:
            return earlier
    return save(project.store, agg, prov, also=also)


def _evidence(
    project: Project,
    spec: ReportSpec,
    inv: inv_mod.Inventory,
    revision: str,
    blobs: dict[str, str],
    changed: set[str],
    texts: dict[str, bytes | None],
    parsed: dict[tuple[str, str], Any],
    judge_identity: Identity | None = None,
) -> Evidence:
    cap = project.settings.max_report_bytes
    with PARSE_BUDGET.claim(min(cap, _size(spec.path))):
        raw = read_report(spec.path, Limits(cap))
    sha = hashlib.sha256(raw.data).hexdigest()
    try:
        fmt: str | None = detect(raw.data, raw.origin)
    except CoverageError:
        fmt = None  # not recognizable: read as the component's format, whose parser says what is wrong
    component, variant = _assign(spec, inv, fmt)
    comp = inv.component(component)
    fmt = fmt or comp.format
    commit = project.git.resolve(spec.commit) if spec.commit else revision
    base: dict[str, Any] = {
        "component": component,
        "variant": variant,
        "label": spec.path,
        "sha256": sha,
        "bytes": len(raw.data),
        "commit": commit,
        "format": fmt,
    }
    if fmt not in inv_mod.EVIDENCE_FORMATS or fmt != comp.format:
        return Evidence(
            **base,
            status=UNSUPPORTED,
            message=f"a {fmt} report; component {comp.id!r} takes {comp.format} evidence",
        )
    found = parsed.get((sha, fmt))
    if found is None:
        try:
            with PARSE_BUDGET.claim(min(cap, len(raw.data))):
                report = parse_bytes(raw, fmt)
        except CoverageError as exc:
            if exc.code in (ErrorCode.MALFORMED_REPORT, ErrorCode.UNKNOWN_FORMAT, ErrorCode.INVALID_ARGUMENT):
                # The parser's message starts with the report's name, which the blocking reason gives already.
                message = exc.message
                for name in (raw.origin, spec.path):
                    message = message.removeprefix(f"{name}: ")
                return Evidence(**base, status=MALFORMED, message=message)
            raise
        mapping = map_paths(
            [f.path for f in report.files],
            checkout_root=str(project.checkout.worktree_path),
            tracked=list(blobs),
            source_roots=report.source_roots,
        )
        found = parsed[(sha, fmt)] = (report, mapping)
    report, mapping = found
    unproven: Sequence[str] = ()
    if judge_identity is not None and spec.commit is None and spec.stale is None:
        # Files with uncommitted changes are judged per entry below (source_mismatched), not here.
        clean = Mapping(
            mapping.paths,
            tuple(s if p not in changed else UNMAPPED for p, s in zip(mapping.paths, mapping.status)),
        )
        unproven = judge_identity(report, clean, raw.data, Path(spec.path))
    del raw
    paths = [p if s == MAPPED else "" for p, s in zip(mapping.paths, mapping.status)]
    file_variants = []
    for f in report.files:
        if f.variant:
            _check_variant(comp, f.variant, f"{spec.path}: file {f.path!r}")
        file_variants.append(f.variant)
    mismatched: dict[int, str] = {}
    try:
        written = os.stat(spec.path).st_mtime_ns
    except OSError:
        written = None
    for i, (f, path) in enumerate(zip(report.files, paths)):
        if not path or inv.owners.get(path) != comp.id:
            continue
        if f.source_sha256:
            text = texts.get(path) if path in changed else project.git.read_blob(blobs[path])
            if text is None or hashlib.sha256(text).hexdigest() != f.source_sha256:
                mismatched[i] = "source_sha256 differs from the checkout's text"
        elif path in changed and written is not None:
            try:
                edited = os.stat(Path(project.checkout.worktree_path) / path).st_mtime_ns
            except OSError:
                edited = None
            if edited is None or edited > written:
                mismatched[i] = "the file was edited after the report was written"
    toolchain = _toolchain(fmt, report)
    status = STALE if commit != revision or spec.stale or unproven else "ok"
    why = (
        spec.stale
        if spec.stale
        else f"not shown to measure the checkout: {'; '.join(unproven)}"
        if unproven
        else None
        if status == "ok"
        else f"measured commit {commit[:12]}, not the checkout revision {revision[:12]}"
    )
    return Evidence(
        **base,
        status=status,
        report=report,
        paths=paths,
        file_variants=file_variants,
        mismatched=mismatched,
        toolchain=toolchain,
        message=why,
    )


def _toolchain(fmt: str, report: NormalizedReport) -> dict[str, str]:
    """What the report says of the tool that wrote it, under ``FORMAT:TOOL``: its version, or UNRECORDED.
    llvm-cov export's ``version`` is its JSON format's, not LLVM's: kept as ``llvm:export-format``."""
    meta = report.metadata
    tool = f"{fmt}:{report.tool or ('llvm-cov' if fmt == 'llvm' else fmt)}"
    if fmt == "llvm":
        out = {tool: UNRECORDED}
        if meta.get("version"):
            out["llvm:export-format"] = str(meta["version"])
        return out
    # coverage.py's own version is parsed as ``coverage_version`` (its meta.version); regions-v1's tool's as
    # ``tool_version``.
    version = meta.get("tool_version") or meta.get("coverage_version")
    return {tool: str(version) if version else UNRECORDED}


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
