"""Storage: ALL of mnemo's SQL lives in this package.

Seed: archive-adr §1-2 (unified pgvector substrate, four chambers). The
embedded server (``server``), the connection pool and migrations (``pool``,
``migrate``) and one repository module per table family (``scopes``, ``turns``,
``memories``, ``vectors``, ``search``, ``traces``).
"""

from mnemo.store.pool import Store

__all__ = ["Store"]
