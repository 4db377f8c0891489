"""Fixtures shared by Atrium's integration tests.

- build:        the build directory ($ATRIUM_BUILD, default build), checked
                once to hold every program.
- data_dir:     a fresh DATA directory whose authorized_keys lets in "alice"
                and "bob" (new ed25519 key pairs made with ssh-keygen); the
                key of "eve" exists but is not authorized.
- atriumd:      a factory: atriumd(data, *extra_args) starts build/atriumd on
                127.0.0.1 and a free port, waits until the port answers, and
                at teardown stops it (SIGTERM, then SIGKILL), unmounts what is
                left under DATA/run and kills any child left behind.
- ssh_run:      run the real OpenSSH client: ssh_run(server, room, *cmd,
                user="alice", input=None) -> (exit code, stdout, stderr).
- model:        a scripted model server (tests/model_server.py's ModelServer,
                or the class a module's model_class fixture names), started
                and stopped around the test; model_server is the same one.
- alone:        a mark: the test changes the host (installs a package, adds
                a system user) and runs with no other test beside it.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/ (make
check runs the tests side by side: pytest -n, from python3-pytest-xdist).
"""
import fcntl
import glob
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("ATRIUM_BUILD", "build")
BUILD_DIR = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
PROGRAMS = ("atriumd", "atriumd-net", "atriumd-http", "atrium-fs", "atrium-agent",
            "atrium-sandbox-init")
USERS = ("alice", "bob", "eve")
AUTHORIZED = ("alice", "bob")

_test_serial = itertools.count()

# The two lock files of the tests' reader-writer lock (see run_alone_or_beside).
HOST_LOCKS = ["/tmp/atrium-tests-%d.%s" % (os.getuid(), n)
              for n in ("gate", "run")]

SSH_OPTS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
            "-o", "ConnectTimeout=20", "-o", "IdentitiesOnly=yes"]


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: changes the host; no other "
                            "test runs beside it")


@pytest.fixture(autouse=True)
def run_alone_or_beside(request):
    """Every test holds the run lock shared, a test marked alone holds it
    alone.  The gate makes it fair across pytest's workers (and any other
    test run on the host): a test marked alone keeps the gate while it
    waits, so no new test starts before it has run."""
    alone = request.node.get_closest_marker("alone") is not None
    with open(HOST_LOCKS[0], "a") as gate, open(HOST_LOCKS[1], "a") as run:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(run, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield  # the run lock goes with the file's close


@pytest.fixture(scope="session")
def build():
    """The build directory; fails once, clearly, when a program is missing."""
    missing = [p for p in PROGRAMS
               if not os.access(os.path.join(BUILD_DIR, p), os.X_OK)]
    if missing:
        pytest.fail("missing in %s: %s; run `make all` (or set ATRIUM_BUILD)"
                    % (BUILD_DIR, ", ".join(missing)), pytrace=False)
    return BUILD_DIR


class DataDir:
    """A DATA directory and the client keys made for it."""

    def __init__(self, path, keys):
        self.path = path
        self.keys = keys          # user -> private key path

    def __str__(self):
        return self.path

    def pubkey(self, user):
        with open(self.keys[user] + ".pub") as f:
            return f.read().strip()


@pytest.fixture
def data_dir(tmp_path):
    keydir = tmp_path / "keys"
    keydir.mkdir(mode=0o700)
    keys = {}
    for user in USERS:
        path = str(keydir / ("id_" + user))
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "",
                        "-C", user + "@test", "-f", path], check=True)
        keys[user] = path
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    d = DataDir(str(data), keys)
    with open(data / "authorized_keys", "w") as f:
        for user in AUTHORIZED:
            f.write(d.pubkey(user) + "\n")
    os.chmod(data / "authorized_keys", 0o600)
    return d


_ports_given = set()


