"""Real git repositories for tests, made with the git command line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git_env() -> dict[str, str]:
    """The suite's environment (scrubbed at configure time, so read now, not at import) plus git's identity."""
    return {**os.environ, **IDENTITY}


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args], env=git_env(), capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def make_repo(root: Path, files: dict[str, str], *, branch: str = "main", message: str = "initial") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    write(root, files)
    commit(root, message)
    return root


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD")


def lcov(records: dict[str, dict[int, int]], test: str = "") -> str:
    """A small LCOV tracefile: {path: {line: hits}}."""
    out = []
    for path, lines in records.items():
        out.append(f"TN:{test}")
        out.append(f"SF:{path}")
        out += [f"DA:{n},{h}" for n, h in sorted(lines.items())]
        out.append(f"LF:{len(lines)}")
        out.append(f"LH:{sum(1 for h in lines.values() if h)}")
        out.append("end_of_record")
    return "\n".join(out) + "\n"
