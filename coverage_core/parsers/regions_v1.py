"""regions-v1 reports. (Being written.)"""

from __future__ import annotations

from ..report import NormalizedReport
from .source import ReportBytes, malformed

FORMAT = "regions-v1"
TOOL = None


def sniff(head: bytes, tail: bytes) -> bool:
    return False


def parse_bytes(report: ReportBytes) -> NormalizedReport:
    raise malformed(report.origin, "regions-v1 parser not implemented yet")
