"""A run's environment, declared: the documented base, the runner presets, the registered env and the inherit list.

A run never inherits its daemon's whole environment (for a daemon an MCP
client's connector started, that is the client's, with whatever secrets the
user exported). It gets:

- ``BASE``: what real test runners need to find programs, the user's home,
  the locale, the time zone, a terminal, a display and a virtual environment;
- the variables of each runner preset the registration chose (``PRESETS``;
  chosen from the program's name when the registration names none);
- the registration's own ``inherit`` allow-list (exact names, or a prefix
  ending in ``*``);
- its registered ``env`` (literal values, which win).

``COVERAGE_MCP_*`` names never pass (the daemon's settings and any exported
``COVERAGE_MCP_TOKEN``), nor a variable whose value is one of the daemon's
secrets (the client token, the capability) whatever its name. The runner
then adds the watchdog's run marker. Registrations stored before runner presets
and inherit lists existed (their spec has neither key) run with the base only.

This stops accidental leaks into logs and reports; it does not confine test
code, which runs as the user and can read the user's files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import CoverageError, ErrorCode
from .records import CommandSpec

BASE: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TERM",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "DBUS_SESSION_BUS_ADDRESS",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CI",
)
PRESETS: dict[str, tuple[str, ...]] = {
    "python": (
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONHASHSEED",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONWARNINGS",
        "PYTHONUTF8",
        "PYTHONUNBUFFERED",
        "PYENV_VERSION",
        "PYENV_ROOT",
        "PYTEST_ADDOPTS",
        "COVERAGE_PROCESS_START",
        "COVERAGE_FILE",
        "COVERAGE_RCFILE",
        "PIP_*",
        "UV_*",
    ),
    "node": (
        "NODE_OPTIONS",
        "NODE_PATH",
        "NODE_ENV",
        "NODE_V8_COVERAGE",
        "NODE_EXTRA_CA_CERTS",
        "NVM_DIR",
        "NVM_BIN",
        "VOLTA_HOME",
        "COREPACK_HOME",
        "npm_config_*",
        "NPM_CONFIG_*",
        "YARN_*",
        "PNPM_HOME",
    ),
    "go": (
        "GOPATH",
        "GOROOT",
        "GOFLAGS",
        "GOMODCACHE",
        "GOCACHE",
        "GOPROXY",
        "GOPRIVATE",
        "GONOPROXY",
        "GONOSUMDB",
        "GOSUMDB",
        "GOINSECURE",
        "GOTOOLCHAIN",
        "GOENV",
        "GOCOVERDIR",
        "CGO_ENABLED",
    ),
    "java": (
        "JAVA_HOME",
        "JAVA_TOOL_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "MAVEN_HOME",
        "MAVEN_OPTS",
        "M2_HOME",
        "GRADLE_HOME",
        "GRADLE_USER_HOME",
        "GRADLE_OPTS",
    ),
    "rust": (
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_INCREMENTAL",
        "LLVM_PROFILE_FILE",
    ),
}
# The runner chosen for a registration that names none, from its program's file name.
_DETECT: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("python", re.compile(r"^(python[0-9.]*|pytest|py\.test|coverage|tox|nox|uv|hatch|poetry|pdm)$")),
    ("node", re.compile(r"^(node|nodejs|npm|npx|yarn|pnpm|bun|jest|vitest|mocha|c8|nyc)$")),
    ("go", re.compile(r"^go$")),
    ("java", re.compile(r"^(java|mvn|mvnw|gradle|gradlew|ant|sbt)$")),
    ("rust", re.compile(r"^(cargo|rustc|cargo-llvm-cov|cargo-tarpaulin)$")),
)
MAX_INHERIT = 64
_INHERIT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}\*?$")
OWN_PREFIX = "COVERAGE_MCP_"
LEGACY_NOTE = (
    "registered before runs had a declared environment (it inherited everything): it now runs with the base "
    "only; re-registering it (with runners and inherit as needed) restores more"
)
MAX_NAMED = 100  # variable names listed in one reason


def _bad(message: str, suggestion: str, argument: str) -> CoverageError:
    return CoverageError(ErrorCode.INVALID_ARGUMENT, message, suggestion, {"argument": argument})


def detect_runners(argv: list[str]) -> list[str]:
    """The presets a registration that names none gets: from its program's file name (``python3.12``: python)."""
    name = os.path.basename(argv[0]) if argv else ""
    return [runner for runner, pattern in _DETECT if pattern.match(name)][:1]


