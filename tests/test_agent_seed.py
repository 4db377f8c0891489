"""seed_git: an empty workspace filled with a clone of a git repository,
from beneath the operator's --seed-dir or from an https URL (the clone's
sandbox alone gets the host's network), never from anywhere else on the
host, never into a workspace that has files.

Real parts: atrium-agent (directly, and started by atriumd for the ssh
test), the sandbox, git, the real OpenSSH client.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_seed.py
"""
import os
import socket
import subprocess
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_agent import fast, model, pytestmark, room  # noqa: E402,F401


def make_repo(path, text="seeded readme\n"):
    """A git repository with one commit of README at path."""
    os.makedirs(path)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
    with open(os.path.join(path, "README"), "w") as f:
        f.write(text)
    for cmd in (["git", "init", "-q"], ["git", "add", "README"],
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


def exec_out(c, command):
    c.send({"type": "exec", "id": command, "command": command})
    return c.wait("exec_result", id=command, timeout=30)


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
    rc, out, err = ssh_run(srv, "demo", "true")
    assert rc == 0, err
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
