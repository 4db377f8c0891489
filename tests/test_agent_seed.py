"""seed_git: an empty workspace filled with a clone of a git repository,
from beneath the operator's --seed-dir or from an https URL (the clone's
sandbox alone gets the host's network), never from anywhere else on the
host, never into a workspace that has files.  The clone is made where no
other command of the room can reach it, with git's hooks off, and copied
into the workspace when it is whole: nothing another command plants in
the workspace while it runs, and no hook of the seed repository, is run.

Real parts: atrium-agent (directly, and started by atriumd for the ssh
test), the sandbox, git, the real OpenSSH client.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_seed.py
"""
import contextlib
import os
import select
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import make_room

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_agent import FS, fast, pytestmark, room  # noqa: E402,F401


def make_repo(path, text="seeded readme\n", files=()):
    """A git repository with one commit of README at path, and of files:
    (name, text, mode) each, or (name, None, target) for a symlink."""
    os.makedirs(path)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
    with open(os.path.join(path, "README"), "w") as f:
        f.write(text)
    for name, body, how in files:
        at = os.path.join(path, name)
        os.makedirs(os.path.dirname(at), exist_ok=True)
        if body is None:
            os.symlink(how, at)
            continue
        with open(at, "w") as f:
            f.write(body)
        os.chmod(at, how)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "commit", "-qm", "first"]):
        subprocess.run(cmd, cwd=path, check=True, env=env,
                       capture_output=True)
    subprocess.run(["chmod", "-R", "go+rX", path], check=True)


def seeds_of(room):
    seeds = os.path.join(room.base, "seeds")
    make_repo(os.path.join(seeds, "proj"))
    os.chmod(seeds, 0o755)
    return seeds


def seed(c, source):
    c.send({"type": "config", "seed_git": source})


def _notice(c, text, timeout):
    while True:
        ev = c.wait("notice", timeout=timeout)
        if text in ev["text"]:
            return ev


def exec_out(c, command, id=None):
    c.send({"type": "exec", "id": id or command, "command": command})
    return c.wait("exec_result", id=id or command, timeout=30)


@pytest.mark.parametrize("form", ["path", "file_url"])
def test_seed_from_allowed_dir_clones(room, model, form):
    seeds = seeds_of(room)
    room.start("--model-url", model.url, "--seed-dir", seeds, *fast())
    c = room.connect()
    src = os.path.join(seeds, "proj")
    seed(c, src if form == "path" else "file://" + src)
    assert "started seed_git" in _notice(c, "seed_git", 30)["text"]
    _notice(c, "is cloned into the workspace", 60)
    r = exec_out(room.connect("bob", kind="exec"), "cat README; ls -A")
    assert r["stdout"] == "seeded readme\n.git\nREADME\n"
    log = subprocess.run(["git", "-c", "safe.directory=*", "-C",
                          room.workspace, "log", "--format=%s"],
                         capture_output=True, text=True)
    assert log.stdout == "first\n"
    st = os.stat(os.path.join(room.workspace, "README"))
    assert st.st_uid != 0           # written as the room's uid
    audit = room.db().execute("SELECT user, kind, command FROM audit "
                              "WHERE kind = 'seed'").fetchall()
    assert audit == [("alice", "seed", "git clone " + (
        src if form == "path" else "file://" + src))]


def test_seed_outside_allowed_dir_is_refused(room, model):
    seeds = seeds_of(room)
    make_repo(os.path.join(room.base, "private"), "PRIVATE\n")
    os.symlink(os.path.join(room.base, "private"),
               os.path.join(seeds, "link"))
    room.start("--model-url", model.url, "--seed-dir", seeds, *fast())
    c = room.connect()
    for src, why in [
            (os.path.join(room.base, "private"), "only clone a local "
             "repository from under " + seeds),
            ("/etc", "from under"),
            ("file:///etc", "from under"),
            (seeds + "/../private", "leads outside the seed directory"),
            (seeds + "/link", "leads outside the seed directory"),
            (seeds + "/nope", "does not exist"),
            ("relative/path", "https:// URL"),
            ("git://host/r.git", "https:// URL"),
            ("https://user:pw@host/r.git", "no user name or password"),
            ("has space", "printable"),
            (7, "must be a string")]:
        c.send({"type": "config", "seed_git": src})
        assert why in c.wait("error")["message"], src
    c.send({"type": "config", "seed_git": seeds + "/proj",
            "approval": "deny_all"})
    assert "a config line of its own" in c.wait("error")["message"]
    assert os.listdir(room.workspace) == []
    b = room.connect("bob")
    seed(b, seeds + "/proj")
    assert "only the room's owner (alice)" in b.wait("error")["message"]
    assert os.listdir(room.workspace) == []


