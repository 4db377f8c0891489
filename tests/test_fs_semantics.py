"""atrium-fs on real FUSE mounts: the POSIX details a user sees as on ext4.

O_RDONLY|O_TRUNC, timestamps across ext4's range (clamped outside it),
sparse files (st_blocks, du, SEEK_HOLE/SEEK_DATA, PUNCH_HOLE, ZERO_RANGE,
cp --sparse=always), directory sizes, the stale-mount message, and a
random-operation exerciser against a byte model.

Run as root: /usr/bin/python3 -m pytest -q tests/test_fs_semantics.py
"""
import ctypes
import errno
import os
import random
import signal
import subprocess
import time

import pytest

from test_fs import MiB, Mount, as_user, fsck_clean, quota_used, run

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_ZERO_RANGE = 0x10
CHUNK = 65536

_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                            ctypes.c_int64]


def fallocate(fd, mode, off, length):
    if _libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


@pytest.fixture
def fs(tmp_path):
    m = Mount(tmp_path).mount()
    try:
        yield m
    finally:
        m.unmount()


@pytest.fixture
def open_fs(tmp_path):
    """A mount other users can reach (pytest's tmp dir is 0700)."""
    os.chmod(tmp_path, 0o755)
    m = Mount(tmp_path).mount()
    try:
        yield m
    finally:
        m.unmount()


# --- O_TRUNC ------------------------------------------------------------------

def test_rdonly_o_trunc_truncates_and_stays_truncated(open_fs):
    m = open_fs
    p = m.p("f")
    with open(p, "wb") as f:
        f.write(b"old bytes" * 1000)
    with open(p, "rb") as f:
        assert f.read(3) == b"old"        # in the kernel's page cache now
    fd = os.open(p, os.O_RDONLY | os.O_TRUNC)
    try:
        assert os.read(fd, 100) == b""
    finally:
        os.close(fd)
    assert os.stat(p).st_size == 0
    # Without write permission, O_TRUNC is refused and nothing is lost.
    with open(m.p("kept"), "wb") as f:
        f.write(b"keep me")
    os.chmod(m.p("kept"), 0o644)
    r = as_user(f"/usr/bin/python3 -c \"import os; "
                f"os.open('{m.p('kept')}', os.O_RDONLY | os.O_TRUNC)\"")
    assert r.returncode != 0 and "Permission denied" in r.stderr
    m.remount()
    assert os.stat(p).st_size == 0
    with open(p, "rb") as f:
        assert f.read() == b""
    with open(m.p("kept"), "rb") as f:
        assert f.read() == b"keep me"


# --- timestamps ---------------------------------------------------------------

def stat_time(path, which="mtime"):
    st = os.stat(path)
    return getattr(st, f"st_{which}_ns")


def touch(path, when):
    r = subprocess.run(["touch", "-d", when, path], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


S = 1_000_000_000
DATES = [
    ("2300-01-01 00:00:00.123456789 UTC", 10413792000 * S + 123456789),
    ("1901-12-14 00:00:00.5 UTC", -2147472000 * S + 500000000),
    ("1969-12-31 23:59:59.000000001 UTC", -S + 1),
    ("2446-05-10 22:38:54.999999999 UTC", 15032385534 * S + 999999999),
    ("2024-02-29 12:00:00.000000007 UTC", 1709208000 * S + 7),
]
CLAMPED = [
    ("2500-01-01 UTC", 15032385535 * S),      # 2446-05-10 22:38:55
    ("1800-06-01 12:00:00.25 UTC", -2147483648 * S),   # 1901-12-13 20:45:52
]


def test_timestamps_round_trip_and_clamp_as_ext4(fs):
    os.mkdir(fs.p("d"))
    for i, (when, _) in enumerate(DATES + CLAMPED):
        open(fs.p(f"f{i}"), "w").close()
        os.mkdir(fs.p("d", f"d{i}"))
        touch(fs.p(f"f{i}"), when)
        touch(fs.p("d", f"d{i}"), when)
    # A directory's times come from the daemon at once.
    for i, (_, ns) in enumerate(DATES + CLAMPED):
        assert stat_time(fs.p("d", f"d{i}")) == ns, i
        assert stat_time(fs.p("d", f"d{i}"), "atime") == ns, i
    # Files' too, once the kernel has no copy of its own (it keeps a
    # written file's mtime itself under the writeback cache).
    fs.remount()
    for i, (_, ns) in enumerate(DATES + CLAMPED):
        assert stat_time(fs.p(f"f{i}")) == ns, i
        assert stat_time(fs.p(f"f{i}"), "atime") == ns, i
        assert stat_time(fs.p("d", f"d{i}")) == ns, i
    fs.unmount()
    fsck_clean(fs)


def test_written_file_keeps_the_mtime_it_showed_after_remount(fs):
    # Under the writeback cache the kernel stamps a file's mtime at
    # write(2) and writes the pages back later: what stat showed then is
    # what the workspace keeps, however late the pages reach the daemon.
    want = {}
    for i in range(5):
        p = fs.p(f"late{i}")
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, b"x" * 5000)
            want[p] = os.fstat(fd).st_mtime_ns
            time.sleep(0.02)            # several clock ticks
            os.fsync(fd)                # the pages go back now
            assert os.fstat(fd).st_mtime_ns == want[p]
        finally:
            os.close(fd)
    fs.remount()
    for p, ns in want.items():
        assert os.stat(p).st_mtime_ns == ns, p
    fs.unmount()
    fsck_clean(fs)


