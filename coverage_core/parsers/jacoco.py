"""jacoco reports. (Being written.)"""

from __future__ import annotations

from ..report import NormalizedReport
from .source import ReportBytes, malformed

FORMAT = "jacoco"
TOOL = None


def sniff(head: bytes, tail: bytes) -> bool:
    return False


def parse_bytes(report: ReportBytes) -> NormalizedReport:
    raise malformed(report.origin, "jacoco parser not implemented yet")
