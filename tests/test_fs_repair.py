"""`atrium-fs fsck --repair DB`: databases damaged with sqlite3 come back
clean, saying what was done, and the files a user could read stay readable.

Run as root: /usr/bin/python3 -m pytest -q tests/test_fs_repair.py
"""
import hashlib
import os
import sqlite3

import pytest

from test_fs import Mount, run

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]

NOW = 1700000000


def ino_of(c, path):
    ino = 1
    for name in path.split("/"):
        ino = c.execute("SELECT ino FROM dirents WHERE parent = ? AND "
                        "name = ?", (ino, name)).fetchone()[0]
    return ino


def new_chunk(c, ino, idx, data):
    """A chunk of ino naming a new block that holds data."""
    c.execute("INSERT INTO blocks(data) VALUES(?)", (data,))
    c.execute("INSERT INTO chunks(ino, idx, block, len) VALUES(?, ?, "
              "last_insert_rowid(), ?)", (ino, idx, len(data)))


def new_inode(c, mode, nlink, size=0):
    c.execute("INSERT INTO inodes(mode, nlink, uid, gid, size, atime, mtime, "
              "ctime) VALUES(?, ?, 0, 0, ?, ?, ?, ?)",
              (mode, nlink, size, NOW, NOW, NOW))
    return c.execute("SELECT last_insert_rowid()").fetchone()[0]


@pytest.fixture
def ws(tmp_path):
    """A workspace with a tree in it, unmounted."""
    m = Mount(tmp_path).mount()
    try:
        os.makedirs(m.p("a", "b", "c"))
        os.makedirs(m.p("d"))
        with open(m.p("a", "file"), "wb") as f:
            f.write(b"x" * 200000)
        with open(m.p("d", "small"), "w") as f:
            f.write("small")
        os.link(m.p("d", "small"), m.p("d", "link"))
        os.symlink("small", m.p("d", "sym"))
        os.setxattr(m.p("d", "small"), "user.k", b"v")
    finally:
        m.unmount()
    return m


# Each damage: (name, SQL function, a line the repair prints).
def orphan_with_links(c):
    ino = new_inode(c, 0o100644, 1, 3)
    new_chunk(c, ino, 0, b"abc")
    c.execute("UPDATE inodes SET stored = 3 WHERE ino = ?", (ino,))


def orphan_unlinked(c):
    ino = new_inode(c, 0o100644, 0, 3)
    new_chunk(c, ino, 0, b"abc")


def orphan_chunk(c):
    new_chunk(c, 99999, 0, b"lost")


def chunk_of_a_directory(c):
    new_chunk(c, ino_of(c, "d"), 0, b"dir")


def file_link_count(c):
    c.execute("UPDATE inodes SET nlink = 7 WHERE ino = ?",
              (ino_of(c, "d/small"),))


def dir_link_count(c):
    c.execute("UPDATE inodes SET nlink = 9 WHERE ino = ?", (ino_of(c, "a"),))


def size_cuts_a_chunk(c):
    c.execute("UPDATE inodes SET size = 70000 WHERE ino = ?",
              (ino_of(c, "a/file"),))


def size_cuts_a_snapshot_block(c):
    """The cut block is also a snapshot's: the repair must copy it."""
    size_cuts_a_chunk(c)


def chunk_names_a_missing_block(c):
    c.execute("UPDATE chunks SET block = 987654 WHERE ino = ? AND idx = 1",
              (ino_of(c, "a/file"),))


def chunk_len_past_its_block(c):
    c.execute("UPDATE chunks SET len = 9 WHERE ino = ?",
              (ino_of(c, "d/small"),))


def chunks_share_a_block(c):
    """Two live files naming one block: a write to one would show in the
    other."""
    small = ino_of(c, "d/small")
    ino = new_inode(c, 0o100644, 1, 5)
    c.execute("INSERT INTO chunks(ino, idx, block, len) SELECT ?, idx, "
              "block, len FROM chunks WHERE ino = ?", (ino, small))
    c.execute("UPDATE inodes SET stored = 5 WHERE ino = ?", (ino,))
    c.execute("INSERT INTO dirents(parent, name, ino) VALUES(1, 'twin', ?)",
              (ino,))


