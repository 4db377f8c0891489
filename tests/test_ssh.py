"""atriumd through the real OpenSSH client, sftp, scp, sshfs and tmux: what a
user of `ssh -p PORT ROOM@host` sees.  The rooms run the real atrium-fs and
atrium-agent (no model is needed: nothing here prompts the agent).

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_ssh.py
"""
import hashlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import (SSH_OPTS, _pids_using, free_port, make_room,
                      mounts_under, ssh_command)

DEFAULT_UID_BASE = 2000000000

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")


class Lines:
    """A client process whose stdout is read line by line in a thread."""

    def __init__(self, argv, **kw):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, **kw)
        self.q = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.q.put(line)
        self.q.put(None)

    def send(self, text):
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def expect(self, pred, timeout=15):
        """The first new line for which pred(line) is true, or fail."""
        end = time.time() + timeout
        while time.time() < end:
            try:
                line = self.q.get(timeout=max(0.01, end - time.time()))
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if pred(line):
                return line
        pytest.fail("not seen in %d s; got:\n%s" % (
            timeout, b"".join(self.seen).decode(errors="replace")))

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def json_lines(srv, room, user="alice"):
    return Lines(ssh_command(srv, room, "-s", "atrium", user=user))


def chat_plain(srv, room, user):
    return Lines(ssh_command(srv, room, user=user, opts=["-T"]))


def room_pids(srv, room):
    return _pids_using(os.path.join(srv.data, "rooms", room))


@pytest.fixture
def srv(atriumd, data_dir):
    return atriumd(data_dir)


def test_exec_output_and_exit_status(srv, ssh_run):
    make_room(srv, "demo")
    rc, out, err = ssh_run(srv, "demo",
                           "echo hi > hello.txt; cat hello.txt; exit 3")
    assert (rc, out) == (3, "hi\n"), err


def test_exec_runs_in_workspace_as_sandbox_user(srv, ssh_run):
    make_room(srv, "demo")
    rc, out, err = ssh_run(srv, "demo", "pwd; id -u")
    assert rc == 0, err
    # The room's own uid, the first of the default range (room_ids.h).
    with open(os.path.join(srv.data, "rooms", "demo", "uid")) as f:
        uid = f.read().split(":")[0]
    assert out.split() == ["/workspace", uid]
    assert int(uid) == DEFAULT_UID_BASE


def test_stdout_and_stderr_stay_apart(srv, ssh_run):
    make_room(srv, "demo")
    rc, out, err = ssh_run(srv, "demo", "echo to-out; echo to-err >&2")
    assert rc == 0
    assert out == "to-out\n"
    assert "to-err" in err and "to-out" not in err


def test_stdin_streams_100_mb(srv, tmp_path):
    src = tmp_path / "big.bin"
    with open(src, "wb") as f:
        for _ in range(100):
            f.write(os.urandom(1 << 20))
    want = hashlib.sha256(src.read_bytes()).hexdigest()
    make_room(srv, "demo")
    with open(src, "rb") as f:
        p = subprocess.run(ssh_command(srv, "demo", "cat > big; sha256sum big"),
                           stdin=f, capture_output=True, timeout=90)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().split()[0] == want


def test_killed_command_is_reported_as_a_signal(srv, ssh_run):
    # OpenSSH's client exits 255 on exit-signal; -v shows which it got.
    make_room(srv, "demo")
    rc, out, err = ssh_run(srv, "demo", "kill -9 $$", opts=["-v"])
    assert rc == 255
    assert "rtype exit-signal" in err
    rc, out, err = ssh_run(srv, "demo", "exit 255", opts=["-v"])
    assert rc == 255 and "rtype exit-status" in err


def test_missing_command_gives_127(srv, ssh_run):
    make_room(srv, "demo")
    rc, out, err = ssh_run(srv, "demo", "no-such-command-here")
    assert rc == 127
    assert "no-such-command-here: command not found" in err


def test_unknown_key_is_refused(srv, ssh_run):
    rc, out, err = ssh_run(srv, "demo", "true", user="eve")
    assert rc == 255
    assert "Permission denied (publickey)" in err
    assert not os.path.exists(os.path.join(srv.data, "rooms", "demo"))
    # At the client's default log level the banner says how to get access.
    argv = [a if a != "LogLevel=ERROR" else "LogLevel=INFO"
            for a in ssh_command(srv, "demo", "true", user="eve")]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert p.returncode == 255
    assert "add your public key" in p.stderr
    assert "authorized_keys" in p.stderr


