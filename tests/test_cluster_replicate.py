"""Rooms of a cluster whose writes are streamed to S3-compatible storage
(atriumd(8), CLUSTER: --s3): what a user sees when the room's home dies,
when the store's credentials are wrong, when the store is slow, and
when it stalls while a host restores the room (which runs as the room's
uid and has a deadline of its own), and when it hands over a workspace
that atrium-fs fsck, run as the room's uid, refuses.

Three etcd members and two atriumd hosts (test_cluster.py's fixtures),
and tests/s3_server.py as the object store (it checks SigV4 signatures),
all on loopback ports, started and stopped by pid.

Run as root: /usr/bin/python3 -m pytest -q tests/test_cluster_replicate.py
"""
import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time

import pytest

import s3_server
from conftest import BUILD_DIR, ssh_command
from test_cluster import (LEASE, cgroup_prefix, etcd, hosts,  # noqa: F401
                          wait_for)
from test_e2e import Room

AK, SK = "AKIDATRIUMTEST", "s3cr3t/with+signs"
CLI = os.path.join(BUILD_DIR, "atriumd")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.access("/usr/bin/etcd", os.X_OK),
                       reason="etcd-server is not installed"),
]


@pytest.fixture
def s3():
    with s3_server.S3Server(AK, SK) as srv:
        yield srv


@pytest.fixture
def s3_hosts(hosts, s3, tmp_path):
    """s3_hosts(n, secret=SK) -> n hosts of the cluster streaming to s3,
    the credentials in a file (--s3-credentials)."""
    def start(n=2, secret=SK, extra=()):
        creds = tmp_path / ("creds-%d" % len(os.listdir(tmp_path)))
        creds.write_text("%s\n%s\n" % (AK, secret))
        os.chmod(str(creds), 0o600)
        return hosts(n, extra=("--s3", s3.url, "--s3-bucket", "atrium",
                               "--s3-credentials", str(creds), *extra))
    return start


def manifest(etcd, room):
    v, _ = etcd.get("/atrium/rooms/%s/manifest" % room)
    return json.loads(v) if v else None


def upto(etcd, room):
    m = manifest(etcd, room)
    return (m["room"]["upto"], m["workspace"]["upto"]) if m else (0, 0)


def put(srv, ssh_run, room, name, data):
    """An fsynced file written through ssh: True once acknowledged."""
    rc, _, err = ssh_run(srv, room, "dd of=%s bs=65536 conv=fsync "
                         "status=none" % name, input=data)
    return rc == 0


def get(srv, ssh_run, room, name):
    rc, out, _ = ssh_run(srv, room, "cat %s" % name, input=b"")
    return out if rc == 0 else None


def test_home_killed_room_served_elsewhere_with_every_acknowledged_write(
        s3_hosts, etcd, ssh_run):
    a, b = s3_hosts(2)
    assert ssh_run(a, "demo", "true", timeout=60)[0] == 0
    assert etcd.get("/atrium/rooms/demo/home")[0] == "a"
    chat = Room(a, "demo")
    acked_files, acked_lines = [], []
    stop = threading.Event()

    def talk():
        n = 0
        while not stop.is_set():
            text = "line %d" % n
            try:
                chat.send(type="chat", text=text)
                chat.expect(lambda e: e.get("type") == "message" and
                            e.get("text") == text, 10, text)
            except (AssertionError, OSError, ValueError):
                return
            acked_lines.append((time.monotonic(), text))
            n += 1
    talker = threading.Thread(target=talk)
    talker.start()
    try:
        start = time.monotonic()
        i = 0
        while time.monotonic() - start < 4:
            data = os.urandom(1000 + (i * 7919) % 60000)
            if put(a, ssh_run, "demo", "w%04d" % i, data):
                acked_files.append((time.monotonic(), "w%04d" % i, data))
            i += 1
        a.proc.kill()
        killed = time.monotonic()
    finally:
        stop.set()
        talker.join()
        chat.proc.kill()
        chat.proc.wait()
    durable = [(n, d) for t, n, d in acked_files if t < killed - 1]
    lines = [x for t, x in acked_lines if t < killed - 1]
    assert len(durable) > 5 and len(lines) > 5
    # B serves the room once A's lease ended (within the RTO).
    deadline = killed + LEASE + 10
    while True:
        rc, _, err = ssh_run(b, "demo", "true")
        if rc == 0:
            break
        assert time.monotonic() < deadline, err
    served = time.monotonic() - killed
    assert served < LEASE + 5, "served again after %.1f s" % served
    assert etcd.get("/atrium/rooms/demo/home")[0] == "b"
    assert "restored from the object store" in b.read_log()
    rc, out, err = ssh_run(b, "demo", "sha256sum w*", timeout=60)
    assert rc == 0, err
    there = dict(line.split()[::-1] for line in out.splitlines())
    lost = [n for n, d in durable
            if there.get(n) != hashlib.sha256(d).hexdigest()]
    assert not lost, "%d of %d acknowledged writes lost" % (len(lost),
                                                           len(durable))
    history = Room(b, "demo")
    try:
        history.send(type="history", since=0, limit=500)
        for text in lines:
            history.expect(lambda e, t=text: e.get("type") == "message" and
                           e.get("text") == t, 30, text)
    finally:
        history.close()