def test_timestamps_clamp_at_once_without_writeback(tmp_path):
    m = Mount(tmp_path, opts="no_writeback").mount()
    try:
        open(m.p("f"), "w").close()
        touch(m.p("f"), "2500-01-01 UTC")
        assert stat_time(m.p("f")) == 15032385535 * S
        touch(m.p("f"), "2300-01-01 00:00:00.123456789 UTC")
        assert stat_time(m.p("f")) == 10413792000 * S + 123456789
    finally:
        m.unmount()


def test_chown_that_changes_nothing_sets_ctime_and_same_size_truncate_not(
        tmp_path):
    # Without the writeback cache, so that the times are the daemon's (with
    # it the kernel keeps a regular file's mtime and ctime itself).
    m = Mount(tmp_path, opts="no_writeback").mount()
    try:
        p = m.p("f")
        with open(p, "wb") as f:
            f.write(b"x" * 10)
        os.utime(p, ns=(1000 * S, 1000 * S))
        c0 = os.stat(p).st_ctime_ns
        time.sleep(0.05)
        os.truncate(p, 10)              # the same size: nothing changes
        assert os.stat(p).st_ctime_ns == c0
        assert stat_time(p) == 1000 * S
        os.chown(p, -1, -1)             # as on ext4: ctime moves
        assert os.stat(p).st_ctime_ns > c0
        os.truncate(p, 11)
        assert stat_time(p) > 1000 * S
    finally:
        m.unmount()


# --- sparse files -------------------------------------------------------------

def test_sparse_file_blocks_and_du(fs):
    p = fs.p("sparse")
    with open(p, "wb") as f:
        f.truncate(1 << 30)
        f.seek((1 << 30) - 1)
        f.write(b"x")
    st = os.stat(p)
    assert st.st_size == 1 << 30
    assert 0 < st.st_blocks <= CHUNK // 512
    with open(fs.p("hole"), "wb") as f:
        f.truncate(10 << 30)
    du = subprocess.run(["du", "-B1", fs.p("hole"), p], capture_output=True,
                        text=True, check=True).stdout.split()
    assert int(du[0]) == 0
    assert int(du[2]) <= CHUNK
    fs.remount()
    assert os.stat(p).st_blocks == st.st_blocks


def test_seek_hole_and_seek_data(fs):
    p = fs.p("f")
    with open(p, "wb") as f:
        f.truncate(40 * CHUNK)
        f.seek(8 * CHUNK)
        f.write(b"d" * (3 * CHUNK))
        f.seek(30 * CHUNK)
        f.write(b"e" * 10)
    fd = os.open(p, os.O_RDONLY)
    try:
        assert os.lseek(fd, 0, os.SEEK_DATA) == 8 * CHUNK
        assert os.lseek(fd, 0, os.SEEK_HOLE) == 0
        assert os.lseek(fd, 8 * CHUNK, os.SEEK_HOLE) == 11 * CHUNK
        assert os.lseek(fd, 11 * CHUNK, os.SEEK_DATA) == 30 * CHUNK
        # The writeback cache sends whole pages: the hole may start at
        # the end of the page that holds the 10 bytes.
        assert 30 * CHUNK + 10 <= os.lseek(fd, 30 * CHUNK, os.SEEK_HOLE) \
            <= 30 * CHUNK + 4096
        with pytest.raises(OSError) as e:
            os.lseek(fd, 31 * CHUNK, os.SEEK_DATA)
        assert e.value.errno == errno.ENXIO
        with pytest.raises(OSError) as e:
            os.lseek(fd, 40 * CHUNK, os.SEEK_HOLE)
        assert e.value.errno == errno.ENXIO
    finally:
        os.close(fd)
    # Dirty pages of the writeback cache count: the kernel flushes first.
    with open(fs.p("g"), "wb") as f:
        f.truncate(10 * CHUNK)
        f.seek(5 * CHUNK)
        f.write(b"z")
        f.flush()
        assert os.lseek(f.fileno(), 0, os.SEEK_DATA) == 5 * CHUNK