def test_bad_room_name_is_refused_clearly(srv, ssh_run):
    rc, out, err = ssh_run(srv, "Bad_Name", "true")
    assert rc != 0
    assert "'Bad_Name' is not a room name" in err
    assert "a-z, 0-9 and '-'" in err
    rc, out, err = ssh_run(srv, "x" * 64, "true")
    assert rc != 0 and "is not a room name" in err


def test_atrium_subsystem(srv):
    make_room(srv, "ops")
    a = json_lines(srv, "ops", "alice")
    b = json_lines(srv, "ops", "bob")
    try:
        a.expect(lambda l: json.loads(l)["type"] == "welcome")
        b.expect(lambda l: json.loads(l)["type"] == "welcome")
        a.send('{"type":"hello","user":"mallory","kind":"chat"}\n')
        err = json.loads(a.expect(lambda l: json.loads(l)["type"] == "error"))
        assert "hello" in err["message"]
        a.send('not json\n')
        a.expect(lambda l: json.loads(l)["type"] == "error")
        a.send('{"type":"exec","id":"e1","command":"echo from-exec; exit 4"}\n')
        res = json.loads(a.expect(
            lambda l: json.loads(l)["type"] == "exec_result"))
        assert res["id"] == "e1" and res["exitCode"] == 4
        assert res["stdout"] == "from-exec\n"
        a.send('{"type":"chat","text":"hi from the api"}\n')
        msg = json.loads(b.expect(lambda l: json.loads(l)["type"] == "message"))
        assert (msg["user"], msg["text"]) == ("alice", "hi from the api")
    finally:
        a.close()
        b.close()


def test_atrium_subsystem_refuses_overlong_line(srv):
    make_room(srv, "ops")
    a = json_lines(srv, "ops")
    try:
        a.expect(lambda l: json.loads(l)["type"] == "welcome")
        a.send('{"type":"chat","text":"' + "x" * (1024 * 1024 + 10) + '"}\n')
        err = json.loads(a.expect(lambda l: json.loads(l)["type"] == "error"))
        assert "too long" in err["message"]
        a.send('{"type":"chat","text":"still here"}\n')
        a.expect(lambda l: json.loads(l).get("text") == "still here")
    finally:
        a.close()


def test_plain_chat_between_two_users(srv):
    a = chat_plain(srv, "lobby", "alice")
    b = chat_plain(srv, "lobby", "bob")
    try:
        a.expect(lambda l: b"you are alice" in l)
        b.expect(lambda l: b"you are bob" in l)
        a.send("hello bob\n")
        assert b.expect(lambda l: b"hello bob" in l).startswith(b"alice: ")
        b.send("hi alice\n")
        assert a.expect(lambda l: b"hi alice" in l).startswith(b"bob: ")
        b.send("/nonsense\n")
        b.expect(lambda l: b"unknown command /nonsense" in l)
        a.send("!echo shared-output\n")
        b.expect(lambda l: l == b"shared-output\n")
        b.expect(lambda l: b"exit 0" in l)
    finally:
        a.close()
        b.close()
    for c in (a, b):
        assert b"\x1b" not in b"".join(c.seen)


def strict_json(line):
    """A room event, which must be valid UTF-8 JSON."""
    return json.loads(line.decode("utf-8"))