def free_port():
    """A port free now, never one this process was given before: the
    kernel may hand one port to two binds in a row once the first socket
    is closed, and a test asks for several before it starts anything
    (an SSH and an HTTP port, etcd's members)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _ports_given:
            _ports_given.add(port)
            return port


def _pids_using(path):
    """Pids (other than ours) whose command line names path."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmd = f.read().decode(errors="replace")
        except OSError:
            continue
        if path in cmd:
            pids.append(int(entry))
    return pids


def alive(pid):
    """True while any thread of pid runs.  A zombie waiting for its reaper
    counts as gone; a main thread that is a zombie while another thread
    still finishes in the kernel (a killed daemon in fsync) does not: the
    process keeps its files, and so its locks, until the last one ends."""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return False
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    return True
        except OSError:
            continue
    return False


def mounts_under(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [p for p in points if p == path or p.startswith(path + "/")]


class Atriumd:
    """A running atriumd; see the atriumd fixture."""

    def __init__(self, build_dir, data, extra, env):
        self.build = build_dir
        self.data = str(data)
        self.keys = getattr(data, "keys", {})
        self.port = free_port()
        self.host = "127.0.0.1"
        if "--listen" in extra:   # the test's own address, "[::1]:PORT" say
            addr, _, port = extra[list(extra).index("--listen") + 1].rpartition(":")
            # ":PORT" is every address: loopback reaches it.
            self.host = addr.strip("[]") or "127.0.0.1"
            self.port = int(port)
        self.extra = list(extra)
        self.env = env
        self.log_path = os.path.join(os.path.dirname(self.data.rstrip("/")),
                                     "atriumd-%d.log" % self.port)
        self.proc = None
        self.stdout = ""

    def start(self):
        # As installed: only the chat (and atrium-import) makes a room, so
        # a test makes its rooms as a person does (make_room).
        args = [os.path.join(self.build, "atriumd"), "--data", self.data]
        if "--listen" not in self.extra:
            args += ["--listen", "127.0.0.1:%d" % self.port]
        args += self.extra
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE,
                                     stderr=self.log, env=self.env,
                                     text=True)
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("atriumd exited %s:\n%s" % (
                    self.proc.returncode, self.read_log()))
            try:
                with socket.create_connection((self.host, self.port), 0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("atriumd did not listen:\n" + self.read_log())

    def network_pid(self):
        """atriumd's network process (the one holding the sessions), as
        its monitor publishes it in DATA/run."""
        with open(os.path.join(self.data, "run",
                               "atriumd-network.pid")) as f:
            return int(f.read())

    def read_log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def read_stdout(self):
        """What atriumd printed on stdout (after it stopped)."""
        if self.proc and self.proc.stdout and not self.proc.stdout.closed:
            self.stdout += self.proc.stdout.read()
            self.proc.stdout.close()
        return self.stdout

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Stop atriumd (SIGKILL after timeout); returns its exit code."""
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.read_stdout()
        return self.proc.returncode

    def cleanup(self):
        self.stop()
        self.read_stdout()
        run = os.path.join(self.data, "run")
        # Children get SIGTERM when atriumd dies; give them a moment.
        deadline = time.time() + 5
        while time.time() < deadline and _pids_using(self.data):
            time.sleep(0.1)
        for pid in _pids_using(self.data):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for m in sorted(mounts_under(run), reverse=True):
            subprocess.run(["fusermount3", "-u", "-z", m],
                           capture_output=True)
        self.log.close()


# The test files whose tests still make rooms with a command, as atriumd
# did by default once (ssh ROOM@host true): their atriumd gets
# --exec-creates-rooms until they make their rooms with make_room, as the
# files not named here do.  (The flag's own test is test_access.py's.)
EXEC_MAKES_ROOMS = frozenset("""
    test_chat.py test_chat_scroll.py test_chat_ui.py test_keys.py
    test_limits.py test_loop_idle.py test_robustness.py test_room_export.py
    test_cluster.py test_cluster_replicate.py
    """.split())


CGROUP_HIERARCHIES = [d for d in glob.glob("/sys/fs/cgroup/*")
                      if os.path.isdir(d)] + ["/sys/fs/cgroup"]


def remove_cgroups(name):
    """rmdir cgroup NAME's tree, bottom-up, in every hierarchy (groups hold
    no files to delete; one still emptying is tried again a moment)."""
    for h in CGROUP_HIERARCHIES:
        top = os.path.join(h, name)
        for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
            for _ in range(50):
                try:
                    os.rmdir(dirpath)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


@pytest.fixture
def atriumd(build, request):
    """Factory: atriumd(data, *extra_args, env=None) -> a started Atriumd.
    Each server gets a cgroup parent of its own (unless the test names
    one): atriumd refuses to start under a parent another live server
    uses (atriumd(8), --cgroup-parent), and tests run side by side."""
    started = []
    legacy = request.node.path.name in EXEC_MAKES_ROOMS
    parents = []

    def start(data, *extra, env=None):
        if legacy:
            extra = tuple(extra) + ("--exec-creates-rooms",)
        if "--cgroup-parent" not in extra:
            parents.append("atrium-tests-%d-%d" % (os.getpid(),
                                                   next(_test_serial)))
            extra = tuple(extra) + ("--cgroup-parent", parents[-1])
        d = Atriumd(build, data, extra, env)
        started.append(d)
        return d.start()

    yield start
    # Stop every server first: several may share one DATA (restart tests).
    for d in started:
        d.stop()
    for d in started:
        d.cleanup()
    for parent in parents:
        remove_cgroups(parent)
    for d in started:
        left = _pids_using(d.data)
        assert not left, "processes left behind: %s" % left
        assert not mounts_under(os.path.join(d.data, "run")), \
            "mounts left behind"


def ssh_command(server, room, *cmd, user="alice", opts=(), key=None):
    """argv of the OpenSSH client for ROOM@127.0.0.1 on server's port."""
    return (["ssh", "-p", str(server.port), "-i", key or server.keys[user]]
            + SSH_OPTS + list(opts) + ["%s@127.0.0.1" % room] + list(cmd))