def test_seed_without_seed_dir_is_refused(room, model):
    make_repo(os.path.join(room.base, "proj"))
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    seed(c, os.path.join(room.base, "proj"))
    assert "--seed-dir" in c.wait("error")["message"]
    assert os.listdir(room.workspace) == []


@pytest.mark.parametrize("name", ["mine.txt", ".hidden"])
def test_seed_into_non_empty_workspace_is_an_error_to_the_config(room, model,
                                                                 name):
    seeds = seeds_of(room)
    with open(os.path.join(room.workspace, name), "w") as f:
        f.write("keep me\n")
    room.start("--model-url", model.url, "--seed-dir", seeds, *fast())
    c = room.connect()
    seed(c, seeds + "/proj")
    err = c.wait("error", timeout=30)
    assert "the workspace is not empty" in err["message"]
    assert "seed_git only fills an empty workspace" in err["message"]
    # Refused before anything ran: no clone started, nothing audited.
    assert seeds_of_audit(room) == []
    assert sorted(os.listdir(room.workspace)) == [name]


def seeds_of_audit(room):
    """The seed rows of the room's audit log."""
    import sqlite3
    db = sqlite3.connect(os.path.join(room.room_dir, "room.db"))
    try:
        return db.execute("SELECT * FROM audit WHERE kind = 'seed'"
                          ).fetchall()
    finally:
        db.close()


def test_https_seed_runs_with_network_for_that_command(room, model):
    """No https server here: a plain TCP listener on the host's loopback
    proves the clone's sandbox reached the host's network (git's TLS
    handshake fails, and its error reaches the room), while a person's
    command in the same room still has none."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(4)
    port = lsock.getsockname()[1]
    accepted = []

    def serve():
        try:
            conn, _ = lsock.accept()
            accepted.append(1)
            conn.sendall(b"not tls\r\n\r\n")
            conn.close()
        except OSError:
            pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        room.start("--model-url", model.url, *fast())
        c = room.connect()
        url = "https://127.0.0.1:%d/repo.git" % port
        seed(c, url)
        ev = _notice(c, "failed", 60)
        assert url in ev["text"] and "unable to access" in ev["text"]
        assert accepted == [1]
        r = exec_out(room.connect("bob", kind="exec"),
                     "echo > /dev/tcp/127.0.0.1/%d && echo reached" % port)
        assert "reached" not in r["stdout"]
    finally:
        lsock.close()
        t.join(5)


def test_seed_over_atriumd_shows_over_ssh(atriumd, data_dir, ssh_run,
                                          tmp_path):
    """--seed-dir reaches the agent from atriumd; the clone is what ssh
    exec sees."""
    from test_e2e import Room as Client, of_type
    seeds = str(tmp_path / "seeds")
    make_repo(os.path.join(seeds, "proj"))
    os.chmod(seeds, 0o755)
    srv = atriumd(data_dir, "--seed-dir", seeds)
    make_room(srv, "demo")
    r = Client(srv, "demo")
    try:
        r.expect(of_type("welcome"))
        r.send(type="config", seed_git=seeds + "/proj")
        r.expect(lambda e: e["type"] == "notice" and "is cloned" in
                 e.get("text", ""), 60, "the clone's end")
    finally:
        r.close()
    rc, out, err = ssh_run(srv, "demo", "cat README")
    assert (rc, out) == (0, "seeded readme\n"), err


# --- what the clone runs ----------------------------------------------------

def _end_notice(c, timeout=60):
    """The notice that says how the seed_git ended."""
    while True:
        ev = c.wait("notice", timeout=timeout)
        if any(w in ev["text"] for w in ("is cloned", "refused", "failed",
                                         "stopped after")):
            return ev


class Gate:
    """Holds a local clone in the middle: the seed repository's
    objects/info/alternates is a FIFO, which git opens to read (in
    git-upload-pack, then again when it copies the objects) after it has
    made its new repository, and then waits on until a writer comes and
    goes.  held is set when git waits there the first time; release lets
    it on (every later open is let through at once)."""

    def __init__(self, repo):
        self.fifo = os.path.join(repo, ".git", "objects", "info",
                                 "alternates")
        os.makedirs(os.path.dirname(self.fifo), exist_ok=True)
        os.mkfifo(self.fifo, 0o644)
        self.held = threading.Event()
        self.go = threading.Event()
        self.done = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.done:
            fd = os.open(self.fifo, os.O_WRONLY)  # until git opens it
            self.held.set()
            self.go.wait()
            os.close(fd)        # git reads an empty file: no alternates

    def wait_held(self, timeout=60):
        assert self.held.wait(timeout), "the clone never opened the FIFO"

    def release(self):
        self.go.set()

    def stop(self):
        """End the thread: a reader of our own lets its last open
        through."""
        self.done = True
        self.go.set()
        fd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            self.t.join(10)
        finally:
            os.close(fd)


def read_line(fd, timeout=30):
    """One line from a pipe, waiting for it at most timeout seconds."""
    out = b""
    end = time.monotonic() + timeout
    while not out.endswith(b"\n"):
        left = end - time.monotonic()
        assert left > 0 and select.select([fd], [], [], left)[0], \
            "no line within %ss; got %r" % (timeout, out)
        b = os.read(fd, 1)
        assert b, "EOF; got %r" % out
        out += b
    return out.decode()


# A command of the room that plants hooks in the workspace's .git whenever
# there is one: in the background all the time, and once more for each
# line on its stdin, saying whether it could ("planted") or found no .git
# ("absent").  Each hook leaves HOOK-RAN in the workspace.
PLANTER = r"""
printf '#!/bin/sh\necho "HOOK-RAN uid=$(id -u)" >> /workspace/HOOK-RAN\n' \
    > /tmp/hook && chmod 755 /tmp/hook || exit 1
