"""The test's side of a helper server: a child process that takes one JSON job per line on its standard
input and answers each on its standard output (``compaction_child.Compactions``, ``diskfull.Forks``).
Closing its standard input ends it; ``with`` does that and waits for it (killed after a generous minute)."""

from __future__ import annotations

import subprocess
from typing import Self


class LineServer:
    process: subprocess.Popen[str]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
