"""The ``coverage-mcp`` command line (click)."""