plant() {
    [ -d /workspace/.git ] && mkdir -p /workspace/.git/hooks || return 1
    for h in post-checkout reference-transaction post-index-change \
        pre-auto-gc; do
        cp /tmp/hook /workspace/.git/hooks/$h || return 1
    done
}
( while :; do plant 2>/dev/null; sleep 0.01; done ) &
echo armed
while read -r _; do
    if plant 2>/dev/null; then echo planted; else echo absent; fi
done
kill $!
"""


def test_hook_planted_in_the_workspace_during_the_clone_is_not_run(room,
                                                                    model):
    """Another command of the room plants .git/hooks in the workspace while
    the seed clones (held in the middle by the Gate): the clone is not in
    the workspace to be planted in, no hook runs, and the clone lands
    whole, as the room's uid."""
    seeds = os.path.join(room.base, "seeds")
    make_repo(os.path.join(seeds, "held"))
    os.chmod(seeds, 0o755)
    gate = Gate(os.path.join(seeds, "held"))
    room.start("--model-url", model.url, "--seed-dir", seeds, *fast())
    c = room.connect()
    e = room.connect("bob", kind="exec")
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        e.send({"type": "exec", "id": "plant", "command": PLANTER,
                "fds": 3}, fds=[in_r, out_w, out_w])
        os.close(in_r)
        os.close(out_w)
        assert read_line(out_r) == "armed\n"
        seed(c, os.path.join(seeds, "held"))
        gate.wait_held()
        os.write(in_w, b"plant\n")
        while_held = read_line(out_r)
        gate.release()
        end = _end_notice(c)
    finally:
        os.close(in_w)
        gate.stop()
    e.wait("exec_result", id="plant", timeout=30)
    os.close(out_r)
    ran = os.path.join(room.workspace, "HOOK-RAN")
    assert not os.path.exists(ran), open(ran).read()
    assert "is cloned into the workspace" in end["text"], end
    assert while_held == "absent\n"     # no .git in the workspace then
    r = exec_out(room.connect("carol", kind="exec"),
                 "cat README; ls -A; stat -c %u README; id -u")
    lines = r["stdout"].splitlines()
    assert lines[:3] == ["seeded readme", ".git", "README"], r
    assert lines[3] == lines[4] != "0"          # the room's uid owns it
    for cmd, out in ((["log", "--format=%s"], "first\n"),
                     (["status", "--porcelain"], "")):
        # The planter's hooks are in .git/hooks now: not for this git.
        r = subprocess.run(["git", "--no-optional-locks", "-c",
                            "safe.directory=*", "-c",
                            "core.hooksPath=/dev/null", "-C",
                            room.workspace, *cmd], capture_output=True,
                           text=True)
        assert (r.returncode, r.stdout) == (0, out), r.stderr


