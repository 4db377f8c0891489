"""Rooms on several hosts: placement and fencing in etcd (atriumd(8),
CLUSTER).

Three etcd members (Debian's /usr/bin/etcd, package etcd-server) on free
loopback ports in a temporary directory, and two atriumd hosts, each with
its own DATA (the same users), all started and stopped by pid here.  What
a user sees: a room used on host A lives there, with an epoch; host B
says where it is; when A dies, B serves the room once A's lease ended;
when A is frozen past its lease, it commits nothing more and stops its
rooms when it wakes; losing one etcd member of three changes nothing;
`atriumd cluster status` shows it all.
"""
import base64
import glob
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import (CGROUP_HIERARCHIES, DataDir, _pids_using, free_port,
                      remove_cgroups, ssh_command)

ETCD = "/usr/bin/etcd"
LEASE = 3          # --cluster-lease of the hosts, s

pytestmark = pytest.mark.skipif(not os.access(ETCD, os.X_OK),
                                reason="etcd-server is not installed")


class Etcd:
    """Three members; each started and stopped by its pid."""

    def __init__(self, tmp, also_on=()):
        self.tmp = tmp
        self.also_on = list(also_on)   # more addresses clients reach it at
        self.names = ["e0", "e1", "e2"]
        self.client = [free_port() for _ in self.names]
        self.peer = [free_port() for _ in self.names]
        self.procs = [None] * 3
        self.logs = []

    def urls(self, host="127.0.0.1"):
        return ",".join("http://%s:%d" % (host, p) for p in self.client)

    def start(self):
        cluster = ",".join("%s=http://127.0.0.1:%d" % (n, p)
                           for n, p in zip(self.names, self.peer))
        for i, name in enumerate(self.names):
            log = open(os.path.join(self.tmp, name + ".log"), "w")
            self.logs.append(log)
            self.procs[i] = subprocess.Popen([
                ETCD, "--name", name,
                "--data-dir", os.path.join(self.tmp, name),
                "--listen-client-urls", ",".join(
                    "http://%s:%d" % (h, self.client[i])
                    for h in ["127.0.0.1"] + self.also_on),
                "--advertise-client-urls", "http://127.0.0.1:%d" % self.client[i],
                "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
                "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
                "--initial-cluster", cluster,
                "--initial-cluster-token", "atrium-test-%d" % os.getpid(),
                "--initial-cluster-state", "new"],
                stdout=log, stderr=log)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                for i in range(3):
                    self.call("/v3/kv/range", {"key": b64("x")}, member=i)
                return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("etcd did not start")

    def call(self, path, body, member=None):
        order = [member] if member is not None else [
            i for i in range(3) if self.procs[i] and self.procs[i].poll() is None]
        err = None
        for i in order:
            req = urllib.request.Request(
                "http://127.0.0.1:%d%s" % (self.client[i], path),
                data=json.dumps(body).encode(), method="POST")
            try:
                with urllib.request.urlopen(req, timeout=2) as r:
                    return json.loads(r.read())
            except OSError as e:
                err = e
        raise err

    def get(self, key):
        """(value, create_revision) of key, or (None, 0)."""
        kvs = self.call("/v3/kv/range", {"key": b64(key)}).get("kvs", [])
        if not kvs:
            return None, 0
        return (base64.b64decode(kvs[0].get("value", "")).decode(),
                int(kvs[0]["create_revision"]))

    def leader(self):
        """The index of the member that leads now."""
        for i in range(3):
            st = self.call("/v3/maintenance/status", {}, member=i)
            if st.get("leader") == st["header"]["member_id"]:
                return i
        raise AssertionError("etcd has no leader")

    def kill(self, i):
        self.procs[i].kill()
        self.procs[i].wait()

    def stop(self):
        for p in self.procs:
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for log in self.logs:
            log.close()


def b64(s):
    return base64.b64encode(s.encode()).decode()