def test_chat_text_is_cleaned_before_anyone_sees_it(srv):
    """Escape sequences, C1 controls and invalid UTF-8 typed in the chat or
    sent on the room protocol reach neither other members nor history."""
    make_room(srv, "clean")
    a = chat_plain(srv, "clean", "alice")
    j = json_lines(srv, "clean", "bob")
    b = chat_plain(srv, "clean", "bob")
    try:
        a.expect(lambda l: b"you are alice" in l)
        j.expect(lambda l: strict_json(l)["type"] == "welcome")
        b.expect(lambda l: b"you are alice" in l or b"you are bob" in l)
        a.proc.stdin.write(b"one\x1b[31m\x9b2J\xc2\x9b\x07two\xff\r\n")
        a.proc.stdin.flush()
        typed = "one[31m\ufffd2Jtwo\ufffd"
        msg = strict_json(j.expect(
            lambda l: strict_json(l)["type"] == "message"))
        assert (msg["user"], msg["text"]) == ("alice", typed)
        assert b.expect(lambda l: l.startswith(b"alice: ")) == \
            ("alice: " + typed + "\n").encode()
        # Raw bytes that are not UTF-8: refused, with an error event.
        j.proc.stdin.write(b'{"type":"chat","text":"raw\x9b\xff"}\n')
        j.proc.stdin.flush()
        err = strict_json(j.expect(lambda l: strict_json(l)["type"] == "error"))
        assert "UTF-8" in err["message"]
        # Escaped controls and C1 as UTF-8: cleaned.
        j.proc.stdin.write(b'{"type":"chat","text":"api\\u001b]0;x\\u0007'
                           b'\xc2\x9b\\u009b ok\\r"}\n')
        j.proc.stdin.flush()
        msg = strict_json(j.expect(
            lambda l: strict_json(l)["type"] == "message"))
        assert msg["text"] == "api]0;x ok"
        assert b.expect(lambda l: b"api" in l) == b"bob: api]0;x ok\n"
        j.send('{"type":"history","since":0}\n')
        texts = []
        while len(texts) < 2:
            ev = strict_json(j.expect(
                lambda l: strict_json(l)["type"] == "message"))
            texts.append(ev["text"])
        assert texts == [typed, "api]0;x ok"]
        assert b"\x1b" not in b"".join(b.seen)
    finally:
        a.close()
        j.close()
        b.close()


def tmux(*args):
    return subprocess.run(["tmux", "-L", "atrium-test"] + list(args),
                          capture_output=True, text=True)


def wait_screen(name, text, timeout=15):
    end = time.time() + timeout
    screen = ""
    while time.time() < end:
        screen = tmux("capture-pane", "-p", "-t", name).stdout
        if text in screen:
            return screen
        time.sleep(0.1)
    pytest.fail("%r not on the screen:\n%s" % (text, screen))


@pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux")
def test_chat_with_a_terminal(srv):
    cmd = " ".join(ssh_command(srv, "lobby", opts=["-t"]))
    tmux("new-session", "-d", "-s", "chat", "-x", "100", "-y", "20", cmd)
    b = chat_plain(srv, "lobby", "bob")
    try:
        wait_screen("chat", "lobby>")
        wait_screen("chat", "you are alice")
        tmux("send-keys", "-t", "chat", "good morning", "Enter")
        b.expect(lambda l: l == b"alice: good morning\n")
        wait_screen("chat", "alice: good morning")
        b.send("hello from plain bob\n")
        wait_screen("chat", "bob: hello from plain bob")
        tmux("send-keys", "-t", "chat", "!echo hi-from-tty", "Enter")
        b.expect(lambda l: l == b"hi-from-tty\n")
        # Editing: Left then insert; Ctrl-E (end) and Ctrl-U empty the line,
        # or /quit below would not be a command.
        tmux("send-keys", "-t", "chat", "abd", "Left", "c")
        wait_screen("chat", "lobby> abcd")
        tmux("send-keys", "-t", "chat", "C-e", "C-u")
        tmux("send-keys", "-t", "chat", "/quit", "Enter")
        end = time.time() + 10
        while time.time() < end and tmux("has-session", "-t", "chat").returncode == 0:
            time.sleep(0.1)
        assert tmux("has-session", "-t", "chat").returncode != 0
    finally:
        tmux("kill-server")
        b.close()


