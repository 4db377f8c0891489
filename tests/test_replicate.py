"""A room's commits streamed to S3-compatible storage and restored
(atrium-replicate, common/walbuf.c's records, cluster/s3.c), against
tests/s3_server.py, which checks SigV4 signatures as S3 does, and a real
etcd member where the manifest is concerned.

Run as root: /usr/bin/python3 -m pytest -q tests/test_replicate.py
"""
import base64
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
import urllib.request

import pytest

import s3_server
from conftest import BUILD_DIR, alive, free_port
from test_fs import Mount, is_mounted

REPLICATE = os.path.join(BUILD_DIR, "atrium-replicate")
FS = os.path.join(BUILD_DIR, "atrium-fs")
ETCD = "/usr/bin/etcd"
AK, SK = "AKIDATRIUMTEST", "s3cr3t/with+signs"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
]


@pytest.fixture
def s3():
    with s3_server.S3Server(AK, SK) as srv:
        yield srv


def store(s3, *args, secret=SK, input=None):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=secret)
    return subprocess.run([REPLICATE, "store", *args, "--s3", s3.url,
                           "--s3-bucket", "atrium"], env=env, input=input,
                          capture_output=True, timeout=60)


# --- the stand-in and the client ----------------------------------------

def test_stand_in_signs_as_the_aws_documentation_says():
    # AWS's own example (GET /test.txt, Range: bytes=0-9, 2013-05-24):
    # the stand-in's signing gives the documented signature.
    assert s3_server.sigv4_selftest()


def test_client_signs_with_libcurl_and_a_wrong_secret_is_refused(s3):
    assert store(s3, "put", "rooms/a/1/x", input=b"hello\x00world").returncode == 0
    r = store(s3, "get", "rooms/a/1/x")
    assert r.returncode == 0 and r.stdout == b"hello\x00world"
    r = store(s3, "get", "rooms/a/1/x", secret="not-the-secret")
    assert r.returncode == 1
    assert b"403 SignatureDoesNotMatch" in r.stderr
    assert s3.mismatches == 1
    # A wrong secret never stored anything.
    assert store(s3, "put", "rooms/a/1/y", secret="nope",
                 input=b"x").returncode == 1
    assert "rooms/a/1/y" not in s3.objects()


def test_client_lists_every_page_in_order_and_deletes(s3):
    keys = ["rooms/b/1/room/seg-%016x" % (i * 7) for i in range(1203)]
    for k in keys:
        s3.put("atrium", k, b"z" * (len(k) % 5))
    s3.put("atrium", "rooms/c/1/x", b"other room")
    r = store(s3, "list", "rooms/b/")
    assert r.returncode == 0
    lines = r.stdout.decode().splitlines()
    assert [l.split()[1] for l in lines] == sorted(keys)
    assert [int(l.split()[0]) for l in lines] == [len(k) % 5 for k in sorted(keys)]
    assert store(s3, "delete", keys[0]).returncode == 0
    assert keys[0] not in s3.objects()
    assert store(s3, "delete", keys[0]).returncode == 0   # gone already


def test_client_retries_a_busy_or_cut_store_and_then_gives_up(s3):
    assert store(s3, "put", "rooms/a/1/x", input=b"v1").returncode == 0
    s3.set(slowdown=3)
    r = store(s3, "get", "rooms/a/1/x")
    assert r.returncode == 0 and r.stdout == b"v1"
    s3.set(cut=2)
    r = store(s3, "put", "rooms/a/1/x", input=b"v2")
    assert r.returncode == 0 and s3.objects()["rooms/a/1/x"] == b"v2"
    s3.set(refuse=True)
    r = store(s3, "get", "rooms/a/1/x")
    assert r.returncode == 1
    assert b"still fails after the retries" in r.stderr
    assert b"SlowDown" in r.stderr


def test_client_refuses_keys_it_does_not_make(s3):
    r = store(s3, "put", "rooms/a/../b", input=b"x")
    assert r.returncode == 1 and b"refusing the object key" in r.stderr
    assert s3.answered == 0


# --- the records, through a real mount ------------------------------------