def canonical(args: Mapping[str, Any], argv: list[str]) -> tuple[list[str], list[str]]:
    """(``runners``, ``inherit``) of a registration, validated and sorted (both enter the content hash)."""
    runners = args.get("runners")
    if runners is None:
        runners = detect_runners(argv)
    if not isinstance(runners, list) or any(r not in PRESETS for r in runners):
        raise _bad(
            f"runners must list presets among {', '.join(PRESETS)}",
            f'e.g. "runners": ["python"] (one of: {", ".join(PRESETS)}); [] for the base only.',
            "runners",
        )
    inherit = args.get("inherit", [])
    if not isinstance(inherit, list) or len(inherit) > MAX_INHERIT:
        raise _bad(
            f"inherit must list at most {MAX_INHERIT} variable names",
            '"inherit": ["MY_TOOL_HOME", "MYAPP_*"]',
            "inherit",
        )
    for name in inherit:
        if not isinstance(name, str) or not _INHERIT_NAME.match(name) or name.upper().startswith(OWN_PREFIX):
            raise _bad(
                f"inherit name {str(name)[:130]!r} is not allowed",
                "Name variables like MY_TOOL_HOME, or a prefix like MYAPP_* (COVERAGE_MCP_ names never pass).",
                "inherit",
            )
    return sorted(set(runners)), sorted(set(inherit))


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in patterns)


def allowed(spec: CommandSpec) -> list[str]:
    """Every name or prefix a run of ``spec`` may take from its daemon's environment."""
    out = list(BASE)
    for runner in spec.runners or ():
        out.extend(PRESETS.get(runner, ()))
    out.extend(spec.inherit or ())
    return out


def build(
    spec: CommandSpec, source: Mapping[str, str] | None = None, withheld: Iterable[str] = ()
) -> dict[str, str]:
    """The environment a run of ``spec`` gets from ``source`` (default: this process's), without the marker."""
    source = os.environ if source is None else source
    secrets = {v for v in withheld if v}
    patterns = allowed(spec)
    env = {
        k: v
        for k, v in source.items()
        if not k.upper().startswith(OWN_PREFIX) and _matches(k, patterns) and not any(s in v for s in secrets)
    }
    env.update(spec.env)
    return env


def not_passed(spec: CommandSpec, source: Mapping[str, str] | None = None) -> list[str]:
    """Names of ``source``'s variables a run of ``spec`` does not get (names only: values may be secrets)."""
    source = os.environ if source is None else source
    given = build(spec, source)
    return sorted(k for k in source if k not in given)


def describe(spec: CommandSpec, source: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What ``command show`` and the approval views say about a registration's environment."""
    out: dict[str, Any] = {
        "base": list(BASE),
        "runners": list(spec.runners or ()),
        "runner_variables": [n for r in spec.runners or () for n in PRESETS.get(r, ())],
        "inherit": list(spec.inherit or ()),
        "env": sorted(spec.env),
        "not_passed": not_passed(spec, source),
    }
    if spec.legacy:
        out["note"] = LEGACY_NOTE
    return out


def missing_line(spec: CommandSpec, source: Mapping[str, str] | None = None) -> str:
    """A start failure's addendum: which of the daemon's variables the run did not get (names only)."""
    names = not_passed(spec, source)
    if not names:
        return "it got every variable of its daemon's environment"
    shown = ", ".join(names[:MAX_NAMED]) + (
        f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
    )
    return (
        f"its environment did not get these variables of the daemon's: {shown} (register it again with "
        "runners or inherit naming what it needs)"
    )
