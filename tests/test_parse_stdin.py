"""``coverage-mcp parse -`` reads the report from standard input, through no call Click 9 removes."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

COBERTURA = (
    Path(__file__).resolve().parent / "corpus" / "cobertura" / "cmark-gfm-0.29.0.gfm.13.gcovr.cobertura.xml"
)


def test_parse_reads_a_gzipped_report_from_standard_input_without_a_deprecated_click_call(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_MCP_")}
    env["COVERAGE_MCP_HOME"] = str(tmp_path / "home")
    process = subprocess.run(
        # Click 8.5 deprecates get_binary_stream (gone in Click 9): a warning from the command is an error here.
        [sys.executable, "-W", "error::DeprecationWarning:coverage_cli.parse_cmd", "-m", "coverage_cli"]
        + ["parse", "-", "--json"],
        input=gzip.compress(COBERTURA.read_bytes()),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert process.returncode == 0, process.stderr[-2000:]
    body = json.loads(process.stdout)
    lines = body["totals"]["lines"]
    assert (lines["hit"], lines["found"]) == (5397, 22358)