@pytest.fixture
def etcd(tmp_path):
    d = tmp_path / "etcd"
    d.mkdir()
    e = Etcd(str(d)).start()
    yield e
    e.stop()


@pytest.fixture
def cgroup_prefix():
    """The hosts' cgroup parents are PREFIX-a, PREFIX-b...: this test's
    own, removed at the end (asked for before atriumd, so they outlive
    the servers)."""
    prefix = "atrium-test-cluster-%d" % os.getpid()
    yield prefix
    for name in {os.path.basename(top) for h in CGROUP_HIERARCHIES
                 for top in glob.glob(os.path.join(h, prefix + "-*"))}:
        remove_cgroups(name)


@pytest.fixture
def hosts(cgroup_prefix, atriumd, data_dir, etcd, tmp_path):
    """hosts(n) -> n atriumd hosts "a", "b"... of the cluster, each with
    its own DATA and cgroup parent, the same users; http: every host
    serves HTTP too, or a list saying which do."""
    def start(n=2, lease=LEASE, extra=(), http=False):
        out = []
        for i in range(n):
            name = "abc"[i]
            if i == 0:
                data = data_dir
            else:
                path = tmp_path / ("data-" + name)
                path.mkdir(mode=0o700)
                shutil.copy(os.path.join(str(data_dir), "authorized_keys"),
                            str(path / "authorized_keys"))
                data = DataDir(str(path), data_dir.keys)
            serves = http[i] if isinstance(http, (list, tuple)) else http
            port, web = free_port(), free_port() if serves else None
            web_args = ["--http-listen", "127.0.0.1:%d" % web] if web else []
            out.append(atriumd(data, "--listen", "127.0.0.1:%d" % port,
                               "--cluster", "etcd=" + etcd.urls(),
                               "--node", name, "--cluster-lease", str(lease),
                               "--cgroup-parent", cgroup_prefix + "-" + name,
                               *web_args, *extra))
            out[-1].http_port = web
        for h in out:
            wait_for(lambda: etcd.get("/atrium/nodes/" + h.extra[5])[0],
                     10, "node %s registered" % h.extra[5])
        return out
    return start


