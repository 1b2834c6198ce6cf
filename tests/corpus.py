"""Access to the shared corpus of real reports (read-only, beside the checkout)."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("COVERAGE_MCP_CORPUS", ROOT.parent / "shared" / "corpus"))


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
