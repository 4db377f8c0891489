"""The monitor states who a request is for: a network process that lies
(claims admin, names another user, asks for a delete or an export for no
user) is refused, each agent connection has exactly one hello, the one
the monitor writes, and a room's owner and members go only to a user who
may enter it.

The tests speak on the network process's own request socket: as root they
take a copy of it (pidfd_getfd) while no session is active, so what the
monitor answers is what a subverted network process would get.

Run as root after `make all`:
    /usr/bin/python3 -m pytest -q tests/test_monitor_identity.py
"""
import ctypes
import errno
import json
import os
import select
import signal
import socket
import struct
import subprocess

import pytest

from conftest import make_room
from test_access import add_key, invite, make_private
from test_robustness import AgentConn

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

SYS_PIDFD_GETFD = 438       # x86_64, aarch64 and the generic table


def fingerprint(data_dir, user):
    out = subprocess.run(["ssh-keygen", "-lf", data_dir.keys[user] + ".pub"],
                         capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def socket_fds(pid):
    """fd number -> socket inode, for pid."""
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            out[int(fd)] = int(link[8:-1])
    return out


def unix_peers():
    """Socket inode -> its peer's inode, for every connected unix socket."""
    out = subprocess.run(["ss", "-xanH"], capture_output=True, text=True,
                         check=True).stdout
    peers = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[5].isdigit() and f[7].isdigit():
            peers[int(f[5])] = int(f[7])
    return peers


def steal_fd(pid, fd):
    """A copy of pid's descriptor fd."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        got = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        if got < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        return got
    finally:
        os.close(pidfd)


class Monitor:
    """The network process's end of its request socket (privsep.h): of its
    two sockets whose peers the monitor holds, the request socket is the
    lower descriptor (sshd/monitor/monitor_main.c makes that pair first)."""

    def __init__(self, srv, data_dir):
        self.net_pid = srv.network_pid()
        mine = set(socket_fds(srv.proc.pid).values())
        peers = unix_peers()
        net = socket_fds(self.net_pid)
        ends = sorted(fd for fd, ino in net.items() if peers.get(ino) in mine)
        assert len(ends) >= 2, ends
        # Blocking, and it stays so: the copy shares its file status flags
        # with the network process's descriptor, which must block.
        self.sock = socket.socket(fileno=steal_fd(self.net_pid, ends[0]))
        assert self.sock.getblocking()
        # The network process shares the socket: stopped, it can neither
        # take this test's answers nor be sent them.  A request it made
        # just before may still be answered; the answers keep the order
        # of the requests, so once a probe's own answer is read, nothing
        # of the network process's is left to read.
        os.kill(self.net_pid, signal.SIGSTOP)
        self._drain(who(data_dir, "alice"))

    def _drain(self, alice):
        body = json.dumps(dict(type="rooms", **alice)).encode()
        self.sock.sendall(struct.pack("=I", len(body)) + body)
        while True:
            ans, fds = self._read()
            for fd in fds:
                os.close(fd)
            if ans.get("type") == "rooms":
                return

    def _wait(self):
        r, _, _ = select.select([self.sock], [], [], 30)
        assert r, "the monitor does not answer"

    def ask(self, **req):
        """Send req; (answer, fds that came with it)."""
        body = json.dumps(req).encode()
        self.sock.sendall(struct.pack("=I", len(body)) + body)
        return self._read()

    def _read(self):
        """The next answer and the fds that came with it."""
        self._wait()
        head, fds, _, _ = socket.recv_fds(self.sock, 4, 8)
        while len(head) < 4:
            self._wait()
            more = self.sock.recv(4 - len(head))
            assert more, "the monitor closed the request socket"
            head += more
        (n,) = struct.unpack("=I", head)
        body = b""
        while len(body) < n:
            self._wait()
            more = self.sock.recv(n - len(body))
            assert more, "the monitor closed the request socket"
            body += more
        return json.loads(body), fds

    def close(self):
        self.sock.close()
        try:
            os.kill(self.net_pid, signal.SIGCONT)
        except ProcessLookupError:
            pass    # a test whose requests end the network process


def who(data_dir, user, key_of=None):
    """The identity fields of a request for user, with key_of's key."""
    return {"user": user, "key": fingerprint(data_dir, key_of or user),
            "addr": "127.0.0.1"}


def listed(ans):
    return {r["room"] for r in ans.get("rooms", [])}


@pytest.fixture
def vault(atriumd, data_dir, ssh_run):
    """atriumd with bob's private room "vault" (running) and alice's open
    room "lab"."""
    srv = atriumd(data_dir)
    for room, user in (("vault", "bob"), ("lab", "alice")):
        make_room(srv, room, user=user)
    make_private(srv, "vault", user="bob")
    return srv


def test_admin_is_the_keys_not_the_requests(vault, data_dir):
    add_key(data_dir, "root2", "atrium-admin")
    m = Monitor(vault, data_dir)
    try:
        # alice's key has no atrium-admin: a request saying admin is not.
        ans, _ = m.ask(type="rooms", admin=True, **who(data_dir, "alice"))
        assert ans["type"] == "rooms"
        assert listed(ans) == {"lab"}, ans
        # A key with atrium-admin sees every room without saying so.
        ans, _ = m.ask(type="rooms", **who(data_dir, "root2"))
        assert listed(ans) == {"lab", "vault"}, ans
    finally:
        m.close()


def test_a_key_acts_only_for_its_own_user(vault, data_dir):
    m = Monitor(vault, data_dir)
    try:
        ans, fds = m.ask(type="rooms", **who(data_dir, "bob", key_of="alice"))
        assert ans.get("errno") == errno.EACCES and not fds, ans
        assert "vault" not in listed(ans)
        ans, fds = m.ask(type="agent", room="vault", kind="chat",
                         **who(data_dir, "bob", key_of="alice"))
        assert ans.get("errno") == errno.EACCES and not fds, ans
        ans, _ = m.ask(type="delete", room="vault",
                       **who(data_dir, "bob", key_of="alice"))
        assert ans.get("rc") == -errno.EACCES, ans
        # A key that is in no line (eve's), without --open.
        ans, fds = m.ask(type="use", room="lab", **who(data_dir, "eve"))
        assert ans.get("state") != "ready" and not fds, ans
    finally:
        m.close()
    assert os.path.isdir(os.path.join(str(data_dir), "rooms", "vault"))


def test_delete_and_export_are_for_a_user_who_may(vault, data_dir, ssh_run):
    m = Monitor(vault, data_dir)
    try:
        ans, _ = m.ask(type="delete", room="vault", **who(data_dir, "alice"))
        assert ans.get("rc") == -errno.EPERM, ans
        ans, fds = m.ask(type="export", room="vault", **who(data_dir, "alice"))
        assert not fds and "may not export" in ans.get("error", ""), ans
        for fd in fds:
            os.close(fd)
    finally:
        m.close()
    rc, out, err = ssh_run(vault, "vault", "echo", "still", user="bob")
    assert (rc, out) == (0, "still\n"), err


def test_a_delete_for_nobody_ends_the_network_process(vault, data_dir):
    m = Monitor(vault, data_dir)
    try:
        body = json.dumps({"type": "delete", "room": "vault"}).encode()
        m.sock.sendall(struct.pack("=I", len(body)) + body)
        assert vault.proc.wait(timeout=30) == 1
    finally:
        m.close()
    assert os.path.isdir(os.path.join(str(data_dir), "rooms", "vault"))
    assert "asked for something it may not" in vault.read_log()


def test_access_names_no_one_to_an_outsider(vault, data_dir):
    add_key(data_dir, "carol")
    invite(vault, "vault", "carol", user="bob")
    m = Monitor(vault, data_dir)
    try:
        # alice is outside bob's private room: the monitor's decision, and
        # neither its owner nor its members.
        ans, fds = m.ask(type="access", room="vault", **{"for": "exec"},
                         **who(data_dir, "alice"))
        assert not fds, ans
        assert ans.get("exists") is True, ans
        assert ans.get("may_enter") is False, ans
        assert ans.get("may_manage") is False, ans
        for field in ("owner", "members", "visibility"):
            assert field not in ans, ans
        text = json.dumps(ans)
        assert "bob" not in text and "carol" not in text, ans
        # Nor why its agent last restarted.
        ans, _ = m.ask(type="why", room="vault", **who(data_dir, "alice"))
        assert ans.get("why") == "", ans
        # A member gets the list; the owner may manage the room.
        ans, _ = m.ask(type="access", room="vault", **{"for": "chat"},
                       **who(data_dir, "carol"))
        assert ans.get("may_enter") is True, ans
        assert ans.get("may_manage") is False, ans
        assert ans.get("owner") == "bob" and ans.get("members") == ["carol"]
        ans, _ = m.ask(type="access", room="vault", **{"for": "delete"},
                       **who(data_dir, "bob"))
        assert ans.get("may_enter") is True and ans.get("may_manage") is True
        # A key that is not the user's gets a refusal, and no list.
        ans, _ = m.ask(type="access", room="vault", **{"for": "exec"},
                       **who(data_dir, "bob", key_of="alice"))
        assert ans.get("errno") == errno.EACCES, ans
        assert "owner" not in ans and "members" not in ans, ans
    finally:
        m.close()
    # The operator's log still says whose room alice was refused.
    assert ("alice refused exec in room 'vault': private, owner bob" in
            vault.read_log())


def test_an_access_for_nobody_ends_the_network_process(vault, data_dir):
    m = Monitor(vault, data_dir)
    try:
        body = json.dumps({"type": "access", "room": "vault",
                           "for": "exec"}).encode()
        m.sock.sendall(struct.pack("=I", len(body)) + body)
        assert vault.proc.wait(timeout=30) == 1
        # It was answered nothing.
        r, _, _ = select.select([m.sock], [], [], 0)
        assert not r or m.sock.recv(4096) == b""
    finally:
        m.close()
    assert "asked for something it may not" in vault.read_log()


def agent_events(sock, *then):
    """Send each of then on sock, then read every event until the agent
    closes the connection."""
    for obj in then:
        try:
            sock.sendall((json.dumps(obj) + "\n").encode())
        except (BrokenPipeError, ConnectionResetError):
            break       # it has already ended the connection
    f = sock.makefile("rb")
    out = []
    try:
        for line in f:
            out.append(json.loads(line))
    except ConnectionResetError:
        pass            # it ended the connection with our lines unread
    f.close()
    return out


def test_the_monitor_writes_the_only_hello(vault, data_dir):
    m = Monitor(vault, data_dir)
    try:
        # alice asks to be an admin in bob's private room: the monitor's
        # hello says who she is, and hers comes too late.
        ans, fds = m.ask(type="agent", room="vault", kind="chat", admin=True,
                         **who(data_dir, "alice"))
        assert ans.get("fd") and len(fds) == 1, ans
        s = socket.socket(fileno=fds[0])
        s.setblocking(True)
        s.settimeout(20)
        evs = agent_events(s, {"type": "hello", "user": "alice",
                               "kind": "chat", "admin": True})
        s.close()
        types = [e["type"] for e in evs]
        assert "welcome" not in types and "access_denied" in types, evs
        # In her own room she is welcomed once; a second hello, as bob,
        # ends the connection.
        ans, fds = m.ask(type="agent", room="lab", kind="control",
                         **who(data_dir, "alice"))
        assert len(fds) == 1, ans
        s = socket.socket(fileno=fds[0])
        s.setblocking(True)
        s.settimeout(20)
        evs = agent_events(s, {"type": "hello", "user": "bob",
                               "kind": "control", "admin": True},
                           {"type": "who"})
        s.close()
        welcomes = [e for e in evs if e["type"] == "welcome"]
        assert [w["user"] for w in welcomes] == ["alice"], evs
        assert any(e["type"] == "error" and "hello" in e["message"]
                   for e in evs), evs
        assert not any(e["type"] == "presence" for e in evs), evs
    finally:
        m.close()


def test_the_agent_takes_one_hello_as_the_first_line(vault):
    # A first line that is not a hello ends the connection.
    a = AgentConn(vault, "lab")
    evs = agent_events(a.sock, {"type": "who"},
                       {"type": "hello", "user": "alice", "kind": "chat"})
    a.close()
    assert [e["type"] for e in evs] == ["error"], evs
    # So does a hello that fails: no second try on the same connection.
    a = AgentConn(vault, "lab")
    evs = agent_events(a.sock, {"type": "hello", "user": "alice",
                                "kind": "nonsense"},
                       {"type": "hello", "user": "alice", "kind": "chat",
                        "admin": True})
    a.close()
    assert [e["type"] for e in evs] == ["error"], evs
    # And a second hello after a good one.
    a = AgentConn(vault, "lab")
    evs = agent_events(a.sock, {"type": "hello", "user": "alice",
                                "kind": "control"},
                       {"type": "hello", "user": "bob", "kind": "control",
                        "admin": True})
    a.close()
    assert [e["type"] for e in evs] == ["welcome", "error"], evs
