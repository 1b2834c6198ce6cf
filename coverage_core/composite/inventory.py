"""The production inventory: which sources a composite counts, in which variants.

An inventory is a JSON (or TOML) file committed to the repository
(``docs/composite-inventory.md``; JSON Schema ``inventory.schema.json`` next to
this module). It owns the denominator of a composite: every tracked file its
globs match, in every variant it declares, is an entry that evidence must cover.

Entries are keyed by (component, variant, logical source). A logical source is
a file's path unless an ``aliases`` row names one id for several paths (one
source built into several artifacts); aliases are the only deduplication.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Iterable
from typing import Any

import attrs

from .. import nesting
from ..errors import CoverageError, ErrorCode
from . import globs

INVENTORY_VERSION = 1
MAX_INVENTORY_BYTES = 1024 * 1024
MAX_INVENTORY_FILES = 100_000
MAX_ERRORS = 20
# Globs with wildcards are matched against every tracked file (the cost grows with their wildcards);
# literal paths are looked up.
MAX_INVENTORY_WILDCARDS = 256
LANGUAGES = ("native", "python", "javascript", "other")
# Which report formats feed a component: the formats the composite maps (regions.py).
EVIDENCE_FORMATS = ("llvm", "coveragepy", "istanbul", "regions-v1")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
TOP_KEYS = frozenset({"inventory_version", "components", "aliases"})
COMPONENT_KEYS = frozenset({"id", "language", "format", "sources", "exclude", "variants"})
ALIAS_KEYS = frozenset({"logical_source_id", "paths"})


@attrs.frozen
class Component:
    id: str
    language: str
    format: str
    sources: tuple[str, ...]
    exclude: tuple[str, ...]
    variants: tuple[str, ...]
    files: tuple[str, ...]  # the tracked files it owns, sorted


@attrs.frozen
class Entry:
    """One unit of required evidence: a logical source of a component, in one variant."""

    component: str
    variant: str
    logical_source_id: str
    paths: tuple[str, ...]


@attrs.frozen
class Inventory:
    sha256: str
    path: str
    components: tuple[Component, ...]
    logical: dict[str, str]  # path -> logical source id
    owners: dict[str, str]  # path -> component id
    entries: tuple[Entry, ...]
    # id -> component, filled on first use: a lookup per entry must not scan every component.
    _by_id: dict[str, Component] = attrs.field(init=False, factory=dict, eq=False, repr=False)

    def component(self, cid: str) -> Component:
        if not self._by_id:
            self._by_id.update((c.id, c) for c in self.components)
        found = self._by_id.get(cid)
        if found is not None:
            return found
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"the inventory has no component {cid!r}",
            f"Name one of its components: {', '.join(c.id for c in self.components)}.",
            {"component": cid, "components": [c.id for c in self.components]},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "inventory_sha256": self.sha256,
            "path": self.path,
            "components": [
                {
                    "id": c.id,
                    "language": c.language,
                    "format": c.format,
                    "variants": list(c.variants),
                    "files": len(c.files),
                }
                for c in self.components
            ],
            "entries": len(self.entries),
        }


class _Errors:
    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []

    def add(self, path: str, message: str) -> None:
        self.items.append({"path": path, "message": message})

    def raise_if_any(self, origin: str) -> None:
        if self.items:
            shown = self.items[:MAX_ERRORS]
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"{origin}: invalid composite inventory: "
                + "; ".join(f"{e['path']}: {e['message']}" for e in shown[:3])
                + (f" (and {len(self.items) - 3} more)" if len(self.items) > 3 else ""),
                "Fix the inventory as docs/composite-inventory.md describes (JSON Schema: "
                "coverage_core/composite/inventory.schema.json).",
                {"reason": "invalid_inventory", "errors": shown, "error_count": len(self.items)},
            )


def decode(data: bytes, origin: str) -> dict[str, Any]:
    """The inventory document from JSON or TOML bytes (TOML when it does not start with ``{``)."""
    if len(data) > MAX_INVENTORY_BYTES:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{origin}: the inventory is {len(data):,} bytes, over the {MAX_INVENTORY_BYTES:,}-byte limit",
            "Declare sources with globs instead of listing every file.",
            {"reason": "inventory_too_large", "bytes": len(data), "limit": MAX_INVENTORY_BYTES},
        )
    nesting.check(data, f"{origin}: the inventory")  # before parsing: a 100,000-deep list recurses as deep
    try:
        text = data.decode("utf-8")
        doc = json.loads(text) if text.lstrip("\ufeff \t\r\n").startswith("{") else tomllib.loads(text)
    except (
        UnicodeDecodeError,
        ValueError,
        RecursionError,
    ) as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{origin}: the inventory is not valid JSON or TOML ({exc})",
            "Write the inventory as UTF-8 JSON (or TOML) as docs/composite-inventory.md shows.",
            {
                "reason": "invalid_inventory",
                "errors": [{"path": "$", "message": str(exc)[:200]}],
                "error_count": 1,
            },
        ) from None
    return doc


def _pattern_problem(pattern: str) -> str | None:
    if not pattern:
        return "must be a non-empty glob"
    if pattern.startswith("/") or re.match(r"^[A-Za-z]:", pattern) or "\\" in pattern:
        return f"{pattern!r} is not relative to the checkout (use forward slashes, no leading /)"
    if any(part in ("..", ".") for part in pattern.split("/")):
        return f"{pattern!r} escapes the checkout or uses '.' segments"
    if "\0" in pattern:
        return "must not contain NUL"
    costly = globs.check(pattern)
    if costly:
        return f"{pattern[:40]!r}... {costly}" if len(pattern) > 40 else f"{pattern!r} {costly}"
    return None


def _strings(value: Any, where: str, errors: _Errors, *, empty_ok: bool = False) -> list[str]:
    if not isinstance(value, list) or (not value and not empty_ok):
        errors.add(where, "must be a " + ("" if empty_ok else "non-empty ") + "list of strings")
        return []
    out = []
    for i, v in enumerate(value):
        if not isinstance(v, str) or not v:
            errors.add(f"{where}[{i}]", "must be a non-empty string")
        else:
            out.append(v)
    return out


def load(data: bytes, origin: str, tracked: Iterable[str]) -> Inventory:
    """Validate ``data`` (the inventory file's bytes) against the files git tracks at the checkout revision."""
    doc = decode(data, origin)
    errors = _Errors()
    if not isinstance(doc, dict):
        errors.add("$", "must be an object")
        errors.raise_if_any(origin)
    for key in sorted(set(doc) - TOP_KEYS):
        errors.add(f"$.{key}", "is not a known key (inventory_version, components, aliases)")
    if doc.get("inventory_version") != INVENTORY_VERSION:
        errors.add(
            "$.inventory_version", f"must be {INVENTORY_VERSION}, got {doc.get('inventory_version')!r}"
        )
    comps = doc.get("components")
    if not isinstance(comps, list) or not comps:
        errors.add("$.components", "must be a non-empty list of components")
        comps = []
    tracked_list = sorted(set(tracked))
    tracked_set = frozenset(tracked_list)
    matches: dict[str, list[str]] = {}  # glob -> the tracked files it matches
    wild = 0  # the wildcards of the distinct globs matched so far
    seen_ids: set[str] = set()
    owned: dict[str, str] = {}
    components: list[Component] = []
    total = 0
    for i, c in enumerate(comps):
        where = f"$.components[{i}]"
        if not isinstance(c, dict):
            errors.add(where, "must be an object")
            continue
        for key in sorted(set(c) - COMPONENT_KEYS):
            errors.add(f"{where}.{key}", "is not a known key")
        cid = c.get("id")
        if not isinstance(cid, str) or not _ID.match(cid):
            errors.add(
                f"{where}.id", "must be 1-64 letters, digits, '_', '.', '-' starting with a letter or digit"
            )
            cid = None
        elif cid in seen_ids:
            errors.add(f"{where}.id", f"duplicate component id {cid!r}")
        else:
            seen_ids.add(cid)
        language = c.get("language")
        if language not in LANGUAGES:
            errors.add(f"{where}.language", f"must be one of {', '.join(LANGUAGES)}, got {language!r}")
        fmt = c.get("format")
        if fmt not in EVIDENCE_FORMATS:
            errors.add(f"{where}.format", f"must be one of {', '.join(EVIDENCE_FORMATS)}, got {fmt!r}")
        before = len(errors.items)
        sources = _strings(c.get("sources"), f"{where}.sources", errors)
        exclude = _strings(c.get("exclude", []), f"{where}.exclude", errors, empty_ok=True)
        pattern_errors = len(errors.items) > before  # and below: a pattern's own problem
        variants = _strings(c.get("variants", ["default"]), f"{where}.variants", errors)
        # Every check here is linear in the inventory: a client may send 100,000 of anything.
        seen_variants: set[str] = set()
        for j, v in enumerate(variants):
            if not _ID.match(v):
                errors.add(f"{where}.variants[{j}]", f"{v!r}: use 1-64 letters, digits, '_', '.', '-'")
            if v in seen_variants:
                errors.add(f"{where}.variants[{j}]", f"duplicate variant {v!r}")
            seen_variants.add(v)
        files: set[str] = set()
        matched_sources: set[str] = set()
        for key, patterns in (("sources", sources), ("exclude", exclude)):
            for j, p in enumerate(patterns):
                problem = _pattern_problem(p)
                if problem:
                    errors.add(f"{where}.{key}[{j}]", problem)
                    pattern_errors = True
                    continue
                matched = matches.get(p)
                if matched is None:
                    glob = globs.Glob(p)
                    if glob.literal:
                        matched = [p] if p in tracked_set else []
                    elif wild + globs.wildcards(p) > MAX_INVENTORY_WILDCARDS:
                        errors.add(
                            f"{where}.{key}[{j}]",
                            f"the inventory's distinct globs have over "
                            f"{MAX_INVENTORY_WILDCARDS} wildcards in all; list fewer, broader globs",
                        )
                        pattern_errors = True
                        continue
                    else:
                        wild += globs.wildcards(p)
                        matched = [f for f in tracked_list if glob.match(f)]
                    matches[p] = matched
                if key == "sources":
                    if not matched:
                        errors.add(
                            f"{where}.sources[{j}]",
                            f"{p!r} matches no file git tracks at the checkout revision",
                        )
                        pattern_errors = True
                    files.update(matched)
                    matched_sources.update(matched)
                else:
                    files.difference_update(matched)
        if sources and not files and not pattern_errors:
            errors.add(
                where,
                "declares no production source after excludes: its sources match "
                f"{len(matched_sources)} tracked file(s) and its excludes remove every one",
            )
        for f in sorted(files):
            if f in owned and owned[f] != cid:
                errors.add(f"{where}.sources", f"{f!r} is already owned by component {owned[f]!r}")
            owned[f] = cid or ""
        total += len(files) * max(1, len(variants))
        if total > MAX_INVENTORY_FILES:
            errors.add(where, f"the inventory declares over {MAX_INVENTORY_FILES:,} entries (file x variant)")
            errors.raise_if_any(origin)
        if cid:
            components.append(
                Component(
                    cid,
                    str(language),
                    str(fmt),
                    tuple(sources),
                    tuple(exclude),
                    tuple(variants),
                    tuple(sorted(files)),
                )
            )
    logical: dict[str, str] = {}
    aliases = doc.get("aliases", [])
    if not isinstance(aliases, list):
        errors.add("$.aliases", "must be a list")
        aliases = []
    seen_logical: set[str] = set()
    for i, a in enumerate(aliases):
        where = f"$.aliases[{i}]"
        if not isinstance(a, dict):
            errors.add(where, "must be an object")
            continue
        for key in sorted(set(a) - ALIAS_KEYS):
            errors.add(f"{where}.{key}", "is not a known key")
        lid = a.get("logical_source_id")
        if not isinstance(lid, str) or not lid or len(lid) > 256:
            errors.add(f"{where}.logical_source_id", "must be a non-empty string of at most 256 characters")
            continue
        if lid in seen_logical:
            errors.add(f"{where}.logical_source_id", f"duplicate logical_source_id {lid!r}")
        seen_logical.add(lid)
        paths = _strings(a.get("paths"), f"{where}.paths", errors)
        if len(paths) < 2:
            errors.add(f"{where}.paths", "an alias names at least two paths")
        owners = set()
        for j, p in enumerate(paths):
            if p not in owned:
                errors.add(f"{where}.paths[{j}]", f"{p!r} is not a source of any component")
            elif p in logical:
                errors.add(f"{where}.paths[{j}]", f"{p!r} is already in alias {logical[p]!r}")
            else:
                logical[p] = lid
                owners.add(owned[p])
        if len(owners) > 1:
            errors.add(
                f"{where}.paths", f"an alias stays within one component; these belong to {sorted(owners)}"
            )
    for lid in seen_logical:
        if lid in owned and logical.get(lid) != lid:
            errors.add("$.aliases", f"logical_source_id {lid!r} is also the path of another source")
    errors.raise_if_any(origin)
    entries = []
    for c in components:
        groups: dict[str, list[str]] = {}
        for f in c.files:
            groups.setdefault(logical.get(f, f), []).append(f)
        for v in c.variants:
            for lid in sorted(groups):
                entries.append(Entry(c.id, v, lid, tuple(groups[lid])))
    for c in components:
        for f in c.files:
            logical.setdefault(f, f)
    return Inventory(
        hashlib.sha256(data).hexdigest(), origin, tuple(components), logical, owned, tuple(entries)
    )
