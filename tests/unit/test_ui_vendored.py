"""The inspector's vendored front-end files are the pinned npm releases their notes name (issue 17:
no CDN, nothing fetched at run time)."""

from __future__ import annotations

import hashlib
import re
from importlib import resources

STATIC = resources.files("mnemo.interfaces.ui").joinpath("static")


def test_every_vendored_file_matches_its_recorded_hash() -> None:
    notes = STATIC.joinpath("VENDORED.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \|.*\| ([0-9a-f]{64}) \|$", notes, flags=re.M)
    assert rows, "VENDORED.md lists the vendored files"
    for name, digest in rows:
        assert hashlib.sha256(STATIC.joinpath(name).read_bytes()).hexdigest() == digest, name


def test_templates_load_scripts_only_from_the_package() -> None:
    templates = resources.files("mnemo.interfaces.ui").joinpath("templates")
    for page in templates.iterdir():
        text = page.read_text()
        assert not re.search(r"""<script(?![^>]*src="/ui/static/)""", text), f"{page.name} has an inline script"
        assert "http://" not in text and "https://" not in text, f"{page.name} links outside the service"
        assert " style=" not in text, f"{page.name} has an inline style (the CSP forbids it)"
