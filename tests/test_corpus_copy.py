"""The report corpus travels with the project: byte-identical to its manifest, read from tests/corpus only."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest
import zstandard

from . import corpus

ROOT = Path(__file__).resolve().parents[1]


def _sha256_of_content(path: Path, compressed: bool) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as raw:
        stream = zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(raw) if compressed else raw
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@pytest.mark.parametrize("entry", corpus.entries(), ids=lambda e: e["file"])
def test_every_corpus_file_is_byte_identical_to_its_manifest_checksum(entry: dict) -> None:
    path = corpus.path(entry["file"])
    assert path.stat().st_size == entry["stored_bytes"]
    assert _sha256_of_content(path, entry["file"].endswith(".zst")) == entry["uncompressed_sha256"]


def test_the_corpus_holds_exactly_the_manifests_files_and_its_readme() -> None:
    present = {p.relative_to(corpus.CORPUS).as_posix() for p in corpus.CORPUS.rglob("*") if p.is_file()}
    assert present == {e["file"] for e in corpus.entries()} | {"MANIFEST.json", "README.md"}


def test_the_corpus_readme_describes_every_report_with_its_producing_tool() -> None:
    readme = (corpus.CORPUS / "README.md").read_text()
    for entry in corpus.entries():
        row = next((line for line in readme.splitlines() if f"`{entry['file']}`" in line), None)
        assert row is not None, f"{entry['file']} is not described in tests/corpus/README.md"
        assert entry["producing_tool"].split(" (")[0] in row


def test_nothing_in_the_committed_project_reads_a_folder_beside_the_checkout() -> None:
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True)
    beside = re.compile(r"\.\./shared|parent / \"shared\"|parents\[\d\] / \"shared\"")
    offenders = [
        name
        for name in tracked.stdout.splitlines()
        if name.endswith((".py", ".md", ".toml", ".cfg", ".ini", ".sh"))
        or name.startswith(("scripts/", ".ci/"))
        if not name.startswith("tests/corpus/")
        and (ROOT / name).is_file()
        and beside.search((ROOT / name).read_text(errors="replace"))
    ]
    assert offenders == []
