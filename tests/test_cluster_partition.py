"""A partition (atriumd(8), CLUSTER, "The home host is cut off"): a room's
home cut off from the rest of its cluster, by a network namespace this
test makes, while people write to the room through another host.

Three etcd members and tests/s3_server.py (the object store) in the
machine's own network namespace, and three atriumd hosts streaming to the
store: A, the room's home, in a network namespace of its own (`ip netns
add`, a veth pair with an address at each end; A runs under `nsenter
--net`, so it shares the machine's mounts) and reaching etcd and the store
through the veth; B, the front the room's people use; C, a third host.
While fsynced file writes and chat lines go through B to the room on A,
and people on A's side of the network (inside its namespace) write files
and chat lines to A directly, the test sets the veth's end in the
machine's namespace down: A hears nothing more from etcd, the store or
B (its packets are lost), nobody else reaches A, and A's own side still
does.  Then, as a user sees it:

- A stops serving the room at its fence time, before its lease can end,
  and sends its own side's people away;
- once the lease ended, B serves the room within 5 s (the RTO), with every
  file write and chat line acknowledged more than a second before the cut;
- when the link is up again, A finds its lease gone and joins again as a
  new member; it changed nothing of the room after its fence, though its
  own side kept writing until then (room.db and workspace.db on its disk
  hold what they held when its lease ended), the manifest never names
  A's epoch again, and A serves other rooms and relays to B.

The namespace, the veth pair and every process are removed at the end,
also when the test fails.  Run as root:
    /usr/bin/python3 -m pytest -q tests/test_cluster_partition.py
"""
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import threading
import time

import pytest

import s3_server
from conftest import (SSH_OPTS, Atriumd, DataDir, _pids_using, free_port,
                      make_room, ssh_command)
from test_cluster import LEASE, Etcd, cgroup_prefix, wait_for  # noqa: F401
from test_cluster_replicate import AK, SK
from test_e2e import Room

IP = shutil.which("ip") or "/usr/sbin/ip"
NSENTER = shutil.which("nsenter") or "/usr/bin/nsenter"
ROOM = "demo"
RTO = 5            # s from the lease's end to the room served again

pytestmark = [
    # It adds an address to lo and a network namespace (both removed at
    # the end), and times the fence: no other test beside it.
    pytest.mark.alone,
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="network namespaces and FUSE need root"),
    pytest.mark.skipif(not os.access("/usr/bin/etcd", os.X_OK),
                       reason="etcd-server is not installed"),
    pytest.mark.skipif(not (os.access(IP, os.X_OK) and
                            os.access(NSENTER, os.X_OK)),
                       reason="ip (iproute2) and nsenter are needed"),
]


def ip(*args, check=True):
    p = subprocess.run([IP] + list(args), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), p.stderr.strip()))
    return p


