"""The write path (internal): memories and turns embedded immediately (``remember``), conversation
files (``importer``, ``formats``), the entry and exit gates (``gates``), asynchronous ingestion
(``ingest``), forgetting (``forget``) and re-embedding (``reembed``). Users call these through
:class:`mnemo.AsyncArchive`; nothing here is public API."""
