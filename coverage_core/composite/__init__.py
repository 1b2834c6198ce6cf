"""Composite production coverage: an inventory owns the denominator; every language's evidence maps into one
canonical region model; missing or unusable evidence makes the composite incomplete and never lowers it.

Modules: ``inventory`` (the declared production sources), ``regions`` (the canonical model and the mapping of
each format), ``aggregate`` (exact counts and completeness), ``records`` (a composite's parts),
``persistence`` (immutable composite snapshots), ``build`` (the entry point the CLI, ``coverage_import`` and
managed runs call); the review projections over them live in ``review.composite_view``.
"""

from .build import ReportSpec, build, parse_spec
from .persistence import Composite, get, latest
from .regions import MAPPING_VERSION

__all__ = ["MAPPING_VERSION", "Composite", "ReportSpec", "build", "get", "latest", "parse_spec"]
