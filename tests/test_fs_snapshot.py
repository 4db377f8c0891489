"""Snapshots of a workspace (`atrium-fs snapshot/snapshots/restore/drop`),
schema 3's shared blocks, and the migration from a version-2 database.

Run as root: /usr/bin/python3 -m pytest -q tests/test_fs_snapshot.py
"""
import hashlib
import io
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import tarfile
import time

import pytest

from test_fs import BIN, Mount, is_mounted, run, wait_gone

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]

HERE = os.path.dirname(os.path.abspath(__file__))
# Made by atrium-fs at schema 2 (before blocks): see test_v2_database_migrates.
FIXTURE_V2 = os.path.join(HERE, "fixtures", "workspace-v2.db")
FIXTURE_SUMS = {
    "src/hello.txt":
        "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447",
    "src/pattern.bin":
        "e870fec3223bac8f6147b08b31e6e6e4bb9abd783820bcd212b7737af6a02174",
    "src/pattern-link.bin":
        "e870fec3223bac8f6147b08b31e6e6e4bb9abd783820bcd212b7737af6a02174",
    "src/sparse":
        "8cb4b3d1c5cf11110b3fefccfff950e23f2036df98d8879fc59681e7afac5012",
}
CHUNK = 65536
MiB = 1 << 20


def tree_state(root):
    """What a user sees of a tree: per path its type, mode, size, content
    hash or link target, link count and xattrs."""
    state = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if os.path.islink(p):
                what = "-> " + os.readlink(p)
            elif os.path.isdir(p):
                what = "dir"
            else:
                with open(p, "rb") as f:
                    what = hashlib.sha256(f.read()).hexdigest()
            xattrs = {} if os.path.islink(p) else {
                k: os.getxattr(p, k) for k in os.listxattr(p)}
            state[rel] = (st.st_mode, st.st_size, st.st_nlink, what,
                          int(st.st_mtime), xattrs)
    return state


def state_of(m):
    """tree_state of the unmounted m as a fresh mount shows it (what the
    kernel's writeback cache held, mtimes included, is in by then)."""
    m.mount()
    try:
        return tree_state(m.dir)
    finally:
        m.unmount()


def fsck_clean(db):
    r = run("fsck", db)
    assert r.returncode == 0, r.stdout + r.stderr


def snapshots(db):
    """{name: (inodes, shared, own)} from `atrium-fs snapshots`."""
    r = run("snapshots", db)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "TAKEN", "INODES", "SHARED", "OWN"]
    out = {}
    for line in lines[1:]:
        name, _, inodes, shared, own = line.split()
        out[name] = (int(inodes), int(shared), int(own))
    return out


def ok(*args):
    r = run(*args)
    assert r.returncode == 0, r.stderr
    return r


def db_bytes(db):
    """The database and its WAL as the disk holds them."""
    return sum(os.path.getsize(p) for p in (db, db + "-wal")
               if os.path.exists(p))


def make_tree(m):
    os.makedirs(m.p("src", "deep"))
    with open(m.p("src", "big.bin"), "wb") as f:
        f.write(bytes(random.Random(1).getrandbits(8) for _ in range(5 * CHUNK + 123)))
    with open(m.p("src", "small.txt"), "w") as f:
        f.write("small\n")
    os.link(m.p("src", "small.txt"), m.p("src", "deep", "hard.txt"))
    os.symlink("small.txt", m.p("src", "link"))
    os.setxattr(m.p("src", "small.txt"), "user.k", b"v1")
    with open(m.p("sparse"), "wb") as f:
        f.truncate(10 * CHUNK)
        f.seek(7 * CHUNK + 5)
        f.write(b"data")


