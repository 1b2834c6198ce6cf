"""The closed word lists that records carry and schemas enumerate, declared once on the lowest floor.

The modules that own their meaning (``execution.commands``, ``execution.runs``,
``review.context``, ``review.listing``) use them from here, and so can ``output_schemas``, the service's
input schemas and the CLI's choices without importing those modules (and with them
DuckDB, NumPy and the composite build) just to name the words.
"""

from __future__ import annotations

# A registered command's approval status (``execution.commands``).
COMMAND_STATUSES = ("pending", "approved", "rejected")

# A run's states (``execution.runs``, which also says which state may follow which).
RUN_STATES = ("queued", "running", "succeeded", "failed", "cancelled", "timed_out", "interrupted")
# The states of a run not yet ended.
ACTIVE_RUN_STATES = ("queued", "running")

# The orders of a file listing (``review.listing``), the first the default.
FILE_ORDERS = ("path", "uncovered", "coverage")

# Every answer's claim status, weakest first: an answer drawn from several parts takes the weakest.
CLAIM_ORDER = ("invalid", "not_measured", "stale", "limited", "supported")

# What a report measured: the whole suite, or a subset of its tests (``project``).
SCOPES = ("complete", "subset")

# The report formats, in detection order (the most specific signatures first): each is the parser module
# of its name in ``coverage_core.parsers`` (a hyphen spelled ``_``).
REPORT_FORMATS = ("regions-v1", "llvm", "coveragepy", "istanbul", "jacoco", "cobertura", "go", "lcov")

# Counter names (``report``), in the order the CLI prints them.
COUNTERS: tuple[str, ...] = (
    "lines",
    "branches",
    "functions",
    "statements",
    "regions",
    "instantiations",
    "instructions",
    "complexity",
    "classes",
)
# The dashboard's file table and function index sort by these columns (operations.dashboard_nav says how).
FILE_SORTS = ("path", "lines", "missed", "branches", "functions", "headline")
FUNCTION_SORTS = ("name", "file", "line", "hits")