class Netns:
    """A network namespace joined to this one by a veth pair.  Here:
    addr, an address of this host on lo (the cluster's services listen
    there, and B and C are advertised there: the namespace reaches them
    through the veth), and here_addr at the veth's end.  There: ns_addr,
    at the other end, with a route to addr through here_addr."""

    def __init__(self):
        pid = os.getpid()
        self.name = "atrium-part-%d" % pid
        self.here = "atpr%d" % (pid % 100000)
        self.there = "atpn%d" % (pid % 100000)
        net = "10.%d.%d" % (200 + pid % 50, pid // 50 % 250)
        self.addr = net + ".1"
        self.here_addr, self.ns_addr = net + ".5", net + ".6"

    def make(self):
        ip("addr", "add", self.addr + "/32", "dev", "lo")
        ip("netns", "add", self.name)
        ip("link", "add", self.here, "type", "veth", "peer", "name",
           self.there)
        ip("link", "set", self.there, "netns", self.name)
        ip("addr", "add", self.here_addr + "/30", "dev", self.here)
        ip("link", "set", self.here, "up")
        ip("-n", self.name, "addr", "add", self.ns_addr + "/30", "dev",
           self.there)
        ip("-n", self.name, "link", "set", self.there, "up")
        ip("-n", self.name, "link", "set", "lo", "up")
        ip("-n", self.name, "route", "add", self.addr + "/32", "via",
           self.here_addr)
        return self

    def cut(self):
        """Nothing crosses.  The namespace keeps its routes and its
        packets are lost; this side has no route there any more."""
        ip("link", "set", self.here, "down")

    def heal(self):
        ip("link", "set", self.here, "up")

    def remove(self):
        ip("link", "del", self.here, check=False)   # both ends go
        ip("netns", "del", self.name, check=False)
        ip("addr", "del", self.addr + "/32", "dev", "lo", check=False)


@pytest.fixture
def netns():
    ns = Netns()
    ns.remove()             # a namespace left by a run that was killed
    try:
        yield ns.make()
    finally:
        ns.remove()


@pytest.fixture
def part_etcd(netns, tmp_path):
    """Three members, reached on loopback here and at netns.addr from
    the namespace."""
    d = tmp_path / "etcd"
    d.mkdir()
    e = Etcd(str(d), also_on=[netns.addr])
    try:
        yield e.start()
    finally:
        e.stop()


@pytest.fixture
def part_s3(netns):
    """The store, with a second door at netns.addr (ns_url) for A."""
    with s3_server.S3Server(AK, SK) as srv:
        door = s3_server.ThreadingServer((netns.addr, 0),
                                         s3_server.Handler)
        door.s3 = srv
        threading.Thread(target=door.serve_forever, daemon=True).start()
        srv.ns_url = "http://%s:%d" % (netns.addr,
                                       door.server_address[1])
        try:
            yield srv
        finally:
            door.shutdown()
            door.server_close()


@pytest.fixture
def part_hosts(netns, part_etcd, part_s3, atriumd, build, data_dir,
               cgroup_prefix, tmp_path):
    """(a, b, c): A in the namespace, B and C here, all streaming."""
    creds = tmp_path / "creds"
    creds.write_text("%s\n%s\n" % (AK, SK))
    os.chmod(str(creds), 0o600)
    wrap = tmp_path / "in-netns"
    wrap.mkdir()
    (wrap / "atriumd").write_text('#!/bin/sh\nexec %s --net=/run/netns/%s '
                                  '-- %s "$@"\n' % (
                                      NSENTER, netns.name,
                                      os.path.join(build, "atriumd")))
    os.chmod(str(wrap / "atriumd"), 0o755)

    def args(name, listen, advertise, etcd_host, s3_url):
        return ("--listen", listen, "--advertise", advertise,
                "--cluster", "etcd=" + part_etcd.urls(etcd_host),
                "--node", name, "--cluster-lease", str(LEASE),
                "--cgroup-parent", cgroup_prefix + "-" + name,
                "--s3", s3_url, "--s3-bucket", "atrium",
                "--s3-credentials", str(creds), "--per-source-rate", "0",
                # A front admits a command only for a room it has or may
                # make (as the cluster's other tests): its monitor does
                # not ask the cluster whether the room is elsewhere.
                "--exec-creates-rooms")

    def data(name):
        path = tmp_path / ("data-" + name)
        path.mkdir(mode=0o700)
        shutil.copy(os.path.join(str(data_dir), "authorized_keys"),
                    str(path / "authorized_keys"))
        return DataDir(str(path), data_dir.keys)

    def here(name):
        # On every address: loopback for this test, netns.addr for A.
        port = free_port()
        return atriumd(data(name), *args(
            name, ":%d" % port, "%s:%d" % (netns.addr, port), "127.0.0.1",
            part_s3.url))

    listen_a = "%s:%d" % (netns.ns_addr, free_port())
    a = Atriumd(str(wrap), data_dir, args("a", listen_a, listen_a,
                                          netns.addr, part_s3.ns_url), None)
    try:
        a.start()
        b, c = here("b"), here("c")
        for n in "abc":
            wait_for(lambda: part_etcd.get("/atrium/nodes/" + n)[0], 10,
                     "node %s registered" % n)
        yield a, b, c
    finally:
        a.stop()
        a.cleanup()


def ssh_to(server, room, cmd, timeout=60):
    """(rc, out, err) of `ssh ROOM@HOST CMD`, HOST the one server
    listens at (A's is in the namespace)."""
    p = subprocess.run(
        ["ssh", "-p", str(server.port), "-i", server.keys["alice"]] +
        SSH_OPTS + ["%s@%s" % (room, server.host), cmd],
        capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


class Stream:
    """Fsynced file writes and chat lines into ROOM through front, each
    noted with the time it was acknowledged (the write's ssh returned 0;
    the line came back from the room, which announces only what it
    committed)."""

    def __init__(self, front):
        self.front = front
        self.files, self.lines = [], []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.procs = set()
        self.chat = Room(front, ROOM)
        self.threads = [threading.Thread(target=f)
                        for f in (self._write, self._talk)]
        for t in self.threads:
            t.start()

    def _put(self, name, data):
        p = subprocess.Popen(
            ssh_command(self.front, ROOM, "dd of=%s bs=65536 conv=fsync "
                        "status=none" % name),
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        with self.lock:
            self.procs.add(p)
        try:
            p.communicate(data, timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        with self.lock:
            self.procs.discard(p)
        return p.returncode == 0

    def _write(self):
        i = 0
        while not self.stop.is_set():
            name = "w%04d" % i
            data = os.urandom(1000 + (i * 7919) % 30000)
            if self._put(name, data):
                self.files.append((time.monotonic(), name, data))
            i += 1

    def _talk(self):
        n = 0
        while not self.stop.is_set():
            text = "line %d" % n
            try:
                self.chat.send(type="chat", text=text)
                self.chat.expect(lambda e: e.get("type") == "message" and
                                 e.get("text") == text, 10, text)
            except (AssertionError, OSError, ValueError):
                return
            self.lines.append((time.monotonic(), text))
            n += 1

    def acked_before(self, t):
        """(files, lines) acknowledged before monotonic time t."""
        return (len([1 for when, _, _ in self.files if when < t]),
                len([1 for when, _ in self.lines if when < t]))

    def end(self):
        self.stop.set()
        with self.lock:
            for p in self.procs:
                p.kill()
        self.chat.proc.kill()
        for t in self.threads:
            t.join(30)
        self.chat.proc.wait()


class Local:
    """People on A's side of the partition, who still reach A after the
    cut: a command that writes a file every 50 ms and a client that sends
    a chat line every 50 ms, from inside A's namespace, until A ends
    their sessions."""

    def __init__(self, netns, a):
        ssh = [NSENTER, "--net=/run/netns/" + netns.name, "ssh", "-p",
               str(a.port), "-i", a.keys["alice"]] + SSH_OPTS
        to = "%s@%s" % (ROOM, a.host)
        self.writer = subprocess.Popen(
            ssh + [to, "i=0; while :; do i=$((i+1)); echo $i > local$i; "
                   "sleep 0.05; done"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.chat = subprocess.Popen(
            ssh + ["-s", to, "atrium"], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._talk)
        self.thread.start()

    def _talk(self):
        n = 0
        while not self.stop.is_set():
            try:
                self.chat.stdin.write(json.dumps(
                    {"type": "chat", "text": "local %d" % n}) + "\n")
                self.chat.stdin.flush()
            except (OSError, ValueError):
                return
            n += 1
            self.stop.wait(0.05)

    def ended(self):
        return self.writer.poll() is not None and \
            self.chat.poll() is not None

    def end(self):
        self.stop.set()
        for p in (self.writer, self.chat):
            if p.poll() is None:
                p.kill()
        self.thread.join()
        for p in (self.writer, self.chat):
            p.wait()


class Watch:
    """Every value of a key, polled from now on: (monotonic time,
    value)."""

    def __init__(self, etcd, key):
        self.seen = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(etcd, key))
        self.thread.start()

    def _run(self, etcd, key):
        while not self.stop.is_set():
            try:
                v = etcd.get(key)[0]
            except OSError:
                v = None
            if v and (not self.seen or self.seen[-1][1] != v):
                self.seen.append((time.monotonic(), v))
            self.stop.wait(0.05)

    def end(self):
        self.stop.set()
        self.thread.join()


def content(data):
    """A digest of every row of ROOM's room.db and workspace.db as they
    are on data's disk."""
    h = hashlib.sha256()
    for db in ("room.db", "workspace.db"):
        path = os.path.join(data, "rooms", ROOM, db)
        c = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)
        try:
            tables = [t for (t,) in c.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "ORDER BY name")]
            for t in tables:
                h.update(t.encode())
                for row in sorted(repr(r) for r in
                                  c.execute('SELECT * FROM "%s"' % t)):
                    h.update(row.encode())
        finally:
            c.close()
    return h.hexdigest()


def room_pids(data):
    """Processes of data's ROOM (atrium-agent, atrium-fs,
    atrium-replicate)."""
    return _pids_using(os.path.join(data, "rooms", ROOM))


def test_home_cut_off_is_fenced_and_the_room_served_elsewhere(
        netns, part_hosts, part_etcd):
    a, b, c = part_hosts
    etcd = part_etcd
    home_key = "/atrium/rooms/%s/home" % ROOM
    make_room(a, ROOM)
    home, epoch = etcd.get(home_key)
    assert home == "a" and epoch > 0
    manifests = Watch(etcd, "/atrium/rooms/%s/manifest" % ROOM)
    local = None
    try:
        stream = Stream(b)
        try:
            local = Local(netns, a)
            # Enough acknowledged a second ago (those must survive).
            wait_for(lambda: min(stream.acked_before(
                time.monotonic() - 1)) > 5, 30,
                "writes through B to the room on A")
            assert not local.ended(), "A's own people could not write"
        finally:
            netns.cut()
            cut = time.monotonic()
            stream.end()
        durable = [(n, d) for t, n, d in stream.files if t < cut - 1]
        lines = [x for t, x in stream.lines if t < cut - 1]
        assert len(durable) > 5 and len(lines) > 5

        # A stops the room at its fence time: before its lease ends.
        fenced = ended = None
        deadline = cut + LEASE + 5
        while ended is None:
            now = time.monotonic()
            assert now < deadline, "A's lease did not end"
            if fenced is None and "this node's hold on it ended" in \
                    a.read_log():
                fenced = now
            if etcd.get(home_key)[0] != "a":
                ended = now
            time.sleep(0.05)
        assert fenced is not None and fenced < ended, \
            "A still served the room when its lease ended"
        # Its own side's people, who still reach it, are sent away.
        wait_for(local.ended, 5, "A to end its own side's sessions")
        # Its last renewal was before the cut: its fence time (that plus
        # the lease, less a second) came at most LEASE - 1 s after it.
        assert fenced - cut < LEASE - 1 + 0.75, \
            "A stopped the room %.1f s after the cut" % (fenced - cut)
        on_disk = content(a.data)

        # Another host serves the room within the RTO.
        while True:
            rc, _, err = ssh_to(b, ROOM, "true", timeout=30)
            if rc == 0:
                break
            assert time.monotonic() < ended + RTO, err
        served = time.monotonic() - ended
        assert served < RTO, "served again %.1f s after the lease" % served
        new_home, new_epoch = etcd.get(home_key)
        assert new_home == "b" and new_epoch > epoch
        assert "restored from the object store" in b.read_log()

        # Every write acknowledged a second before the cut, byte for byte.
        rc, out, err = ssh_to(c, ROOM, "sha256sum w*", timeout=60)
        assert rc == 0, err
        there = dict(line.split()[::-1] for line in out.splitlines())
        lost = [n for n, d in durable
                if there.get(n) != hashlib.sha256(d).hexdigest()]
        assert not lost, "%d of %d acknowledged writes lost" % (
            len(lost), len(durable))
        history = Room(c, ROOM)
        try:
            history.send(type="history", since=0, limit=1000)
            for text in lines:
                history.expect(lambda e, t=text: e.get("type") == "message"
                               and e.get("text") == t, 30, text)
        finally:
            history.close()

        # The link comes back: A finds its lease gone and joins again.
        joins = a.read_log().count("cluster: node a joined")
        netns.heal()
        wait_for(lambda: a.read_log().count("cluster: node a joined") > joins,
                 15, "A to join the cluster again")
        assert "of node a ended" in a.read_log()
        wait_for(lambda: not room_pids(a.data), 15,
                 "A's processes of the room to end")
        # A wrote nothing of the room after its fence...
        assert content(a.data) == on_disk
        # ...and the manifest never named A's epoch once B took it.
        taken = [t for t, v in manifests.seen
                 if json.loads(v)["epoch"] == new_epoch]
        assert taken, "B never wrote the manifest"
        assert not [v for t, v in manifests.seen
                    if t > taken[0] and json.loads(v)["epoch"] != new_epoch]
    finally:
        manifests.end()
        if local:
            local.end()

    # A serves other rooms again, and is a front for the room it lost.
    make_room(a, "other")
    assert etcd.get("/atrium/rooms/other/home")[0] == "a"
    rc, out, err = ssh_to(b, "other", "echo on a")
    assert (rc, out) == (0, "on a\n"), err
    rc, out, err = ssh_to(a, ROOM, "echo on b")
    assert (rc, out) == (0, "on b\n"), err
    assert etcd.get(home_key) == ("b", new_epoch)
