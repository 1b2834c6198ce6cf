"""The composite inventory refuses what it cannot own, with JSON paths, and leaves nothing half-written.

Needs no toolchain: the evidence is hand-written regions-v1.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest

from coverage_core import open_project
from coverage_core.composite import build
from coverage_core.composite.inventory import MAX_INVENTORY_BYTES, load
from coverage_core.errors import CoverageError, ErrorCode
from tests.gitrepo import make_repo

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parents[1] / "coverage_core" / "composite" / "inventory.schema.json"
    ).read_text()
)
GOOD = {
    "inventory_version": 1,
    "components": [
        {
            "id": "gpu",
            "language": "other",
            "format": "regions-v1",
            "sources": ["shaders/*.wgsl"],
            "variants": ["vulkan", "metal"],
        }
    ],
}
TRACKED = ["shaders/a.wgsl", "shaders/b.wgsl", "src/x.c"]


def _errors(doc: object) -> list[dict[str, str]]:
    with pytest.raises(CoverageError) as err:
        load(json.dumps(doc).encode(), "inv.json", TRACKED)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    return err.value.details["errors"]


def _with(**changes: object) -> dict:
    doc = json.loads(json.dumps(GOOD))
    doc["components"][0].update(changes)
    return doc


def test_a_valid_inventory_has_one_entry_per_source_and_variant_and_its_content_hash() -> None:
    data = json.dumps(GOOD).encode()
    inv = load(data, "inv.json", TRACKED)
    assert inv.sha256 == hashlib.sha256(data).hexdigest()
    assert [(e.variant, e.logical_source_id) for e in inv.entries] == [
        ("vulkan", "shaders/a.wgsl"),
        ("vulkan", "shaders/b.wgsl"),
        ("metal", "shaders/a.wgsl"),
        ("metal", "shaders/b.wgsl"),
    ]
    jsonschema.validate(GOOD, SCHEMA)


def test_a_toml_inventory_reads_like_the_json_one() -> None:
    toml = (
        b'inventory_version = 1\n[[components]]\nid = "gpu"\nlanguage = "other"\nformat = "regions-v1"\n'
        b'sources = ["shaders/*.wgsl"]\nvariants = ["vulkan", "metal"]\n'
    )
    assert [e.logical_source_id for e in load(toml, "inv.toml", TRACKED).entries] == [
        e.logical_source_id for e in load(json.dumps(GOOD).encode(), "inv.json", TRACKED).entries
    ]


@pytest.mark.parametrize(
    ("doc", "path", "words"),
    [
        ({**GOOD, "inventory_version": 2}, "$.inventory_version", "must be 1"),
        ({**GOOD, "extra": 1}, "$.extra", "not a known key"),
        ({"inventory_version": 1, "components": []}, "$.components", "non-empty"),
        (_with(language="rust"), "$.components[0].language", "must be one of"),
        (_with(format="lcov"), "$.components[0].format", "must be one of"),
        (_with(sources=[]), "$.components[0].sources", "non-empty list"),
        (_with(sources=["shaders/*.glsl"]), "$.components[0].sources[0]", "matches no file"),
        (_with(variants=["a", "a"]), "$.components[0].variants[1]", "duplicate variant"),
        (_with(id="bad id!"), "$.components[0].id", "letters, digits"),
    ],
)
def test_a_malformed_inventory_is_refused_with_the_json_path_of_each_error(doc, path, words) -> None:
    errors = _errors(doc)
    assert any(e["path"] == path and words in e["message"] for e in errors), errors
    if "matches no file" in words:
        jsonschema.validate(doc, SCHEMA)  # git, not the schema, knows which files exist
    else:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(doc, SCHEMA)


@pytest.mark.parametrize(
    "glob",
    ["../other/*.wgsl", "/etc/*", "shaders/../../x", "./shaders/*.wgsl", "C:/x/*.c", "shaders\\a.wgsl"],
)
def test_a_glob_that_escapes_the_checkout_is_refused(glob: str) -> None:
    errors = _errors(_with(sources=[glob]))
    assert errors[0]["path"] == "$.components[0].sources[0]"
    assert "checkout" in errors[0]["message"] or "relative" in errors[0]["message"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_with(sources=[glob]), SCHEMA)


def test_duplicate_logical_ids_and_sources_owned_twice_are_refused() -> None:
    doc = json.loads(json.dumps(GOOD))
    doc["aliases"] = [
        {"logical_source_id": "k", "paths": ["shaders/a.wgsl", "shaders/b.wgsl"]},
        {"logical_source_id": "k", "paths": ["shaders/a.wgsl", "shaders/b.wgsl"]},
    ]
    messages = [e["message"] for e in _errors(doc)]
    assert any("duplicate logical_source_id 'k'" in m for m in messages)
    doc = json.loads(json.dumps(GOOD))
    doc["components"].append(
        {"id": "gpu2", "language": "other", "format": "regions-v1", "sources": ["shaders/a.wgsl"]}
    )
    assert any("already owned by component 'gpu'" in e["message"] for e in _errors(doc))
    doc = json.loads(json.dumps(GOOD))
    doc["aliases"] = [{"logical_source_id": "k", "paths": ["shaders/a.wgsl", "src/x.c"]}]
    assert any("not a source of any component" in e["message"] for e in _errors(doc))


def test_an_oversized_inventory_is_refused_before_it_is_parsed() -> None:
    data = b" " * (MAX_INVENTORY_BYTES + 1)
    with pytest.raises(CoverageError) as err:
        load(data, "inv.json", TRACKED)
    assert err.value.details["reason"] == "inventory_too_large"


def test_invalid_json_names_the_inventory() -> None:
    with pytest.raises(CoverageError) as err:
        load(b'{"inventory_version": 1,', "inv.json", TRACKED)
    assert err.value.message.startswith("inv.json: the inventory is not valid JSON or TOML")


# -- through build: unknown variants, paths outside the checkout, nothing half-written -----------


def _regions(text: bytes, variant: str | None = None) -> str:
    f = {
        "path": "shaders/a.wgsl",
        "source_sha256": hashlib.sha256(text).hexdigest(),
        "regions": [{"start_line": 1, "start_col": 1, "end_line": 1, "end_col": 5, "hits": 1}],
    }
    if variant:
        f["variant"] = variant
    return json.dumps({"format": "coverage-mcp-regions-v1", "version": 1, "files": [f]})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(
        tmp_path / "r",
        {
            "shaders/a.wgsl": "fn a() {}\n",
            "inv.json": json.dumps(
                {**GOOD, "components": [{**GOOD["components"][0], "sources": ["shaders/a.wgsl"]}]}
            ),
        },
    )
    (root / "ev.json").write_text(_regions(b"fn a() {}\n"))
    (root / "ev-dx.json").write_text(_regions(b"fn a() {}\n", variant="dx12"))
    return root


def _composites(root: Path) -> int:
    with open_project(root) as project:
        return project.store.con.execute("SELECT count(*) FROM composite_snapshots").fetchone()[0]


@pytest.mark.parametrize(
    ("reports", "reason"),
    [
        (["gpu:directx=ev.json"], "unknown_variant"),
        (["gpu:vulkan=ev-dx.json"], "unknown_variant"),
        (["ev.json"], "unassigned_report"),
    ],
)
def test_an_undeclared_or_unnamed_variant_is_refused_and_nothing_is_stored(
    repo: Path, reports, reason
) -> None:
    with open_project(repo) as project, pytest.raises(CoverageError) as err:
        build(
            project,
            "inv.json",
            [str(repo / r.split("=")[-1]) if "=" not in r else r.replace("=", f"={repo}/") for r in reports],
        )
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and err.value.details["reason"] == reason
    assert _composites(repo) == 0


def test_an_inventory_outside_the_checkout_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "inv.json"
    outside.write_text((repo / "inv.json").read_text())
    with open_project(repo) as project, pytest.raises(CoverageError) as err:
        build(project, outside, [f"gpu:vulkan={repo}/ev.json"])
    assert err.value.code is ErrorCode.PATH_OUTSIDE_CHECKOUT
    assert _composites(repo) == 0


def test_both_variants_of_a_source_are_required(repo: Path) -> None:
    with open_project(repo) as project:
        comp = build(project, "inv.json", [f"gpu:vulkan={repo}/ev.json"])
        assert comp.status == "incomplete"
        assert [(b.variant, b.reason) for b in comp.blocking] == [("metal", "missing")]
        both = build(project, "inv.json", [f"gpu:vulkan={repo}/ev.json", f"gpu:metal={repo}/ev.json"])
    assert both.status == "complete" and both.totals["code"] == {"found": 2, "hit": 2}
    # The earlier composite's denominator now carries the metal entry: same denominator, no hits.
    assert comp.totals["code"]["found"] == 1


def test_the_agent_import_reads_reports_inside_the_checkout_only(repo: Path, tmp_path: Path) -> None:
    from coverage_core.service import Service

    elsewhere = tmp_path / "ev.json"
    elsewhere.write_text((repo / "ev.json").read_text())
    with open_project(repo) as project:
        with pytest.raises(CoverageError) as err:
            Service(project).call(
                "coverage_import", {"inventory_path": "inv.json", "reports": [f"gpu:vulkan={elsewhere}"]}
            )
        assert err.value.code is ErrorCode.PATH_OUTSIDE_CHECKOUT
        with pytest.raises(CoverageError) as err:
            Service(project).call("coverage_import", {"inventory_path": "inv.json"})
        assert err.value.code is ErrorCode.INVALID_ARGUMENT
        ok = Service(project).call(
            "coverage_import",
            {"inventory_path": "inv.json", "reports": ["gpu:vulkan=ev.json", "gpu:metal=ev.json"]},
        )
    assert ok["data"]["composite"]["status"] == "complete"


def test_a_component_whose_excludes_remove_every_source_is_refused() -> None:
    errors = _errors(_with(exclude=["shaders/*"]))
    assert any(
        e["path"] == "$.components[0]" and "declares no production source after excludes" in e["message"]
        for e in errors
    ), errors
    # Some sources left: still an inventory.
    assert [
        e.logical_source_id
        for e in load(json.dumps(_with(exclude=["shaders/a.*"])).encode(), "inv.json", TRACKED).entries
    ] == ["shaders/b.wgsl", "shaders/b.wgsl"]


def test_an_exclude_that_empties_one_of_two_components_names_that_component() -> None:
    doc = json.loads(json.dumps(GOOD))
    doc["components"].append(
        {"id": "c", "language": "native", "format": "llvm", "sources": ["src/*.c"], "exclude": ["**/x.c"]}
    )
    errors = _errors(doc)
    assert [e["path"] for e in errors] == ["$.components[1]"]


def test_a_malformed_report_names_its_path_once_in_the_blocking_reason(repo: Path) -> None:
    bad = repo / "bad.json"
    bad.write_text(json.dumps({"format": "coverage-mcp-regions-v1", "version": 1, "meta": 5, "files": []}))
    with open_project(repo) as project:
        comp = build(project, "inv.json", [f"gpu:vulkan={bad}", f"gpu:metal={repo}/ev.json"])
    detail = next(b.detail for b in comp.blocking if b.reason == "malformed")
    assert detail.count("bad.json") == 1, detail
    assert "meta" in detail
