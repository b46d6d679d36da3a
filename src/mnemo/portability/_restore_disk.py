"""What a restore does on disk, written down before it does it, so it can always be undone.

A restore places the backup's cortex (a LanceDB directory) before its database
part commits, so the two need tying together: the plan (:class:`Swap`) goes to
a journal file first, one per target; a failed restore undoes it at once, and
one killed half-way is settled by the next attempt: finished when the target's
database holds the restored cortex id (its database part committed), undone
otherwise. Nothing the target held is removed before its database commits.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from mnemo.config import Settings
from mnemo.errors import BackupError, CortexError
from mnemo.models import BackupManifest

__all__ = ["Swap", "journal", "plan"]


def plan(settings: Settings, url: str, manifest: BackupManifest, old: str | None) -> Swap:
    """What this restore will do on disk: the restored database gets a new cortex id (so its
    directory is never the target's, nor its source's); a ``cortex_uri`` directory is replaced,
    what was there kept aside until the database commits; the target's old directory goes then."""
    new = str(uuid.uuid4())
    dest = None
    if manifest.cortex_versions or manifest.cortex_rows:
        dest = _cortex_dest(settings, new)
    aside = dest.with_name(f"{dest.name}.replaced-{new[:8]}") if dest is not None and dest.exists() else None
    discard = settings.home / "cortex" / old if old is not None and settings.cortex_uri is None else None
    return Swap(journal(settings, url), new, dest, aside, discard)


def _cortex_dest(settings: Settings, cortex_id: str) -> Path:
    uri = settings.cortex_uri
    if uri is None:
        return settings.home / "cortex" / cortex_id
    if "://" in uri and not uri.startswith("file://"):
        raise CortexError(f"cannot restore the cortex into {uri}: not a local directory")
    return Path(uri.removeprefix("file://")).absolute()


def journal(settings: Settings, url: str) -> Path:
    """Where a restore into this target writes down what it does on disk (one place per target)."""
    uri = settings.cortex_uri
    local = uri is not None and ("://" not in uri or uri.startswith("file://"))
    root = Path(uri.removeprefix("file://")).absolute().parent if uri and local else settings.home / "cortex"
    return root / f".mnemo-restore-{hashlib.sha256(url.encode()).hexdigest()[:16]}.json"


@dataclass(frozen=True, slots=True)
class Swap:
    """What a restore does on disk, written to ``journal`` before it does anything there.

    ``cortex_id`` is the restored database's new cortex id: the target holds it exactly when the
    database part has committed, which tells :meth:`settle` whether to finish or undo. ``dest``:
    where the backup's cortex goes; ``aside``: where what was at ``dest`` waits meanwhile;
    ``discard``: the target's old cortex directory, removed once the database part commits."""

    journal: Path
    cortex_id: str
    dest: Path | None
    aside: Path | None
    discard: Path | None

    @classmethod
    def read(cls, journal: Path) -> Swap | None:
        try:
            data = json.loads(journal.read_text())
            paths = {k: Path(data[k]) if data.get(k) else None for k in ("dest", "aside", "discard")}
            return cls(journal, str(data["cortex_id"]), **paths)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, LookupError, TypeError) as exc:
            raise BackupError(f"cannot read {journal}, left by an interrupted restore ({exc!r}): remove it") from exc

    def write(self) -> None:
        if self.dest is None and self.discard is None:
            return  # nothing to do on disk
        fields = {"cortex_id": self.cortex_id, "dest": self.dest, "aside": self.aside, "discard": self.discard}
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        partial = self.journal.with_name(self.journal.name + ".partial")
        partial.write_text(json.dumps({k: str(v) if v else None for k, v in fields.items()}))
        os.replace(partial, self.journal)

    @property
    def incoming(self) -> Path | None:
        return None if self.dest is None else self.dest.with_name(f"{self.dest.name}.restoring-{self.cortex_id[:8]}")

    def place(self, source: Path) -> None:
        """Copy the backup's cortex beside ``dest``, then swap it in: never half written."""
        assert self.dest is not None and self.incoming is not None
        shutil.rmtree(self.incoming, ignore_errors=True)
        self.dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, self.incoming)
        if self.aside is not None:
            os.replace(self.dest, self.aside)
        os.replace(self.incoming, self.dest)

    def settle(self, current: str | None) -> None:
        """``current``: the target's cortex id now."""
        if current == self.cortex_id:
            self.finish()
        else:
            self.undo()

    def finish(self) -> None:
        """The database part committed: drop what the restore replaced."""
        for path in (self.aside, self.discard):
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)
        self.journal.unlink(missing_ok=True)

    def undo(self) -> None:
        """The database part did not commit: put ``dest`` back as it was."""
        if self.dest is not None and self.incoming is not None:
            shutil.rmtree(self.incoming, ignore_errors=True)
            if self.aside is None:
                shutil.rmtree(self.dest, ignore_errors=True)  # it was not there before
            elif self.aside.exists():  # else the swap never began: dest is still the target's
                shutil.rmtree(self.dest, ignore_errors=True)
                os.replace(self.aside, self.dest)
        self.journal.unlink(missing_ok=True)
