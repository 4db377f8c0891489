"""atrium-fs frees the space of big deleted and truncated files in the
background: what a user of the mounted workspace sees while it does, and
after a kill -9 in the middle of it; and reads do not wait for another
process that writes and fsyncs.

Run as root: /usr/bin/python3 -m pytest -q tests/test_fs_reclaim.py
"""
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from test_fs import Mount, fsck_clean, run, sha, wait_gone

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]

MiB = 1 << 20
PROBE_FILES = 600


def write_big(path, size):
    block = os.urandom(MiB)
    with open(path, "wb") as f:
        for _ in range(size // MiB):
            f.write(block)
        os.fsync(f.fileno())


class Prober:
    """A stat that reaches the daemon (a name never looked up before) and
    a read the kernel has not cached (a file never read since the mount)."""

    def __init__(self, m):
        self.m = m
        self.next = 0

    def make_files(self):
        for i in range(PROBE_FILES):
            with open(self.m.p(f"r{i:03d}"), "wb") as f:
                f.write(b"%d" % i * 1000)

    def once(self):
        i = self.next
        self.next += 1
        assert i < PROBE_FILES, "out of probe files"
        t0 = time.monotonic()
        with pytest.raises(FileNotFoundError):
            os.stat(self.m.p(f"absent{i}"))
        t1 = time.monotonic()
        with open(self.m.p(f"r{i:03d}"), "rb") as f:
            assert f.read() == b"%d" % i * 1000
        t2 = time.monotonic()
        return max(t1 - t0, t2 - t1)

    def limit(self):
        """How long a probe may take while a big file is freed: 300 ms or
        50 times its usual (median) time with nothing being freed, or, on
        a machine busy with other work, twice the slowest of those.  A
        request held up by the freeing waits seconds; one on a machine
        running other tests beside this one was seen to wait 114 ms."""
        times = []
        end = time.monotonic() + 2
        while time.monotonic() < end:
            times.append(self.once())
            time.sleep(0.03)
        times.sort()
        return max(0.3, 50 * times[len(times) // 2], 2 * times[-1])

    def during(self, seconds):
        """The slowest probe over the next seconds."""
        worst, end = 0.0, time.monotonic() + seconds
        while time.monotonic() < end:
            worst = max(worst, self.once())
            time.sleep(0.03)
        return worst


def drop_cached_pages(path):
    """Have the kernel forget the cached pages of one file (clean after
    the unmount's checkpoint), so SQLite reads them from the disk as it
    would for a file written long ago."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def freelist_bytes(db):
    c = sqlite3.connect(db)
    try:
        pages = c.execute("PRAGMA freelist_count").fetchone()[0]
        return pages * c.execute("PRAGMA page_size").fetchone()[0]
    finally:
        c.close()


def df_used(m):
    """What df in the mount shows used: with a quota, the room's bytes."""
    sv = os.statvfs(m.dir)
    return (sv.f_blocks - sv.f_bfree) * sv.f_frsize


# As atriumd mounts a room's workspace: its quota triggers read each freed
# row, which made freeing slower still.
ROOM_OPTS = "quota=10737418240,quota_inodes=1000000"


def test_big_rm_and_truncate_do_not_stall_other_requests(tmp_path):
    m = Mount(tmp_path, opts=ROOM_OPTS).mount()
    try:
        probe = Prober(m)
        probe.make_files()
        write_big(m.p("big"), 1024 * MiB)
        write_big(m.p("trunc"), 512 * MiB)
        m.unmount()
        drop_cached_pages(m.db)
        m.mount()                      # nothing cached in the kernel
        limit = probe.limit()
        used = df_used(m)

        subprocess.run(["rm", m.p("big")], check=True, timeout=60)
        t = time.monotonic()
        assert not os.path.exists(m.p("big"))
        worst = max(time.monotonic() - t, probe.during(5))
        assert worst <= limit, f"a request took {worst:.3f}s after rm"
        # It is being freed meanwhile: df shows more room.
        assert df_used(m) < used - 16 * MiB

        os.truncate(m.p("trunc"), 0)
        t = time.monotonic()
        assert os.stat(m.p("trunc")).st_size == 0
        worst = max(time.monotonic() - t, probe.during(5))
        assert worst <= limit, f"a request took {worst:.3f}s after truncate"
        # Growing it again shows zeros, never the old bytes.
        with open(m.p("trunc"), "r+b") as f:
            f.seek(300 * MiB)
            f.write(b"end")
        with open(m.p("trunc"), "rb") as f:
            f.seek(300 * MiB - 4 * MiB)
            assert f.read() == bytes(4 * MiB) + b"end"
    finally:
        m.unmount()


def test_kill_9_during_a_background_delete(tmp_path):
    m = Mount(tmp_path, opts=ROOM_OPTS).mount()
    try:
        synced = os.urandom(MiB + 123)
        with open(m.p("synced"), "wb") as f:
            f.write(synced)
            os.fsync(f.fileno())
        # Big enough that freeing it outlasts the wait below: blocks go
        # fast (about 1 GiB/s on a quiet machine).
        write_big(m.p("big"), 1024 * MiB)
        write_big(m.p("cut"), 64 * MiB)
        with open(m.p("cut"), "rb") as f:
            head = f.read(1000)
        used = df_used(m)
        free_before = freelist_bytes(m.db)
        os.unlink(m.p("big"))
        # The shrink itself is committed (fsync); what it frees, as what
        # the unlink frees, is the background's to commit in batches.
        fd = os.open(m.p("cut"), os.O_WRONLY)
        try:
            os.ftruncate(fd, 1000)
            os.fsync(fd)
        finally:
            os.close(fd)
        time.sleep(0.2)                # some batches are committed
        os.kill(m.pid, signal.SIGKILL)
        assert wait_gone(m.pid, 120)
        subprocess.run(["fusermount3", "-uz", m.dir], capture_output=True)
        m.pid = 0
        assert freelist_bytes(m.db) < free_before + 900 * MiB, \
            "the delete was over before the kill: make the file bigger"
        # What is left is only what the next mount frees.
        r = run("fsck", m.db)
        assert r.returncode in (0, 1), r.stderr
        for line in r.stdout.splitlines():
            assert "freed at the next mount" in line or \
                "removed at the next mount" in line, line

        m.mount()
        with open(m.p("synced"), "rb") as f:
            assert sha(f.read()) == sha(synced)
        with open(m.p("cut"), "rb") as f:
            assert f.read() == head
        # Growing the cut file again shows zeros, not what was cut.
        with open(m.p("cut"), "r+b") as f:
            f.seek(8 * MiB)
            f.write(b"x")
        with open(m.p("cut"), "rb") as f:
            assert f.read() == head + bytes(8 * MiB - 1000) + b"x"
        end = time.time() + 120
        while freelist_bytes(m.db) < free_before + 300 * MiB and \
                time.time() < end:
            time.sleep(0.2)
        assert freelist_bytes(m.db) >= free_before + 300 * MiB
        assert df_used(m) < used - 300 * MiB
    finally:
        m.unmount()
    fsck_clean(m)


# Another process's work: 32 MiB written and fsynced, over and over.
WRITER = """
import os, sys
block = os.urandom(1 << 20)
while True:
    with open(sys.argv[1], "wb") as f:
        for _ in range(32):
            f.write(block)
        os.fsync(f.fileno())
"""


def test_reads_do_not_wait_for_a_writer_and_its_fsyncs(tmp_path):
    import sys
    m = Mount(tmp_path, opts=ROOM_OPTS).mount()
    writer = None
    try:
        probe = Prober(m)
        probe.make_files()
        m.unmount()
        m.mount()                      # nothing cached in the kernel
        limit = probe.limit()
        writer = subprocess.Popen([sys.executable, "-c", WRITER, m.p("w")])
        time.sleep(0.5)
        worst = probe.during(5)
        assert worst <= limit, f"a read took {worst:.3f}s beside the writer"
    finally:
        if writer:
            writer.kill()
            writer.wait()
        m.unmount()


def db_file_bytes(db):
    return sum(os.path.getsize(db + s) for s in ("", "-wal")
               if os.path.exists(db + s))


@pytest.mark.parametrize("pointer_map", [True, False],
                         ids=["incremental", "older-database"])
def test_compact_gives_the_disk_back_what_a_delete_freed(tmp_path,
                                                         pointer_map):
    """A deleted 64 MiB file leaves the database as big on the disk (its
    pages wait inside for later writes); `atrium-fs compact` gives them
    back, keeping every other byte.  A database of a release before the
    pointer map is rewritten once, and has one afterwards."""
    m = Mount(tmp_path)
    if not pointer_map:
        c = sqlite3.connect(m.db)
        c.execute("PRAGMA auto_vacuum=NONE")
        c.execute("VACUUM")
        c.close()
    m.mount()
    try:
        keep = os.urandom(300000)
        with open(m.p("keep"), "wb") as f:
            f.write(keep)
        write_big(m.p("big"), 64 * MiB)
    finally:
        m.unmount()
    full = db_file_bytes(m.db)
    assert full > 64 * MiB
    m.mount()
    try:
        os.unlink(m.p("big"))
        end = time.time() + 60
        while freelist_bytes(m.db) < 60 * MiB and time.time() < end:
            time.sleep(0.1)
    finally:
        m.unmount()
    assert freelist_bytes(m.db) >= 60 * MiB
    assert db_file_bytes(m.db) > full - 8 * MiB      # nothing given back yet
    r = run("compact", m.db)
    assert r.returncode == 0, r.stderr
    assert "bytes on the disk, was %d" % full in r.stdout, r.stdout
    assert db_file_bytes(m.db) < 8 * MiB
    assert freelist_bytes(m.db) == 0
    c = sqlite3.connect(m.db)
    assert c.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental
    c.close()
    fsck_clean(m)
    m.mount()
    try:
        with open(m.p("keep"), "rb") as f:
            assert f.read() == keep
    finally:
        m.unmount()


def test_compact_of_a_mounted_workspace_goes_through_its_daemon(tmp_path):
    """On a mounted workspace `atrium-fs compact` asks the daemon, which
    moves the pages in small batches while the workspace stays in use: the
    file shrinks before the command returns, and a reader and a writer
    working meanwhile see every byte right."""
    m = Mount(tmp_path).mount()
    busy = None
    try:
        keep = os.urandom(3 * MiB)
        with open(m.p("keep"), "wb") as f:
            f.write(keep)
        write_big(m.p("big"), 64 * MiB)
        os.sync()
        full = db_file_bytes(m.db)
        os.unlink(m.p("big"))
        end = time.time() + 60
        while freelist_bytes(m.db) < 60 * MiB and time.time() < end:
            time.sleep(0.1)
        assert freelist_bytes(m.db) >= 60 * MiB
        busy = subprocess.Popen(
            ["sh", "-c", "i=0; while [ $i -lt 300 ]; do echo $i >> log; "
             "cat keep > /dev/null; i=$((i+1)); done"], cwd=m.dir)
        r = run("compact", m.db)
        assert r.returncode == 0, r.stderr
        assert os.path.getsize(m.db) < 16 * MiB, r.stdout
        assert busy.wait(timeout=120) == 0
        with open(m.p("keep"), "rb") as f:
            assert f.read() == keep
        with open(m.p("log")) as f:
            assert f.read().split() == [str(i) for i in range(300)]
        assert full > 64 * MiB
    finally:
        if busy and busy.poll() is None:
            busy.kill()
            busy.wait()
        m.unmount()
    fsck_clean(m)
