"""Any host is a front door (man/atriumd.8, CLUSTER; sshd/net/relay.h).

The front's half: atriumd-net, told by its monitor that the room lives on
another node (use -> remote, with that node's address and host key), relays
the real ssh and sftp clients' sessions there: exec with stdin, stdout,
stderr and exit status, sftp byte for byte (20 MB too), a pty shell; it
names the user, key and address it relays for; it refuses a home whose
host key is not the one the cluster lists; a home that dies tells the user
the room is moving.  The home here is tests/front_door.py's FakeHome.

The home's half: atriumd-net takes a relay only when its monitor says the
key is a node's host key, and only for a user whose key is in its own
authorized_keys; the session is then that user's (the monitor's requests
name the relayed user, key and address), and it is never relayed on.  A
real atriumd without --cluster refuses every relay, even one signed by a
user's own key.

Then the whole of it: three etcd members and two atriumd hosts
(tests/test_cluster.py's fixtures), the room's home on A, people through
B: exec with stdin, stdout, stderr and exit status; sftp of 20 MB both
ways; a chat with one person on each host, who see each other's lines,
and the one on B told the room moves when A dies; relays refused from a
key that is no node's; a relayed command that sees the user's address in
SSH_CONNECTION, not B's; homes advertised by name (the host's name by
default, localhost by --advertise) reached all the same.
"""
import asyncio
import base64
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import asyncssh
import pytest

from conftest import SSH_OPTS, DataDir, free_port, make_room
from front_door import FakeHome, FakeMonitor, NetProcess, keygen
from http_run import token_for
from test_http import wait_http, ws_run
from test_chat import Tmux
from test_access import events
# The cluster's fixtures: three etcd members, atriumd hosts in it.
from test_cluster import cgroup_prefix, etcd, hosts  # noqa: F401

ROOM = "proj"


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t.kill()


def fingerprint(pub_line):
    """SHA256:... of an OpenSSH public key line, as libssh writes it."""
    blob = base64.b64decode(pub_line.split()[1])
    return "SHA256:" + base64.b64encode(
        hashlib.sha256(blob).digest()).decode().rstrip("=")


def wait_for(cond, what, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


@pytest.fixture
def front(build, data_dir, tmp_path):
    """A front (atriumd-net, its monitor faked) whose room ROOM lives on
    a FakeHome; yields (front, home, monitor)."""
    hostkey = str(tmp_path / "front_hostkey")
    front_pub = keygen(hostkey)
    sftp_root = tmp_path / "home_files"
    sftp_root.mkdir()
    home = FakeHome(front_pub, str(sftp_root)).start()
    mon = FakeMonitor(os.path.join(str(data_dir), "authorized_keys"))
    mon.answers = {
        "cmd_begin": lambda req: {"ok": True, "user": req["user"]},
    }
    mon.room_elsewhere("home-node", "127.0.0.1:%d" % home.port, home.hostkey)
    mon.start()
    net = NetProcess(build, hostkey, mon, str(tmp_path / "front.log"))
    net.keys = data_dir.keys
    net.sftp_root = str(sftp_root)
    yield net, home, mon
    net.stop()
    home.stop()
    mon.close()


def ssh(server, *args, user="alice", **kw):
    return subprocess.run(
        ["ssh", "-p", str(server.port), "-i", server.keys[user]] + SSH_OPTS +
        list(args), capture_output=True, timeout=60, **kw)


def test_exec_through_front(front, data_dir):
    net, home, mon = front
    p = ssh(net, ROOM + "@127.0.0.1", "make test", input=b"hello\x00\xff")
    assert p.stdout == b"out:hello\x00\xff", net.read_log()
    assert p.stderr == b"err:make test\n"
    assert p.returncode == 3
    # A command makes no room: the front only asked where the room lives.
    uses = [r for r in mon.requests if r.get("type") == "use"]
    assert uses and all(r.get("create") is False for r in uses), uses
    # The home was told whom the front relays, before any channel.
    who = [u for u, ok in home.users if ok]
    assert who == ["atrium-relay %s alice %s 127.0.0.1" % (
        ROOM, fingerprint(data_dir.pubkey("alice")))]


def test_sftp_put_get_through_front(front, tmp_path):
    net, home, mon = front
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(20 * 1024 * 1024))
    small = tmp_path / "small.bin"
    small.write_bytes(bytes(range(256)) * 300 + b"tail")
    back = tmp_path / "back.bin"
    batch = tmp_path / "batch"
    batch.write_text("put %s big.bin\nput %s small.bin\nget small.bin %s\n"
                     % (src, small, back))
    p = subprocess.run(
        ["sftp", "-P", str(net.port), "-i", net.keys["alice"], "-b",
         str(batch)] + SSH_OPTS + [ROOM + "@127.0.0.1"],
        capture_output=True, timeout=300)
    assert p.returncode == 0, (p.stderr, net.read_log())
    with open(os.path.join(net.sftp_root, "big.bin"), "rb") as f:
        assert f.read() == src.read_bytes()
    assert back.read_bytes() == small.read_bytes()


