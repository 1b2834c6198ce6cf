"""Bounded report sources: a path or a binary stream, gzip and zstd undone.

The cap counts *decompressed* bytes and is enforced while reading, so neither
a huge file nor a small gzip that inflates past the cap is ever held whole.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import zlib
from collections.abc import Generator
from typing import TYPE_CHECKING, BinaryIO, Protocol, cast

import attrs
import zstandard

from ..config import MIB
from ..errors import CoverageError, ErrorCode, Remedy
from ..report import MAX_PATH_BYTES
from .opening import OpenedReport, open_report

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CHUNK = 1 * MIB
DEFAULT_MAX_REPORT_BYTES = 256 * MIB
# A streamed report arrives in pieces of this many decompressed bytes: what a streaming parser holds of it.
STREAM_CHUNK = 2 * MIB
EDGE_BYTES = 64 * 1024  # the head and tail a format is detected from

Source = str | os.PathLike[str] | BinaryIO | bytes | OpenedReport


@attrs.frozen
class Limits:
    max_report_bytes: int = DEFAULT_MAX_REPORT_BYTES


@attrs.frozen
class ReportBytes:
    """A report's decompressed content and where it came from."""

    data: bytes
    origin: str  # a path or "<stream>", used in error messages
    compression: str | None  # "gzip", "zstd" or None
    stored_bytes: int  # size as read, before decompression


@attrs.frozen
class ReportScan:
    """What one pass over a report found without holding it: its identity, its size and its edges."""

    origin: str
    compression: str | None
    stored_bytes: int  # size as read, before decompression
    size: int  # decompressed bytes
    sha256: str  # of the decompressed bytes, the report's identity
    head: bytes  # the first EDGE_BYTES
    tail: bytes  # the last EDGE_BYTES


class ReportStream:
    """A seekable report read in decompressed chunks, as often as needed, never whole.

    Each pass (``chunks``) starts from the beginning, counts the bytes against the cap and hashes
    them, so the caller can prove that a second pass read what the first one did (``sha256``).
    """

    def __init__(self, opened: OpenedReport, limits: Limits | None = None, chunk: int = STREAM_CHUNK) -> None:
        self.opened = opened
        self.origin = str(opened.path)
        self.cap = (limits or Limits()).max_report_bytes
        self.chunk = chunk
        self.compression: str | None = None
        self.stored_bytes = 0
        self.size = 0
        self.sha256 = ""

    def chunks(self) -> Generator[bytes]:
        """The report's decompressed bytes from the start, ``chunk`` at a time; ``report_too_large`` as soon
        as they pass the cap; ``sha256``, ``size`` and ``stored_bytes`` are set once the pass ends."""
        import hashlib  # loads OpenSSL: only an ingest needs it, never `coverage-mcp parse`

        stream = self.opened.stream
        stream.seek(0)
        head = _read_exact(stream, 4)
        stream.seek(0)
        digest = hashlib.sha256()
        total = 0
        raw = _CountingReader(stream)
        errors: tuple[type[Exception], ...]
        if head.startswith(GZIP_MAGIC):
            self.compression, errors, what = "gzip", (OSError, EOFError, zlib.error), "gzip"
            reader: _Readable = gzip.GzipFile(fileobj=raw, mode="rb")
        elif head.startswith(ZSTD_MAGIC):
            self.compression, errors, what = "zstd", (zstandard.ZstdError,), "zstd"
            dctx = zstandard.ZstdDecompressor(max_window_size=2**31)
            reader = dctx.stream_reader(cast(BinaryIO, raw), read_across_frames=True)
        else:
            self.compression, errors, what = None, (), ""
            reader = raw
            if self.opened.size > self.cap:
                raise too_large(self.origin, self.cap)
        with contextlib.closing(cast(io.RawIOBase, reader)) if what else contextlib.nullcontext():
            while True:
                try:
                    part = reader.read(self.chunk)
                except errors as exc:
                    raise malformed(self.origin, f"broken {what} stream ({exc})") from None
                if not part:
                    break
                total += len(part)
                if total > self.cap:
                    raise too_large(self.origin, self.cap)
                digest.update(part)
                yield part
        self.size, self.stored_bytes, self.sha256 = total, raw.count, digest.hexdigest()

    def head(self, n: int = EDGE_BYTES) -> bytes:
        """The first ``n`` decompressed bytes (fewer if the report is shorter), read without the rest."""
        pieces = ReportStream(self.opened, Limits(self.cap), n).chunks()
        try:
            return next(pieces, b"")
        finally:
            pieces.close()

    def scan(self) -> ReportScan:
        """One pass: the identity, size, head and tail (nothing else is kept)."""
        head = b""
        tail = b""
        for part in self.chunks():
            if len(head) < EDGE_BYTES:
                head += part[: EDGE_BYTES - len(head)]
            tail = (tail + part)[-EDGE_BYTES:] if len(part) < EDGE_BYTES else part[-EDGE_BYTES:]
        return ReportScan(
            self.origin, self.compression, self.stored_bytes, self.size, self.sha256, head, tail
        )


