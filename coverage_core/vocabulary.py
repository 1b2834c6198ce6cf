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

# The orders of a file listing (``review.listing``), the first the default.
FILE_ORDERS = ("path", "uncovered", "coverage")

# Every answer's claim status, weakest first: an answer drawn from several parts takes the weakest.
CLAIM_ORDER = ("invalid", "not_measured", "stale", "limited", "supported")
