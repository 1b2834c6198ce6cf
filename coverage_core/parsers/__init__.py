"""Report parsers: one module per format, detection from content, one entry point.

Each format module exposes ``FORMAT`` (its identifier), ``TOOL`` (a default
producing-tool name), ``sniff(head, tail) -> bool`` (does this content look
like the format) and ``parse_bytes(report: ReportBytes) -> NormalizedReport``.
``parse`` reads a bounded source, detects or checks the format and calls the
module; whatever goes wrong reaches the caller as a ``CoverageError``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING

from ..errors import CoverageError, ErrorCode
from ..report import NormalizedReport, PathTooLong
from ..vocabulary import REPORT_FORMATS
from .reading import Limits, ReportBytes, Source, excerpt, malformed, path_too_long, read_report

if TYPE_CHECKING:
    from .lcov import ObservationSink

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
    return detect_edges(data[:SNIFF_BYTES], data[-SNIFF_BYTES:], origin)


def detect_edges(head: bytes, tail: bytes, origin: str = "<report>") -> str:
    """The format of a report whose first and last SNIFF_BYTES are ``head`` and ``tail``."""
    head = head[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    tail = tail[-SNIFF_BYTES:]
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
    check_forced(report.data[:SNIFF_BYTES], report.data[-SNIFF_BYTES:], report.origin, fmt)


def check_forced(head: bytes, tail: bytes, origin: str, fmt: str) -> None:
    """A forced format must fit the content: a mismatch names what the content looks like."""
    head = head[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head or module(fmt).sniff(head, tail):
        return
    looks = next((other for other in FORMATS if other != fmt and module(other).sniff(head, tail)), None)
    if looks is None:
        return  # nothing else fits either: the format's own parser says what is wrong
    raise CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        f"{origin}: format {fmt!r} was forced, but the content looks like {looks}",
        f"Drop the format to detect it from content, or pass format {looks!r}.",
        {"forced": fmt, "detected": looks, "path": origin},
    )


def parse_bytes(report: ReportBytes, fmt: str | None = None) -> NormalizedReport:
    if fmt is None:
        fmt = detect(report.data, report.origin)
    else:
        _check_forced(report, fmt)
    mod = module(fmt)
    with _report_faults(report.origin, fmt, report.data):
        parsed: NormalizedReport = mod.parse_bytes(report)
    return parsed


def streamed_format(head: bytes, fmt: str | None = None) -> str | None:
    """The format of a report that starts with ``head`` (its first SNIFF_BYTES) when that format is parsed chunk
    by chunk (``parse_stream``, never holding the report whole) and ``fmt`` (forced, or None) allows it;
    else None, and the report is read whole (``parse_bytes``), detection included.

    The head alone decides: only llvm's sniff reads the tail, and only after its head looks like JSON,
    which a head that any streamed format accepts does not.
    """
    head = head[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    for name in FORMATS:
        mod = module(name)
        if mod.sniff(head, b""):
            return name if hasattr(mod, "parse_chunks") and fmt in (None, name) else None
    return None


def parse_stream(
    chunks: Iterable[bytes], origin: str, fmt: str, observations: ObservationSink | None = None
) -> NormalizedReport:
    """Parse a report of a streaming format (``streamed_format``) from its decompressed ``chunks``; with
    ``observations``, its named-test observations go there batch by batch (``lcov.parse_chunks``)."""
    with _report_faults(origin, fmt, None):
        parsed: NormalizedReport = module(fmt).parse_chunks(chunks, origin, observations)
    return parsed


@contextlib.contextmanager
def _report_faults(origin: str, fmt: str, data: bytes | None) -> Iterator[None]:
    """Whatever a parser raises reaches the caller as a ``CoverageError`` (``data``: the report, when it is
    held, to name a line)."""
    try:
        yield
    except CoverageError:
        raise
    except PathTooLong as exc:
        raise path_too_long(origin, exc.path, None if data is None else _line_of(data, exc.path)) from None
    except RecursionError:
        raise malformed(origin, f"not a valid {fmt} report (nested too deeply)") from None
    except MemoryError:
        raise CoverageError(
            ErrorCode.REPORT_TOO_LARGE,
            f"{origin}: not enough memory to parse the report",
            "Lower COVERAGE_MCP_MAX_REPORT_BYTES or free memory; split the report if you can.",
        ) from None
    except REPORT_FAULTS as exc:  # a damaged report must never escape as a traceback
        raise malformed(
            origin, f"not a valid {fmt} report ({type(exc).__name__}; {excerpt(str(exc))})"
        ) from exc
    except _xml_errors() as exc:
        raise malformed(
            origin, f"not a valid {fmt} report ({type(exc).__name__}; {excerpt(str(exc))})"
        ) from exc
    except Exception as exc:
        raise CoverageError(
            ErrorCode.INTERNAL,
            f"{origin}: the {fmt} parser failed ({type(exc).__name__})",
            "This is a bug in coverage-mcp, not in the report; please report it with the report attached.",
            {"format": fmt, "path": origin},
        ) from exc


def _xml_errors() -> tuple[type[BaseException], ...]:
    from lxml import etree  # only the XML formats load lxml

    return (etree.Error,)


def _line_of(data: bytes, path: str) -> int | None:
    """The line where ``path`` first appears in the report, as written or JSON-escaped."""
    # Only for this error: xml.sax.saxutils imports urllib.request (tens of milliseconds at every start).
    from xml.sax.saxutils import escape as xml_escape

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


__all__ = [
    "FORMATS",
    "Limits",
    "ReportBytes",
    "check_forced",
    "detect",
    "detect_edges",
    "parse",
    "parse_bytes",
    "parse_stream",
    "read_report",
    "streamed_format",
]