def test_sftp_scp_and_sshfs(srv, ssh_run, tmp_path):
    make_room(srv, "files")
    src = tmp_path / "up.bin"
    src.write_bytes(os.urandom(3 << 20))
    down = tmp_path / "down.bin"
    batch = "put %s up.bin\nget up.bin %s\n" % (src, down)
    p = subprocess.run(["sftp", "-P", str(srv.port), "-i", srv.keys["alice"]]
                       + SSH_OPTS + ["-b", "-", "files@127.0.0.1"],
                       input=batch, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert down.read_bytes() == src.read_bytes()
    p = subprocess.run(["scp", "-P", str(srv.port), "-i", srv.keys["alice"]]
                       + SSH_OPTS + [str(src), "files@127.0.0.1:viascp.bin"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rc, out, err = ssh_run(srv, "files", "sha256sum viascp.bin")
    assert out.split()[0] == hashlib.sha256(src.read_bytes()).hexdigest()
    if not shutil.which("sshfs"):
        pytest.skip("needs sshfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    # In the foreground, so the test owns the process and can end it.
    fs = subprocess.Popen(["sshfs", "-f", "-p", str(srv.port), "-o",
                           "IdentityFile=" + srv.keys["alice"]] + SSH_OPTS
                          + ["files@127.0.0.1:", str(mnt)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        end = time.time() + 20
        while time.time() < end and not mounts_under(str(mnt)):
            assert fs.poll() is None, fs.stderr.read()
            time.sleep(0.1)
        assert (mnt / "up.bin").read_bytes() == src.read_bytes()
        (mnt / "from-sshfs.txt").write_text("written through sshfs\n")
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)],
                       capture_output=True)
        fs.terminate()
        try:
            fs.wait(5)
        except subprocess.TimeoutExpired:
            fs.kill()
            fs.wait()
    rc, out, err = ssh_run(srv, "files", "cat from-sshfs.txt")
    assert out == "written through sshfs\n"


def test_restart_keeps_files_and_history(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "keep")
    rc, out, err = ssh_run(srv, "keep", "echo persisted > f.txt")
    assert rc == 0, err
    a = chat_plain(srv, "keep", "alice")
    a.expect(lambda l: b"you are alice" in l)
    a.send("remember this line\n")
    a.expect(lambda l: b"remember this line" in l)
    a.close()
    srv.stop(signal.SIGKILL)
    srv2 = atriumd(data_dir)
    rc, out, err = ssh_run(srv2, "keep", "cat f.txt")
    assert (rc, out) == (0, "persisted\n"), err + srv2.read_log()
    b = chat_plain(srv2, "keep", "bob")
    try:
        b.expect(lambda l: l == b"alice: remember this line\n")
    finally:
        b.close()


def test_mounted_workspace_cannot_be_mounted_twice(srv, ssh_run, build,
                                                   tmp_path):
    make_room(srv, "busy")
    rc, out, err = ssh_run(srv, "busy", "true")
    assert rc == 0, err
    db = os.path.join(srv.data, "rooms", "busy", "workspace.db")
    mnt = tmp_path / "second"
    mnt.mkdir()
    p = subprocess.run([os.path.join(build, "atrium-fs"), "mount", "-f", db,
                        str(mnt)], capture_output=True, text=True, timeout=20)
    try:
        assert p.returncode != 0
        assert not mounts_under(str(mnt))
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)],
                       capture_output=True)
    rc, out, err = ssh_run(srv, "busy", "echo still fine")
    assert out == "still fine\n"


def test_idle_room_stops_and_starts_again(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir, "--idle-timeout", "2")
    make_room(srv, "sleepy")
    rc, out, err = ssh_run(srv, "sleepy", "echo one > n.txt")
    assert rc == 0, err
    assert room_pids(srv, "sleepy")
    run = os.path.join(srv.data, "run", "sleepy")
    assert mounts_under(run)
    end = time.time() + 15
    while time.time() < end and (room_pids(srv, "sleepy") or mounts_under(run)):
        time.sleep(0.2)
    assert not room_pids(srv, "sleepy"), srv.read_log()
    assert not mounts_under(run)
    rc, out, err = ssh_run(srv, "sleepy", "cat n.txt")
    assert (rc, out) == (0, "one\n"), err
    assert "room sleepy: idle; stopping" in srv.read_log()


def sleepers(seconds):
    """Pids of `sleep SECONDS` anywhere on the host."""
    want = b"sleep\x00%d\x00" % seconds
    pids = []
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                if f.read() == want:
                    pids.append(int(entry))
        except (OSError, ValueError):
            continue
    return pids


