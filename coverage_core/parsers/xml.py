"""Safe XML reading for the XML report formats (Cobertura, JaCoCo).

This module owns the one lxml configuration every XML report is read with:
entities are never resolved, no DTD is loaded (JaCoCo's ``report.dtd`` and
gcovr's GitHub DTD URL stay untouched), the network is off and libxml2's
size limits stay on (``huge_tree`` is off; the 16 MB SQLite report is well
within them). On top of that a document whose prolog declares entities is
refused outright: coverage tools never declare any, and refusing them does
not depend on libxml2's amplification guard.

Reports are streamed into an lxml *parser target* (``stream``): libxml2
calls the target per start/end tag and builds no tree, which keeps memory
to what the target collects and is about twice as fast as ``iterparse``
with element clearing. A target has no source lines, so errors found in it
name an element by its ordinal among same-named elements, and
``sourceline`` rereads the document to turn that into a line number (only
ever on the error path).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

import attrs
import numpy as np
from lxml import etree

from ..errors import CoverageError
from .numbers import count
from .source import ReportBytes, malformed

SAFE_OPTIONS: dict[str, bool] = {
    "resolve_entities": False,
    "load_dtd": False,
    "dtd_validation": False,
    "no_network": True,
    "huge_tree": False,
}

I32_MAX = 2**31 - 1

# Everything that may precede the root element: whitespace, the XML
# declaration and other processing instructions, comments, and a DOCTYPE with
# an optional internal subset.
_PROLOG = re.compile(
    rb"(?:\s+|<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^\[>]*(?:\[.*?\]\s*)?>)*", re.DOTALL
)
_DOCTYPE = re.compile(rb"<!DOCTYPE[^\[>]*(?:\[.*?\]\s*)?>", re.DOTALL)
_ROOT = re.compile(rb"<([A-Za-z_][-\w.:]*)([^>]*)")
# libxml2 appends the position to its messages; the error carries it already.
_POSITION = re.compile(r", line \d+, column \d+$")


@attrs.frozen
class Root:
    """What format sniffing needs to know about a document's start."""

    name: bytes  # the root element's name
    attributes: bytes  # the text of its start tag after the name
    doctype: bytes  # the DOCTYPE declaration, or b""
    offset: int  # where the root element starts


def root_element(data: bytes) -> Root | None:
    """The root element of an XML document, judged from its first bytes."""
    prolog_end = _PROLOG.match(data).end()
    root = _ROOT.match(data, prolog_end)
    if root is None:
        return None
    doctype = _DOCTYPE.search(data, 0, prolog_end)
    return Root(root[1], root[2], doctype[0] if doctype else b"", prolog_end)


def safe_parser(target: Any = None) -> etree.XMLParser:
    """An lxml parser that resolves no entity, loads no DTD and never touches the network."""
    return etree.XMLParser(target=target, **SAFE_OPTIONS)


def refuse_entity_declarations(report: ReportBytes) -> None:
    root = root_element(report.data)
    prolog = report.data[: root.offset] if root else b""
    if b"<!ENTITY" in prolog:
        raise malformed(
            report.origin,
            "the XML declares entities; coverage reports never do, so it is refused unread",
            prolog.count(b"\n", 0, prolog.find(b"<!ENTITY")) + 1,
            suggestion="Regenerate the report with its coverage tool; do not pass hand-edited XML.",
        )


def stream(report: ReportBytes, target: Any) -> Any:
    """Feed the whole document to ``target``'s start/end methods; return ``target.close()``.

    A well-formedness error becomes a ``malformed_report`` naming its line;
    errors the target raises pass through unchanged.
    """
    refuse_entity_declarations(report)
    try:
        return etree.fromstring(report.data, safe_parser(target))
    except etree.XMLSyntaxError as exc:
        message = _POSITION.sub("", exc.msg or "") or "syntax error"
        raise malformed(report.origin, f"not well-formed XML: {message}", exc.lineno) from None


def elements(data: bytes, tag: str) -> Iterator[Any]:
    """Each ``<tag>`` element, complete, in document order (for short side passes).

    Earlier matches are cleared as the pass goes, so only the skeleton of the
    elements read so far is kept.
    """
    for _, element in etree.iterparse(io.BytesIO(data), events=("end",), tag=tag, **SAFE_OPTIONS):
        yield element
        element.clear()


def sourceline(data: bytes, tag: str, ordinal: int) -> int | None:
    """The line of the ``ordinal``-th ``<tag>`` element (0-based), if the document gets that far."""
    try:
        element = next(islice(elements(data, tag), ordinal, None), None)
    except etree.XMLSyntaxError:
        return None
    return None if element is None else element.sourceline


def int_column(
    values: list[str | None],
    what: str,
    origin: str,
    line_of: Callable[[int], int | None],
    maximum: int | None = None,
) -> np.ndarray:
    """Integer attribute values as an int64 column, or a clear error naming the bad one's line.

    ``line_of(i)`` gives the source line of ``values[i]``; it is only called
    for a value that is refused, because finding a line rereads the document.
    """
    try:
        digits = "".join(values)  # type: ignore[arg-type]  # a None (missing) raises TypeError
        # isdigit alone would let through non-ASCII digits such as "²".
        if digits.isascii() and digits.isdigit():
            column = np.fromiter(map(int, values), dtype=np.int64, count=len(values))  # type: ignore[arg-type]
            if maximum is None or not len(column) or column.max() <= maximum:
                return column
    except (TypeError, ValueError, OverflowError):
        pass
    # Slow path: find the first value numbers.count refuses, and say where it is.
    parsed = []
    for i, value in enumerate(values):
        if value is None:
            raise malformed(origin, f"{what} is missing", line_of(i))
        try:
            n = count(value, origin, what)
        except CoverageError:
            count(value, origin, what, line_of(i))  # the same error, now with its line
            raise
        if maximum is not None and n > maximum:
            raise malformed(origin, f"{what} is out of range ({n})", line_of(i))
        parsed.append(n)
    return np.array(parsed, dtype=np.int64)