def too_large(origin: str, limit: int) -> CoverageError:
    return CoverageError(
        ErrorCode.REPORT_TOO_LARGE,
        f"{origin}: report is larger than {limit:,} bytes once decompressed",
        f"Raise the cap with COVERAGE_MCP_MAX_REPORT_BYTES (bytes, e.g. {4 * limit}) or split the report.",
        {"limit_bytes": limit},
        Remedy(setting="COVERAGE_MCP_MAX_REPORT_BYTES", value=4 * limit),
    )


def read_report(source: Source, limits: Limits | None = None) -> ReportBytes:
    """Read ``source`` whole, refusing it as soon as it passes the cap."""
    limits = limits or Limits()
    if isinstance(source, bytes | bytearray | memoryview):
        return _from_stream(io.BytesIO(bytes(source)), "<bytes>", limits)
    if isinstance(source, str | os.PathLike):
        with open_report(source) as opened:
            return _from_stream(opened.stream, str(opened.path), limits, size=opened.size)
    if isinstance(source, OpenedReport):
        return _from_stream(source.stream, str(source.path), limits, size=source.size)
    return _from_stream(source, getattr(source, "name", "<stream>"), limits)


def _from_stream(stream: BinaryIO, origin: str, limits: Limits, size: int | None = None) -> ReportBytes:
    cap = limits.max_report_bytes
    head = _read_exact(stream, 4)
    if head.startswith(GZIP_MAGIC):
        raw = _CountingReader(_Prefixed(head, stream))
        try:
            data = _bounded(gzip.GzipFile(fileobj=raw, mode="rb"), origin, cap)
        except (OSError, EOFError, zlib.error) as exc:
            raise malformed(origin, f"broken gzip stream ({exc})") from None
        return ReportBytes(data, origin, "gzip", raw.count)
    if head.startswith(ZSTD_MAGIC):
        raw = _CountingReader(_Prefixed(head, stream))
        # max_window_size allows zstd --long=27 (and up to 2 GiB windows).
        dctx = zstandard.ZstdDecompressor(max_window_size=2**31)
        try:
            # zstandard only calls read(); its stubs ask for a whole IO[bytes].
            with dctx.stream_reader(cast(BinaryIO, raw), read_across_frames=True) as reader:
                data = _bounded(reader, origin, cap)
        except zstandard.ZstdError as exc:
            raise malformed(origin, f"broken zstd stream ({exc})") from None
        return ReportBytes(data, origin, "zstd", raw.count)
    if size is not None:
        # A plain regular file: its size is known, so refuse it before reading
        # and read it in one call (chunks joined would hold it twice).
        if size > cap:
            raise too_large(origin, cap)
        # One byte more than the size tells whether it grew while we read;
        # reading from the start again avoids copying the whole text to prepend ``head``.
        stream.seek(0)
        data = stream.read(size + 1)
        if len(data) > size:
            data += _bounded(stream, origin, cap - len(data))
        if len(data) > cap:
            raise too_large(origin, cap)
        return ReportBytes(data, origin, None, len(data))
    data = _bounded(_Prefixed(head, stream), origin, cap)
    return ReportBytes(data, origin, None, len(data))


