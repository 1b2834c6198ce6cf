"""coverage_core: parsers, storage and projections of coverage-mcp, free of transport code.

Names are imported on first use, so ``import coverage_core.parsers`` (a parse
from the command line, a benchmark) does not pay for DuckDB, pygit2 or cattrs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Counter": "report",
    "NormalizedReport": "report",
    "CoverageError": "errors",
    "ErrorCode": "errors",
    "FileDetail": "model",
    "FileSummary": "model",
    "FilesPage": "model",
    "Snapshot": "model",
    "detect": "parsers",
    "parse": "parsers",
    "Project": "project",
    "open_project": "project",
    "coverage_loss": "analysis",
    "file_history": "analysis",
    "history": "analysis",
}

__all__ = [
    "Counter",
    "CoverageError",
    "ErrorCode",
    "FileDetail",
    "FileSummary",
    "FilesPage",
    "NormalizedReport",
    "Project",
    "Snapshot",
    "coverage_loss",
    "detect",
    "file_history",
    "history",
    "open_project",
    "parse",
]
assert sorted(__all__) == sorted(_EXPORTS)

if TYPE_CHECKING:
    from .analysis import coverage_loss, file_history, history
    from .errors import CoverageError, ErrorCode
    from .model import FileDetail, FilesPage, FileSummary, Snapshot
    from .parsers import detect, parse
    from .project import Project, open_project
    from .report import Counter, NormalizedReport


def __getattr__(name: str) -> Any:
    if name == "__version__":  # package metadata, the one version string
        from .version import version

        return version()
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'coverage_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
