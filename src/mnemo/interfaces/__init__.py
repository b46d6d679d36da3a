"""Thin adapters over :class:`mnemo.AsyncArchive`: CLI (and later HTTP, MCP, Pydantic AI)."""
