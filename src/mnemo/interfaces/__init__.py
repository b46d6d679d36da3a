"""The faces of the product (DESIGN §5, §10): thin adapters over :class:`mnemo.AsyncArchive`.

They reach the archive through its public methods and feature attributes only (no runtime, no
``store`` import; ``tests/unit/test_layers.py`` checks it):

- :mod:`~mnemo.interfaces.cli`: the ``mnemo`` command line, one module per command group;
- :mod:`~mnemo.interfaces.http`: ``mnemo serve``, the HTTP service (its routers, admission and
  shared parts in the private ``_http_*`` and ``_admission`` modules) and the ``/ui`` inspector
  (:mod:`~mnemo.interfaces.ui`);
- :mod:`~mnemo.interfaces.mcp` (with its tools in :mod:`~mnemo.interfaces.mcp_tools`): ``mnemo mcp``,
  a Model Context Protocol server;
- :mod:`~mnemo.interfaces.pydantic_ai`: Pydantic AI tools over one scope;
- :mod:`~mnemo.interfaces.worker`: ``mnemo worker``, background work on the archive's own queue;
- :mod:`~mnemo.interfaces.local`: the running local service, found through the data directory;
- :mod:`~mnemo.interfaces.shapes`: every JSON shape the interfaces speak, and ``_remedies``: each
  interface's words for the call that fixes an error.
"""