def test_client_leaving_kills_its_command(srv):
    make_room(srv, "demo")
    p = subprocess.Popen(ssh_command(srv, "demo", "echo started; sleep 313"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"started\n"
    # bash forks the sleep just after the echo: give it a moment.
    end = time.time() + 10
    while time.time() < end and not sleepers(313):
        time.sleep(0.05)
    assert sleepers(313)
    p.kill()
    p.wait()
    end = time.time() + 10
    while time.time() < end and sleepers(313):
        time.sleep(0.1)
    assert not sleepers(313)
    assert "killing it" in srv.read_log()


def test_first_start_seeds_keys_and_says_how_to_connect(atriumd, data_dir,
                                                        tmp_path, ssh_run):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(data_dir.keys["bob"] + ".pub", home / ".ssh" / "id_ed25519.pub")
    data = tmp_path / "fresh"
    env = dict(os.environ, HOME=str(home))
    srv = atriumd(str(data), env=env)
    srv.keys = data_dir.keys
    make_room(srv, "demo", user="bob")
    rc, out, err = ssh_run(srv, "demo", "echo in", user="bob")
    assert (rc, out) == (0, "in\n"), err
    rc, out, err = ssh_run(srv, "demo", "true", user="alice")
    assert rc == 255
    srv.stop()
    said = srv.read_stdout()
    assert "ssh -p %d" % srv.port in said and "demo@localhost" in said
    assert "users: bob" in said
    assert os.stat(data).st_mode & 0o777 == 0o700
    assert os.stat(data / "hostkey").st_mode & 0o777 == 0o600


def test_open_mode_accepts_any_key(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir, "--open")
    make_room(srv, "demo", user="eve")
    rc, out, err = ssh_run(srv, "demo", "echo open", user="eve")
    assert (rc, out) == (0, "open\n"), err
    srv.stop()
    assert "ANY public key is accepted" in srv.read_stdout()


def test_forwarding_is_refused(srv, ssh_run, monkeypatch):
    make_room(srv, "demo")
    rc, out, err = ssh_run(srv, "demo", opts=["-W", "127.0.0.1:22"], input="")
    assert rc == 255 and "forwarding failed" in err
    rc, out, err = ssh_run(srv, "demo", "true", opts=[
        "-o", "ExitOnForwardFailure=yes", "-R", "0:127.0.0.1:22"])
    assert rc == 255 and "port forwarding failed" in err
    monkeypatch.setenv("DISPLAY", ":0")
    rc, out, err = ssh_run(srv, "demo", "echo ran", opts=["-X"])
    assert (rc, out) == (0, "ran\n") and "X11 forwarding request failed" in err
    log = srv.read_log()
    for what in ("a connection to 127.0.0.1:22",
                 "remote port forwarding from localhost:0", "X11 forwarding"):
        assert "alice asked for %s: refused" % what in log, log


def test_exec_gets_the_ssh_variables(srv, ssh_run):
    make_room(srv, "demo")
    rc, out, err = ssh_run(srv, "demo", "echo $SSH_CONNECTION; echo $SSH_CLIENT;"
                           " echo ${SSH_TTY-none}")
    assert rc == 0, err
    conn, client, tty = out.splitlines()
    addr, cport, saddr, sport = conn.split()
    assert (addr, saddr, sport) == ("127.0.0.1", "127.0.0.1", str(srv.port))
    assert client == "127.0.0.1 %s %d" % (cport, srv.port) and tty == "none"
    rc, out, err = ssh_run(srv, "demo", 'echo $SSH_TTY; tty', opts=["-tt"],
                           input="")
    assert rc == 0, err
    assert out.replace("\r", "").split("\n")[:2] == ["/dev/console"] * 2


def test_chown_to_another_user_is_not_permitted(srv, ssh_run):
    # As for any unprivileged user (the sandbox's user namespace would say
    # "Invalid argument", which sftp-server turns into "Bad message").
    make_room(srv, "demo")
    rc, out, err = ssh_run(srv, "demo", "touch f; chown 0 f; chgrp 0 f; "
                           "chown $(id -u):$(id -g) f && echo own-ok")
    assert out == "own-ok\n", err
    assert err.count("Operation not permitted") == 2, err
    p = subprocess.run(["sftp", "-P", str(srv.port), "-i", srv.keys["alice"]]
                       + SSH_OPTS + ["-b", "-", "demo@127.0.0.1"],
                       input="chown 0 f\n", capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0 and "Permission denied" in p.stderr, p.stderr


def test_exec_with_a_terminal_and_environment(srv, ssh_run, monkeypatch):
    # The client sends its own TERM with the pty request: fix it, since CI
    # may run with none.
    monkeypatch.setenv("TERM", "xterm-256color")
    make_room(srv, "demo")
    rc, out, err = ssh_run(srv, "demo", "stty size; echo $TERM $LANG",
                           opts=["-tt", "-o", "SetEnv=LANG=C.UTF-8"], input="")
    assert rc == 0, err
    assert out.replace("\r", "").split("\n")[:2] == ["24 80",
                                                      "xterm-256color C.UTF-8"]


def program_pid(srv, room, program):
    for pid in room_pids(srv, room):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if os.path.basename(argv0) == program.encode():
            return pid
    return None


def wait_for(pred, timeout=15):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.1)
    return False


def test_crashed_agent_and_filesystem_are_restarted(srv, ssh_run):
    make_room(srv, "crashy")
    rc, out, err = ssh_run(srv, "crashy", "echo kept > k.txt")
    assert rc == 0, err
    agent = program_pid(srv, "crashy", "atrium-agent")
    os.kill(agent, signal.SIGKILL)
    assert wait_for(lambda: program_pid(srv, "crashy", "atrium-agent")
                    not in (None, agent))
    rc, out, err = ssh_run(srv, "crashy", "cat k.txt")
    assert (rc, out) == (0, "kept\n"), err + srv.read_log()
    assert "atrium-agent killed by signal 9; restarting it" in srv.read_log()
    fs = program_pid(srv, "crashy", "atrium-fs")
    os.kill(fs, signal.SIGKILL)
    assert wait_for(lambda: program_pid(srv, "crashy", "atrium-fs")
                    not in (None, fs)
                    and srv.read_log().count("room crashy: ready") >= 3)
    rc, out, err = ssh_run(srv, "crashy", "cat k.txt")
    assert (rc, out) == (0, "kept\n"), err + srv.read_log()


def test_stdin_eof_before_the_room_is_up(atriumd, data_dir, ssh_run):
    # The room is cold (made, then stopped once idle): EOF arrives before
    # the command exists.
    srv = atriumd(data_dir, "--idle-timeout", "1")
    for room in ("cold", "cold2"):
        make_room(srv, room)
    assert wait_for(lambda: not room_pids(srv, "cold") and
                    not room_pids(srv, "cold2"))
    rc, out, err = ssh_run(srv, "cold", "cat; echo done", input="")
    assert (rc, out) == (0, "done\n"), err
    rc, out, err = ssh_run(srv, "cold2", "wc -c", input="x" * 100000)
    assert (rc, out.strip()) == (0, "100000"), err


def test_chat_survives_an_agent_restart(srv):
    a = chat_plain(srv, "phoenix", "alice")
    b = chat_plain(srv, "phoenix", "bob")
    try:
        a.expect(lambda l: b"you are alice" in l)
        b.expect(lambda l: b"you are bob" in l)
        os.kill(program_pid(srv, "phoenix", "atrium-agent"), signal.SIGKILL)
        a.expect(lambda l: b"reconnecting" in l)
        b.expect(lambda l: b"reconnecting" in l)
        a.expect(lambda l: b"you are alice" in l)
        b.expect(lambda l: b"you are bob" in l)
        a.send("after the restart\n")
        assert b.expect(lambda l: b"after the restart" in l) == \
            b"alice: after the restart\n"
    finally:
        a.close()
        b.close()


def test_stale_mount_after_a_crash_is_cleared(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    # fsync: only what was synced must survive a killed atrium-fs.
    make_room(srv, "stale")
    rc, out, err = ssh_run(srv, "stale", "echo survived > s.txt; sync s.txt .")
    assert rc == 0, err
    fs = program_pid(srv, "stale", "atrium-fs")
    # Freeze atrium-fs so it cannot unmount, crash everything, then kill it:
    # its mount is left behind, dead.
    os.kill(fs, signal.SIGSTOP)
    srv.stop(signal.SIGKILL)
    os.kill(fs, signal.SIGKILL)
    assert wait_for(lambda: program_pid(srv, "stale", "atrium-fs") is None)
    run = os.path.join(srv.data, "run", "stale")
    assert mounts_under(run)
    srv2 = atriumd(data_dir)
    rc, out, err = ssh_run(srv2, "stale", "cat s.txt")
    assert (rc, out) == (0, "survived\n"), err + srv2.read_log()
    assert "unmounted a stale mount" in srv2.read_log()


def test_agent_answer_reaches_the_chat(atriumd, data_dir, model_server):
    env = dict(os.environ, ANTHROPIC_API_KEY="test-key")
    srv = atriumd(data_dir, "--provider", "anthropic", "--model-url",
                  model_server.url, "--model", "test-model", env=env)
    a = chat_plain(srv, "helpdesk", "alice")
    try:
        a.expect(lambda l: b"you are alice" in l)
        a.send("@agent ping please\n")
        a.expect(lambda l: l.startswith(b"alice: @agent ping please"))
        # The scripted model echoes the prompt (it may span lines).
        a.expect(lambda l: l.startswith(b"agent: echo: "))
        a.expect(lambda l: b"ping please" in l and not l.startswith(b"alice"))
        a.expect(lambda l: b"agent done" in l)
    finally:
        a.close()
    assert b"\x1b" not in b"".join(a.seen)


def test_sha1_rsa_signatures_are_refused(atriumd, data_dir, tmp_path):
    # As OpenSSH refuses them: server-sig-algs does not offer ssh-rsa, and a
    # client that signs with SHA-1 anyway is not let in; rsa-sha2 works.
    import paramiko
    from paramiko.auth_handler import AuthHandler
    key = str(tmp_path / "id_rsa")
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "",
                    "-C", "carol@test", "-f", key], check=True)
    with open(os.path.join(str(data_dir), "authorized_keys"), "a") as f:
        f.write(open(key + ".pub").read())
    srv = atriumd(data_dir)
    make_room(srv, "demo")
    rc, out, err = _ssh_run_key(srv, key, "echo rsa-sha2")
    assert (rc, out) == (0, "rsa-sha2\n"), err

    def sign_with():
        t = paramiko.Transport(("127.0.0.1", srv.port))
        try:
            t.start_client(timeout=10)
            t.auth_publickey("demo", paramiko.RSAKey.from_private_key_file(key))
            return "in"
        except (paramiko.AuthenticationException, paramiko.SSHException,
                EOFError):
            return "refused"
        finally:
            t.close()
    forced = AuthHandler._finalize_pubkey_algorithm
    try:
        AuthHandler._finalize_pubkey_algorithm = lambda self, kt: "ssh-rsa"
        started = time.monotonic()
        assert sign_with() == "refused"
        # libssh leaves such a request unanswered; atriumd must not.
        assert time.monotonic() - started < 10
    finally:
        AuthHandler._finalize_pubkey_algorithm = forced
    assert sign_with() == "in"
    assert "doesn't match server preference" in srv.read_log()


def _ssh_run_key(srv, key, *cmd):
    p = subprocess.run(ssh_command(srv, "demo", *cmd, key=key),
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def _ssh_to(srv, host, *cmd):
    p = subprocess.run(["ssh", "-p", str(srv.port), "-i", srv.keys["alice"]]
                       + SSH_OPTS + ["demo@" + host] + list(cmd),
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_default_listen_takes_ipv6_and_ipv4(atriumd, data_dir):
    # ":PORT" (the default's form) is every address, both families; an
    # IPv4 client is logged and shown as plain IPv4, not ::ffff:127.0.0.1.
    if not socket.has_ipv6 or not os.path.exists("/proc/net/if_inet6"):
        pytest.skip("no IPv6 on this host")
    port = free_port()
    srv = atriumd(data_dir, "--listen", ":%d" % port)
    assert ("listening on [::]:%d (every address, IPv6 and IPv4)" % port
            in srv.read_log()), srv.read_log()
    make_room(srv, "demo")
    rc, out, err = _ssh_to(srv, "::1", "echo $SSH_CONNECTION")
    assert rc == 0 and out.startswith("::1 "), err
    rc, out, err = _ssh_to(srv, "127.0.0.1", "echo $SSH_CONNECTION")
    assert rc == 0, err
    client, _, server, sport = out.split()
    assert (client, server, sport) == ("127.0.0.1", "127.0.0.1", str(port))
    log = srv.read_log()
    assert "connection from 127.0.0.1" in log and "::ffff:" not in log, log


def test_ipv6_listen_address_is_shown_in_brackets(atriumd, data_dir):
    if not socket.has_ipv6 or not os.path.exists("/proc/net/if_inet6"):
        pytest.skip("no IPv6 on this host")
    port = free_port()
    srv = atriumd(data_dir, "--listen", "[::1]:%d" % port)
    assert "listening on [::1]:%d" % port in srv.read_log()
    make_room(srv, "demo")
    p = subprocess.run(["ssh", "-p", str(port), "-i", srv.keys["alice"]]
                       + SSH_OPTS + ["demo@::1", "echo six"],
                       capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, "six\n"), p.stderr
