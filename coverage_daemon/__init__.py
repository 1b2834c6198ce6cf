"""The coverage-mcp daemon, MCP endpoint and stdio connector.

This package's ``__init__`` imports nothing: the stdio connector must start
without paying for aiohttp, DuckDB or the MCP SDK.
"""