@pytest.mark.parametrize("ws", ["dir", "atrium_fs"])
def test_hooks_of_the_seed_repository_are_not_run(room, model, ws):
    """Hooks in the seed repository's .git/hooks, and a hooks directory
    its config names, run neither; the files keep their modes and the
    symlink stays one, on a plain directory and on atrium-fs."""
    if ws == "atrium_fs" and not (os.path.exists(FS) and
                                  os.path.exists("/dev/fuse")):
        pytest.skip("needs atrium-fs and /dev/fuse")
    with room.on_atrium_fs() if ws == "atrium_fs" else \
            contextlib.nullcontext():
        _seed_hooked(room, model)


def _seed_hooked(room, model):
    seeds = os.path.join(room.base, "seeds")
    repo = os.path.join(seeds, "hooked")
    hook = '#!/bin/sh\necho "SEED-HOOK-RAN" >> /workspace/SEED-HOOK-RAN\n'
    make_repo(repo, files=[("run.sh", "#!/bin/sh\necho run\n", 0o755),
                           (".githooks/post-checkout", hook, 0o755),
                           ("link", None, "README")])
    for h in ("post-checkout", "reference-transaction", "post-merge"):
        with open(os.path.join(repo, ".git", "hooks", h), "w") as f:
            f.write(hook)
        os.chmod(os.path.join(repo, ".git", "hooks", h), 0o755)
    subprocess.run(["git", "-C", repo, "config", "core.hooksPath",
                    ".githooks"], check=True)
    os.chmod(seeds, 0o755)
    room.start("--model-url", model.url, "--seed-dir", seeds, *fast())
    c = room.connect()
    seed(c, "file://" + repo)
    end = _end_notice(c)
    assert "is cloned into the workspace" in end["text"], end
    ran = os.path.join(room.workspace, "SEED-HOOK-RAN")
    assert not os.path.exists(ran), open(ran).read()
    r = exec_out(room.connect("bob", kind="exec"),
                 "ls -A; stat -c '%n %a %F' run.sh README "
                 ".githooks/post-checkout link; readlink link; ./run.sh",
                 id="look")
    assert r["stdout"] == (".git\n.githooks\nREADME\nlink\nrun.sh\n"
                           "run.sh 755 regular file\n"
                           "README 644 regular file\n"
                           ".githooks/post-checkout 755 regular file\n"
                           "link 777 symbolic link\n"
                           "README\nrun\n"), r


def test_a_file_made_while_the_clone_runs_refuses_it(room, model):
    """A file made in the workspace while the clone runs: the clone is not
    put over or beside it; the file stays, alone, and the room is told."""
    seeds = os.path.join(room.base, "seeds")
    make_repo(os.path.join(seeds, "held"))
    os.chmod(seeds, 0o755)
    gate = Gate(os.path.join(seeds, "held"))
    room.start("--model-url", model.url, "--seed-dir", seeds, *fast())
    c = room.connect()
    try:
        seed(c, os.path.join(seeds, "held"))
        gate.wait_held()
        r = exec_out(room.connect("bob", kind="exec"),
                     "echo mine > mine.txt")
        assert r["exitCode"] == 0, r
        gate.release()
        end = _end_notice(c)
    finally:
        gate.stop()
    assert "refused" in end["text"] and "not empty" in end["text"], end
    assert os.listdir(room.workspace) == ["mine.txt"]


def test_a_copy_that_does_not_fit_is_removed(room, model):
    """The clone is whole, but the workspace (a 1 MiB tmpfs here) cannot
    take it: the room is told why, and no part of it is left."""
    seeds = os.path.join(room.base, "seeds")
    make_repo(os.path.join(seeds, "big"), files=[
        ("d/f%d" % i, "%d\n" % i * 5000, 0o644) for i in range(100)])
    os.chmod(seeds, 0o755)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M,mode=0777",
                    "atrium-test", room.workspace], check=True)
    try:
        room.start("--model-url", model.url, "--seed-dir", seeds, *fast())
        c = room.connect()
        seed(c, os.path.join(seeds, "big"))
        end = _end_notice(c)
        assert "failed" in end["text"], end
        assert "No space left on device" in end["text"], end
        assert os.listdir(room.workspace) == []
    finally:
        room.cleanup()
        room.procs, room.clients = [], []
        subprocess.run(["umount", "-l", room.workspace], check=True)