def change_tree(m):
    """Every kind of change, including writes into blocks the snapshot
    shares (in place, extending, truncating, punching)."""
    with open(m.p("src", "big.bin"), "r+b") as f:
        f.seek(CHUNK + 10)
        f.write(b"X" * 100)                   # in place, inside a chunk
        f.seek(5 * CHUNK + 100)
        f.write(b"Y" * 1000)                  # extends the short last chunk
        f.truncate(3 * CHUNK + 7)             # cuts a shared chunk
    subprocess.run(["fallocate", "--punch-hole", "-o", str(7 * CHUNK), "-l",
                    "10", m.p("sparse")], check=True)
    with open(m.p("src", "small.txt"), "a") as f:
        f.write("more\n")
    os.setxattr(m.p("src", "small.txt"), "user.k", b"v2")
    os.chmod(m.p("src", "small.txt"), 0o600)
    os.unlink(m.p("src", "link"))
    os.rename(m.p("src", "deep"), m.p("moved"))
    os.mkdir(m.p("new"))
    with open(m.p("new", "f"), "wb") as f:
        f.write(os.urandom(3 * CHUNK))


def test_v2_database_migrates_on_mount_keeping_every_byte(tmp_path):
    m = Mount(tmp_path)
    shutil.copy(FIXTURE_V2, m.db)
    fsck_clean(m.db)                          # read-only: still version 2
    m.mount()
    try:
        for rel, want in FIXTURE_SUMS.items():
            with open(m.p(rel), "rb") as f:
                assert hashlib.sha256(f.read()).hexdigest() == want, rel
        st = os.stat(m.p("src", "hello.txt"))
        assert (st.st_mode & 0o777, st.st_mtime_ns) == (0o640, 981173106789000000)
        assert os.getxattr(m.p("src", "hello.txt"), "user.color") == b"blue"
        assert os.readlink(m.p("src", "hello.lnk")) == "hello.txt"
        assert os.stat(m.p("src", "pattern.bin")).st_nlink == 2
        assert os.stat(m.p("src", "sparse")).st_blocks == 112   # holes kept
        # and it still works as a filesystem
        with open(m.p("src", "pattern.bin"), "r+b") as f:
            f.write(b"new")
        with open(m.p("src", "pattern-link.bin"), "rb") as f:
            assert f.read(3) == b"new"
    finally:
        m.unmount()
    fsck_clean(m.db)
    assert sqlite3.connect(m.db).execute("PRAGMA user_version").fetchone()[0] == 3


def test_snapshot_restore_and_drop(tmp_path):
    m = Mount(tmp_path).mount()
    try:
        make_tree(m)
    finally:
        m.unmount()
    before = state_of(m)
    ok("snapshot", m.db, "before")
    assert snapshots(m.db)["before"][2] == 0      # all shared with the tree
    m.mount()
    try:
        assert tree_state(m.dir) == before
        change_tree(m)
    finally:
        m.unmount()
    changed = state_of(m)
    assert changed != before
    fsck_clean(m.db)
    inodes, shared, own = snapshots(m.db)["before"]
    assert inodes == 7              # the root and 6 (a hard link is one)
    assert own > 0 and shared > 0
    ok("snapshot", m.db, "after")
    ok("restore", m.db, "before")
    fsck_clean(m.db)
    m.mount()
    try:
        assert tree_state(m.dir) == before
        with open(m.p("src", "small.txt"), "a") as f:   # the tree is live
            f.write("again\n")
    finally:
        m.unmount()
    ok("restore", m.db, "after")
    assert state_of(m) == changed
    ok("drop", m.db, "before")
    ok("drop", m.db, "after")
    fsck_clean(m.db)
    assert snapshots(m.db) == {}
    du = dict(line.split(":", 1) for line in ok("du", m.db).stdout.splitlines())
    assert du["snapshots only"].split()[0] == "0"