def orphan_block(c):
    c.execute("INSERT INTO blocks(data) VALUES(?)", (b"nobody" * 10,))


def rows_of_a_missing_snapshot(c):
    c.execute("INSERT INTO snap_inodes SELECT 777, ino, mode, nlink, uid, "
              "gid, size, rdev, atime, mtime, ctime, atime_ns, mtime_ns, "
              "ctime_ns, stored FROM inodes")
    c.execute("INSERT INTO snap_dirents SELECT 777, id, parent, name, ino "
              "FROM dirents")
    c.execute("INSERT INTO blocks(data) VALUES(?)", (b"gone" * 100,))
    c.execute("INSERT INTO snap_chunks VALUES(777, 99, 0, "
              "last_insert_rowid(), 400)")
    c.execute("INSERT INTO snap_xattrs VALUES(777, 1, 'user.x', 'v')")


def snapshot_entry_names_nothing(c):
    (snap,) = c.execute("SELECT id FROM snapshots").fetchone()
    c.execute("INSERT INTO snap_dirents VALUES(?, 999999, 1, 'ghost', "
              "424242)", (snap,))


def stored_total(c):
    c.execute("UPDATE inodes SET stored = 12345 WHERE ino = ?",
              (ino_of(c, "a/file"),))
    c.execute("UPDATE inodes SET stored = 1 WHERE ino = ?", (ino_of(c, "a"),))


def unreachable_cycle(c):
    a, b = ino_of(c, "a"), ino_of(c, "a/b")
    c.execute("UPDATE dirents SET parent = ? WHERE ino = ?", (b, a))


def dangling_entry(c):
    c.execute("INSERT INTO dirents(parent, name, ino) VALUES(1, 'ghost', "
              "424242)")


def entry_in_a_file(c):
    c.execute("INSERT INTO dirents(parent, name, ino) VALUES(?, 'x', ?)",
              (ino_of(c, "d/small"), ino_of(c, "a/file")))


def symlink_size(c):
    c.execute("UPDATE inodes SET size = 99 WHERE ino = ?", (ino_of(c, "d/sym"),))


def stray_xattr_and_target(c):
    c.execute("INSERT INTO xattrs VALUES(88888, 'user.x', 'v')")
    c.execute("INSERT INTO symlinks VALUES(?, 'nope')", (ino_of(c, "d/small"),))


def nanoseconds(c):
    c.execute("UPDATE inodes SET mtime_ns = 2000000000 WHERE ino = ?",
              (ino_of(c, "d/small"),))


DAMAGES = [
    (orphan_with_links, "into /lost+found as #"),
    (orphan_unlinked, "deleted unlinked inode"),
    (orphan_chunk, "deleted chunk 0 of inode 99999"),
    (chunk_of_a_directory, "which is no regular file"),
    (file_link_count, "set the link count of inode"),
    (dir_link_count, "set the link count of directory"),
    (size_cuts_a_chunk, "cut chunk 1 of file"),
    (size_cuts_a_snapshot_block, "cut chunk 1 of file"),
    (chunk_names_a_missing_block, "its block 987654 is missing"),
    (chunk_len_past_its_block, "to its block's 5 bytes"),
    (chunks_share_a_block, "a copy of block"),
    (orphan_block, "which no chunk or snapshot names"),
    (rows_of_a_missing_snapshot, "of snapshot 777, which does not exist"),
    (snapshot_entry_names_nothing, "the snapshot holds no inode 424242"),
    (stored_total, "counted the stored bytes of file"),
    (unreachable_cycle, "which the root did not reach"),
    (dangling_entry, "removed dangling entry 'ghost'"),
    (entry_in_a_file, "which is missing or no directory"),
    (symlink_size, "set the size of symlink"),
    (stray_xattr_and_target, "deleted xattr 'user.x' of missing inode"),
    (nanoseconds, "set out-of-range nanoseconds"),
]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.mark.parametrize("damage,said", DAMAGES,
                         ids=[d[0].__name__ for d in DAMAGES])