def _ssh_run(server, room, *cmd, user="alice", input=None, opts=(),
             timeout=60, key=None):
    p = subprocess.run(ssh_command(server, room, *cmd, user=user, opts=opts,
                                   key=key),
                       input=input, capture_output=True, timeout=timeout,
                       text=isinstance(input, str) or input is None)
    return p.returncode, p.stdout, p.stderr


def make_room(server, room, user="alice", key=None, timeout=30):
    """Make room as a person does: open its chat (plain lines, ssh -T),
    which creates it, wait for the room's welcome, and leave.  Also fine
    for a room that is there already (the user just visits it)."""
    argv = (["ssh", "-p", str(server.port), "-i", key or server.keys[user]]
            + SSH_OPTS + ["-T", "%s@%s" % (room, server.host)])
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    seen = []
    # A thread reads, so a chat that never welcomes cannot hang the test.
    done = threading.Event()

    def read():
        for line in p.stdout:
            seen.append(line)
            if line.startswith(b"* you are "):
                break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    welcomed = done.wait(timeout) and seen and \
        seen[-1].startswith(b"* you are ")
    p.stdin.close()
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    err = p.stderr.read().decode(errors="replace")
    p.stdout.close()
    p.stderr.close()
    assert welcomed, "room %s not made for %s: %r %s" % (room, user, seen, err)


@pytest.fixture
def ssh_run():
    """ssh_run(server, room, *cmd, user=, input=, opts=) -> (rc, out, err)."""
    return _ssh_run


@pytest.fixture
def model_class():
    """The class the model fixture starts: tests/model_server.py's
    ModelServer; a test module whose model needs more (a summary script, say)
    overrides this fixture with a subclass of it."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from model_server import ModelServer
    return ModelServer


@pytest.fixture
def model(model_class):
    """A scripted model server on a free loopback port, started before the
    test and stopped after it; the test's own script and requests."""
    srv = model_class().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def model_server(model):
    """The same server as model, under the name the chat tests use."""
    return model