def test_snapshot_commands_say_what_is_wrong(tmp_path):
    m = Mount(tmp_path)
    ok("snapshot", m.db, "a")
    r = run("snapshot", m.db, "a")
    assert r.returncode == 1 and "already has a snapshot named a" in r.stderr
    for bad in ("", "-x", "a/b", "a b", "x" * 129, "\x1b[2J"):
        r = run("snapshot", m.db, bad)
        assert r.returncode == 1 and "is not a snapshot name" in r.stderr
    for cmd in ("restore", "drop"):
        r = run(cmd, m.db, "nope")
        assert r.returncode == 1 and "has no snapshot named nope" in r.stderr
    r = run("snapshot", str(tmp_path / "missing.db"), "a")
    assert r.returncode == 2 and "does not exist" in r.stderr
    m.mount()
    try:
        ok("snapshot", m.db, "b")                 # through the daemon
        r = run("restore", m.db, "nope")
        assert r.returncode == 1 and "has no snapshot named nope" in r.stderr
        assert list(snapshots(m.db)) == ["a", "b"]
        st = os.stat(m.db + "-ctl")
        assert (st.st_mode & 0o777) == 0o600
    finally:
        m.unmount()
    assert not os.path.exists(m.db + "-ctl")
    r = run("drop", m.db, "b")                    # offline again
    assert r.returncode == 0, r.stderr
    assert list(snapshots(m.db)) == ["a"]


def contents(root):
    """Each path's type and content (no times: the kernel flushes those
    from its writeback cache when it likes)."""
    return {k: (v[0], v[1], v[3]) for k, v in tree_state(root).items()}


def contents_of(m):
    """contents() of the unmounted m as a fresh mount shows it."""
    m.mount()
    try:
        return contents(m.dir)
    finally:
        m.unmount()


def test_mounted_snapshot_restore_drop_with_files_open(tmp_path):
    """On a mounted workspace: the kernel sees the restored tree at once,
    and files open for reading and writing keep the file they had opened,
    as after a rename over them."""
    m = Mount(tmp_path).mount()
    try:
        make_tree(m)
        reader = open(m.p("src", "big.bin"), "rb")
        writer = open(m.p("src", "small.txt"), "r+b")
        writer.seek(0, 2)
        writer.write(b"first\n")
        writer.flush()
        want = contents(m.dir)
        ok("snapshot", m.db, "s")
        # change the tree, through the open files too
        writer.write(b"second\n")
        writer.flush()
        with open(m.p("src", "big.bin"), "r+b") as f:
            f.write(b"Z" * 5000)
        os.unlink(m.p("sparse"))
        os.mkdir(m.p("later"))
        with open(m.p("later", "f"), "w") as f:
            f.write("later\n")
        seen_before = reader.read(100)
        ok("restore", m.db, "s")
        assert contents(m.dir) == want            # no stale cache
        assert not os.path.exists(m.p("later"))
        # the open files still reach what they had opened
        reader.seek(0)
        assert reader.read(100) == b"Z" * 100
        assert seen_before == b"Z" * 100
        writer.write(b"third\n")
        writer.flush()
        writer.seek(0)
        assert writer.read() == b"small\nfirst\nsecond\nthird\n"
        with open(m.p("src", "small.txt"), "rb") as f:
            assert f.read() == b"small\nfirst\n"
        ok("drop", m.db, "s")
        reader.close()
        writer.close()
        fsck_clean(m.db)
        assert contents(m.dir) == want
        with open(m.p("src", "small.txt"), "ab") as f:    # writable
            f.write(b"after\n")
    finally:
        m.unmount()
    fsck_clean(m.db)
    m.mount()
    try:
        with open(m.p("src", "small.txt"), "rb") as f:
            assert f.read() == b"small\nfirst\nafter\n"
    finally:
        m.unmount()


def cached_bytes(path):
    """Bytes of path in the page cache (util-linux's fincore: mincore(2))."""
    r = subprocess.run(["fincore", "--bytes", "--noheadings", "--output",
                        "RES", path], capture_output=True, text=True, check=True)
    return int(r.stdout.split()[0])


