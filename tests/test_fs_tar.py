"""`atrium-fs export DB` and `atrium-fs import DB`: a workspace as a tar.

Run as root: /usr/bin/python3 -m pytest -q tests/test_fs_tar.py
Trees are made on real mounts, exported, imported into new databases,
mounted again and compared as a user sees them.
"""
import errno
import hashlib
import io
import os
import sqlite3
import stat
import struct
import subprocess
import tarfile
import threading
import time

import pytest

from test_fs import BIN, Mount, run

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]

MiB = 1 << 20
GiB = 1 << 30
T1 = 981173106123456789          # 2001-02-03 04:05:06.123456789 in ns


def export(db, out, *extra):
    with open(out, "wb") as f:
        r = subprocess.run([BIN, "export", db, *extra], stdout=f,
                           stderr=subprocess.PIPE, text=True, timeout=300)
    return r


def import_(db, src):
    with open(src, "rb") as f:
        return subprocess.run([BIN, "import", db], stdin=f,
                              capture_output=True, text=True, timeout=300)


def commit(m):
    """fsync commits the daemon's open group: an export of a mounted
    workspace reads its last commit."""
    fd = os.open(m.dir, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_tree(m):
    """Every kind of thing a workspace holds, with odd owners and times."""
    os.makedirs(m.p("src", "deep", "er"))
    with open(m.p("src", "rand"), "wb") as f:
        f.write(os.urandom(3 * MiB + 17))
    with open(m.p("src", "small"), "w") as f:
        f.write("hello\n")
    os.link(m.p("src", "small"), m.p("src", "deep", "hard"))
    os.link(m.p("src", "small"), m.p("hard2"))
    os.symlink("../small", m.p("src", "deep", "link"))
    os.symlink("/etc/passwd", m.p("abs-link"))
    os.mkfifo(m.p("fifo"), 0o640)
    os.mknod(m.p("null"), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    with open(m.p("sparse"), "wb") as f:
        f.seek(GiB)
        f.write(b"middle")
        f.seek(2 * GiB)
        f.write(b"end")
    os.setxattr(m.p("src", "small"), "user.note", b"bin\0\xff")
    os.setxattr(m.p("src"), "user.dir", b"d")
    os.chown(m.p("src", "rand"), 1000, 1001)
    os.chown(m.p("abs-link"), 1002, 1003, follow_symlinks=False)
    os.chmod(m.p("src", "rand"), 0o4751)
    os.mkdir(m.p("empty"), 0o700)
    name = "caf\u00e9 \u6f22\u5b57"
    with open(m.p(name), "w") as f:
        f.write(name)
    os.utime(m.p("src", "small"), ns=(T1, T1 + 1))
    os.utime(m.p("abs-link"), ns=(T1 + 5, T1 + 7), follow_symlinks=False)
    for d in ("src/deep/er", "src/deep", "src", "empty"):
        os.utime(m.p(d), ns=(T1 + 10, T1 + 11))


def snapshot(root):
    """What a user sees under root: per path, its attributes, content hash,
    target, xattrs, and which paths share an inode."""
    seen, inos = {}, {}
    for dirpath, dirs, files in os.walk(root):
        for name in [""] + dirs + files:
            p = os.path.join(dirpath, name) if name else dirpath
            if not name and dirpath != root:
                continue
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            info = {"mode": st.st_mode, "uid": st.st_uid, "gid": st.st_gid,
                    "nlink": st.st_nlink, "mtime": st.st_mtime_ns,
                    "atime": st.st_atime_ns, "rdev": st.st_rdev}
            if stat.S_ISREG(st.st_mode):
                info["size"] = st.st_size
                info["blocks"] = st.st_blocks
                h = hashlib.sha256()
                with open(p, "rb") as f:
                    while True:
                        b = f.read(MiB)
                        if not b:
                            break
                        h.update(b)
                info["sha"] = h.hexdigest()
            if stat.S_ISLNK(st.st_mode):
                info["target"] = os.readlink(p)
            else:
                info["xattrs"] = {k: os.getxattr(p, k)
                                  for k in sorted(os.listxattr(p))}
            inos.setdefault(st.st_ino, []).append(rel)
            seen[rel] = info
    links = sorted(sorted(v) for v in inos.values() if len(v) > 1)
    return seen, links


def test_round_trip_keeps_everything_a_user_sees(tmp_path):
    a = Mount(tmp_path / "a").mount()
    try:
        make_tree(a)
        want = snapshot(a.dir)
        commit(a)
        r = export(a.db, str(tmp_path / "ws.tar"))    # while mounted
        assert r.returncode == 0, r.stderr
    finally:
        a.unmount()
    # Holes stay holes in the archive: it holds the data, not 2 GiB.
    assert os.path.getsize(tmp_path / "ws.tar") < 4 * MiB
    b = Mount(tmp_path / "b")              # an empty workspace, from mkfs
    r = import_(b.db, str(tmp_path / "ws.tar"))
    assert r.returncode == 0, r.stderr
    assert run("fsck", b.db).returncode == 0
    # du counts the same data: holes stay free, nothing is stored twice.
    du_a, du_b = run("du", a.db).stdout, run("du", b.db).stdout
    assert du_a.splitlines()[:3] == du_b.splitlines()[:3]
    b.mount()
    try:
        got = snapshot(b.dir)
    finally:
        b.unmount()
    assert got[1] == want[1]      # the same hard link groups
    assert got[0].keys() == want[0].keys()
    for path in want[0]:
        assert got[0][path] == want[0][path], path
    assert got[0]["sparse"]["blocks"] <= 16       # two small data ranges
    assert got[0]["src/small"]["mtime"] == T1 + 1
    assert got[0]["src/rand"]["mode"] & 0o7777 == 0o4751


def test_export_is_a_tar_that_tar_reads(tmp_path):
    m = Mount(tmp_path).mount()
    try:
        make_tree(m)
        commit(m)
        r = export(m.db, str(tmp_path / "ws.tar"))
        assert r.returncode == 0, r.stderr
    finally:
        m.unmount()
    with tarfile.open(tmp_path / "ws.tar") as t:
        members = {x.name: x for x in t.getmembers()}
        assert members["./src/small"].pax_headers[
            "SCHILY.xattr.user.note"] is not None
        assert members["./src/deep/hard"].islnk() or \
            members["./src/small"].islnk() or members["./hard2"].islnk()
        assert members["./src/rand"].uid == 1000
        assert members["./abs-link"].linkname == "/etc/passwd"
        assert members["./null"].ischr()
        assert t.extractfile("./src/small").read() == b"hello\n"


def test_posix_acls_are_refused_not_dropped(tmp_path):
    """A workspace keeps no ACLs: the mount says so, and an archive with
    one is refused, since dropping a named user's "---" would grant him
    what the ACL denied."""
    m = Mount(tmp_path).mount()
    try:
        with open(m.p("f"), "w") as f:
            f.write("x")
        acl = struct.pack("<I", 2) + b"".join(
            struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in
            ((1, 6, 0xffffffff), (2, 0, 1000), (4, 4, 0xffffffff),
             (0x10, 4, 0xffffffff), (0x20, 4, 0xffffffff)))
        with pytest.raises(OSError) as e:
            os.setxattr(m.p("f"), "system.posix_acl_access", acl)
        assert e.value.errno == errno.EOPNOTSUPP
    finally:
        m.unmount()

    def build(t):
        add(t, "f", b"x", mode=0o644, pax_headers={
            "SCHILY.acl.access": "user::rw-,user:1000:---,group::r--,"
                                 "mask::r--,other::r--"})
    r, db = hostile(tmp_path, "acl", build)
    assert r.returncode == 1, r.stderr
    assert '"f"' in r.stderr and "keeps none" in r.stderr


def test_export_of_a_mounted_workspace_while_a_writer_runs(tmp_path):
    """Every file of the archive is whole: the export reads one moment."""
    m = Mount(tmp_path).mount()
    stop = threading.Event()
    os.mkdir(m.p("w"))

    def writer():
        n = 0
        while not stop.is_set():
            body = (b"%d\n" % n) * (1000 + n % 5000)
            tmp = m.p("w", "tmp")
            with open(tmp, "wb") as f:
                f.write(body)
            os.rename(tmp, m.p("w", "f%d" % (n % 50)))
            n += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        for i in range(3):
            time.sleep(0.5)          # commits of the writer's files
            r = export(m.db, str(tmp_path / ("live%d.tar" % i)))
            assert r.returncode == 0, r.stderr
    finally:
        stop.set()
        t.join()
        m.unmount()
    for i in range(3):
        with tarfile.open(tmp_path / ("live%d.tar" % i)) as tf:
            # w/tmp is being written as the export reads: any length.
            files = [x for x in tf.getmembers() if x.isfile() and
                     not x.name.endswith("/tmp")]
            assert files
            for x in files:
                data = tf.extractfile(x).read()
                lines = data.split(b"\n")[:-1]
                assert lines and len(set(lines)) == 1, x.name
                n = int(lines[0])
                assert len(lines) == 1000 + n % 5000, x.name
    assert run("fsck", m.db).returncode == 0


def max_rss_kib(argv, stdin=None, stdout=None):
    """Peak RSS of one command, as /usr/bin/time -v reports it."""
    r = subprocess.run(["/usr/bin/time", "-v", *argv], stdin=stdin,
                       stdout=stdout, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    for line in r.stderr.splitlines():
        if "Maximum resident set size" in line:
            return int(line.split(":")[1])
    raise AssertionError(r.stderr)


def test_export_and_import_of_a_big_tree_stay_in_bounded_memory(tmp_path):
    """256 MiB of real data and an 8 GiB sparse file: memory does not grow
    with the data."""
    m = Mount(tmp_path).mount()
    try:
        block = os.urandom(MiB)
        with open(m.p("real"), "wb") as f:
            for i in range(256):
                f.write(block[i:] + block[:i])
        with open(m.p("sparse"), "wb") as f:
            for i in range(8):
                f.seek(i * GiB)
                f.write(block)
            f.truncate(8 * GiB)
    finally:
        m.unmount()
    out = str(tmp_path / "big.tar")
    with open(out, "wb") as f:
        rss = max_rss_kib([BIN, "export", m.db], stdout=f)
    assert rss < 48 * 1024, rss
    assert os.path.getsize(out) < 300 * MiB       # holes cost nothing
    new = str(tmp_path / "new.db")
    with open(out, "rb") as f:
        rss = max_rss_kib([BIN, "import", new], stdin=f)
    # SQLite's page cache (64 MiB) is most of it.
    assert rss < 128 * 1024, rss
    with sqlite3.connect(new) as c:
        stored = c.execute("SELECT sum(len) FROM chunks").fetchone()
    assert stored[0] == 256 * MiB + 8 * MiB


def hostile(tmp_path, name, build):
    """Import the archive build() makes into a new database."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        build(t)
    src = tmp_path / (name + ".tar")
    src.write_bytes(buf.getvalue())
    db = str(tmp_path / (name + ".db"))
    r = import_(db, str(src))
    return r, db


def add(t, name, data=b"", **kw):
    ti = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(ti, k, v)
    if ti.type == tarfile.REGTYPE:
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)


@pytest.mark.parametrize("case,why", [
    ("absolute", "absolute name"),
    ("dotdot", '".."'),
    ("dotdot_inside", '".."'),
    ("long_name", "longer than 255 bytes"),
    ("hardlink_out", '".."'),
    ("hardlink_abs", "absolute name"),
    ("hardlink_missing", "not in the archive before it"),
    ("through_symlink", "not a directory"),
    ("huge_xattr", "over 65536 bytes"),
    ("replace_dir", "replace a directory"),
])
def test_hostile_archives_are_refused(tmp_path, case, why):
    outside = tmp_path / "outside"

    def build(t):
        add(t, "ok", b"fine")
        if case == "absolute":
            add(t, str(outside), b"x")
        elif case == "dotdot":
            add(t, "../outside", b"x")
        elif case == "dotdot_inside":
            add(t, "a/b/../../../outside", b"x")
        elif case == "long_name":
            add(t, "d/" + "n" * 256, b"x")
        elif case == "hardlink_out":
            add(t, "h", type=tarfile.LNKTYPE, linkname="../../etc/passwd")
        elif case == "hardlink_abs":
            add(t, "h", type=tarfile.LNKTYPE, linkname="/etc/passwd")
        elif case == "hardlink_missing":
            add(t, "h", type=tarfile.LNKTYPE, linkname="nothere")
        elif case == "through_symlink":
            add(t, "l", type=tarfile.SYMTYPE, linkname=str(tmp_path))
            add(t, "l/outside", b"x")
        elif case == "huge_xattr":
            add(t, "big", b"x",
                pax_headers={"SCHILY.xattr.user.big": "v" * 70000})
        elif case == "replace_dir":
            add(t, "dir", type=tarfile.DIRTYPE, mode=0o755)
            add(t, "dir/inside", b"x")
            add(t, "dir", b"a file now")
    r, db = hostile(tmp_path, case, build)
    assert r.returncode == 1
    assert "member" in r.stderr and why in r.stderr, r.stderr
    assert not outside.exists()
    # The database the import made is gone, so a retry starts clean.
    assert not os.path.exists(db) and "was removed" in r.stderr


def test_device_nodes_and_a_clean_archive_import(tmp_path):
    def build(t):
        add(t, "dir/", type=tarfile.DIRTYPE, mode=0o750)
        add(t, "dir/f", b"data", mode=0o640, uid=5, gid=6)
        add(t, "dev", type=tarfile.CHRTYPE, devmajor=1, devminor=5)
    r, db = hostile(tmp_path, "clean", build)
    assert r.returncode == 0, r.stderr
    os.rename(db, str(tmp_path / "workspace.db"))
    m = Mount.__new__(Mount)
    m.opts, m.db, m.dir, m.pid = [], str(tmp_path / "workspace.db"), \
        str(tmp_path / "mnt"), 0
    os.makedirs(m.dir)
    m.mount()
    try:
        st = os.lstat(m.p("dev"))
        assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 5)
        st = os.stat(m.p("dir", "f"))
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (5, 6, 0o640)
        with open(m.p("dir", "f"), "rb") as f:
            assert f.read() == b"data"
    finally:
        m.unmount()


def test_import_refuses_a_workspace_with_files_or_mounted(tmp_path):
    m = Mount(tmp_path).mount()
    try:
        with open(m.p("f"), "w") as f:
            f.write("x")
        commit(m)
        tar = str(tmp_path / "t.tar")
        assert export(m.db, tar).returncode == 0
        r = import_(m.db, tar)
        assert r.returncode == 1 and "is mounted" in r.stderr
    finally:
        m.unmount()
    r = import_(m.db, tar)
    assert r.returncode == 1 and "already holds files" in r.stderr
    # An empty workspace made by mkfs is fine.
    empty = str(tmp_path / "empty.db")
    assert run("mkfs", empty).returncode == 0
    r = import_(empty, tar)
    assert r.returncode == 0, r.stderr


def test_export_of_a_snapshot_is_the_tree_when_it_was_taken(tmp_path):
    """Snapshot, change every kind of thing, export the snapshot: it is the
    tree of before the change, byte for byte, holes, links and xattrs too."""
    m = Mount(tmp_path).mount()
    try:
        make_tree(m)
        before = snapshot(m.dir)
    finally:
        m.unmount()
    assert run("snapshot", m.db, "before").returncode == 0
    m.mount()
    try:
        with open(m.p("src", "rand"), "r+b") as f:    # a block the snapshot
            f.seek(MiB)                                # names: copied first
            f.write(b"changed" * 1000)
        os.truncate(m.p("src", "small"), 2)
        os.unlink(m.p("hard2"))
        os.rename(m.p("src", "deep"), m.p("moved"))
        os.setxattr(m.p("src"), "user.dir", b"new")
        with open(m.p("new-file"), "w") as f:
            f.write("after")
        with open(m.p("sparse"), "r+b") as f:
            f.seek(GiB + 100)
            f.write(b"filled")
        commit(m)
        after = snapshot(m.dir)
        assert after != before
        # While mounted and changing: the snapshot's export reads one moment.
        r = export(m.db, str(tmp_path / "snap.tar"), "before")
        assert r.returncode == 0, r.stderr
    finally:
        m.unmount()
    b = Mount(tmp_path / "b")
    r = import_(b.db, str(tmp_path / "snap.tar"))
    assert r.returncode == 0, r.stderr
    b.mount()
    try:
        got = snapshot(b.dir)
    finally:
        b.unmount()
    assert got[1] == before[1]
    assert got[0].keys() == before[0].keys()
    for path in before[0]:
        assert got[0][path] == before[0][path], path
    # The live export is the changed tree, not the snapshot.
    r = export(m.db, str(tmp_path / "live.tar"))
    assert r.returncode == 0, r.stderr
    c = Mount(tmp_path / "c")
    assert import_(c.db, str(tmp_path / "live.tar")).returncode == 0
    c.mount()
    try:
        live = snapshot(c.dir)
    finally:
        c.unmount()
    assert live == after


def test_export_names_its_errors(tmp_path):
    m = Mount(tmp_path)
    r = export(m.db, str(tmp_path / "s.tar"), "nightly")
    assert r.returncode == 1
    assert 'has no snapshot "nightly"' in r.stderr
    r = export(m.db, str(tmp_path / "s.tar"), "-x\x1b[2J")
    assert r.returncode == 1 and "not a snapshot name" in r.stderr
    assert "\x1b" not in r.stderr
    r = export(str(tmp_path / "nope.db"), str(tmp_path / "n.tar"))
    assert r.returncode == 1 and "does not exist" in r.stderr
    r = run("export", m.db, "a", "b")
    assert r.returncode == 2