def test_a_shrunk_files_leftovers_are_neither_data_nor_uncovered(fs):
    """A big shrink frees its chunks in the background (reclaim.c); until
    then SEEK_DATA must not find them, st_blocks must not count them, and
    growing the file again must show zeros, not the old bytes."""
    p = fs.p("f")
    mib = 1 << 20
    with open(p, "wb") as f:
        f.write(b"a")
        f.seek(8 * mib)
        block = b"x" * mib
        for _ in range(256):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
        f.truncate(4 * mib)
    fd = os.open(p, os.O_RDWR)
    try:
        with pytest.raises(OSError) as e:
            os.lseek(fd, CHUNK, os.SEEK_DATA)
        assert e.value.errno == errno.ENXIO
        assert os.fstat(fd).st_blocks * 512 <= 4 * mib
        fallocate(fd, FALLOC_FL_ZERO_RANGE, 4 * mib, 300 * mib)
        assert os.fstat(fd).st_size == 304 * mib
        os.lseek(fd, 4 * mib, os.SEEK_SET)
        left = 300 * mib
        while left:
            got = os.read(fd, min(left, 4 * mib))
            assert got and got.count(0) == len(got)
            left -= len(got)
    finally:
        os.close(fd)


def test_punch_hole_and_zero_range_read_zeros_and_free(fs):
    p = fs.p("f")
    data = bytearray(os.urandom(8 * CHUNK))
    with open(p, "wb") as f:
        f.write(data)
    blocks0 = os.stat(p).st_blocks
    fd = os.open(p, os.O_RDWR)
    try:
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  CHUNK + 7, 3 * CHUNK)
        data[CHUNK + 7:4 * CHUNK + 7] = bytes(3 * CHUNK)
        assert os.pread(fd, len(data) + 10, 0) == bytes(data)
        assert os.fstat(fd).st_size == 8 * CHUNK
        assert os.stat(p).st_blocks <= blocks0 - 2 * CHUNK // 512
        assert os.lseek(fd, CHUNK + 7, os.SEEK_HOLE) == CHUNK + 7
        # PUNCH_HOLE without KEEP_SIZE is refused, as by every Linux fs
        with pytest.raises(OSError) as e:
            fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 10)
        assert e.value.errno == errno.EOPNOTSUPP
        # ZERO_RANGE inside the file, then past its end (it grows)
        fallocate(fd, FALLOC_FL_ZERO_RANGE, 100, 200)
        data[100:300] = bytes(200)
        fallocate(fd, FALLOC_FL_ZERO_RANGE, 7 * CHUNK, 3 * CHUNK)
        data[7 * CHUNK:] = bytes(CHUNK)
        data.extend(bytes(2 * CHUNK))
        assert os.fstat(fd).st_size == 10 * CHUNK
        fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
                  9 * CHUNK, 5 * CHUNK)
        assert os.fstat(fd).st_size == 10 * CHUNK
        assert os.pread(fd, len(data) + 10, 0) == bytes(data)
    finally:
        os.close(fd)
    fs.remount()
    with open(p, "rb") as f:
        assert f.read() == bytes(data)
    fs.unmount()
    fsck_clean(fs)


def test_cp_of_a_sparse_file_stays_sparse(fs):
    src = fs.p("src")
    with open(src, "wb") as f:
        f.truncate(200 * MiB)
        f.seek(100 * MiB)
        f.write(b"middle")
        f.seek(200 * MiB - 3)
        f.write(b"end")
    for mode in ("--sparse=always", "--sparse=auto"):
        dst = fs.p("dst" + mode[-4:])
        subprocess.run(["cp", mode, src, dst], check=True)
        st = os.stat(dst)
        assert st.st_size == 200 * MiB
        assert st.st_blocks <= 2 * CHUNK // 512, mode
        subprocess.run(["cmp", src, dst], check=True)


def test_quota_gets_punched_bytes_back(tmp_path):
    m = Mount(tmp_path, opts="quota=8M").mount()
    try:
        with open(m.p("f"), "wb") as f:
            f.write(os.urandom(6 * MiB))
            f.flush()
            os.fsync(f.fileno())
        used, _ = quota_used(m)
        fd = os.open(m.p("f"), os.O_RDWR)
        try:
            fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      0, 5 * MiB)
        finally:
            os.close(fd)
        after, _ = quota_used(m)
        assert used - after >= 5 * MiB - 4096
        # The room is usable again, and a sparse extension costs nothing.
        with open(m.p("g"), "wb") as f:
            f.write(os.urandom(5 * MiB))
            f.truncate(1 << 30)
        assert quota_used(m)[0] - after <= 5 * MiB + 2 * CHUNK
    finally:
        m.unmount()


