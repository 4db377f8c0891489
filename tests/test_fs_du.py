"""`atrium-fs du DB`: the data a workspace stores beside its database's size.

Run as root: /usr/bin/python3 -m pytest -q tests/test_fs_du.py
"""
import os
import sqlite3

import pytest

from test_fs import Mount, run

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]

GiB = 1 << 30


def du(db):
    r = run("du", db)
    assert r.returncode == 0, r.stderr
    fields = {}
    for line in r.stdout.splitlines():
        key, value = line.split(":", 1)
        fields[key] = value.split()[0]
    return fields


def write_known_data(m):
    """100,000 bytes in one file and a 1 GiB sparse file with one byte
    stored at its end, both fsynced: 100,001 bytes stored."""
    with open(m.p("dense"), "wb") as f:
        f.write(os.urandom(100000))
        f.flush()
        os.fsync(f.fileno())
    os.mkdir(m.p("dir"))
    with open(m.p("dir", "sparse"), "wb") as f:
        f.seek(GiB)
        f.write(b"x")
        f.flush()
        os.fsync(f.fileno())


def test_du_counts_stored_bytes_inodes_and_database(tmp_path):
    m = Mount(tmp_path).mount()
    try:
        write_known_data(m)
        mounted = du(m.db)
    finally:
        m.unmount()
    after = du(m.db)
    for u in (mounted, after):
        assert u["data stored"] == "100001"    # the hole stores nothing
        assert u["file sizes"] == str(100000 + GiB + 1)
        assert u["inodes"] == "4"              # root, dense, dir, sparse
    wal = m.db + "-wal"
    assert after["database"] == str(os.path.getsize(m.db))
    assert after["wal"] == str(os.path.getsize(wal) if os.path.exists(wal) else 0)
    total = os.path.getsize(m.db) + int(after["wal"])
    assert after["overhead"] == "%.1f%%" % ((total - 100001) * 100 / 100001)
    # What it takes on the disk, its WAL counted (no room.db beside it).
    assert after["footprint"] == str(total)


def test_du_of_a_new_workspace_and_of_a_missing_one(tmp_path):
    m = Mount(tmp_path)
    u = du(m.db)
    assert (u["data stored"], u["inodes"], u["overhead"]) == ("0", "1", "-")
    r = run("du", str(tmp_path / "nope.db"))
    assert r.returncode == 2 and "does not exist" in r.stderr
    other = str(tmp_path / "other.db")
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.commit()
    r = run("du", other)
    assert r.returncode == 2 and "not an atrium-fs database" in r.stderr