def wait_for(fn, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def room_uses(srv, ssh_run, room):
    """ssh ROOM@srv true, until it stops saying "starting"."""
    return ssh_run(srv, room, "true", timeout=60)


def test_room_lives_where_first_used_and_elsewhere_says_where(hosts, etcd,
                                                              ssh_run):
    a, b = hosts(2)
    rc, out, err = room_uses(a, ssh_run, "demo")
    assert rc == 0, err
    home, epoch = etcd.get("/atrium/rooms/demo/home")
    assert home == "a" and epoch > 0
    node = json.loads(etcd.get("/atrium/nodes/a")[0])
    assert node["advertise"] == "127.0.0.1:%d" % a.port
    assert node["hostkey"].startswith("ssh-ed25519 ")
    # B relays an ssh user to the room on A (the front door).
    rc, out, err = ssh_run(b, "demo", "true")
    assert rc == 0, err
    # The room did not move: same home, same epoch, nothing made on B.
    assert etcd.get("/atrium/rooms/demo/home") == ("a", epoch)
    assert not os.path.exists(os.path.join(b.data, "rooms", "demo"))
    # The `atrium` protocol over B reaches the room on A too.
    p = subprocess.run(ssh_command(b, "demo", opts=("-s",)) + ["atrium"],
                       input="", capture_output=True, text=True, timeout=60)
    assert '"type"' in p.stdout, p.stderr


def test_host_killed_room_served_by_another_after_its_lease(hosts, etcd,
                                                           ssh_run):
    a, b = hosts(2)
    assert room_uses(a, ssh_run, "demo")[0] == 0
    _, epoch = etcd.get("/atrium/rooms/demo/home")
    a.proc.kill()
    killed = time.time()
    # Until A's lease ends, B points at A; within 5 s of its end, B
    # serves the room itself, at a new epoch.
    deadline = killed + LEASE + 5
    while True:
        rc, _, err = ssh_run(b, "demo", "true")
        if rc == 0:
            break
        assert time.time() < deadline, err
        assert ("served by host a" in err or "not answering" in err or
                "cannot be reached" in err), err
    home, epoch_b = etcd.get("/atrium/rooms/demo/home")
    assert home == "b" and epoch_b > epoch


def _counts(data):
    """(chat events in room.db, directory entries in workspace.db)."""
    room = os.path.join(data, "rooms", "demo")
    out = []
    for db, sql in (("room.db", "SELECT count(*) FROM events"),
                    ("workspace.db", "SELECT count(*) FROM dirents")):
        c = sqlite3.connect("file:%s?mode=ro" % os.path.join(room, db),
                            uri=True, timeout=10)
        try:
            out.append(c.execute(sql).fetchone()[0])
        finally:
            c.close()
    return tuple(out)


def test_frozen_host_commits_nothing_after_its_fence(hosts, etcd, ssh_run):
    a, b = hosts(2)
    assert room_uses(a, ssh_run, "demo")[0] == 0
    # A client keeps writing through A: files in the workspace, and chat
    # lines into room.db.
    writer = subprocess.Popen(
        ssh_command(a, "demo", "i=0; while :; do i=$((i+1)); "
                    "echo $i > f$i 2>/dev/null; sleep 0.05; done"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    chat = subprocess.Popen(ssh_command(a, "demo", opts=("-s",)) + ["atrium"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)

    stop = threading.Event()

    def talk():
        n = 0
        while not stop.is_set():
            try:
                chat.stdin.write(json.dumps({"type": "chat",
                                             "text": "line %d" % n}) + "\n")
                chat.stdin.flush()
            except (OSError, ValueError):
                return
            n += 1
            time.sleep(0.05)
    talker = threading.Thread(target=talk)
    talker.start()
    try:
        before = _counts(a.data)
        wait_for(lambda: all(x > y for x, y in zip(_counts(a.data), before)),
                 10, "writes through A to reach both databases")
        a.proc.send_signal(signal.SIGSTOP)
        stopped = time.time()
        # Past the fence (lease end - 1 s) and the lease: what is there now
        # is all there will ever be from A, while both clients go on.
        time.sleep(LEASE + 0.5)
        fenced = _counts(a.data)
        time.sleep(2.5)
        assert _counts(a.data) == fenced
        # Another host may take the room meanwhile.
        wait_for(lambda: etcd.get("/atrium/rooms/demo/home")[0] != "a",
                 5, "A's home to end")
        a.proc.send_signal(signal.SIGCONT)
        # On waking, A stops the room (its sessions end) and still
        # commits nothing.
        wait_for(lambda: writer.poll() is not None, 15,
                 "A to end the room's sessions")
        wait_for(lambda: "this node's hold on it ended" in a.read_log(), 5,
                 "A to say why")
        room = os.path.join(a.data, "rooms", "demo")
        wait_for(lambda: not _pids_using(room), 15,
                 "A's room processes to end")
        assert _counts(a.data) == fenced
        # And B serves the room.
        rc, _, err = ssh_run(b, "demo", "true")
        assert rc == 0, err
        assert etcd.get("/atrium/rooms/demo/home")[0] == "b"
    finally:
        stop.set()
        talker.join()
        for p in (writer, chat):
            if p.poll() is None:
                p.kill()
            p.wait()
        if a.proc.poll() is None:
            a.proc.send_signal(signal.SIGCONT)


# etcd's election after its leader's loss must end within the lease's
# margin; on a machine loaded by other tests it took longer (CI, once).
@pytest.mark.alone
def test_losing_one_etcd_member_changes_nothing(hosts, etcd, ssh_run):
    # The default lease: the leader's loss costs an election (about a
    # second here) during which no renewal succeeds.  Connections follow
    # each other without pause: no per-address rate limit.
    a, b = hosts(2, lease=5, extra=("--per-source-rate", "0"))
    assert room_uses(a, ssh_run, "demo")[0] == 0
    home = etcd.get("/atrium/rooms/demo/home")
    etcd.kill(etcd.leader())
    deadline = time.time() + 3 * 5
    while time.time() < deadline:
        rc, _, err = ssh_run(a, "demo", "true")
        assert rc == 0, err
    assert etcd.get("/atrium/rooms/demo/home") == home
    assert "hold on it ended" not in a.read_log()
    # New rooms are still placed, and B still says where they are.
    assert room_uses(b, ssh_run, "other")[0] == 0
    assert etcd.get("/atrium/rooms/other/home")[0] == "b"
    rc, _, err = ssh_run(a, "other", "true")
    assert rc == 0, err     # relayed to B


def test_idle_room_gives_its_home_up(hosts, etcd, ssh_run):
    a, b = hosts(2, extra=("--idle-timeout", "1"))
    assert room_uses(a, ssh_run, "demo")[0] == 0
    wait_for(lambda: etcd.get("/atrium/rooms/demo/home")[0] is None, 20,
             "the idle room's home to be given up")
    # Then the next host to use it takes it.
    assert room_uses(b, ssh_run, "demo")[0] == 0
    assert etcd.get("/atrium/rooms/demo/home")[0] == "b"


def test_cluster_status(hosts, etcd, ssh_run, build):
    a, b = hosts(2)
    assert room_uses(a, ssh_run, "demo")[0] == 0
    _, epoch = etcd.get("/atrium/rooms/demo/home")
    p = subprocess.run([os.path.join(build, "atriumd"), "cluster", "status",
                        "--cluster", "etcd=" + etcd.urls()],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "cluster etcd=%s: 2 node(s)" % etcd.urls()
    node_a = [l for l in lines if l.startswith("node a  ")]
    assert node_a and "127.0.0.1:%d" % a.port in node_a[0]
    assert "lease" in node_a[0] and "s left" in node_a[0]
    i = lines.index(node_a[0])
    assert lines[i + 1].startswith("  room demo  epoch %d  manifest" % epoch)
    assert any(l.startswith("node b  127.0.0.1:%d" % b.port) for l in lines)
    # Without a cluster, it says what to give.
    p = subprocess.run([os.path.join(build, "atriumd"), "cluster", "status",
                        "--data", a.data + "-none"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2


def test_host_restarted_after_a_crash_serves_its_rooms_again(hosts, etcd,
                                                             atriumd, ssh_run):
    a, = hosts(1)
    assert room_uses(a, ssh_run, "demo")[0] == 0
    _, epoch = etcd.get("/atrium/rooms/demo/home")
    a.proc.kill()
    a.proc.wait()
    # Started again at once, while its old lease still holds the home:
    # the home is this node's from an earlier life, so it takes the room
    # back at a new epoch rather than pointing at itself.
    port = free_port()
    a2 = atriumd(DataDir(a.data, a.keys), "--listen", "127.0.0.1:%d" % port,
                 *a.extra[2:])
    rc, _, err = ssh_run(a2, "demo", "true")
    assert rc == 0, err
    home, epoch2 = etcd.get("/atrium/rooms/demo/home")
    assert home == "a" and epoch2 > epoch


def test_unreachable_etcd_is_said(cgroup_prefix, atriumd, data_dir, ssh_run):
    dead = free_port()
    a = atriumd(data_dir, "--cluster", "etcd=http://127.0.0.1:%d" % dead,
                "--node", "a", "--cluster-lease", str(LEASE),
                "--cgroup-parent", cgroup_prefix + "-a")
    rc, _, err = ssh_run(a, "demo", "true")
    assert rc != 0
    assert "cannot reach the cluster's etcd" in err, err
    assert not os.path.exists(os.path.join(a.data, "rooms", "demo"))