def test_repair_mends_each_damage_and_fsck_is_clean(ws, damage, said):
    snap_damages = (size_cuts_a_snapshot_block, snapshot_entry_names_nothing)
    if damage in snap_damages:
        assert run("snapshot", ws.db, "before").returncode == 0
        with sqlite3.connect(ws.db) as c:
            snap_blocks = c.execute("SELECT block, length(data) FROM "
                                    "snap_chunks s JOIN blocks b ON b.id = "
                                    "s.block ORDER BY 1").fetchall()
    with sqlite3.connect(ws.db) as c:
        damage(c)
    before = run("fsck", ws.db)
    assert before.returncode == 1, before.stdout
    # Without --repair, fsck changes nothing.
    assert run("fsck", ws.db).stdout == before.stdout
    r = run("fsck", "--repair", ws.db)
    assert r.returncode == 0, r.stdout + r.stderr
    assert said in r.stdout, r.stdout
    after = run("fsck", ws.db)
    assert after.returncode == 0, after.stdout
    # A second repair finds nothing, and the tree mounts and reads.
    again = run("fsck", "--repair", ws.db)
    assert again.returncode == 0 and "nothing to repair" in again.stdout
    ws.mount()
    try:
        if damage in (size_cuts_a_chunk, size_cuts_a_snapshot_block):
            with open(ws.p("a", "file"), "rb") as f:
                assert f.read() == b"x" * 70000
        elif damage is chunk_names_a_missing_block:
            with open(ws.p("a", "file"), "rb") as f:
                assert f.read() == (b"x" * 65536 + b"\0" * 65536 +
                                    b"x" * (200000 - 131072))
        elif damage is chunks_share_a_block:
            # The twin gets its own block: writing it leaves d/small alone.
            with open(ws.p("twin"), "r+") as f:
                f.write("TWIN!")
            with open(ws.p("twin")) as f:
                assert f.read() == "TWIN!"
        elif damage is unreachable_cycle:
            lf = os.listdir(ws.p("lost+found"))
            assert len(lf) == 1
            assert os.path.isdir(ws.p("lost+found", lf[0], "b", "c"))
            assert os.path.getsize(ws.p("lost+found", lf[0], "file")) == 200000
        elif damage is orphan_with_links:
            (name,) = os.listdir(ws.p("lost+found"))
            with open(ws.p("lost+found", name)) as f:
                assert f.read() == "abc"
        else:
            with open(ws.p("a", "file"), "rb") as f:
                assert f.read() == b"x" * 200000
        with open(ws.p("d", "small")) as f:
            assert f.read() == "small"
        assert os.stat(ws.p("d", "small")).st_nlink == 2
        st = os.stat(ws.p("a", "file")) if damage is not unreachable_cycle \
            else None
        if st and damage not in (size_cuts_a_chunk, size_cuts_a_snapshot_block,
                                 chunk_names_a_missing_block):
            assert st.st_blocks * 512 >= 200000        # stored bytes right
    finally:
        ws.unmount()
    # du's accounting agrees with what is stored after the repair.
    u = run("du", ws.db)
    assert u.returncode == 0
    with sqlite3.connect(ws.db) as c:
        stored = c.execute("SELECT sum(length(data)) FROM blocks").fetchone()
        if damage in snap_damages:
            # What the snapshot holds is untouched, block by block.
            assert c.execute("SELECT block, length(data) FROM snap_chunks "
                             "s JOIN blocks b ON b.id = s.block ORDER BY "
                             "1").fetchall() == snap_blocks
    assert ("data stored:   %d bytes" % stored[0]) in u.stdout


def test_repair_refuses_a_mounted_workspace(ws):
    ws.mount()
    try:
        r = run("fsck", "--repair", ws.db)
        assert r.returncode == 2 and "unmount it" in r.stderr
    finally:
        ws.unmount()


def test_repair_says_what_it_cannot_mend(ws):
    with sqlite3.connect(ws.db) as c:
        c.execute("UPDATE dirents SET name = 'a/b' WHERE name = 'd'")
    r = run("fsck", "--repair", ws.db)
    assert r.returncode == 1
    assert "not repaired: bad name 'a/b'" in r.stdout


