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

Both XML formats also share how attribute strings become validated integer
columns (``int_column``) and how "covered of total" branch counts become
branch rows (``add_branch_outcomes``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any, TypedDict

import attrs
import numpy as np
from lxml import etree

from ..errors import CoverageError
from ..report import ReportBuilder
from .reading import ReportBytes, excerpt, malformed
from .report_numbers import INT64_MAX, count

if TYPE_CHECKING:
    from lxml.etree._parser import CustomTargetParser  # the stubs' name for a parser with a target


class _SafeOptions(TypedDict):
    resolve_entities: bool
    load_dtd: bool
    dtd_validation: bool
    no_network: bool
    huge_tree: bool


SAFE_OPTIONS: _SafeOptions = {
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
_PROLOG = re.compile(rb"(?:\s+|<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^\[>]*(?:\[.*?\]\s*)?>)*", re.DOTALL)
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
    prolog = _PROLOG.match(data)  # only starred parts: it always matches, at least b""
    prolog_end = prolog.end() if prolog else 0
    root = _ROOT.match(data, prolog_end)
    if root is None:
        return None
    doctype = _DOCTYPE.search(data, 0, prolog_end)
    return Root(root[1], root[2], doctype[0] if doctype else b"", prolog_end)


def safe_parser(target: Any = None) -> etree.XMLParser | CustomTargetParser[Any]:
    """An lxml parser that resolves no entity, loads no DTD and never touches the network."""
    return etree.XMLParser(target=target, **SAFE_OPTIONS)


def refuse_entity_declarations(report: ReportBytes) -> None:
    """Refuse a document whose DOCTYPE declares entities (billion laughs, XXE) before parsing it."""
    root = root_element(report.data)
    # Where the root cannot be told, the whole document is searched: a real
    # report never carries the text "<!ENTITY" (in text it would be escaped).
    prolog = report.data[: root.offset] if root else report.data
    if b"<!ENTITY" in prolog:
        raise malformed(
            report.origin,
            "the XML declares entities; coverage reports never do, so it is refused unread",
            prolog.count(b"\n", 0, prolog.find(b"<!ENTITY")) + 1,
            suggestion="Regenerate the report with its coverage tool; do not pass hand-edited XML.",
        )


def stream(report: ReportBytes, target: Any) -> None:
    """Feed the whole document to ``target``'s ``start(tag, attrib)`` and ``end(tag)``.

    A well-formedness error becomes a ``malformed_report`` naming its line;
    errors the target raises pass through unchanged.
    """
    if not report.data or report.data.isspace():  # isspace stops at the first byte of text: no copy
        raise malformed(
            report.origin, "report is empty", suggestion="Regenerate the report; the file has no content."
        )
    refuse_entity_declarations(report)
    try:
        etree.fromstring(report.data, safe_parser(target))
    except etree.XMLSyntaxError as exc:
        raise _not_well_formed(report, exc) from None


def elements(report: ReportBytes, tag: str) -> Iterator[Any]:
    """Each ``<tag>`` element, complete, in document order (for short side passes).

    Earlier matches are cleared as the pass goes, so only the skeleton of the
    elements read so far is kept.
    """
    parse = etree.iterparse(io.BytesIO(report.data), events=("end",), tag=tag, **SAFE_OPTIONS)
    try:
        for _, element in parse:
            yield element
            element.clear()
    except etree.XMLSyntaxError as exc:
        raise _not_well_formed(report, exc) from None


def sourceline(report: ReportBytes, tag: str, ordinal: int) -> int | None:
    """The line of the ``ordinal``-th ``<tag>`` element (0-based), if the document gets that far."""
    try:
        element = next(islice(elements(report, tag), ordinal, None), None)
    except CoverageError:
        return None
    return None if element is None else element.sourceline


def _not_well_formed(report: ReportBytes, exc: etree.XMLSyntaxError) -> CoverageError:
    message = _POSITION.sub("", exc.msg or "") or "syntax error"
    return malformed(report.origin, f"not well-formed XML (the parser says, {excerpt(message)})", exc.lineno)


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
        # Fast path, for values that are plain ASCII digits. numpy reads the
        # joined text in C, several times faster than int() per value; an
        # empty value makes the count come out short, and numpy saturates
        # rather than overflows, so a value at the int64 maximum goes the slow way.
        digits = "".join(values)  # type: ignore[arg-type]  # a None (missing) raises TypeError
        if digits.isascii() and digits.isdigit():  # isdigit alone would accept "²"
            column = np.fromstring(" ".join(values), dtype=np.int64, sep=" ")  # type: ignore[arg-type]  # as above
            limit = INT64_MAX - 1 if maximum is None else min(maximum, INT64_MAX - 1)
            if len(column) == len(values) and column.max() <= limit:
                return column
    except (TypeError, ValueError):
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


def add_branch_outcomes(
    builder: ReportBuilder,
    report: ReportBytes,
    file: np.ndarray,
    line: np.ndarray,
    covered: np.ndarray,
    total: np.ndarray,
) -> None:
    """Branch rows for lines that state only how many outcomes were covered of how many.

    That is all Cobertura's condition-coverage and JaCoCo's mb/cb say: not
    which outcomes or how often. Each line gets ``total`` rows, the covered
    ones first with taken=1, then the missed ones with taken=0. A line
    repeated in one file (gcovr's header lines) keeps each element's outcomes
    apart through ``block``, the element's ordinal among the repeats.
    """
    if not len(line):
        return
    rows = int(total.sum())
    # A real report spends far more than a byte per outcome; this only stops a
    # small file from claiming billions of rows.
    if rows > len(report.data):
        raise malformed(
            report.origin,
            f"the report claims {rows:,} branch outcomes in {len(report.data):,} bytes; "
            "refusing to expand them",
        )
    order = np.lexsort((line, file))  # stable, so repeats keep document order
    f, n = file[order], line[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (f[1:] != f[:-1]) | (n[1:] != n[:-1])
    starts = np.flatnonzero(new)
    block = np.empty(len(order), dtype=np.int64)
    block[order] = np.arange(len(order)) - np.repeat(starts, np.diff(np.append(starts, len(order))))
    outcome = np.arange(rows) - np.repeat(np.cumsum(total) - total, total)
    # One shared label object per outcome number, not one per row.
    labels = np.array([str(i) for i in range(int(total.max()))], dtype=object)
    builder.add(
        "branches",
        file=np.repeat(file, total),
        line=np.repeat(line, total),
        block=np.repeat(block, total),
        branch=labels[outcome],
        taken=(outcome < np.repeat(covered, total)).astype(np.int64),
    )
