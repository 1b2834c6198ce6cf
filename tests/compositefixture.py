"""A real multi-language product for composite tests, built and measured inside the test run.

``make_product(root)`` writes and commits a small repository: a C library
(``native/``) built with clang's source-based coverage in two variants
(``fast``, and ``safe`` with ``-DSAFE``), a Python package (``py/fixpkg``) that
loads it with ctypes and is measured by coverage.py with arcs, a JavaScript
module (``js/lib/shapes.js``, with a committed build copy ``js/dist/shapes.js``
aliased to it) measured by c8 into Istanbul JSON, and a WGSL shader with one
hand-written regions-v1 report. ``measure(root)`` runs everything and returns
the report paths by role. The toolchains come from ``tests/systemtools.py``
(skip locally, fail under CI=true when missing).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.gitrepo import commit, make_repo
from tests.systemtools import require

MATHLIB_C = """\
#include "mathlib.h"

int clamp(int x, int lo, int hi) {
    if (x < lo) {
        return lo;
    }
    if (x > hi) {
        return hi;
    }
    return x;
}

int safe_div(int a, int b) {
#ifdef SAFE
    if (b == 0) {
        return 0;
    }
#endif
    return a / b;
}

int never_called(int x) {
    return x * 3;
}
"""

MATHLIB_H = """\
int clamp(int x, int lo, int hi);
int safe_div(int a, int b);
int never_called(int x);
"""

API_PY = """\
import ctypes
import os

_lib = ctypes.CDLL(os.environ["FIXPKG_LIB"])


def clamp(x, lo, hi):
    return _lib.clamp(x, lo, hi)


def ratio(a, b):
    if b == 0:
        return None
    return _lib.safe_div(a, b)


def unused(value):
    if value:
        return 1
    return 2
"""

SHAPES_JS = """\
function area(w, h) {
  if (w < 0 || h < 0) {
    return 0;
  }
  return w * h;
}

function perimeter(w, h) {
  return 2 * (w + h);
}

module.exports = { area, perimeter };
"""

KERNEL_WGSL = """\
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x > 1024u) {
    return;
  }
  out[id.x] = in[id.x] * 2.0;
}
"""

RUN_PY = """\
from fixpkg.api import clamp, ratio