def test_mounted_restore_through_warm_caches(tmp_path):
    """With the kernel caching every name, attribute and page of the tree
    (and the absence of a removed file's name): a file changed after the
    snapshot (content and size), one made after it, one removed after it
    and one renamed after it read as the snapshot saw them once a mounted
    restore returns, and a file that did not change keeps its inode
    number, size, times and cached pages."""
    m = Mount(tmp_path).mount()
    try:
        os.mkdir(m.p("d"))
        for name, size in (("changed", 100 * 1024), ("removed", 5000),
                           ("renamed", 7000), ("untouched", 4 * MiB)):
            with open(m.p("d", name), "wb") as f:
                f.write(os.urandom(size))
        want = contents(m.dir)
        ok("snapshot", m.db, "s")
        assert contents(m.dir) == want        # every page read, and cached
        with open(m.p("d", "changed"), "r+b") as f:
            f.write(os.urandom(300 * 1024))  # other bytes, and more of them
        with open(m.p("d", "created"), "wb") as f:
            f.write(b"created\n")
        os.unlink(m.p("d", "removed"))
        assert not os.path.exists(m.p("d", "removed"))
        os.rename(m.p("d", "renamed"), m.p("renamed2"))
        assert os.path.exists(m.p("renamed2"))
        assert not os.path.exists(m.p("d", "renamed"))
        before = os.stat(m.p("d", "untouched"))
        assert cached_bytes(m.p("d", "untouched")) == 4 * MiB
        ok("restore", m.db, "s")
        assert cached_bytes(m.p("d", "untouched")) == 4 * MiB
        after = os.stat(m.p("d", "untouched"))
        assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
            before.st_ino, before.st_size, before.st_mtime_ns)
        # by path first: a listing would refresh the kernel's entries
        for name in ("changed", "removed", "renamed", "untouched"):
            with open(m.p("d", name), "rb") as f:
                data = f.read()
            st = os.stat(m.p("d", name))
            assert (st.st_mode, st.st_size, hashlib.sha256(data).hexdigest()
                    ) == want[os.path.join("d", name)], name
        assert not os.path.exists(m.p("d", "created"))
        assert not os.path.exists(m.p("renamed2"))
        assert contents(m.dir) == want
        assert sorted(os.listdir(m.p("d"))) == [
            "changed", "removed", "renamed", "untouched"]
        assert sorted(os.listdir(m.dir)) == ["d"]
        fsck_clean(m.db)
    finally:
        m.unmount()
    fsck_clean(m.db)
    assert contents_of(m) == want


def test_restore_under_a_running_command(tmp_path):
    """A command appending to a log in the workspace keeps running through
    a restore; its later appends land in the restored file."""
    m = Mount(tmp_path).mount()
    try:
        os.mkdir(m.p("work"))
        with open(m.p("work", "log"), "w") as f:
            f.write("start\n")
        ok("snapshot", m.db, "s")
        cmd = subprocess.Popen(
            ["sh", "-c", "i=0; while [ $i -lt 200 ]; do echo line$i >> log; "
             "i=$((i+1)); sleep 0.01; done; echo done > finished"],
            cwd=m.p("work"), stderr=subprocess.PIPE)
        time.sleep(0.5)
        ok("restore", m.db, "s")
        assert cmd.wait(timeout=60) == 0
        assert cmd.stderr.read() == b""
        with open(m.p("work", "log")) as f:
            lines = f.read().splitlines()
        assert lines[0] == "start" and lines[-1] == "line199"
        assert len(lines) < 201                   # what came before went
        assert open(m.p("work", "finished")).read() == "done\n"
        fsck_clean(m.db)
    finally:
        m.unmount()
    fsck_clean(m.db)


