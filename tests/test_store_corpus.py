"""Every corpus report, ingested into a repository, keeps exactly the totals parse reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from coverage_core import open_project, parse
from coverage_core.model import snapshot_to_dict

from . import corpus
from .gitrepo import make_repo

REPORTS = [e["file"] for e in corpus.entries()]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("corpus-repo") / "r", {"README": "corpus\n"})


@pytest.mark.parametrize("name", REPORTS)
def test_an_ingested_corpus_report_keeps_the_totals_parse_reports(repo: Path, name: str) -> None:
    expected = parse(corpus.path(name)).summary()
    with open_project(repo) as project:
        snap = project.ingest(corpus.path(name), suite=name)
        record = snapshot_to_dict(snap)
        assert record["totals"] == expected["totals"]
        assert record["files"] == expected["files"] and record["tests"] == expected["tests"]
        # Nothing maps in this repository, and that is said, not hidden.
        assert snap.path_mapping.unmapped + snap.path_mapping.ambiguous == snap.files
        assert snap.files == 0 or any(w["code"] == "no_files_mapped" for w in snap.warnings)
        stored = project.store.con.execute(
            "SELECT count(*) FROM files f JOIN snapshots s USING (snap) WHERE s.snapshot_id = ?",
            [snap.snapshot_id],
        ).fetchone()[0]
        assert stored == expected["files"]