def test_a_restore_that_fails_refuses_the_room_and_keeps_its_files(
        s3_hosts, s3, etcd, ssh_run):
    a, b = s3_hosts(2)
    assert ssh_run(a, "demo", "true", timeout=60)[0] == 0
    assert put(a, ssh_run, "demo", "f", os.urandom(100000))
    wait_for(lambda: upto(etcd, "demo")[1] > 0, 10, "the write stored")
    a.proc.kill()
    for key in s3.objects():
        if "/workspace/seg-" in key:
            s3.delete("atrium", key)
    # B claims the room once A's lease ended, and its restore fails.
    deadline = time.monotonic() + LEASE + 15
    while True:
        rc, _, err = ssh_run(b, "demo", "true")
        assert rc != 0
        if "could not be restored from the object store" in err:
            break
        assert time.monotonic() < deadline, err
    assert "segments are missing" in b.read_log()
    # Nothing half-restored was put where the room starts from.
    assert not os.path.exists(os.path.join(b.data, "rooms", "demo",
                                           "workspace.db"))


def _tampered_workspace(data):
    """The snapshot DATA of a workspace.db, still a sound SQLite file
    (the restore's integrity check passes) but with its root directory's
    link count wrong: what only atrium-fs fsck sees."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "workspace.db")
        with open(path, "wb") as f:
            f.write(data)
        db = sqlite3.connect(path)
        db.execute("UPDATE inodes SET nlink = nlink + 5 WHERE ino = 1")
        db.commit()
        db.close()
        with open(path, "rb") as f:
            return f.read()


def test_a_restored_workspace_that_fails_fsck_is_refused_and_checked_without_root(  # noqa: E501
        s3_hosts, s3, etcd, ssh_run):
    a, b = s3_hosts(2)
    assert ssh_run(a, "demo", "true", timeout=60)[0] == 0
    wait_for(lambda: manifest(etcd, "demo"), 10, "the manifest")
    a.proc.kill()
    # A hostile store (or anyone with its credentials) hands B a
    # workspace that SQLite finds sound and atrium-fs does not.
    snaps = [k for k in s3.objects() if "/demo/" in k and
             "/workspace/snap-" in k]
    assert snaps, sorted(s3.objects())
    for key in snaps:
        s3.put("atrium", key, _tampered_workspace(s3.get("atrium", key)))
    deadline = time.monotonic() + LEASE + 30
    while True:
        rc, _, err = ssh_run(b, "demo", "true")
        assert rc != 0
        if "fails atrium-fs fsck" in err:
            break
        assert time.monotonic() < deadline, err
    assert "nothing of it was put in place" in err, err
    log = b.read_log()
    assert "directory 1 has link count" in log, log[-3000:]
    # The check ran as the room's uid, with nothing of root: the fsck
    # says whom it runs as once it gave root up, before it opens a page.
    with open(os.path.join(b.data, "rooms", "demo", "uid")) as f:
        room_uid, room_gid = f.read().strip().split(":")[:2]
    assert ("checking /proc/self/fd/3/workspace.db as uid %s, gid %s, with "
            "no capability" % (room_uid, room_gid)) in log, log[-3000:]
    # Nothing of the restore was put in place, nor left staged.
    assert not os.path.exists(os.path.join(b.data, "rooms", "demo",
                                           "workspace.db"))
    assert not os.path.exists(os.path.join(b.data, "rooms", "demo",
                                           "room.db"))
    stage = os.path.join(b.data, "run", "demo", "replicate", "restore")
    assert os.listdir(stage) == []


RESTORE_TIMEOUT = 10    # --s3-restore-timeout of the stalled store's test


def _replicate_proc(sub, opt, matches):
    """The pid of a running `atrium-replicate SUB` whose option opt's
    value satisfies matches, or None."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if (argv[0].endswith(b"atrium-replicate") and argv[1:2] == [sub]
                and opt in argv[:-1]
                and matches(argv[argv.index(opt) + 1])):
            return int(pid)
    return None