assert clamp(5, 0, 10) == 5
assert clamp(-1, 0, 10) == 0
assert ratio(6, 3) == 2
"""

RUN_JS = """\
const lib = require("../js/lib/shapes.js");
const dist = require("../js/dist/shapes.js");
if (lib.area(2, 3) !== 6) throw new Error("area");
if (dist.perimeter(1, 2) !== 6) throw new Error("perimeter");
"""

INVENTORY = {
    "inventory_version": 1,
    "components": [
        {
            "id": "native",
            "language": "native",
            "format": "llvm",
            "sources": ["native/src/*.c"],
            "variants": ["fast", "safe"],
        },
        {"id": "python", "language": "python", "format": "coveragepy", "sources": ["py/fixpkg/**/*.py"]},
        {"id": "js", "language": "javascript", "format": "istanbul", "sources": ["js/**/*.js"]},
        {"id": "shaders", "language": "other", "format": "regions-v1", "sources": ["shaders/*.wgsl"]},
    ],
    "aliases": [{"logical_source_id": "js-shapes", "paths": ["js/lib/shapes.js", "js/dist/shapes.js"]}],
}

# The shader's hand-written evidence: 3 code regions (2 hit) and one branch (taken).
KERNEL_REGIONS = [
    {"start_line": 2, "start_col": 1, "end_line": 7, "end_col": 2, "hits": 4},
    {"start_line": 3, "start_col": 3, "end_line": 5, "end_col": 4, "hits": 4},
    {"start_line": 4, "start_col": 5, "end_line": 4, "end_col": 12, "hits": 0},
    {"start_line": 3, "start_col": 7, "end_line": 3, "end_col": 19, "hits": 4, "kind": "branch"},
]


def files() -> dict[str, str]:
    return {
        "native/src/mathlib.c": MATHLIB_C,
        "native/include/mathlib.h": MATHLIB_H,
        "py/fixpkg/__init__.py": "",
        "py/fixpkg/api.py": API_PY,
        "js/lib/shapes.js": SHAPES_JS,
        "js/dist/shapes.js": SHAPES_JS,
        "shaders/kernel.wgsl": KERNEL_WGSL,
        "drivers/run_py.py": RUN_PY,
        "drivers/run.js": RUN_JS,
        "coverage-inventory.json": json.dumps(INVENTORY, indent=2) + "\n",
        ".gitignore": "build/\nreports/\n.coverage\n",
    }


def make_product(root: Path) -> Path:
    return make_repo(root, files())


def regions_report(root: Path, *, sha_of: bytes | None = None) -> dict:
    text = (root / "shaders/kernel.wgsl").read_bytes() if sha_of is None else sha_of
    return {
        "format": "coverage-mcp-regions-v1",
        "version": 1,
        "tool": {"name": "wgsl-cov", "version": "0.1"},
        "files": [
            {
                "path": "shaders/kernel.wgsl",
                "source_sha256": hashlib.sha256(text).hexdigest(),
                "regions": KERNEL_REGIONS,
            }
        ],
    }


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    out = subprocess.run(
        cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, check=False
    )
    if out.returncode:
        raise AssertionError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")


def measure(root: Path) -> dict[str, Path]:
    """Build, run and measure every component; report paths by role (native-fast, native-safe, python, js,
    shaders)."""
    clang, profdata, llvm_cov = require("clang-14"), require("llvm-profdata"), require("llvm-cov")
    node, c8 = require("node"), require("c8")
    out = root / "reports"
    out.mkdir(exist_ok=True)
    reports: dict[str, Path] = {}
    for variant, flags in (("fast", []), ("safe", ["-DSAFE"])):
        build = root / "build" / variant
        build.mkdir(parents=True, exist_ok=True)
        lib = build / "libmathlib.so"
        _run(
            [
                clang,
                "-shared",
                "-fPIC",
                "-O0",
                "-fprofile-instr-generate",
                "-fcoverage-mapping",
                *flags,
                "-Inative/include",
                "-o",
                str(lib),
                "native/src/mathlib.c",
            ],
            root,
        )
        env = {
            "FIXPKG_LIB": str(lib),
            "PYTHONPATH": str(root / "py"),
            "LLVM_PROFILE_FILE": str(build / "run-%p.profraw"),
        }
        if variant == "fast":
            _run(
                [
                    sys.executable,
                    "-m",
                    "coverage",
                    "run",
                    "--branch",
                    "--data-file",
                    str(build / ".coverage"),
                    "--source",
                    "py/fixpkg",
                    "drivers/run_py.py",
                ],
                root,
                env,
            )
            _run(
                [
                    sys.executable,
                    "-m",
                    "coverage",
                    "json",
                    "--data-file",
                    str(build / ".coverage"),
                    "-o",
                    str(out / "python.json"),
                ],
                root,
            )
            reports["python"] = out / "python.json"
        else:
            _run([sys.executable, "drivers/run_py.py"], root, env)
        merged = build / "merged.profdata"
        _run([profdata, "merge", "-sparse", "-o", str(merged), *map(str, build.glob("*.profraw"))], root)
        target = out / f"native-{variant}.json"
        with open(target, "w") as fh:
            done = subprocess.run(
                [llvm_cov, "export", "-instr-profile", str(merged), str(lib)],
                cwd=root,
                stdout=fh,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
        if done.returncode:
            raise AssertionError(f"llvm-cov export failed: {done.stderr}")
        reports[f"native-{variant}"] = target
    _run(
        [
            node,
            c8,
            "--reporter=json",
            "--report-dir",
            str(out / "js"),
            "--temp-directory",
            str(root / "build/c8"),
            "--include",
            "js/**",
            node,
            "drivers/run.js",
        ],
        root,
    )
    reports["js"] = out / "js" / "coverage-final.json"
    (out / "shaders.json").write_text(json.dumps(regions_report(root)))
    reports["shaders"] = out / "shaders.json"
    return reports


def specs(reports: dict[str, Path], *, without: str | None = None) -> list[str]:
    roles = {
        "native-fast": "native:fast",
        "native-safe": "native:safe",
        "python": "python",
        "js": "js",
        "shaders": "shaders",
    }
    return [f"{roles[r]}={p}" for r, p in reports.items() if r != without]


__all__ = ["commit", "make_product", "measure", "specs"]