def test_snapshot_of_a_big_file_costs_metadata_only(tmp_path):
    """A 256 MiB file: the snapshot writes a few hundred KiB at most, and
    rewriting 1 MiB of it afterwards costs about that 1 MiB."""
    m = Mount(tmp_path).mount()
    try:
        with open(m.p("big"), "wb") as f:
            for _ in range(256):
                f.write(os.urandom(MiB))
    finally:
        m.unmount()
    start = db_bytes(m.db)
    ok("snapshot", m.db, "s")
    taken = db_bytes(m.db) - start
    assert taken < 256 * 1024, taken
    m.mount()
    try:
        with open(m.p("big"), "r+b") as f:
            f.seek(100 * MiB)
            f.write(os.urandom(MiB))
    finally:
        m.unmount()
    rewritten = db_bytes(m.db) - start - taken
    assert rewritten < 2 * MiB, rewritten
    assert snapshots(m.db)["s"][2] == MiB         # its own: the old MiB
    fsck_clean(m.db)


def kill_during(args, delay):
    """Start atrium-fs args, SIGKILL it after delay seconds (or let it end)."""
    p = subprocess.Popen([BIN, *args], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.wait()


def test_kill_9_during_snapshot_restore_and_drop(tmp_path):
    """Whatever moment a snapshot, restore or drop dies at, fsck is clean
    and the snapshot is whole or absent."""
    m = Mount(tmp_path).mount()
    try:
        for d in range(20):
            os.mkdir(m.p("d%d" % d))
            for i in range(150):
                with open(m.p("d%d" % d, "f%d" % i), "w") as f:
                    f.write("%d/%d\n" % (d, i))
        with open(m.p("big"), "wb") as f:
            f.write(os.urandom(64 * MiB))
    finally:
        m.unmount()
    want = state_of(m)
    rnd = random.Random(7)
    for round_ in range(4):
        name = "s%d" % round_
        kill_during(["snapshot", m.db, name], rnd.uniform(0.0, 0.15))
        fsck_clean(m.db)
        if name not in snapshots(m.db):
            ok("snapshot", m.db, name)
        m.mount()
        try:
            os.unlink(m.p("big"))
            os.rename(m.p("d3"), m.p("gone"))
        finally:
            m.unmount()
        kill_during(["restore", m.db, name], rnd.uniform(0.0, 0.15))
        fsck_clean(m.db)
        if state_of(m) != want:                       # the restore did not happen
            ok("restore", m.db, name)
        kill_during(["drop", m.db, name], rnd.uniform(0.0, 0.1))
        fsck_clean(m.db)
        assert state_of(m) == want
    ok("snapshot", m.db, "last")
    for name in snapshots(m.db):
        ok("drop", m.db, name)
    fsck_clean(m.db)


def test_diff_names_what_changed_since_a_snapshot(tmp_path):
    """diff lists, by path, what was added, removed and modified since a
    snapshot, mounted (through the daemon) and unmounted alike."""
    m = Mount(tmp_path).mount()
    try:
        os.makedirs(m.p("d"))
        for name in ("keep", "edit", "gone", "d/old"):
            with open(m.p(*name.split("/")), "w") as f:
                f.write(name + "\n")
        ok("snapshot", m.db, "before")
        assert ok("diff", m.db, "before").stdout == ""
        with open(m.p("edit"), "a") as f:
            f.write("more\n")
        os.unlink(m.p("gone"))
        os.unlink(m.p("d", "old"))
        with open(m.p("d", "new"), "w") as f:
            f.write("new\n")
        with open(m.p("odd\nname"), "w") as f:
            f.write("odd\n")
        want = "A d/new\nD d/old\nM edit\nD gone\nA odd?name\n"
        assert ok("diff", m.db, "before").stdout == want
    finally:
        m.unmount()
    assert ok("diff", m.db, "before").stdout == want
    r = run("diff", m.db, "nope")
    assert r.returncode == 1 and "no snapshot named nope" in r.stderr


def test_diff_after_a_restore_under_held_files_is_empty(tmp_path):
    """A restore while the kernel holds the changed files brings their
    snapshot versions back under new inode numbers: diff against that
    snapshot says nothing changed until something does."""
    m = Mount(tmp_path).mount()
    try:
        for name in ("edit", "keep"):
            with open(m.p(name), "w") as f:
                f.write(name + "\n")
        os.symlink("keep", m.p("link"))
        ok("snapshot", m.db, "s")
        held = open(m.p("edit"), "a")
        held.write("more\n")
        held.flush()
        os.unlink(m.p("link"))
        os.symlink("edit", m.p("link"))
        assert ok("diff", m.db, "s").stdout == "M edit\nM link\n"
        ok("restore", m.db, "s")
        assert os.fstat(held.fileno()).st_ino != os.stat(m.p("edit")).st_ino
        assert ok("diff", m.db, "s").stdout == ""
        with open(m.p("keep"), "w") as f:     # the same bytes, rewritten
            f.write("keep\n")
        assert ok("diff", m.db, "s").stdout == "M keep\n"
        held.close()
    finally:
        m.unmount()


def test_diff_is_capped(tmp_path):
    """A change of more than 1000 paths lists the first 1000, by path,
    and says there were more."""
    m = Mount(tmp_path).mount()
    try:
        ok("snapshot", m.db, "empty")
        for i in range(1005):
            open(m.p("f%04d" % i), "w").close()
        out = ok("diff", m.db, "empty").stdout.splitlines()
    finally:
        m.unmount()
    assert out[:1000] == ["A f%04d" % i for i in range(1000)]
    assert out[1000:] == ["... more than 1000 changes; the first 1000 are "
                          "shown"]


# --- kill -9 inside an operation ---------------------------------------------
# tests/fault_vfs.c, preloaded, pauses the process that writes the database
# inside the operation's transaction (mid: before its commit frame; commit:
# just after it), so that the kill lands there every time.
SHIM = os.path.join(os.path.dirname(BIN), "tests", "fault_vfs.so")
TREE_DIRS, TREE_FILES = 50, 200                   # 10,000 files


def tree_tar():
    """A tar of a 10,000-file tree, a 2 MiB file and a symlink."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def add(name, data):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode = len(data), 0o644
            tar.addfile(ti, io.BytesIO(data))
        for d in range(TREE_DIRS):
            ti = tarfile.TarInfo("d%d" % d)
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(ti)
            for i in range(TREE_FILES):
                add("d%d/f%d" % (d, i), b"%d/%d\n" % (d, i))
        add("big", random.Random(3).randbytes(2 * MiB))
        ti = tarfile.TarInfo("link")
        ti.type, ti.linkname = tarfile.SYMTYPE, "big"
        tar.addfile(ti)
    return buf.getvalue()


def exported(db, snapshot=None):
    """{path: (type, mode, content hash or link target)} of the live tree
    or a snapshot, as `atrium-fs export` writes it."""
    r = subprocess.run([BIN, "export", db] + ([snapshot] if snapshot else []),
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = {}
    with tarfile.open(fileobj=io.BytesIO(r.stdout)) as tar:
        for ti in tar:
            data = tar.extractfile(ti).read() if ti.isreg() else b""
            out[ti.name.rstrip("/")] = (ti.type, ti.mode, ti.linkname or
                                        hashlib.sha256(data).hexdigest())
    return out


def change_big_tree(m):
    """T0 to T1: a directory removed, one rewritten, one added."""
    shutil.rmtree(m.p("d3"))
    for i in range(TREE_FILES):
        with open(m.p("d4", "f%d" % i), "a") as f:
            f.write("changed\n")
    os.mkdir(m.p("new"))
    for i in range(TREE_FILES):
        with open(m.p("new", "f%d" % i), "w") as f:
            f.write("new %d\n" % i)


def fresh_copy(tmp_path, src):
    """A Mount of a copy of the unmounted database src under tmp_path."""
    m = Mount(tmp_path)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(m.db + suffix):
            os.unlink(m.db + suffix)
    for suffix in ("", "-wal"):
        if os.path.exists(src + suffix):
            shutil.copy(src + suffix, m.db + suffix)
    return m


@pytest.fixture(scope="module")
def kill_trees(tmp_path_factory):
    """Two databases to copy: "plain" holds T0 and no snapshot; "changed"
    holds snapshot s of T0 and T1 live.  With T0 and T1 as exported."""
    base = tmp_path_factory.mktemp("kill-trees")
    os.makedirs(base / "plain")
    plain = Mount(base / "plain")
    r = subprocess.run([BIN, "import", plain.db], input=tree_tar(),
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    t0 = exported(plain.db)
    os.makedirs(base / "changed")
    changed = fresh_copy(base / "changed", plain.db)
    ok("snapshot", changed.db, "s")
    changed.mount()
    try:
        change_big_tree(changed)
    finally:
        changed.unmount()
    t1 = exported(changed.db)
    assert t1 != t0 and exported(changed.db, "s") == t0
    return {"plain": plain.db, "changed": changed.db, "t0": t0, "t1": t1}


def pause_env(tmp_path, mode):
    arm, mark = str(tmp_path / "arm"), str(tmp_path / "paused")
    return {"LD_PRELOAD": SHIM, "ATRIUM_PAUSE": mode, "ATRIUM_PAUSE_ARM": arm,
            "ATRIUM_PAUSE_MARK": mark}


def wait_paused(env, proc, timeout=60):
    end = time.time() + timeout
    while not os.path.exists(env["ATRIUM_PAUSE_MARK"]):
        assert proc.poll() is None, "the operation ended before its pause: " \
            + proc.stderr.read().decode(errors="replace")
        assert time.time() < end, "the operation never paused"
        time.sleep(0.01)


def fsck_after_crash(db):
    """fsck of a database whose writer was killed: clean, but for what
    fsck itself says the next mount finishes (files unlinked while open)."""
    r = run("fsck", db)
    assert r.returncode in (0, 1), r.stderr
    for line in r.stdout.splitlines():
        assert "at the next mount" in line, r.stdout


# What each operation leaves when killed before (mid) and after (commit)
# its commit: whether snapshot s is there, and which tree is live.
KILL_OUTCOME = {
    ("snapshot", "mid"): ("plain", False, "t0"),
    ("snapshot", "commit"): ("plain", True, "t0"),
    ("restore", "mid"): ("changed", True, "t1"),
    ("restore", "commit"): ("changed", True, "t0"),
    ("drop", "mid"): ("changed", True, "t1"),
    ("drop", "commit"): ("changed", False, "t1"),
}


def check_after_kill(m, trees, op, mode, touched=()):
    """The snapshot whole or absent as the moment of the kill says, the
    live tree the before or after state, and the database good to mount.
    touched: paths written through the mount meanwhile, which the live
    tree may hold in any state they passed through (what the kernel had
    not handed over when the daemon died is lost); check_touched judges
    them."""
    _, has_s, live = KILL_OUTCOME[(op, mode)]
    fsck_after_crash(m.db)
    assert ("s" in snapshots(m.db)) == has_s
    if has_s:
        snap = exported(m.db, "s")                     # whole
        if op == "snapshot" and touched:
            # taken of the mounted tree: with every write made before it
            assert snap.pop("./d2/f2")[2] == hashlib.sha256(
                b"2/2\nopen\n").hexdigest()
            assert snap.pop("./d0/log")[2] != ""
        assert without(snap, touched) == without(trees["t0"], touched)
    got = without(exported(m.db), touched)
    assert got == without(trees[live], touched)        # never a mix
    m.mount()
    try:
        with open(m.p("d0", "f7")) as f:
            assert f.read() == "0/7\n"
        for rel in touched:
            check_touched(m, rel, op == "restore" and live == "t0")
        with open(m.p("later"), "w") as f:             # writable again
            f.write("later\n")
    finally:
        m.unmount()
    fsck_clean(m.db)


def without(state, paths):
    """state less paths."""
    return {k: v for k, v in state.items() if k[2:] not in paths}


def check_touched(m, rel, restored):
    """d2/f2 (open for writing) and d0/log (appended to by a command) as
    a mounted operation's test left them: the live tree's state, or that
    plus some of what was written; as the snapshot has them once it was
    restored."""
    try:
        with open(m.p(rel), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        data = None
    if rel == "d2/f2":
        assert data in ((b"2/2\n",) if restored else
                        (b"2/2\n", b"2/2\nopen\n")), data
    else:
        assert data is None or data == b"x\n" * (len(data) // 2), data
        assert not (restored and data), "the restore left d0/log"


pause_kill = pytest.mark.skipif(
    not os.path.exists(SHIM), reason="build first: make build/tests/fault_vfs.so")


@pause_kill
@pytest.mark.parametrize("op,mode", sorted(KILL_OUTCOME))
def test_kill_9_inside_an_unmounted_operation(tmp_path, kill_trees, op, mode):
    """kill -9 of `atrium-fs snapshot|restore|drop` on an unmounted
    database, inside its transaction: all of it or none of it."""
    m = fresh_copy(tmp_path, kill_trees[KILL_OUTCOME[(op, mode)][0]])
    env = pause_env(tmp_path, mode)
    open(env["ATRIUM_PAUSE_ARM"], "w").close()
    p = subprocess.Popen([BIN, op, m.db, "s"], env=dict(os.environ, **env),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_paused(env, p)
    finally:
        p.kill()
        p.wait()
    check_after_kill(m, kill_trees, op, mode)


@pause_kill
@pytest.mark.parametrize("op,mode", sorted(KILL_OUTCOME))
def test_kill_9_of_the_daemon_inside_a_mounted_operation(tmp_path, kill_trees,
                                                         op, mode):
    """kill -9 of the mounted daemon while it runs `atrium-fs
    snapshot|restore|drop` for the command line, with files open for
    reading and writing and a command appending and reading meanwhile."""
    m = fresh_copy(tmp_path, kill_trees[KILL_OUTCOME[(op, mode)][0]])
    env = pause_env(tmp_path, mode)
    m.mount(env=env)
    busy = cmd = None
    try:
        reader = open(m.p("d1", "f1"), "rb")
        writer = open(m.p("d2", "f2"), "r+b")
        assert reader.read() == b"1/1\n"
        writer.seek(0, 2)
        writer.write(b"open\n")
        writer.flush()
        busy = subprocess.Popen(
            ["sh", "-c", "while :; do echo x >> d0/log; cat big > /dev/null; "
             "done"], cwd=m.dir, stderr=subprocess.DEVNULL,
            start_new_session=True)
        time.sleep(0.3)
        open(env["ATRIUM_PAUSE_ARM"], "w").close()
        cmd = subprocess.Popen([BIN, op, m.db, "s"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
        wait_paused(env, cmd)
        os.kill(m.pid, signal.SIGKILL)
        assert wait_gone(m.pid)
        # The command says the daemon went away, and what to do.
        assert cmd.wait(timeout=30) == 1
        said = cmd.stderr.read().decode()
        assert "went away before answering the %s of s" % op in said, said
        for f in (reader, writer):
            try:
                f.close()
            except OSError:
                pass
        os.killpg(busy.pid, signal.SIGKILL)      # the shell and its cat
        busy.wait(timeout=30)
        busy = None
        # A stale mount goes with a plain unmount, once the killed
        # processes have let go of it (their exit takes a moment).
        end = time.time() + 10
        while True:
            r = subprocess.run(["fusermount3", "-u", m.dir],
                               capture_output=True, text=True)
            if r.returncode == 0 or time.time() > end:
                break
            time.sleep(0.1)
        assert r.returncode == 0, r.stderr
        assert not is_mounted(m.dir)
        m.pid = 0
    finally:
        if busy:
            os.killpg(busy.pid, signal.SIGKILL)
        m.unmount()
    check_after_kill(m, kill_trees, op, mode, touched=("d2/f2", "d0/log"))