def claim_bytes(opened: OpenedReport, cap: int) -> int:
    """The bytes a read of ``opened`` may hold: its size, or the whole cap when compressed."""
    head = opened.stream.read(4)
    opened.stream.seek(0)
    if head.startswith(GZIP_MAGIC) or head.startswith(ZSTD_MAGIC):
        return cap
    return min(opened.size, cap)


# Report content in an error message: at most this many characters, repr-escaped
# (no control character or terminal escape reaches a log), labelled as such.
EXCERPT_CHARS = 80
# The whole description of what is wrong; locations such as JSON paths embed
# keys from the report, so even they are cut past this.
MAX_WHAT_CHARS = 400


def excerpt(value: str | bytes) -> str:
    """``excerpt: '...'``: the one form in which report content appears in a message."""
    text = value.decode("utf-8", "backslashreplace") if isinstance(value, bytes | bytearray) else str(value)
    n = min(len(text), EXCERPT_CHARS)
    while len(repr(text[:n])) > EXCERPT_CHARS and n > 0:
        n -= 1
    return f"excerpt: {text[:n]!r}" + (" (cut)" if n < len(text) else "")


def path_too_long(origin: str, path: str, line: int | None) -> CoverageError:
    size = len(path.encode("utf-8", "surrogatepass"))
    return malformed(
        origin,
        f"a file path of {size:,} bytes is longer than {MAX_PATH_BYTES:,} ({excerpt(path)})",
        line,
        "Regenerate the report from a checkout whose paths are of normal length, or fix the path in it.",
    )


def malformed(origin: str, what: str, line: int | None = None, suggestion: str = "") -> CoverageError:
    if len(what) > MAX_WHAT_CHARS:
        what = what[:MAX_WHAT_CHARS] + " ... (message cut)"
    where = f"{origin}:{line}" if line is not None else origin
    return CoverageError(
        ErrorCode.MALFORMED_REPORT,
        f"{where}: {what}",
        suggestion
        or "Regenerate the report with its tool; the file looks damaged or is not a coverage report.",
        {"path": origin, **({"line": line} if line is not None else {})},
    )


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        part = stream.read(n - len(buf))
        if not part:
            break
        buf += part
    return buf


class _Readable(Protocol):
    """What the readers here need of a stream: a plain file, a gzip or zstd reader, another reader here."""

    def read(self, n: int, /) -> bytes: ...


def _bounded(stream: _Readable, origin: str, cap: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        part = stream.read(CHUNK)
        if not part:
            break
        total += len(part)
        if total > cap:
            # Dropped before raising: the traceback keeps this frame (and the
            # list) alive until the error has travelled to its caller.
            parts.clear()
            raise too_large(origin, cap)
        parts.append(part)
    return b"".join(parts)


class _Prefixed(io.RawIOBase):
    """A stream with some already-read bytes put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if n is None or n < 0:
                out, self._head = self._head + self._rest.read(), b""
                return out
            out, self._head = self._head[:n], self._head[n:]
            if len(out) < n:
                out += self._rest.read(n - len(out)) or b""
            return out
        return self._rest.read(n) or b""

    def readinto(self, b: WriteableBuffer) -> int:
        buf = cast("bytearray | memoryview", b)  # the writable buffer io hands a raw stream, typed as one
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)


class _CountingReader(io.RawIOBase):
    def __init__(self, inner: _Readable) -> None:
        self._inner = inner
        self.count = 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        data = self._inner.read(n)
        self.count += len(data)
        return data

    def readinto(self, b: WriteableBuffer) -> int:
        buf = cast("bytearray | memoryview", b)  # the writable buffer io hands a raw stream, typed as one
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)