# --- directories --------------------------------------------------------------

def test_directory_sizes_grow_with_entries(fs):
    os.mkdir(fs.p("d"))
    st = os.stat(fs.p("d"))
    assert (st.st_size, st.st_blocks) == (4096, 8)
    assert os.stat(fs.dir).st_size == 4096
    for i in range(300):
        open(fs.p("d", f"a-file-with-a-longer-name-{i:05d}"), "w").close()
    st = os.stat(fs.p("d"))
    assert st.st_size > 4096 and st.st_size % 4096 == 0
    assert st.st_blocks == st.st_size // 512
    subprocess.run(["sh", "-c", f"rm -f {fs.p('d')}/*"], check=True)
    assert os.stat(fs.p("d")).st_size == 4096


# --- a dead daemon's mount ----------------------------------------------------

def test_mount_over_a_killed_daemon_says_run_fusermount(fs):
    os.kill(fs.pid, signal.SIGKILL)
    end = time.time() + 10
    while time.time() < end:
        try:
            os.stat(fs.dir)
        except OSError as e:
            if e.errno == errno.ENOTCONN:
                break
        time.sleep(0.05)
    r = run("mount", fs.db, fs.dir)
    assert r.returncode != 0
    assert f"fusermount3 -u {fs.dir}" in r.stderr, r.stderr
    assert "not a directory" not in r.stderr
    with open("/proc/self/mountinfo") as f:
        assert sum(line.split()[4] == fs.dir for line in f) == 1


# --- random operations against a model ----------------------------------------

def exercise(path, seed, ops=400):
    """fsx-style: writes, truncates, punches, zero ranges and seeks, each
    checked against a bytearray; a full read-back every 50 operations."""
    rnd = random.Random(seed)
    model = bytearray()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for i in range(ops):
            op = rnd.random()
            size = len(model)
            off = rnd.randint(0, size + 3 * CHUNK)
            n = rnd.choice([1, 7, 4096, CHUNK, rnd.randint(1, 3 * CHUNK)])
            if op < 0.35:
                b = rnd.randbytes(n)
                os.pwrite(fd, b, off)
                if off > size:
                    model.extend(bytes(off - size))
                model[off:off + n] = b
            elif op < 0.5:
                os.ftruncate(fd, off)
                del model[off:]
                model.extend(bytes(off - len(model)))
            elif op < 0.7:
                fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                          off, n)
                end = min(off + n, size)
                if off < end:
                    model[off:end] = bytes(end - off)
            elif op < 0.85:
                keep = rnd.random() < 0.5
                fallocate(fd, FALLOC_FL_ZERO_RANGE |
                          (FALLOC_FL_KEEP_SIZE if keep else 0), off, n)
                end = off + n if not keep else min(off + n, size)
                if end > len(model):
                    model.extend(bytes(end - len(model)))
                if off < end:
                    model[off:end] = bytes(end - off)
            else:
                check_seek(fd, model, rnd.randint(0, size + 10))
            assert os.fstat(fd).st_size == len(model), (seed, i)
            if i % 50 == 49:
                got = os.pread(fd, len(model) + 1, 0)
                assert got == bytes(model), (seed, i)
        return model
    finally:
        os.close(fd)


def check_seek(fd, model, off):
    """SEEK_DATA and SEEK_HOLE must never skip data: every byte between off
    and the answer reads as zero in the model."""
    size = len(model)
    for whence in (os.SEEK_DATA, os.SEEK_HOLE):
        try:
            pos = os.lseek(fd, off, whence)
        except OSError as e:
            assert e.errno == errno.ENXIO
            assert off >= size or (whence == os.SEEK_DATA and
                                   not any(model[off:]))
            continue
        assert off <= pos <= size
        if whence == os.SEEK_DATA:
            assert not any(model[off:pos])
        else:
            assert pos == size or not any(model[pos:pos + 1])


def test_random_operations_with_holes_match_a_model(fs):
    models = {}
    for seed in (1, 2, 3, 4, 5):
        models[seed] = exercise(fs.p(f"x{seed}"), seed)
        with open(fs.p(f"x{seed}"), "rb") as f:
            assert f.read() == bytes(models[seed])
    fs.remount()
    for seed, model in models.items():
        with open(fs.p(f"x{seed}"), "rb") as f:
            assert f.read() == bytes(model)
        assert os.stat(fs.p(f"x{seed}")).st_blocks * 512 <= \
            len(model) + 2 * CHUNK
    fs.unmount()
    fsck_clean(fs)
