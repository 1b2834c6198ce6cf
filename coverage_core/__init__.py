"""coverage_core: parsers, storage and projections of coverage-mcp, free of transport code."""

from .errors import CoverageError, ErrorCode
from .model import FileDetail, FilesPage, FileSummary, Snapshot
from .parsers import detect, parse
from .project import Project, open_project
from .report import Counter, NormalizedReport

__version__ = "0.1.0"

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
    "detect",
    "open_project",
    "parse",
]
