"""The random-operation exerciser (tests/exer/fsexer.c) on real atrium-fs
mounts with the writeback cache, as users run it: every read compared with
a model of what was written, through several descriptors, mmap, a second
process, fallocate, copy_file_range, SEEK_DATA/SEEK_HOLE, fsync, page-cache
drops, remounts, and kill -9 of the daemon (after which every file holds at
least what was fsynced, and no byte that was never written).

A failure prints the seed and the operations before it; replay with
  build/tests/fsexer --seed S --ops N [the same --weight options] DIR
on a fresh mount.  `make stress STRESS_SECONDS=3600` runs it for longer.

Run as root: /usr/bin/python3 -m pytest -q tests/test_fs_exerciser.py
"""
import os
import shlex
import subprocess

import pytest

from conftest import BUILD_DIR
from test_fs import BIN, Mount, confined

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
    # Its drop_caches empties every page cache on the host, which tests
    # of warm caches beside it would see.
    pytest.mark.alone,
]

FSEXER = os.path.join(BUILD_DIR, "tests", "fsexer")


@pytest.fixture
def fs(tmp_path):
    if not os.access(FSEXER, os.X_OK):
        pytest.fail(f"missing {FSEXER}: run `make {FSEXER}`", pytrace=False)
    # Confined, as a room's daemon runs (fs/daemon/mount_confine.c): a call its
    # seccomp list lacks, or a file it cannot reach, shows here.
    m = Mount(tmp_path, opts=confined(tmp_path)).mount()
    try:
        yield m
    finally:
        m.unmount()


def remount_cmd(m):
    d, db = shlex.quote(m.dir), shlex.quote(m.db)
    opts = " ".join(shlex.quote(o) for o in m.opts)
    # After a kill -9 the daemon's keeper may have unmounted it already.
    return (f"{{ fusermount3 -u {d} || fusermount3 -uz {d} || :; }}"
            f" 2>/dev/null; {shlex.quote(BIN)} mount {opts} {db} {d}")


def crash_cmd(m):
    # The daemon's pid is the first line of DB-mount, rewritten by each
    # mount.
    return f"kill -9 \"$(head -n1 {shlex.quote(m.db + '-mount')})\""


def exercise(m, seed, ops, *weights, remount=False, crash=False):
    args = [FSEXER, "--seed", str(seed), "--ops", str(ops)]
    for w in weights:
        args += ["--weight", w]
    if remount or crash:
        args += ["--remount", remount_cmd(m)]
    if crash:
        args += ["--crash", crash_cmd(m)]
    r = subprocess.run(args + [m.dir], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all reads matched" in r.stdout
    return r


def test_every_read_matches_what_was_written(fs):
    # Stale reads after a truncate laundered the writeback cache showed
    # within 4,300 operations of the first seeds.
    for seed in range(1, 5):
        exercise(fs, seed, 8000)


def test_remounts_keep_every_answered_write(fs):
    for seed in (11, 12):
        exercise(fs, seed, 3000, "remount=1", remount=True)


def test_kill_9_keeps_what_was_fsynced(fs):
    # About one operation in seventy kills the daemon with pages dirty
    # and descriptors open; the files are checked after each new mount.
    for seed in (21, 22):
        exercise(fs, seed, 3000, "crash=1", crash=True)