def _restore_pid(room):
    """The pid of a running `atrium-replicate restore --room ROOM`."""
    return _replicate_proc(b"restore", b"--room",
                           lambda v: v == room.encode())


def _boot_seconds_started(pid):
    """When pid started, in seconds of CLOCK_BOOTTIME."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _status_fields(pid, names):
    """{name: value} of /proc/PID/status's lines named."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in names:
                out[name] = value.split()
    return out


def test_restore_runs_as_the_room_uid_and_a_stalled_store_fails_it_in_time(
        s3_hosts, s3, etcd, ssh_run):
    a, b = s3_hosts(2, extra=("--s3-restore-timeout", str(RESTORE_TIMEOUT)))
    assert ssh_run(a, "demo", "true", timeout=60)[0] == 0
    before = upto(etcd, "demo")[1]
    data = os.urandom(300000)
    assert put(a, ssh_run, "demo", "f", data)
    wait_for(lambda: upto(etcd, "demo")[1] > before, 10, "the write stored")
    a.proc.kill()
    s3.set(stall=True)
    # B's uses: refused while A's lease lasts ("cannot be reached"), then
    # one claims the room and waits for its restore.
    answers = []

    def use():
        end = time.monotonic() + LEASE + 60
        while time.monotonic() < end:
            rc, _, err = ssh_run(b, "demo", "true", timeout=120)
            answers.append((time.clock_gettime(time.CLOCK_BOOTTIME), rc,
                            err))
            if rc == 0 or "restored from the object store" in err:
                return
            time.sleep(0.2)
    user = threading.Thread(target=use)
    user.start()
    try:
        pid = wait_for(lambda: _restore_pid("demo"), LEASE + 20,
                       "B's restore to start")
        started = _boot_seconds_started(pid)
        epoch = etcd.get("/atrium/rooms/demo/home")[1]
        # It asks the store only as the room's uid, with nothing of root:
        # looked at while its first request (the snapshot) waits.
        assert s3.wait(lambda srv: any(
            r.startswith("GET ") and "/demo/" in r and "/snap-" in r
            for r in srv.stalled), 20), s3.stalled
        with open(os.path.join(b.data, "rooms", "demo", "uid")) as f:
            room_uid = f.read().split(":")[0]
        st = _status_fields(pid, ("Uid", "Gid", "CapEff", "CapPrm",
                                  "NoNewPrivs"))
        assert st["Uid"] == [room_uid] * 4, st
        assert st["Gid"][0] != "0" and "0" not in st["Gid"], st
        assert st["CapEff"] == ["0000000000000000"], st
        assert st["CapPrm"] == ["0000000000000000"], st
        assert st["NoNewPrivs"] == ["1"], st
    finally:
        user.join(timeout=LEASE + 90)
    t, rc, err = answers[-1]
    assert rc != 0
    assert ("could not be restored from the object store within %d s"
            % RESTORE_TIMEOUT) in err, err
    took = t - started
    assert RESTORE_TIMEOUT - 0.5 <= took < RESTORE_TIMEOUT + 10, took
    assert not os.path.exists("/proc/%d" % pid) or _restore_pid("demo") != pid
    log = b.read_log()
    assert "did not end within %d s" % RESTORE_TIMEOUT in log
    # Nothing half-restored was put in place or left staged.
    stage = os.path.join(b.data, "run", "demo", "replicate", "restore")
    assert os.listdir(stage) == []
    assert not os.path.exists(os.path.join(b.data, "rooms", "demo",
                                           "workspace.db"))
    assert not os.path.exists(os.path.join(b.data, "rooms", "demo",
                                           "room.db"))
    # Once the store answers, the next use claims the room anew (B gave
    # its hold up) and serves every byte.
    s3.set(stall=False)
    deadline = time.monotonic() + 60
    while True:
        rc, out, err = ssh_run(b, "demo", "cat f", input=b"", timeout=60)
        if rc == 0:
            break
        assert time.monotonic() < deadline, err
        time.sleep(0.2)
    assert out == data
    assert etcd.get("/atrium/rooms/demo/home")[1] > epoch