def export_digest(db, snapshot, path):
    """sha256 of path's content in snapshot's export."""
    import io
    import subprocess
    import tarfile
    from test_fs import BIN
    r = subprocess.run([BIN, "export", db, snapshot], capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    with tarfile.open(fileobj=io.BytesIO(r.stdout)) as tar:
        return hashlib.sha256(tar.extractfile("./" + path).read()).hexdigest()


def test_repair_drops_a_snapshot_without_its_root(ws):
    """A snapshot that lost its root row cannot be restored (that would
    take the tree's root away) and nothing in it can be reached: the
    repair drops it whole, and the other snapshots and the tree stay."""
    for name in ("broken", "kept"):
        assert run("snapshot", ws.db, name).returncode == 0
    with sqlite3.connect(ws.db) as c:
        c.execute("DELETE FROM snap_inodes WHERE ino = 1 AND snap = (SELECT "
                  "id FROM snapshots WHERE name = 'broken')")
    r = run("fsck", ws.db)
    assert r.returncode == 1 and "snapshot 'broken' has no root directory" \
        in r.stdout, r.stdout
    r = run("restore", ws.db, "broken")
    assert r.returncode == 1 and "is damaged (it has no root directory)" \
        in r.stderr, r.stderr
    r = run("fsck", "--repair", ws.db)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dropped snapshot 'broken': it has no root directory, so none " \
        "of its 7 inodes could be reached" in r.stdout, r.stdout
    assert run("fsck", ws.db).returncode == 0
    listed = run("snapshots", ws.db).stdout.split()
    assert "kept" in listed and "broken" not in listed
    with sqlite3.connect(ws.db) as c:
        for t in ("snap_inodes", "snap_dirents", "snap_chunks",
                  "snap_symlinks", "snap_xattrs"):
            assert c.execute("SELECT count(DISTINCT snap) FROM " + t)\
                .fetchone()[0] <= 1, t
    assert export_digest(ws.db, "kept", "a/file") == \
        hashlib.sha256(b"x" * 200000).hexdigest()
    ws.mount()
    try:
        with open(ws.p("a", "file"), "rb") as f:
            assert f.read() == b"x" * 200000
    finally:
        ws.unmount()


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "own"])
def test_repair_trims_a_snapshot_chunk_shorter_than_its_block(ws, shared):
    """A snapshot's chunk says 1000 bytes but names a 65,536-byte block:
    the snapshot keeps showing its 1000 bytes (then zeros), from a block of
    its own when the tree still names the long one, else from the block
    cut in place; the tree's file is untouched."""
    assert run("snapshot", ws.db, "s").returncode == 0
    if not shared:                 # the tree's file moves to blocks of its own
        ws.mount()
        try:
            with open(ws.p("a", "file"), "r+b") as f:
                f.write(b"y" * 200000)
        finally:
            ws.unmount()
    with sqlite3.connect(ws.db) as c:
        ino = ino_of(c, "a/file")
        c.execute("UPDATE snap_chunks SET len = 1000 WHERE ino = ? AND "
                  "idx = 1", (ino,))
        block = c.execute("SELECT block FROM snap_chunks WHERE ino = ? AND "
                          "idx = 1", (ino,)).fetchone()[0]
    r = run("fsck", ws.db)
    assert r.returncode == 1 and "holds 65536 bytes, not 1000" in r.stdout
    r = run("fsck", "--repair", ws.db)
    assert r.returncode == 0, r.stdout + r.stderr
    if shared:
        assert "gave chunk 1 of inode %d a block of its own with the " \
            "chunk's 1000 bytes of block %d" % (ino, block) in r.stdout
    else:
        assert "cut block %d of chunk 1 of inode %d to the chunk's 1000 " \
            "bytes" % (block, ino) in r.stdout
    assert run("fsck", ws.db).returncode == 0
    assert "nothing to repair" in run("fsck", "--repair", ws.db).stdout
    want = b"x" * 65536 + b"x" * 1000 + bytes(64536) + b"x" * (200000 - 131072)
    assert export_digest(ws.db, "s", "a/file") == \
        hashlib.sha256(want).hexdigest()
    ws.mount()
    try:
        with open(ws.p("a", "file"), "rb") as f:
            assert f.read() == (b"x" if shared else b"y") * 200000
    finally:
        ws.unmount()