def checkpointed(db):
    """db's bytes as a checkpoint of its WAL makes them."""
    c = sqlite3.connect(db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    with open(db, "rb") as f:
        return f.read()


def write_workload(root, seed, n=60):
    """Files made, overwritten in place, grown, cut and removed, each
    fsynced: what a room's people and agent do to a workspace."""
    rnd = random.Random(seed)
    names = []
    for i in range(n):
        op = rnd.random()
        if names and op < 0.2:
            name = rnd.choice(names)
            os.remove(os.path.join(root, name))
            names.remove(name)
            continue
        if names and op < 0.5:
            name = rnd.choice(names)
            with open(os.path.join(root, name), "r+b") as f:
                f.seek(rnd.randrange(0, 200000))
                f.write(os.urandom(rnd.randrange(1, 70000)))
                if rnd.random() < 0.3:
                    f.truncate(rnd.randrange(0, 100000))
                os.fsync(f.fileno())
            continue
        name = "f%03d" % i
        os.makedirs(os.path.join(root, "d%d" % (i % 4)), exist_ok=True)
        name = os.path.join("d%d" % (i % 4), name)
        with open(os.path.join(root, name), "wb") as f:
            f.write(os.urandom(rnd.randrange(0, 300000)))
            os.fsync(f.fileno())
        names.append(name)


def tree(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def test_workspace_streams_through_a_mount_and_replays_byte_for_byte(tmp_path):
    m = Mount(tmp_path)
    base = str(tmp_path / "copy.db")
    with open(base, "wb") as f:
        f.write(checkpointed(m.db))
    rd, wr = os.pipe()
    apply = subprocess.Popen([REPLICATE, "apply", "workspace", base],
                             stdin=rd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    os.close(rd)
    r = subprocess.run([FS, "mount", "-o", "replicate_fd=%d" % wr, m.db, m.dir],
                       pass_fds=(wr,), capture_output=True, text=True,
                       timeout=60)
    os.close(wr)
    assert r.returncode == 0, r.stderr
    try:
        write_workload(m.dir, 28)
        want = tree(m.dir)
    finally:
        subprocess.run(["fusermount3", "-u", m.dir])
    out, err = apply.communicate(timeout=60)
    assert apply.returncode == 0, err
    assert int(out.split()[0]) >= 10           # a record per (grouped) commit
    assert open(base, "rb").read() == checkpointed(m.db)
    r = subprocess.run([FS, "fsck", base], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # The copy, mounted, holds the same files.
    m2 = tmp_path / "mnt2"
    m2.mkdir()
    assert subprocess.run([FS, "mount", base, str(m2)]).returncode == 0
    try:
        assert tree(str(m2)) == want
    finally:
        subprocess.run(["fusermount3", "-u", str(m2)])


def test_a_commit_waits_for_a_slow_reader_and_fails_when_it_is_gone(tmp_path):
    m = Mount(tmp_path)
    rd, wr = os.pipe()
    r = subprocess.run([FS, "mount", "-o", "replicate_fd=%d" % wr, m.db, m.dir],
                       pass_fds=(wr,), capture_output=True, text=True,
                       timeout=60)
    os.close(wr)
    assert r.returncode == 0, r.stderr
    try:
        # Nobody reads: the pipe fills (64 KiB) and the next commit waits.
        done = []
        import threading

        def writer():
            with open(os.path.join(m.dir, "big"), "wb") as f:
                f.write(os.urandom(1 << 20))
                os.fsync(f.fileno())
            done.append(1)
        t = threading.Thread(target=writer, daemon=True)
        t.start()
        t.join(2)
        assert not done, "a commit went through while its record could not"
        got = 0
        os.set_blocking(rd, False)
        while not done:
            try:
                got += len(os.read(rd, 1 << 16))
            except BlockingIOError:
                t.join(0.05)
        assert got > 1 << 20                 # the pages came out in records
        # The reader goes: commits fail rather than go unrecorded.
        os.close(rd)
        rd = -1
        with pytest.raises(OSError):
            with open(os.path.join(m.dir, "after"), "wb") as f:
                f.write(b"x" * 100000)
                os.fsync(f.fileno())
    finally:
        if rd >= 0:
            os.close(rd)
        subprocess.run(["fusermount3", "-u", m.dir])


# --- shipping to the store and restoring, with a real etcd ---------------

class Etcd:
    """One etcd member on loopback ports in a temporary directory."""

    def __init__(self, tmp):
        self.port, peer = free_port(), free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = open(os.path.join(tmp, "etcd.log"), "wb")
        self.proc = subprocess.Popen([
            ETCD, "--name", "m1", "--data-dir", os.path.join(tmp, "etcd"),
            "--listen-client-urls", self.url,
            "--advertise-client-urls", self.url,
            "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-cluster", "m1=http://127.0.0.1:%d" % peer],
            stdout=self.log, stderr=self.log)
        end = time.time() + 30
        while time.time() < end:
            try:
                self.call("/v3/kv/range", {"key": self.b64("/")})
                return
            except OSError:
                assert self.proc.poll() is None, "etcd exited"
                time.sleep(0.05)
        raise AssertionError("etcd did not start")

    @staticmethod
    def b64(s):
        return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()

    def call(self, path, body):
        req = urllib.request.Request(self.url + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.load(r)

    def claim(self, room, node):
        """Make ROOM's home NODE if absent: the epoch (create revision)."""
        key = "/atrium/rooms/%s/home" % room
        self.call("/v3/kv/txn", {
            "compare": [{"key": self.b64(key), "target": "CREATE",
                         "result": "EQUAL", "create_revision": "0"}],
            "success": [{"requestPut": {"key": self.b64(key),
                                        "value": self.b64(node)}}]})
        kv = self.call("/v3/kv/range", {"key": self.b64(key)})["kvs"][0]
        return int(kv["create_revision"])

    def delete(self, key):
        self.call("/v3/kv/deleterange", {"key": self.b64(key)})

    def get(self, key):
        kvs = self.call("/v3/kv/range", {"key": self.b64(key)}).get("kvs")
        return base64.b64decode(kvs[0]["value"]) if kvs else None

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


@pytest.fixture
def etcd(tmp_path):
    if not os.access(ETCD, os.X_OK):
        pytest.skip("no %s (Debian's etcd-server)" % ETCD)
    e = Etcd(str(tmp_path))
    yield e
    e.stop()


def creds_pipe():
    rd, wr = os.pipe()
    os.write(wr, ("%s\n%s\n" % (AK, SK)).encode())
    os.close(wr)
    return rd


class Shipper:
    """atrium-replicate run for ROOM, fed by a real atrium-fs mount (the
    workspace) and an empty room.db stream."""

    def __init__(self, tmp, s3, etcd, room, epoch, node="n1", extra=()):
        self.m = Mount(tmp)
        self.room_db = str(tmp / "room.db")
        state = tmp / "state"
        state.mkdir()
        creds = creds_pipe()
        room_rd, room_wr = os.pipe()
        ws_rd, self.ws_wr = os.pipe()
        ready_rd, ready_wr = os.pipe()
        self.proc = subprocess.Popen([
            REPLICATE, "run", "--room", room, "--node", node,
            "--epoch", str(epoch), "--etcd", etcd.url, "--s3", s3.url,
            "--s3-bucket", "atrium", "--creds-fd", str(creds),
            "--room-fd", str(room_rd), "--workspace-fd", str(ws_rd),
            "--room-db", self.room_db, "--workspace-db", self.m.db,
            "--state-dir", str(state), "--ready-fd", str(ready_wr)]
            + list(extra), pass_fds=(creds, room_rd, ws_rd, ready_wr),
            stderr=subprocess.PIPE)
        for fd in (creds, room_rd, ws_rd, ready_wr, room_wr):
            os.close(fd)
        with os.fdopen(ready_rd, "rb") as f:
            assert f.read() == b"ready\n", self.proc.stderr.read()

    def mount(self):
        r = subprocess.run([FS, "mount", "-o", "replicate_fd=%d" % self.ws_wr,
                            self.m.db, self.m.dir], pass_fds=(self.ws_wr,),
                           capture_output=True, text=True, timeout=60)
        os.close(self.ws_wr)
        assert r.returncode == 0, r.stderr

    def finish(self):
        subprocess.run(["fusermount3", "-u", self.m.dir])
        _, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, err.decode()


def restore(tmp, s3, etcd, room, extra=()):
    out = tmp / "restored"
    out.mkdir()
    creds = creds_pipe()
    r = subprocess.run([
        REPLICATE, "restore", "--room", room, "--etcd", etcd.url,
        "--s3", s3.url, "--s3-bucket", "atrium", "--creds-fd", str(creds),
        "--dir", str(out), *extra],
        pass_fds=(creds,), capture_output=True, text=True, timeout=120)
    os.close(creds)
    return r, out


def assert_restores(tmp_path, s3, etcd, sh, want):
    """Room "lab" restored from the store is sh's workspace byte for
    byte, passes fsck, and mounts as the tree want."""
    r, out = restore(tmp_path, s3, etcd, "lab")
    assert r.returncode == 0, r.stderr
    assert open(out / "workspace.db", "rb").read() == checkpointed(sh.m.db)
    r = subprocess.run([FS, "fsck", str(out / "workspace.db")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    m2 = tmp_path / "mnt2"
    m2.mkdir()
    assert subprocess.run([FS, "mount", str(out / "workspace.db"),
                           str(m2)]).returncode == 0
    try:
        assert tree(str(m2)) == want
    finally:
        subprocess.run(["fusermount3", "-u", str(m2)])


def test_a_room_shipped_to_the_store_restores_byte_for_byte(tmp_path, s3, etcd):
    epoch = etcd.claim("lab", "n1")
    sh = Shipper(tmp_path / "a", s3, etcd, "lab", epoch) if (
        (tmp_path / "a").mkdir() or True) else None
    sh.mount()
    write_workload(sh.m.dir, 7, n=80)
    want = tree(sh.m.dir)
    status, err = sh.finish()
    assert status == 0, err
    assert "everything is stored" in err
    # Nothing secret is in what it said.
    assert SK not in err and AK not in err
    man = json.loads(etcd.get("/atrium/rooms/lab/manifest"))
    assert man["epoch"] == epoch and man["node"] == "n1"
    assert man["workspace"]["upto"] > 0
    segs = [k for k in s3.objects() if "/workspace/seg-" in k]
    assert segs and all(k.startswith("rooms/lab/%d/" % epoch) for k in segs)

    assert_restores(tmp_path, s3, etcd, sh, want)


def test_a_shipper_whose_epoch_is_over_stores_nothing_more(tmp_path, s3, etcd):
    epoch = etcd.claim("lab", "n1")
    (tmp_path / "a").mkdir()
    sh = Shipper(tmp_path / "a", s3, etcd, "lab", epoch)
    sh.mount()
    with open(os.path.join(sh.m.dir, "first"), "wb") as f:
        f.write(b"1" * 10000)
        os.fsync(f.fileno())
    # Another host takes the room over: a new home, a new epoch.
    etcd.delete("/atrium/rooms/lab/home")
    assert etcd.claim("lab", "n2") > epoch
    before = etcd.get("/atrium/rooms/lab/manifest")
    with open(os.path.join(sh.m.dir, "second"), "wb") as f:
        f.write(b"2" * 10000)
        os.fsync(f.fileno())
    status, err = sh.finish()
    assert status == 3, err
    assert "held by another host" in err
    # The manifest was not moved by the host that lost the room.
    assert etcd.get("/atrium/rooms/lab/manifest") == before


def test_the_store_keeps_only_what_the_manifest_names(tmp_path, s3, etcd):
    """A new epoch's first manifest lets the older epoch's objects go, and
    each snapshot the segments and snapshot before it; what is left
    restores byte for byte."""
    old = etcd.claim("lab", "n1")
    (tmp_path / "a").mkdir()
    sh = Shipper(tmp_path / "a", s3, etcd, "lab", old)
    sh.mount()
    write_workload(sh.m.dir, 3, n=20)
    assert sh.finish()[0] == 0
    gone = "rooms/lab/%d/" % old
    assert any(k.startswith(gone) for k in s3.objects())
    etcd.delete("/atrium/rooms/lab/home")
    epoch = etcd.claim("lab", "n2")
    (tmp_path / "b").mkdir()
    sh = Shipper(tmp_path / "b", s3, etcd, "lab", epoch, node="n2",
                 extra=["--snapshot-every", "1"])
    sh.mount()
    ours = "rooms/lab/%d/workspace/" % epoch

    def manifest():
        return json.loads(etcd.get("/atrium/rooms/lab/manifest"))

    def settled():
        keys = s3.objects()
        return manifest()["workspace"]["from"] > 0 and \
            not any(k.startswith(gone) for k in keys) and \
            ours + "snap-%016x" % 0 not in keys

    # Fsynced writes until a snapshot past offset 0 is named and what it
    # replaced is gone (each write is a segment the store gets).
    end, i = time.time() + 60, 0
    while not settled():
        assert time.time() < end, sorted(s3.objects())
        with open(os.path.join(sh.m.dir, "w%d" % (i % 50)), "wb") as f:
            f.write(os.urandom(3000))
            os.fsync(f.fileno())
        i += 1
    want = tree(sh.m.dir)
    status, err = sh.finish()
    assert status == 0, err
    assert "no manifest names now" in err
    man = manifest()["workspace"]
    left = [k for k in s3.objects() if k.startswith(ours)]
    assert [k for k in left if "/snap-" in k] == [man["snap"]], left
    assert all(int(k.rsplit("-", 1)[1], 16) >= man["from"]
               for k in left if "/seg-" in k), (man, left)
    assert_restores(tmp_path, s3, etcd, sh, want)


def test_restore_without_a_manifest_does_nothing(tmp_path, s3, etcd):
    r, out = restore(tmp_path, s3, etcd, "never")
    assert r.returncode == 0, r.stderr
    assert "no manifest" in r.stderr
    assert not os.path.exists(out / "workspace.db")


def test_restore_refuses_a_store_missing_a_segment(tmp_path, s3, etcd):
    epoch = etcd.claim("lab", "n1")
    (tmp_path / "a").mkdir()
    sh = Shipper(tmp_path / "a", s3, etcd, "lab", epoch)
    sh.mount()
    write_workload(sh.m.dir, 3, n=30)
    status, err = sh.finish()
    assert status == 0, err
    segs = sorted(k for k in s3.objects() if "/workspace/seg-" in k)
    assert len(segs) >= 2
    s3.delete("atrium", segs[len(segs) // 2])
    r, out = restore(tmp_path, s3, etcd, "lab")
    assert r.returncode == 1
    assert "segments are missing" in r.stderr, r.stderr
    assert not os.path.exists(out / "room.db")
    # Nothing half-restored is left where the room would start from.
    assert not os.path.exists(out / "workspace.db")
    assert not os.path.exists(out / "workspace.db.restore")


ROOM_UID = 2000999991      # a uid no account and no room has


def shipped_lab(tmp_path, s3, etcd, n=30):
    """Room "lab" shipped whole to the store: its Shipper."""
    epoch = etcd.claim("lab", "n1")
    (tmp_path / "a").mkdir()
    sh = Shipper(tmp_path / "a", s3, etcd, "lab", epoch)
    sh.mount()
    write_workload(sh.m.dir, 5, n=n)
    status, err = sh.finish()
    assert status == 0, err
    return sh


def restore_as_room(tmp_path, s3, etcd, extra=()):
    """restore as atriumd starts it: the staging directory (the room
    uid's, under a root-only directory) held open as --dir-fd, and
    --run-as the room's uid."""
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    stage = locked / "stage"
    stage.mkdir(mode=0o700)
    os.chown(str(stage), ROOM_UID, ROOM_UID)
    dirfd = os.open(str(stage), os.O_PATH | os.O_DIRECTORY)
    creds = creds_pipe()
    try:
        r = subprocess.run([
            REPLICATE, "restore", "--room", "lab", "--etcd", etcd.url,
            "--s3", s3.url, "--s3-bucket", "atrium", "--creds-fd",
            str(creds), "--dir-fd", str(dirfd), "--run-as",
            "%d:%d" % (ROOM_UID, ROOM_UID), *extra],
            pass_fds=(creds, dirfd), capture_output=True, text=True,
            timeout=120)
    finally:
        os.close(creds)
        os.close(dirfd)
    return r, stage


def test_restore_as_the_room_uid_through_its_open_directory(tmp_path, s3,
                                                            etcd):
    sh = shipped_lab(tmp_path, s3, etcd)
    r, stage = restore_as_room(tmp_path, s3, etcd)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(stage)) == ["room.db", "workspace.db"]
    for name in ("room.db", "workspace.db"):
        st = os.stat(stage / name)
        # Made by the room's uid, which could not have walked to it.
        assert (st.st_uid, st.st_gid) == (ROOM_UID, ROOM_UID)
        assert st.st_mode & 0o777 == 0o600
    assert open(stage / "workspace.db", "rb").read() == \
        checkpointed(sh.m.db)


def test_restore_refuses_a_file_past_its_bound_and_leaves_nothing(
        tmp_path, s3, etcd):
    shipped_lab(tmp_path, s3, etcd, n=60)
    r, stage = restore_as_room(tmp_path, s3, etcd,
                               extra=("--max-bytes", "65536"))
    assert r.returncode == 1
    assert "restoring" in r.stderr and "failed" in r.stderr, r.stderr
    assert os.listdir(stage) == []


def test_restore_refuses_a_staging_place_that_is_not_a_directory(tmp_path,
                                                                 s3, etcd):
    f = tmp_path / "file"
    f.write_bytes(b"")
    fd = os.open(str(f), os.O_RDONLY)
    creds = creds_pipe()
    try:
        r = subprocess.run([
            REPLICATE, "restore", "--room", "lab", "--etcd", etcd.url,
            "--s3", s3.url, "--s3-bucket", "atrium", "--creds-fd",
            str(creds), "--dir-fd", str(fd)], pass_fds=(creds, fd),
            capture_output=True, text=True, timeout=60)
    finally:
        os.close(creds)
        os.close(fd)
    assert r.returncode == 1
    assert "is not a directory" in r.stderr
    assert s3.answered == 0


def test_kill_9_loses_no_write_acknowledged_a_second_before(tmp_path, s3, etcd):
    """The home dies (its daemon and its shipper killed at once) during a
    stream of fsynced writes: restored elsewhere, every write whose fsync
    returned more than a second before the kill is there, byte for byte."""
    from test_fs import mount_pid
    epoch = etcd.claim("lab", "n1")
    (tmp_path / "a").mkdir()
    sh = Shipper(tmp_path / "a", s3, etcd, "lab", epoch)
    sh.mount()
    daemon = mount_pid(sh.m.db)
    acked = []                     # (time the fsync returned, name, bytes)
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < 3:
        data = os.urandom(random.randrange(1, 200000))
        name = "w%05d" % i
        with open(os.path.join(sh.m.dir, name), "wb") as f:
            f.write(data)
            os.fsync(f.fileno())
        acked.append((time.monotonic(), name, data))
        i += 1
    os.kill(sh.proc.pid, signal.SIGKILL)
    os.kill(daemon, signal.SIGKILL)
    killed = time.monotonic()
    sh.proc.wait()
    subprocess.run(["fusermount3", "-uz", sh.m.dir])
    durable = [(n, d) for t, n, d in acked if t < killed - 1]
    assert len(durable) > 10

    r, out = restore(tmp_path, s3, etcd, "lab")
    assert r.returncode == 0, r.stderr
    m2 = tmp_path / "mnt2"
    m2.mkdir()
    assert subprocess.run([FS, "mount", str(out / "workspace.db"),
                           str(m2)]).returncode == 0
    try:
        got = tree(str(m2))
    finally:
        subprocess.run(["fusermount3", "-u", str(m2)])
    missing = [n for n, d in durable if got.get(n) != d]
    assert not missing, "%d of %d acknowledged writes lost" % (
        len(missing), len(durable))


def peak_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def test_a_slow_store_makes_commits_wait_with_memory_bounded(tmp_path, s3,
                                                             etcd):
    epoch = etcd.claim("lab", "n1")
    (tmp_path / "a").mkdir()
    sh = Shipper(tmp_path / "a", s3, etcd, "lab", epoch)
    sh.mount()
    s3.set(slow=0.3)               # every request takes 0.3 s
    puts = s3.puts
    t = time.monotonic()
    want = {}
    for i in range(6):             # 48 MiB, far more than the buffers
        data = os.urandom(8 << 20)
        with open(os.path.join(sh.m.dir, "big%d" % i), "wb") as f:
            f.write(data)
            os.fsync(f.fileno())
        want["big%d" % i] = data
    took = time.monotonic() - t
    rss = peak_rss_kib(sh.proc.pid)
    # At most 4 MiB a segment at 0.3 s each: the writes waited for them.
    assert took >= (48 // 4) * 0.3 * 0.8
    assert s3.puts - puts >= 12
    # Two segment buffers, a frame and libcurl: not the 48 MiB written.
    assert rss < 32 * 1024, "the shipper grew to %d KiB" % rss
    s3.set(slow=0)
    status, err = sh.finish()
    assert status == 0, err
    assert_restores(tmp_path, s3, etcd, sh, want)
