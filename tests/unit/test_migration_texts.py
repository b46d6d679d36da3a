"""Applied migrations never change (store/migrate.py): an edit after a release refuses every
database that applied the earlier text, so a migration's text is frozen here, and a comment-only
edit that slipped out keeps its earlier checksum accepted (:data:`mnemo.store.migrate.EARLIER`)."""

from __future__ import annotations

import hashlib

import pytest

from mnemo.errors import MigrationError
from mnemo.store.migrate import EARLIER, load_migrations, pending

FROZEN = {
    1: "a0fe5621cbc1e619eda5b3d3d14734f8de958f33412f781d4d8688b699c3a384",
    2: "d51c06154aef44fa4cf141fdf5a417337554b528378c4ee4d3ac2f0bb34cef38",
    3: "2625c7999d733b66fab2bcb8d4d2ed62a3e0ba07398db4aa747d8be62df847b9",
    4: "4bc18c1d24d9a21877e0feffe808caa67a2ed40c453b7f05f9ae6d844f103d4b",
    5: "66807dc19be9ae8051db4446daa4087b5305c90e493c0077fe15d21c6249e4ac",
    6: "17176d1147698fdf507acfec4a6a1c6b680c243ce3247afff396e0fb53bda5cc",
    7: "24bf3fe5ce505919fae6e877d25551e01bc008d344693447990e1b85fe0d8d72",
    8: "bc3083e7b0f9a4e86835551b025e1c9cc6b18b80c547acea1ef68bdfe86de521",
    9: "37329bd065e50ca2443afb5e1fcaf54b03cde3042095cd2dbd59617af98770b4",
    10: "73c202c9b391fcfc112aa3cc3b84ab5c26fb3c49d81c517a317f1efdfa0e411a",
    11: "d85c319db25e8401113f4bfb69f5cf7e4075660b04b8fddbc608db0fcd5cd871",
    12: "1aaf008cac74eb2d0ce69f0c159a30d3ce75c3a8fbee12ba21ae45d8365ae6b9",
    13: "406895bce3fc23a16dbbb00aa2fafb7df7733ca75ff036e079c714df0b5a3547",
    14: "eed74dfda3a052f761b7aaf37867359a2bd465a02cad424d3960c60c1d13684e",
    15: "2980ce41aeecc21a4adc9e774217f05b938353804e708e323827925087aea979",
    16: "55b2caa34dc64ca9350d1e1bc11b5980b2460aa5546452f1e7b60a9293045930",
    17: "30afbb79c7da353286317a38deddd7d22aedae410fb4d294fef45cfabc7c89ec",
    18: "33e11462df9f43d3b9965c80652b280bd595eee46ebd85d129728bdaf7d93f7a",
    19: "725445c5be0fe19fae71291045642dccf9e483f8801e0d0c6ae97dcd9f5f8e2c",
    20: "59a52d5dad5a08cf45a6516d98591de8d2f7d5f1c6cd3462325a55984112f202",
    21: "adffec6e2469e742cddc5566e02d4a4c3cb7bcabbe2f54968d5f19583216e201",
    22: "c27849c32876bb9a022e4609e1248bff2f806ff829d5ba1eca43741b8e01e7bf",
    23: "0ab3790fa45190cdb9c48635f34310293a5128cf8688350c9b48a5ed4bb1736a",
}
"""The checksum of every released migration. A new migration adds a line; an edited one fails here:
add a new migration instead (or, for a comment-only edit, list the old checksum in EARLIER)."""


def test_released_migrations_keep_their_text() -> None:
    assert {m.version: m.checksum for m in load_migrations() if m.version in FROZEN} == FROZEN


def test_a_database_that_applied_an_earlier_comment_opens() -> None:
    migrations = load_migrations()
    recorded = {m.version: m.checksum for m in migrations if m.version <= 20}
    recorded[20] = next(iter(EARLIER[20]))
    assert recorded[20] != next(m for m in migrations if m.version == 20).checksum
    left = pending(migrations, recorded, "mnemo", "upgrade mnemo")
    assert [m.version for m in left] == [m.version for m in migrations if m.version > 20]


@pytest.mark.parametrize("version", [1, 20])
def test_any_other_text_is_refused(version: int) -> None:
    migrations = load_migrations()
    recorded = {m.version: m.checksum for m in migrations}
    recorded[version] = hashlib.sha256(b"-- someone else's text").hexdigest()
    with pytest.raises(MigrationError, match=f"{version:04d}_.* changed after it was applied"):
        pending(migrations, recorded, "mnemo", "upgrade mnemo")
