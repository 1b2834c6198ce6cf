"""The project's own copy of the report corpus (``tests/corpus``, byte-identical to MANIFEST.json)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import zstandard

CORPUS = Path(__file__).resolve().parent / "corpus"


@cache
def manifest() -> dict:
    return json.loads((CORPUS / "MANIFEST.json").read_text())


def entries() -> list[dict]:
    return manifest()["files"]


def path(name: str) -> Path:
    """A corpus file by its manifest name (``lcov/x.lcov.zst``)."""
    return CORPUS / name


def decompressed(name: str, into: Path) -> Path:
    """The corpus file decompressed into ``into`` (done once per folder)."""
    src = CORPUS / name
    if not name.endswith(".zst"):
        return src
    out = into / Path(name).name.removesuffix(".zst")
    if not out.exists():
        dctx = zstandard.ZstdDecompressor(max_window_size=2**31)
        with src.open("rb") as f, out.open("wb") as g:
            dctx.copy_stream(f, g)
    return out
