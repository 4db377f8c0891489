"""Stand-ins for tests/test_front_door.py: a network process (atriumd-net)
run under a monitor the test answers, and a room's home that speaks SSH.

- FakeMonitor: the monitor's end of privsep.h's request socket, answering
  each request from a table the test sets (and recording them), so that
  atriumd-net can be told that a room lives on another node or that a key
  is a node's host key (relay), as the monitor does with etcd in a
  cluster.  A room on another node is answered as sshd/monitor/monitor.c
  answers it (room_elsewhere): `access` says the room is not on this host,
  which is a cluster's ({exists: false, cluster: true}), and `use` says
  where it lives ({state: remote, node, addr, hostkey}).
- NetProcess: build/atriumd-net started as atriumd starts it (fds 3 to 6,
  this process as its monitor), dropping to nobody.
- FakeHome: an asyncssh server that plays a room's home: it takes relays
  only from one host key, records the user name each came with, and
  serves exec (stdin echoed with a prefix, a line on stderr, exit status
  3; "sleep" waits for EOF), sftp (a directory), and a pty shell that
  echoes lines with its terminal's size and LC_RELAY from its
  environment.
"""
import asyncio
import json
import os
import socket
import struct
import subprocess
import threading

import asyncssh


def keygen(path, comment="host"):
    """A new ed25519 key pair at path (OpenSSH format); the public line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                    comment, "-f", path], check=True)
    with open(path + ".pub") as f:
        return " ".join(f.read().split()[:2])


class FakeMonitor:
    """Answers atriumd-net's requests (privsep.h frames) on a thread."""

    def __init__(self, authorized_keys):
        self.authorized_keys = authorized_keys
        self.answers = {}          # type -> dict, or callable(req) -> dict
        self.requests = []
        self.net_end, self.mine = socket.socketpair()
        self.ev_net, self.ev_mine = socket.socketpair()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def start(self):
        self.thread.start()

    def room_elsewhere(self, node, addr, hostkey):
        """Answer as a cluster host's monitor does for a room that another
        node serves: `access` finds no room here (monitor_access: exists
        false, cluster true, and what the key may do), `use` names the
        home (placement_use: state remote)."""
        self.answers["access"] = {
            "exists": False, "cluster": True, "may_create": True,
            "may_enter": False, "may_manage": False}
        self.answers["use"] = {"state": "remote", "node": node,
                               "addr": addr, "hostkey": hostkey}

    def _recv_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.mine.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def _answer(self, req):
        t = req.get("type")
        if t == "authkeys":
            fd = os.open(self.authorized_keys, os.O_RDONLY)
            return {"fd": True}, [fd]
        a = self.answers.get(t, {})
        if callable(a):
            a = a(req)
        return a, []

    def _serve(self):
        try:
            while True:
                (n,) = struct.unpack("=I", self._recv_exact(4))
                req = json.loads(self._recv_exact(n))
                self.requests.append(req)
                ans, fds = self._answer(req)
                body = json.dumps(ans).encode()
                head = struct.pack("=I", len(body))
                if fds:
                    socket.send_fds(self.mine, [head], fds)
                    for fd in fds:
                        os.close(fd)
                    self.mine.sendall(body)
                else:
                    self.mine.sendall(head + body)
        except (EOFError, OSError):
            pass

    def close(self):
        for s in (self.net_end, self.mine, self.ev_net, self.ev_mine):
            s.close()


class NetProcess:
    """build/atriumd-net with the fake monitor, on 127.0.0.1:port."""

    def __init__(self, build, hostkey, monitor, log_path):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.host = "127.0.0.1"
        self.hostkey_fd = os.open(hostkey, os.O_RDONLY)
        fds = [self.listener.fileno(), self.hostkey_fd,
               monitor.net_end.fileno(), monitor.ev_net.fileno()]

        def place():
            # fds 3 to 6, as sshd/net/net_main.c wants them.
            tmp = [os.dup(fd) for fd in fds]
            for i, fd in enumerate(tmp):
                os.dup2(fd, 3 + i)
            os.closerange(7, 1024)

        self.log = open(log_path, "a")
        self.proc = subprocess.Popen(
            [os.path.join(build, "atriumd-net"), str(os.getpid()), "65534",
             "65534", "nobody"], preexec_fn=place, close_fds=False,
            stdout=self.log, stderr=self.log,
            env={"ATRIUM_LOG": "debug"})
        self.log_path = log_path

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.listener.close()
        os.close(self.hostkey_fd)
        self.log.close()


class _HomeServer(asyncssh.SSHServer):
    def __init__(self, home):
        self.home = home

    def connection_made(self, conn):
        self.home.conns.append(conn)

    def begin_auth(self, username):
        return True

    def public_key_auth_supported(self):
        return True

    def validate_public_key(self, username, key):
        ok = key.export_public_key().decode().split()[:2] == \
            self.home.relay_key.split()[:2]
        self.home.users.append((username, ok))
        return ok


class FakeHome:
    """An SSH server on 127.0.0.1 that plays a room's home (see above)."""

    def __init__(self, relay_key, sftp_root):
        self.relay_key = relay_key      # the front's host key, public
        self.sftp_root = sftp_root
        self.key = asyncssh.generate_private_key("ssh-ed25519")
        self.hostkey = self.key.export_public_key().decode().strip()
        self.users = []                 # (user name, accepted)
        self.started = []               # commands begun (None: a shell)
        self.conns = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever,
                                       daemon=True)
        self.server = None
        self.port = None

    async def _process(self, process):
        self.started.append(process.command)
        if process.command is None:
            await self._shell(process)
            return
        if process.command == "sleep":
            await process.stdin.read()
            process.exit(0)
            return
        data = await process.stdin.read()
        process.stdout.write(b"out:" + data)
        process.stderr.write(b"err:" + process.command.encode() + b"\n")
        process.exit(3)

    async def _shell(self, process):
        term = process.get_terminal_type() or "none"
        cols, rows = process.get_terminal_size()[:2]
        process.stdout.write(("home shell %s %dx%d\r\n" %
                              (term, cols, rows)).encode())
        while True:
            try:
                line = await process.stdin.readline()
            except asyncssh.TerminalSizeChanged:
                continue
            if not line:
                break
            cols, rows = process.get_terminal_size()[:2]
            env = process.env.get("LC_RELAY", "-")
            process.stdout.write(b"echo:" + line.strip() + (
                " %dx%d env:%s\r\n" % (cols, rows, env)).encode())
        process.exit(0)

    async def _start(self):
        self.server = await asyncssh.create_server(
            lambda: _HomeServer(self), "127.0.0.1", 0,
            server_host_keys=[self.key], process_factory=self._process,
            sftp_factory=lambda chan: asyncssh.SFTPServer(
                chan, chroot=self.sftp_root.encode()),
            encoding=None, allow_scp=False)
        self.port = self.server.sockets[0].getsockname()[1]

    def start(self):
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    def kill_connections(self):
        """The home dies: every connection cut at once."""
        def cut():
            for c in self.conns:
                c.abort()
        self.loop.call_soon_threadsafe(cut)

    def stop(self):
        async def close():
            self.server.close()
            for c in self.conns:
                c.abort()
        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
