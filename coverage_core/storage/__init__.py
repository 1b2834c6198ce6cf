"""Persistence: the DuckDB schema, project stores and path mapping."""

from .paths import AMBIGUOUS, MAPPED, UNMAPPED, Mapping, map_paths
from .schema import SCHEMA_REVISION
from .store import ProjectStore, Provenance

__all__ = [
    "AMBIGUOUS",
    "MAPPED",
    "SCHEMA_REVISION",
    "UNMAPPED",
    "Mapping",
    "ProjectStore",
    "Provenance",
    "map_paths",
]
