"""The read path (internal): hybrid recall in named stages (``pipeline``, ``stages``) and context
assembly (``context``). Users call these through :class:`mnemo.AsyncArchive`; nothing here is
public API."""