def test_wrong_secret_refuses_the_room_with_a_clear_message(s3_hosts, etcd,
                                                            ssh_run):
    a, = s3_hosts(1, secret="not-the-secret")
    rc, _, err = ssh_run(a, "demo", "true", timeout=60)
    assert rc != 0
    assert "cannot be streamed to the object store" in err, err
    assert "credentials" in err
    assert "SignatureDoesNotMatch" in a.read_log() or "403" in a.read_log()
    assert "not-the-secret" not in a.read_log()


def test_s3_without_cluster_is_refused(atriumd, data_dir):
    with pytest.raises(RuntimeError) as e:
        atriumd(data_dir, "--s3", "http://127.0.0.1:1", "--s3-bucket", "b")
    assert "--s3 streams the rooms of a cluster's host: it needs --cluster" \
        in str(e.value)


def _status(etcd):
    p = subprocess.run([CLI, "cluster", "status", "--cluster",
                        "etcd=" + etcd.urls()], capture_output=True,
                       text=True, timeout=30)
    return p.stdout


def _manifest_rev(out, room):
    m = re.search(r"room %s .*manifest rev (\d+)" % room, out)
    return int(m.group(1)) if m else 0


def test_status_shows_the_manifest_advancing(s3_hosts, etcd, ssh_run):
    a, = s3_hosts(1)
    assert ssh_run(a, "demo", "true", timeout=60)[0] == 0
    before = wait_for(lambda: manifest(etcd, "demo"), 10, "a manifest")
    assert before["epoch"] == etcd.get("/atrium/rooms/demo/home")[1]
    assert before["node"] == "a"
    rev = wait_for(lambda: _manifest_rev(_status(etcd), "demo"), 10,
                   "status to show the manifest")
    first = upto(etcd, "demo")
    assert put(a, ssh_run, "demo", "f", os.urandom(100000))
    # Within the flush interval the manifest names the write, and status
    # shows it moved on.
    wait_for(lambda: upto(etcd, "demo")[1] > first[1], 10,
             "the manifest to advance")
    assert _manifest_rev(_status(etcd), "demo") > rev


def test_slow_store_makes_commits_wait_and_memory_stays_bounded(
        s3_hosts, s3, etcd, ssh_run):
    a, = s3_hosts(1)
    assert ssh_run(a, "demo", "true", timeout=60)[0] == 0
    pid = wait_for(lambda: _replicate_pid(a.data), 10, "atrium-replicate")
    # The credentials came on a pipe: in no argument, no environment.
    for what in ("cmdline", "environ"):
        with open("/proc/%d/%s" % (pid, what), "rb") as f:
            assert SK.encode() not in f.read()
    with open("/proc/%d/status" % pid) as f:
        uids = [line.split()[1:] for line in f if line.startswith("Uid:")][0]
    assert "0" not in uids, "atrium-replicate kept root: %s" % uids
    data = os.urandom(24 << 20)
    t = time.monotonic()
    assert put(a, ssh_run, "demo", "fast", data)
    fast = time.monotonic() - t
    s3.set(slow=0.3)
    t = time.monotonic()
    assert put(a, ssh_run, "demo", "big", data)
    took = time.monotonic() - t
    rss = _peak_rss_kib(pid)
    s3.set(slow=0)
    # 24 MiB in segments of at most 4 MiB, 0.3 s each (less what the
    # pipe and the buffers hold): the write waited for the store.
    assert took >= fast + 4 * 0.3, (took, fast)
    assert rss < 32 * 1024, "atrium-replicate grew to %d KiB" % rss
    assert get(a, ssh_run, "demo", "big") == data


def _replicate_pid(data):
    return _replicate_proc(b"run", b"--room-db",
                           lambda v: v.startswith(data.encode()))


def _peak_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0