def test_pty_shell_through_front(front):
    net, home, mon = front
    p = subprocess.Popen(
        ["ssh", "-tt", "-p", str(net.port), "-i", net.keys["alice"]] +
        SSH_OPTS + ["-o", "SetEnv=TERM=xterm", ROOM + "@127.0.0.1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=dict(os.environ, TERM="xterm"))
    out = b""
    os.set_blocking(p.stdout.fileno(), False)

    def seen(text):
        nonlocal out
        chunk = p.stdout.read()
        if chunk:
            out += chunk
        return text in out

    try:
        wait_for(lambda: seen(b"home shell xterm"), "the home's shell")
        p.stdin.write(b"hello from the front\n")
        p.stdin.flush()
        wait_for(lambda: seen(b"echo:hello from the front"), "the echo")
    finally:
        p.kill()
        p.wait()


def test_window_change_and_env_through_front(front, tmux):
    net, home, mon = front
    cmd = " ".join(["ssh", "-tt", "-p", str(net.port), "-i",
                    net.keys["alice"]] + SSH_OPTS +
                   ["-o", "SetEnv=LC_RELAY=fromfront", ROOM + "@127.0.0.1"])
    tmux("new-session", "-d", "-s", "w", "-x", "90", "-y", "30",
         "exec " + cmd)
    tmux.wait("w", "home shell")
    tmux.keys("w", "one", "C-j")
    tmux.wait("w", "echo:one 90x30 env:fromfront")
    tmux("resize-window", "-t", "w", "-x", "70", "-y", "20")
    tmux.keys("w", "two", "C-j")
    tmux.wait("w", "echo:two 70x20 env:fromfront")


def test_home_with_another_host_key_is_refused(front, tmp_path):
    net, home, mon = front
    other = asyncssh.generate_private_key("ssh-ed25519")
    use = dict(mon.answers["use"])
    use["hostkey"] = other.export_public_key().decode().strip()
    mon.answers["use"] = use
    p = ssh(net, ROOM + "@127.0.0.1", "true")
    assert p.returncode == 1
    assert b"cannot be reached" in p.stderr, p.stderr
    assert "not the one the cluster lists" in net.read_log()
    assert not home.users          # no relay was signed for it


def test_home_that_dies_says_the_room_moves(front):
    net, home, mon = front
    p = subprocess.Popen(
        ["ssh", "-p", str(net.port), "-i", net.keys["alice"]] + SSH_OPTS +
        [ROOM + "@127.0.0.1", "sleep"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: "sleep" in home.started, "the command on the home")
    home.kill_connections()
    out, err = p.communicate(timeout=30)
    assert p.returncode == 1
    assert b"the room is moving to another host; reconnect" in err


# ------------------------------------------------------- the home's half --

@pytest.fixture
def home_net(build, data_dir, tmp_path):
    """A home (atriumd-net, its monitor faked) that takes relays signed
    with node_key (a node's host key, so its monitor says); yields
    (home, monitor, node_key_path)."""
    hostkey = str(tmp_path / "home_hostkey")
    keygen(hostkey)
    node_key = str(tmp_path / "node_key")
    node_pub = keygen(node_key)
    mon = FakeMonitor(os.path.join(str(data_dir), "authorized_keys"))

    def relay(req):
        if req.get("hostkey", "").split()[:2] == node_pub.split()[:2]:
            return {"ok": True, "node": "front-node"}
        return {"error": "the key is no current node's host key"}

    mon.answers = {
        "relay": relay,
        "rooms": {"type": "rooms", "rooms": []},
    }
    mon.start()
    net = NetProcess(build, hostkey, mon, str(tmp_path / "home.log"))
    yield net, mon, node_key
    net.stop()
    mon.close()


async def _relay_rooms(port, key_path, username):
    """As a front would: authenticate with key_path under username, then
    ask the rooms subsystem; its output, or the exception."""
    try:
        async with asyncssh.connect(
                "127.0.0.1", port, username=username,
                client_keys=[key_path], known_hosts=None,
                agent_path=None) as conn:
            r = await conn.run(subsystem="rooms", timeout=20)
            return r.stdout
    except (asyncssh.PermissionDenied, asyncssh.DisconnectError) as e:
        return e


def relay_rooms(port, key_path, username):
    return asyncio.run(_relay_rooms(port, key_path, username))


def test_home_takes_a_nodes_relay_as_the_user(home_net, data_dir):
    net, mon, node_key = home_net
    fp = fingerprint(data_dir.pubkey("bob"))
    out = relay_rooms(net.port, node_key,
                      "atrium-relay %s bob %s 192.0.2.7" % (ROOM, fp))
    assert isinstance(out, str) and '"rooms"' in out, (out, net.read_log())
    asked = [r for r in mon.requests if r.get("type") == "rooms"]
    assert asked and asked[0]["user"] == "bob" and asked[0]["key"] == fp \
        and asked[0]["addr"] == "192.0.2.7"


async def _relay_exec(port, key_path, username, command):
    async with asyncssh.connect(
            "127.0.0.1", port, username=username, client_keys=[key_path],
            known_hosts=None, agent_path=None) as conn:
        return await conn.run(command, timeout=20)


def test_home_does_not_relay_a_relayed_session_on(home_net, data_dir):
    net, mon, node_key = home_net
    # This host is no longer the room's home: a third node is.
    mon.answers["cmd_begin"] = lambda req: {"ok": True, "user": req["user"]}
    mon.room_elsewhere("third", "127.0.0.1:9",
                       "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA")
    fp = fingerprint(data_dir.pubkey("bob"))
    r = asyncio.run(_relay_exec(
        net.port, node_key, "atrium-relay %s bob %s 127.0.0.1" % (ROOM, fp),
        "true"))
    assert r.exit_status == 1
    assert "the room is moving to another host; reconnect" in r.stderr
    assert "relayed to room" not in net.read_log()
    assert "not relaying a relayed session on" in net.read_log()


def test_home_refuses_a_relay_from_a_key_not_a_nodes(home_net, data_dir):
    net, mon, node_key = home_net
    fp = fingerprint(data_dir.pubkey("alice"))
    # alice's own key, listed in authorized_keys, is not a node's host key.
    out = relay_rooms(net.port, data_dir.keys["alice"],
                      "atrium-relay %s alice %s 127.0.0.1" % (ROOM, fp))
    assert isinstance(out, asyncssh.PermissionDenied), out
    assert not [r for r in mon.requests if r.get("type") == "rooms"]


def test_home_refuses_a_forged_identity(home_net, data_dir):
    net, mon, node_key = home_net
    alice = fingerprint(data_dir.pubkey("alice"))
    bob = fingerprint(data_dir.pubkey("bob"))
    eve = fingerprint(data_dir.pubkey("eve"))
    # A user who is no node, signing with her own (listed) key, claims to
    # relay for bob.
    out = relay_rooms(net.port, data_dir.keys["alice"],
                      "atrium-relay %s bob %s 127.0.0.1" % (ROOM, bob))
    assert isinstance(out, asyncssh.PermissionDenied), out
    # A node relays for someone with a key that is not theirs here, a key
    # this host does not list, or from no address.
    for name in ("atrium-relay %s bob %s 127.0.0.1" % (ROOM, alice),
                 "atrium-relay %s eve %s 127.0.0.1" % (ROOM, eve),
                 "atrium-relay %s alice %s not-an-address" % (ROOM, alice)):
        out = relay_rooms(net.port, node_key, name)
        assert isinstance(out, asyncssh.PermissionDenied), (name, out)
    assert not [r for r in mon.requests if r.get("type") == "rooms"]


def test_atriumd_without_cluster_refuses_relays(atriumd, data_dir):
    server = atriumd(data_dir)
    fp = fingerprint(data_dir.pubkey("alice"))
    out = relay_rooms(server.port, data_dir.keys["alice"],
                      "atrium-relay %s alice %s 127.0.0.1" % (ROOM, fp))
    assert isinstance(out, asyncssh.PermissionDenied), out
    assert "it takes no relays" in server.read_log()


# ------------------------------------- two atriumd hosts of one cluster --
# Three etcd members and two atriumd hosts (tests/test_cluster.py's
# fixtures); the room lives on A, people reach it through B.

def _room_on_a(hosts, etcd, ssh_run, http=False):
    a, b = hosts(2, http=http)
    make_room(a, "demo", timeout=60)
    assert etcd.get("/atrium/rooms/demo/home")[0] == "a"
    return a, b


def test_cluster_command_for_a_room_nowhere_makes_none(hosts, etcd, ssh_run):
    """A command, sftp or the atrium subsystem naming a room that exists
    on no host is refused as on a single host, and claims nothing: the
    room is not made, here or anywhere."""
    a, b = _room_on_a(hosts, etcd, ssh_run)
    rc, _, err = ssh_run(b, "nowhere", "true")
    assert rc == 1 and "there is no room 'nowhere'" in err, err
    assert etcd.get("/atrium/rooms/nowhere/home")[0] is None
    assert not os.path.exists(os.path.join(b.data, "rooms", "nowhere"))
    # The room that does exist, on A, is reached through B the same way.
    rc, out, err = ssh_run(b, "demo", "echo through-b")
    assert (rc, out) == (0, "through-b\n"), err


def test_cluster_exec_through_a_host_that_is_not_home(hosts, etcd, ssh_run):
    a, b = _room_on_a(hosts, etcd, ssh_run)
    rc, out, err = ssh_run(b, "demo", "cat > in.txt; wc -c < in.txt; "
                           "echo to-stderr >&2; exit 7",
                           input="x" * 100000 + "\n")
    assert (rc, out.strip(), err) == (7, "100001", "to-stderr\n"), \
        b.read_log()
    # It ran in the room on A: the file is in A's workspace, through A.
    rc, out, _ = ssh_run(a, "demo", "wc -c < in.txt")
    assert out.strip() == "100001"
    assert not os.path.exists(os.path.join(b.data, "rooms", "demo"))
    assert etcd.get("/atrium/rooms/demo/home")[0] == "a"
    assert "relayed by node b" in a.read_log()


def test_cluster_sftp_through_a_host_that_is_not_home(hosts, etcd, ssh_run,
                                                     tmp_path):
    a, b = _room_on_a(hosts, etcd, ssh_run)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(20 * 1024 * 1024))
    back = tmp_path / "back.bin"
    batch = tmp_path / "batch"
    batch.write_text("put %s big.bin\nget big.bin %s\n" % (big, back))
    p = subprocess.run(
        ["sftp", "-P", str(b.port), "-i", b.keys["alice"], "-b",
         str(batch)] + SSH_OPTS + ["demo@127.0.0.1"],
        capture_output=True, timeout=600)
    assert p.returncode == 0, (p.stderr, b.read_log())
    assert hashlib.sha256(back.read_bytes()).digest() == \
        hashlib.sha256(big.read_bytes()).digest()
    rc, out, _ = ssh_run(a, "demo", "sha256sum big.bin")
    assert out.split()[0] == hashlib.sha256(big.read_bytes()).hexdigest()


def test_cluster_chat_people_on_two_hosts_see_each_other(hosts, etcd,
                                                         ssh_run, tmux):
    a, b = _room_on_a(hosts, etcd, ssh_run)
    tmux.open("on-a", a, "demo", user="alice")
    # Under a shell: the goodbye is written as ssh exits, and tmux stops
    # reading a pane whose own process has ended.
    tmux.open("on-b", b, "demo", user="bob", under_shell=True)
    tmux.keys("on-b", "hello from bob on b", "Enter")
    tmux.wait("on-a", "hello from bob on b")
    tmux.keys("on-a", "hi bob, alice here", "Enter")
    tmux.wait("on-b", "hi bob, alice here")
    assert "bob authenticated" in a.read_log()
    # The room's home dies (both of its processes, at once): bob, on B,
    # is told the room moves.
    os.kill(a.network_pid(), signal.SIGKILL)
    a.proc.kill()
    tmux.wait("on-b", "the room is moving to another host; reconnect")


def _curl(port, token, method, path, data_args=(), source="127.0.0.5"):
    """curl from source to atriumd-http on port: (status, body bytes)."""
    p = subprocess.run(
        ["curl", "-sS", "--interface", source, "-X", method, "-o", "-",
         "-w", "\n%{http_code}", "-H", "Authorization: Bearer " + token]
        + list(data_args) + ["http://127.0.0.1:%d%s" % (port, path)],
        capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    body, _, code = p.stdout.rpartition(b"\n")
    return int(code), body


def _exec_records(body):
    return [json.loads(line) for line in body.decode().splitlines()
            if line.strip()]


def _exec_out(recs, stream="stdout"):
    return b"".join(base64.b64decode(r["data"]) for r in recs
                    if r.get("stream") == stream)


def _http_cluster(hosts, etcd, ssh_run):
    """A and B with HTTP, the room demo on A, and alice's token (made on
    B) once A's mirror of the tokens has it too."""
    a, b = _room_on_a(hosts, etcd, ssh_run, http=True)
    wait_http(a.http_port)
    wait_http(b.http_port)
    token = token_for(b, "alice")
    wait_for(lambda: _curl(a.http_port, token, "GET",
                           "/api/rooms/demo/files/")[0] == 200,
             "the token on A")
    return a, b, token


def test_cluster_http_exec_and_files_through_a_host_that_is_not_home(
        hosts, etcd, ssh_run, tmp_path):
    """exec and files over HTTP through B reach the room on A, byte for
    byte, with A's own answers; A sees the user's address, not B's."""
    a, b, token = _http_cluster(hosts, etcd, ssh_run)
    code, body = _curl(b.http_port, token, "POST", "/api/rooms/demo/exec?"
                       "command=echo+out%3B+echo+err+%3E%262%3B+exit+3")
    assert code == 200, (body, b.read_log())
    recs = _exec_records(body)
    assert _exec_out(recs) == b"out\n"
    assert _exec_out(recs, "stderr") == b"err\n"
    assert recs[-1] == {"exit": 3}
    # Some MB of stdin, intact, both as one length and chunked.
    big = tmp_path / "big"
    big.write_bytes(os.urandom(1 << 20) * 6)
    want = hashlib.sha256(big.read_bytes()).hexdigest()
    for extra in ([], ["-H", "Transfer-Encoding: chunked"]):
        code, body = _curl(b.http_port, token, "POST",
                           "/api/rooms/demo/exec?command=sha256sum",
                           ["--data-binary", "@" + str(big)] + extra)
        assert code == 200, (body, a.read_log()[-3000:], b.read_log()[-3000:])
        recs = _exec_records(body)
        assert _exec_out(recs).split()[0].decode() == want, recs[-1]
        assert recs[-1] == {"exit": 0}
    # Files: put through B, read through B and on A, the same bytes.
    blob = tmp_path / "blob"
    blob.write_bytes(os.urandom(3 << 20))
    code, _ = _curl(b.http_port, token, "PUT",
                    "/api/rooms/demo/files/up/blob.bin",
                    ["--data-binary", "@" + str(blob)])
    assert code in (200, 201, 204), code
    for port in (b.http_port, a.http_port):
        code, got = _curl(port, token, "GET",
                          "/api/rooms/demo/files/up/blob.bin")
        assert code == 200 and got == blob.read_bytes(), (port, code)
    rc, out, _ = ssh_run(a, "demo", "sha256sum up/blob.bin")
    assert out.split()[0] == hashlib.sha256(blob.read_bytes()).hexdigest()
    # A's log names the user's address (127.0.0.5), not B's.
    assert "room=demo" in a.read_log()
    assert any("addr=127.0.0.5" in line and "blob.bin" in line
               for line in a.read_log().splitlines()), a.read_log()
    # One link to A carried every one of those requests, one after the
    # other: a key exchange once, not per request.
    links = [l for l in b.read_log().splitlines()
             if "relayed to room 'demo' on a" in l and "http link" in l]
    assert len(links) == 1, links


def test_cluster_http_tokens_through_a_host_that_is_not_home(
        hosts, etcd, ssh_run):
    """A bad token through B is refused as on one host, and so is a
    token limited to other rooms."""
    a, b, token = _http_cluster(hosts, etcd, ssh_run)
    code, body = _curl(b.http_port, "atr_" + "x" * 40, "GET",
                       "/api/rooms/demo/files/")
    assert code == 401, body
    rc, out, err = ssh_run(b, "anything", "atrium-token", "create",
                           "--rooms", "other")
    assert rc == 0, err
    other = out.splitlines()[0]
    code, body = _curl(b.http_port, other, "GET", "/api/rooms/demo/files/")
    assert code == 403 and b"not for room 'demo'" in body, (code, body)
    # One kept-alive connection to B: relayed requests and B's own, in
    # turn, each answered.
    c = http.client.HTTPConnection("127.0.0.1", b.http_port, timeout=30)
    for path in ("/api/rooms/demo/files/", "/health",
                 "/api/rooms/demo/files/"):
        c.request("GET", path, headers={"Authorization": "Bearer " + token})
        resp = c.getresponse()
        assert resp.status == 200, (path, resp.status, resp.read())
        resp.read()
    c.close()


class _Sse:
    """The room's event stream on port, read event by event."""

    def __init__(self, port, token):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.conn.request("GET", "/api/rooms/demo/events",
                          headers={"Authorization": "Bearer " + token})
        self.resp = self.conn.getresponse()

    def next(self):
        ev = {}
        while True:
            line = self.resp.fp.readline()
            assert line, "the stream ended"
            line = line.decode().rstrip("\n")
            if not line and ev:
                return ev
            if line and not line.startswith(":"):
                key, _, value = line.partition(": ")
                ev[key] = value

    def message(self):
        """The text of the next chat message."""
        while True:
            ev = self.next()
            if ev.get("event") == "message":
                return json.loads(ev["data"])["text"]


def test_cluster_http_events_and_websocket_through_a_host_that_is_not_home(
        hosts, etcd, ssh_run):
    """The room's event stream, through B, sees a chat line said on A; a
    WebSocket through B says a line that A's own event stream sees."""
    a, b, token = _http_cluster(hosts, etcd, ssh_run)
    sse = _Sse(b.http_port, token)
    assert sse.resp.status == 200, sse.resp.read()
    assert sse.resp.getheader("Content-Type").startswith("text/event-stream")
    while sse.next().get("event") != "welcome":
        pass
    events(a, "demo", {"type": "chat", "text": "said on a"},
           until=lambda e: e["type"] == "message" and
           e.get("text") == "said on a")
    assert sse.message() == "said on a"
    sse.conn.close()
    on_a = _Sse(a.http_port, token)
    while on_a.next().get("event") != "welcome":
        pass
    rc, out, err = ws_run(None, "demo", token, """
first = json.loads(await ws.recv())
print(first["type"])
await ws.send(json.dumps({"type": "chat", "text": "said through b"}))
while True:
    ev = json.loads(await asyncio.wait_for(ws.recv(), 20))
    if ev["type"] == "message" and ev["text"] == "said through b":
        print(ev["user"], ev["text"])
        break
""", base="ws://127.0.0.1:%d" % b.http_port)
    assert rc == 0, (err, b.read_log()[-2000:])
    assert out.splitlines() == ["welcome", "alice said through b"], out
    assert on_a.message() == "said through b"
    on_a.conn.close()


def test_cluster_relayed_http_is_never_relayed_on(hosts, etcd, ssh_run,
                                                  data_dir, tmp_path):
    """A request relayed to B for a room B does not serve (it lives on
    A: the two disagree for a moment) is answered, not relayed again."""
    a, b, token = _http_cluster(hosts, etcd, ssh_run)
    name = _relay_name(data_dir)
    node_key = _node_key(a, tmp_path)
    req = ("GET /api/rooms/demo/files/ HTTP/1.1\r\nHost: b\r\n"
           "Authorization: Bearer %s\r\nConnection: close\r\n\r\n" % token)
    out, _ = _relay_http_once_known(b, node_key, name, req.encode())
    assert out.startswith(b"HTTP/1.1 503"), out
    assert b"the room is moving to another host; try again" in out, out
    # B opened no link to relay it on.
    assert "relayed to room 'demo'" not in b.read_log(), b.read_log()


def test_cluster_refuses_relays_from_keys_not_a_nodes(hosts, etcd, ssh_run,
                                                      data_dir):
    a, b = _room_on_a(hosts, etcd, ssh_run)
    alice = fingerprint(data_dir.pubkey("alice"))
    bob = fingerprint(data_dir.pubkey("bob"))
    # alice's own key is no node's host key: neither for herself nor,
    # forged, for bob.
    for name in ("atrium-relay demo alice %s 127.0.0.1" % alice,
                 "atrium-relay demo bob %s 127.0.0.1" % bob):
        out = relay_rooms(a.port, data_dir.keys["alice"], name)
        assert isinstance(out, asyncssh.PermissionDenied), (name, out)
    assert "no current node's host key" in a.read_log()


def test_cluster_relayed_command_sees_the_users_address(hosts, etcd,
                                                        ssh_run):
    a, b = _room_on_a(hosts, etcd, ssh_run)
    # The user reaches B from 127.0.0.5; B reaches A from 127.0.0.1.
    p = subprocess.run(
        ["ssh", "-b", "127.0.0.5", "-p", str(b.port), "-i", b.keys["alice"]]
        + SSH_OPTS + ["demo@127.0.0.1",
                      "echo $SSH_CONNECTION; echo $SSH_CLIENT"],
        capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    # The user's address, port 0 (the relay does not carry the user's
    # port), then the home's own address and port.
    assert p.stdout.splitlines() == ["127.0.0.5 0 127.0.0.1 %d" % a.port,
                                     "127.0.0.5 0 %d" % a.port], b.read_log()
    assert "relayed by node b for 127.0.0.5" in a.read_log()


def _cluster_host(atriumd, data, etcd, cgroup_prefix, name, *extra):
    h = atriumd(data, "--cluster", "etcd=" + etcd.urls(), "--node", name,
                "--cluster-lease", "3",
                "--cgroup-parent", cgroup_prefix + "-" + name, *extra)
    wait_for(lambda: etcd.get("/atrium/nodes/" + name)[0],
             "node %s registered" % name)
    return h


def test_cluster_relays_to_homes_advertised_by_name(atriumd, data_dir, etcd,
                                                    cgroup_prefix, tmp_path,
                                                    ssh_run):
    name = socket.gethostname()
    try:
        socket.getaddrinfo(name, None)
    except socket.gaierror:
        pytest.skip("this host's name %r does not resolve" % name)
    # A listens on every address and says nothing: it is advertised by
    # this host's name.  B is advertised as localhost, by --advertise.
    port_a, port_b = free_port(), free_port()
    a = _cluster_host(atriumd, data_dir, etcd, cgroup_prefix, "a",
                      "--listen", ":%d" % port_a)
    data_b = tmp_path / "data-b"
    data_b.mkdir(mode=0o700)
    shutil.copy(os.path.join(str(data_dir), "authorized_keys"),
                str(data_b / "authorized_keys"))
    b = _cluster_host(atriumd, DataDir(str(data_b), data_dir.keys), etcd,
                      cgroup_prefix, "b", "--listen", "127.0.0.1:%d" % port_b,
                      "--advertise", "localhost:%d" % port_b)
    assert json.loads(etcd.get("/atrium/nodes/a")[0])["advertise"] == \
        "%s:%d" % (name, port_a)
    for home, front, room in ((a, b, "demo"), (b, a, "other")):
        make_room(home, room, timeout=60)
        rc, out, err = ssh_run(front, room, "echo relayed")
        assert (rc, out) == (0, "relayed\n"), (err, front.read_log())
    assert "relayed by node b" in a.read_log()
    assert "relayed by node a" in b.read_log()


def _relay_name(data_dir):
    """The user name a front relays alice's room demo under, from
    127.0.0.9."""
    fp = fingerprint(data_dir.pubkey("alice"))
    return "atrium-relay demo alice %s 127.0.0.9" % fp


def _node_key(node, tmp_path):
    """node's own host key, saved again by ssh-keygen (libssh pads the
    file in a way asyncssh does not read)."""
    path = str(tmp_path / ("hostkey-%d" % node.port))
    shutil.copy(os.path.join(node.data, "hostkey"), path)
    os.chmod(path, 0o600)
    subprocess.run(["ssh-keygen", "-q", "-p", "-N", "", "-f", path],
                   check=True, capture_output=True, timeout=30)
    return path


def _relay_http_once_known(home, node_key, name, request):
    """_relay_http to home, asked again while home refuses the key: it
    reads the cluster's nodes now and then, and until it has seen the
    other node join it refuses its key (as a front retries, so does
    this)."""
    deadline = time.time() + 30
    while True:
        try:
            return asyncio.run(_relay_http(home.port, node_key, name,
                                           request))
        except asyncssh.PermissionDenied:
            assert time.time() < deadline, home.read_log()
            time.sleep(0.2)


async def _relay_http(port, key_path, username, request):
    """As a front's atriumd-net would: the atrium-http subsystem on a
    relay session, request written, the home's answer read to its end."""
    async with asyncssh.connect(
            "127.0.0.1", port, username=username, client_keys=[key_path],
            known_hosts=None, agent_path=None) as conn:
        proc = await conn.create_process(subsystem="atrium-http",
                                         encoding=None)
        proc.stdin.write(request)
        out = await asyncio.wait_for(proc.stdout.read(), 30)
        err = await asyncio.wait_for(proc.stderr.read(), 30)
        return out, err


def test_cluster_home_serves_http_relayed_by_a_node(hosts, etcd, ssh_run,
                                                    data_dir, tmp_path):
    """The home's half of relayed HTTP: a node's relay session asks for
    the atrium-http subsystem, and the home's own atriumd-http serves
    the bytes as a connection from the relayed user's address (its log
    says so), checking the request's own token; a user's own session
    may not ask for it."""
    a, b = _room_on_a(hosts, etcd, ssh_run, http=True)
    wait_http(a.http_port)
    ssh_run(a, "demo", "printf relayed-bytes > hello.txt")
    token = token_for(a, "alice")
    name = _relay_name(data_dir)
    node_key = _node_key(b, tmp_path)
    req = ("GET /api/rooms/demo/files/hello.txt HTTP/1.1\r\nHost: a\r\n"
           "Authorization: Bearer %s\r\nConnection: close\r\n\r\n" % token)
    out, err = _relay_http_once_known(a, node_key, name, req.encode())
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), (out, err, a.read_log())
    assert body == b"relayed-bytes", out
    assert "addr=127.0.0.9" in a.read_log()
    # A bad token through the relay is refused as it is at the home.
    req = ("GET /api/rooms/demo/files/hello.txt HTTP/1.1\r\nHost: a\r\n"
           "Authorization: Bearer atr_nope\r\nConnection: close\r\n\r\n")
    out, _ = asyncio.run(_relay_http(a.port, node_key, name, req.encode()))
    assert out.startswith(b"HTTP/1.1 401"), out
    # alice's own session is no relay: the subsystem is not there for it.
    p = subprocess.run(
        ["ssh", "-p", str(a.port), "-i", a.keys["alice"]] + SSH_OPTS +
        ["-s", "demo@127.0.0.1", "atrium-http"], input=req.encode(),
        capture_output=True, timeout=60)
    assert p.returncode != 0 and b"HTTP/1.1" not in p.stdout, p


def test_cluster_http_empty_chunked_body_after_a_wait(hosts, etcd, ssh_run):
    """A request with an empty chunked body, for a room B has not looked
    up yet (it waits for the cluster's answer first), is relayed whole
    and answered at once, not when A's request timeout is up."""
    a, b = _room_on_a(hosts, etcd, ssh_run, http=True)
    wait_http(a.http_port)
    wait_http(b.http_port)
    token = token_for(b, "alice")
    wait_for(lambda: _curl(a.http_port, token, "GET",
                           "/api/rooms/demo/files/")[0] == 200,
             "the token on A")
    # curl (which waits for 100 Continue before its body), and a client
    # that sends the empty body with the head, as one write.
    for room in ("fresh", "fresh2"):
        make_room(a, room, timeout=60)
        start = time.monotonic()
        if room == "fresh":
            code, body = _curl(b.http_port, token, "POST",
                               "/api/rooms/%s/exec?command=wc+-c" % room,
                               ["-m", "8", "-H", "Transfer-Encoding: chunked",
                                "--data-binary", "@/dev/null"])
        else:
            s = socket.create_connection(("127.0.0.1", b.http_port),
                                         timeout=8)
            s.sendall(("POST /api/rooms/%s/exec?command=wc+-c HTTP/1.1\r\n"
                       "Host: b\r\nAuthorization: Bearer %s\r\n"
                       "Transfer-Encoding: chunked\r\nConnection: close"
                       "\r\n\r\n0\r\n\r\n" % (room, token)).encode())
            resp = http.client.HTTPResponse(s)
            resp.begin()
            code, body = resp.status, resp.read()
            s.close()
        assert code == 200, (room, body, b.read_log()[-2000:])
        recs = _exec_records(body)
        assert _exec_out(recs).strip() == b"0", recs
        assert recs[-1] == {"exit": 0}
        assert time.monotonic() - start < 8, room
    # One info line per link and one per request, on each host: B's link
    # to A and its request line; A's link and its request line.
    on_b = [l for l in b.read_log().splitlines() if "fresh2" in l]
    assert len(on_b) == 2, on_b
    assert "relayed to room 'fresh2' on a" in on_b[0], on_b
    assert "POST /api/rooms/fresh2/exec 200" in on_b[1], on_b
    on_a = [l for l in a.read_log().splitlines() if "HTTP relayed" in l
            or "room 'fresh2', relayed" in l or "/api/rooms/fresh2/" in l]
    assert len(on_a) == 2 and "relayed by node b" in on_a[0], on_a


def _raw_get(port, path, token):
    """A GET on a socket of its own: (socket, status line)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "\r\n" % (path, token)).encode())
    f = s.makefile("rb")
    return s, f, f.readline()


def test_cluster_http_relays_at_most_128_at_once(hosts, etcd, ssh_run):
    """128 event streams through B are relayed; the next request for the
    room on A is answered 503 with the reason, and once a stream ends a
    new request is relayed again."""
    a, b = hosts(2, http=True, extra=("--http-per-source", "400"))
    make_room(a, "demo", timeout=60)
    wait_http(a.http_port)
    wait_http(b.http_port)
    token = token_for(b, "alice")
    wait_for(lambda: _curl(a.http_port, token, "GET",
                           "/api/rooms/demo/files/")[0] == 200,
             "the token on A")
    streams = []
    try:
        for _ in range(128):
            s, f, status = _raw_get(b.http_port, "/api/rooms/demo/events",
                                    token)
            streams.append((s, f))
            assert status.startswith(b"HTTP/1.1 200"), \
                (len(streams), status, b.read_log()[-2000:])
        code, body = _curl(b.http_port, token, "GET",
                           "/api/rooms/demo/files/")
        assert code == 503, body
        assert b"this host relays as many requests to other hosts as it " \
            b"may now; try again" in body, body
        # B's own routes are not relayed: they are served still.
        assert _curl(b.http_port, token, "GET", "/health")[0] == 200
        s, f = streams.pop()
        f.close()
        s.close()
        # B sees the client gone when the stream next moves (a ping).
        wait_for(lambda: _curl(b.http_port, token, "GET",
                               "/api/rooms/demo/files/")[0] == 200,
                 "a relay's place free again", timeout=40)
    finally:
        for s, f in streams:
            f.close()
            s.close()


def test_cluster_http_home_without_http(hosts, etcd, ssh_run):
    """A room whose home serves no HTTP, asked through B: 502 "the room's
    host did not answer", and B's log says A's reason."""
    a, b = hosts(2, http=[False, True],
                 extra=("--http-max-headers", "400000"))
    make_room(a, "demo", timeout=60)
    wait_http(b.http_port)
    token = token_for(b, "alice")
    code, body = _curl(b.http_port, token, "GET", "/api/rooms/demo/files/")
    assert code == 502, (body, b.read_log()[-2000:])
    assert b"the room's host did not answer" in body, body
    wait_for(lambda: "the home says: atrium:" in b.read_log(),
             "the home's reason in B's log")
    said = [l for l in b.read_log().splitlines() if "the home says" in l]
    assert "this host serves no HTTP" in said[0], said
    # A head B takes but cannot relay whole (past 128 KiB) is refused,
    # not sent on without the headers that did not fit.
    c = http.client.HTTPConnection("127.0.0.1", b.http_port, timeout=30)
    c.request("GET", "/api/rooms/demo/files/",
              headers={"Authorization": "Bearer " + token,
                       "X-Big": "x" * 200000})
    resp = c.getresponse()
    code, body = resp.status, resp.read()
    c.close()
    assert code == 431, body
    assert b"too large to relay to the room's host" in body, body
