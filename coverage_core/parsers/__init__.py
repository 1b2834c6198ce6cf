"""Report parsers: one module per format, detection from content, one entry point.

Each format module exposes ``FORMAT`` (its identifier), ``TOOL`` (a default
producing-tool name), ``sniff(head, tail) -> bool`` (does this content look
like the format) and ``parse_bytes(report: ReportBytes) -> NormalizedReport``.
``parse`` reads a bounded source, detects or checks the format and calls the
module; whatever goes wrong reaches the caller as a ``CoverageError``.
"""

from __future__ import annotations

import importlib
import json
from types import ModuleType
from xml.sax.saxutils import escape as xml_escape

from ..errors import CoverageError, ErrorCode
from ..report import MAX_PATH_BYTES, NormalizedReport, PathTooLong
from ..vocabulary import REPORT_FORMATS
from .reading import Limits, ReportBytes, Source, excerpt, malformed, read_report

# Format name -> its module, in detection order (``vocabulary.REPORT_FORMATS``).
FORMATS: dict[str, str] = {name: name.replace("-", "_") for name in REPORT_FORMATS}

SNIFF_BYTES = 64 * 1024


def module(fmt: str) -> ModuleType:
    try:
        name = FORMATS[fmt]
    except KeyError:
        raise CoverageError(
            ErrorCode.UNKNOWN_FORMAT,
            f"unknown report format {fmt!r}",
            f"Use one of: {', '.join(FORMATS)}; or omit the format to detect it from content.",
            {"formats": list(FORMATS)},
        ) from None
    return importlib.import_module(f"{__name__}.{name}")


def detect(data: bytes, origin: str = "<report>") -> str:
    """The format of ``data``, judged from its first and last bytes."""
    head = data[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    tail = data[-SNIFF_BYTES:]
    if not head:
        raise malformed(
            origin, "report is empty", suggestion="Regenerate the report; the file has no content."
        )
    for fmt in FORMATS:
        if module(fmt).sniff(head, tail):
            return fmt
    raise CoverageError(
        ErrorCode.UNKNOWN_FORMAT,
        f"{origin}: not a coverage report in any known format",
        f"Supported formats: {', '.join(FORMATS)}. Pass --format if the report is one of them; "
        "for other tools, write coverage-mcp-regions-v1 JSON (see the README).",
        {"formats": list(FORMATS), "path": origin},
    )


# What a damaged report can make a parser raise. Anything else is a bug in
# coverage-mcp, reported as ``internal`` rather than blamed on the report.
REPORT_FAULTS: tuple[type[BaseException], ...] = (
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    OverflowError,
    EOFError,
    UnicodeError,
)


def _check_forced(report: ReportBytes, fmt: str) -> None:
    """A forced format must fit the content: a mismatch names what the content looks like."""
    head = report.data[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    tail = report.data[-SNIFF_BYTES:]
    if not head or module(fmt).sniff(head, tail):
        return
    looks = next((other for other in FORMATS if other != fmt and module(other).sniff(head, tail)), None)
    if looks is None:
        return  # nothing else fits either: the format's own parser says what is wrong
    raise CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        f"{report.origin}: format {fmt!r} was forced, but the content looks like {looks}",
        f"Drop the format to detect it from content, or pass format {looks!r}.",
        {"forced": fmt, "detected": looks, "path": report.origin},
    )


def parse_bytes(report: ReportBytes, fmt: str | None = None) -> NormalizedReport:
    if fmt is None:
        fmt = detect(report.data, report.origin)
    else:
        _check_forced(report, fmt)
    mod = module(fmt)
    try:
        parsed: NormalizedReport = mod.parse_bytes(report)
        return parsed
    except CoverageError:
        raise
    except PathTooLong as exc:
        size = len(exc.path.encode("utf-8", "surrogatepass"))
        raise malformed(
            report.origin,
            f"a file path of {size:,} bytes is longer than {MAX_PATH_BYTES:,} ({excerpt(exc.path)})",
            _line_of(report.data, exc.path),
            "Regenerate the report from a checkout whose paths are of normal length, or fix the path in it.",
        ) from None
    except RecursionError:
        raise malformed(report.origin, f"not a valid {fmt} report (nested too deeply)") from None
    except MemoryError:
        raise CoverageError(
            ErrorCode.REPORT_TOO_LARGE,
            f"{report.origin}: not enough memory to parse the report",
            "Lower COVERAGE_MCP_MAX_REPORT_BYTES or free memory; split the report if you can.",
        ) from None
    except REPORT_FAULTS as exc:  # a damaged report must never escape as a traceback
        raise malformed(
            report.origin, f"not a valid {fmt} report ({type(exc).__name__}; {excerpt(str(exc))})"
        ) from exc
    except _xml_errors() as exc:
        raise malformed(
            report.origin, f"not a valid {fmt} report ({type(exc).__name__}; {excerpt(str(exc))})"
        ) from exc
    except Exception as exc:
        raise CoverageError(
            ErrorCode.INTERNAL,
            f"{report.origin}: the {fmt} parser failed ({type(exc).__name__})",
            "This is a bug in coverage-mcp, not in the report; please report it with the report attached.",
            {"format": fmt, "path": report.origin},
        ) from exc


def _xml_errors() -> tuple[type[BaseException], ...]:
    from lxml import etree  # only the XML formats load lxml

    return (etree.Error,)


def _line_of(data: bytes, path: str) -> int | None:
    """The line where ``path`` first appears in the report, as written or JSON-escaped."""
    for form in (path, json.dumps(path)[1:-1], xml_escape(path, {'"': "&quot;"})):
        at = data.find(form.encode("utf-8", "surrogatepass"))
        if at >= 0:
            return data.count(b"\n", 0, at) + 1
    return None


def parse(source: Source, *, format: str | None = None, limits: Limits | None = None) -> NormalizedReport:
    """Parse a report from a path, a binary stream or bytes."""
    if format is not None:
        module(format)  # refuse an unknown format before reading anything
    return parse_bytes(read_report(source, limits), format)


__all__ = ["FORMATS", "Limits", "ReportBytes", "detect", "parse", "parse_bytes", "read_report"]
