"""End to end: a person, an SSH client, atriumd, a room's atrium-agent and
atrium-fs, the sandbox, and a scripted model server, all real processes.

What each test asserts is what a user of the room would see: the events
of the `atrium` subsystem, the output of ssh commands, files on the
workspace, and what reached the model.
"""
import json
import os
import queue
import signal
import subprocess
import threading
import time

import pytest

from conftest import BUILD_DIR, ROOT, make_room, ssh_command
from model_server import Fault, Reply, ToolCall


class Room:
    """A client of the `atrium` subsystem: send JSON lines, await events."""

    def __init__(self, server, room, user="alice"):
        self.proc = subprocess.Popen(
            ssh_command(server, room, user=user, opts=["-s"]) + ["atrium"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        self.events = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.events.put(json.loads(line))
        self.events.put(None)

    def send(self, **obj):
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def expect(self, pred, timeout=30, what="event"):
        """The first event (after those already seen) for which pred holds."""
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                raise AssertionError("no %s within %ss; saw %s"
                                     % (what, timeout, self.seen[-20:]))
            try:
                ev = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if ev is None:
                raise AssertionError("room closed while waiting for %s; saw %s"
                                     % (what, self.seen[-20:]))
            self.seen.append(ev)
            if pred(ev):
                return ev

    def until_turn_end(self, timeout=60):
        """The end of a live turn (not one replayed from history)."""
        return self.expect(lambda e: e["type"] == "turn_end" and not e.get("replay"),
                           timeout, "turn_end")

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def of_type(t, **fields):
    return lambda e: e["type"] == t and all(e.get(k) == v for k, v in fields.items())


@pytest.fixture
def room_server(atriumd, data_dir, model_server):
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test-e2e")
    return atriumd(data_dir, "--provider", "anthropic", "--model-url",
                   model_server.url, "--model", "test-model",
                   "--approval", "allow_all", env=env)


def test_agent_runs_bash_in_the_workspace(room_server, model_server, ssh_run,
                                          data_dir):
    make_room(room_server, "demo")
    r = Room(room_server, "demo")
    try:
        r.expect(of_type("welcome"))
        r.send(type="prompt", text="run: echo made-by-agent > agent.txt; cat agent.txt")
        call = r.expect(of_type("tool_call", name="bash"))
        assert "agent.txt" in call["input"]["command"]
        res = r.expect(of_type("tool_result", id=call["id"]))
        assert res["status"] == "ok"
        assert "made-by-agent" in res["output"]
        end = r.until_turn_end()
        assert end["stop_reason"] == "end_turn"
    finally:
        r.close()
    # The model got the command's output as the tool result.
    second = model_server.requests[1]["body"]["messages"]
    results = [b for m in second for b in m["content"]
               if isinstance(m["content"], list) and b.get("type") == "tool_result"]
    assert "made-by-agent" in json.dumps(results)
    # People see the file the agent wrote, owned by the room's own uid.
    rc, out, err = ssh_run(room_server, "demo", "cat agent.txt; stat -c %u agent.txt")
    with open(os.path.join(str(data_dir), "rooms", "demo", "uid")) as f:
        uid = f.read().split(":")[0]
    assert (rc, out) == (0, "made-by-agent\n%s\n" % uid)


def atriumd_status_line(srv, room, want, timeout=15):
    """The AGENT column of `atriumd status` for room, once it holds want."""
    deadline = time.time() + timeout
    line = ""
    while time.time() < deadline:
        p = subprocess.run([os.path.join(BUILD_DIR, "atriumd"), "status",
                            srv.data], capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 0, p.stderr
        line = next((x for x in p.stdout.split("\n")
                     if x.startswith(room + " ")), "")
        if want in line:
            return line
        time.sleep(0.2)
    raise AssertionError("%r never showed %r: %r" % (room, want, line))


def test_status_shows_what_the_agent_is_doing(room_server, model_server):
    make_room(room_server, "watched")
    r = Room(room_server, "watched")
    try:
        r.expect(of_type("welcome"))
        assert ", idle" in atriumd_status_line(room_server, "watched", "idle")
        r.send(type="prompt", text="run: sleep 30")
        r.expect(of_type("tool_call", name="bash"))
        line = atriumd_status_line(room_server, "watched", "tool bash")
        assert ", turn " in line and " by alice, step " in line, line
        r.send(type="stop")
        r.until_turn_end()
        atriumd_status_line(room_server, "watched", ", idle")
    finally:
        r.close()


def test_chat_mention_is_a_prompt_everyone_sees(room_server, model_server):
    make_room(room_server, "team")
    a, b = Room(room_server, "team"), Room(room_server, "team", user="bob")
    try:
        a.expect(of_type("welcome"))
        b.expect(of_type("welcome"))
        a.send(type="chat", text="@agent what is in here?")
        for c in (a, b):
            c.expect(of_type("message", user="alice"))
            c.expect(lambda e: e["type"] == "agent_delta")
            msg = c.expect(of_type("message", user="agent"))
            assert "what is in here?" in msg["text"]
            c.until_turn_end()
    finally:
        a.close()
        b.close()
    # The prompt reached the model with its text unchanged.
    sent = json.dumps(model_server.requests[0]["body"]["messages"])
    assert "@agent what is in here?" in sent


def test_no_model_configured_says_how(atriumd, data_dir):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    srv = atriumd(data_dir, env=env)
    make_room(srv, "demo")
    r = Room(srv, "demo")
    try:
        r.expect(of_type("welcome"))
        r.send(type="prompt", text="hello?")
        msg = r.expect(of_type("message", user="agent"))
        assert "No model is configured" in msg["text"]
        assert "ANTHROPIC_API_KEY" in msg["text"]
        r.until_turn_end()
        # The room itself still works.
        r.send(type="exec", id="x1", command="echo still here")
        res = r.expect(of_type("exec_result", id="x1"))
        assert (res["exitCode"], res["stdout"]) == (0, "still here\n")
    finally:
        r.close()


def test_rejected_api_key_is_explained_and_nothing_is_lost(atriumd, data_dir):
    from model_server import ModelServer
    with ModelServer(api_key="the-right-key") as ms:
        env = dict(os.environ, ANTHROPIC_API_KEY="a-wrong-key")
        srv = atriumd(data_dir, "--model-url", ms.url, env=env)
        make_room(srv, "demo")
        r = Room(srv, "demo")
        try:
            r.expect(of_type("welcome"))
            r.send(type="chat", text="a line before the failure")
            r.send(type="prompt", text="please answer")
            err = r.expect(of_type("error"))
            assert "401" in err["message"]
            assert "API key" in err["message"]
            r.until_turn_end()
        finally:
            r.close()
        # A newcomer still sees the history.
        r = Room(srv, "demo", user="bob")
        try:
            r.send(type="history", since=0, limit=100)
            r.expect(lambda e: e["type"] == "message"
                     and e.get("text") == "a line before the failure")
        finally:
            r.close()
        assert "a-wrong-key" not in open(os.path.join(str(data_dir), "rooms", "demo",
                                                      "room.db"), "rb").read().decode("latin-1")


def test_rate_limit_is_retried_with_a_notice(room_server, model_server):
    model_server.script(Fault(429, retry_after=1), Reply(text="answer after waiting"))
    make_room(room_server, "demo")
    r = Room(room_server, "demo")
    try:
        r.expect(of_type("welcome"))
        r.send(type="prompt", text="hi")
        note = r.expect(of_type("notice"))
        assert "429" in note["text"] and "retrying" in note["text"]
        msg = r.expect(of_type("message", user="agent"))
        assert msg["text"] == "answer after waiting"
        r.until_turn_end()
    finally:
        r.close()
    assert len(model_server.requests) == 2


def test_openai_provider_from_atrium_conf(atriumd, data_dir, model_server):
    with open(os.path.join(str(data_dir), "atrium.conf"), "w") as f:
        f.write("# a local OpenAI-compatible server\nprovider = openai\n"
                "model = local-model\nmodel-url = %s\napproval = allow_all\n"
                % model_server.openai_url)
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    srv = atriumd(data_dir, env=env)
    model_server.script(Reply(tool_calls=[ToolCall("bash", {"command": "echo $((6*7))"})]),
                        Reply(text="It is 42."))
    make_room(srv, "demo")
    r = Room(srv, "demo")
    try:
        r.expect(of_type("welcome"))
        r.send(type="prompt", text="compute")
        res = r.expect(of_type("tool_result"))
        assert res["output"].strip() == "42"
        assert r.expect(of_type("message", user="agent"))["text"] == "It is 42."
        r.until_turn_end()
    finally:
        r.close()
    req = model_server.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["model"] == "local-model"
    assert "authorization" not in {k.lower() for k in req["headers"]}


def test_deny_all_policy_keeps_commands_from_running(room_server, ssh_run):
    make_room(room_server, "demo")
    r = Room(room_server, "demo")
    try:
        r.expect(of_type("welcome"))
        r.send(type="config", approval="deny_all")
        r.expect(of_type("config"))
        r.send(type="prompt", text="run: touch forbidden.txt")
        res = r.expect(of_type("tool_result"))
        assert res["status"] == "denied"
        r.until_turn_end()
    finally:
        r.close()
    rc, out, err = ssh_run(room_server, "demo", "ls")
    assert rc == 0 and "forbidden.txt" not in out


def test_room_survives_a_restart(atriumd, data_dir, model_server, ssh_run):
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test-e2e")
    args = ("--model-url", model_server.url, "--approval", "allow_all")
    srv = atriumd(data_dir, *args, env=env)
    make_room(srv, "keep")
    r = Room(srv, "keep")
    try:
        r.expect(of_type("welcome"))
        r.send(type="chat", text="remember this line")
        r.send(type="prompt", text="run: echo kept > kept.txt")
        r.until_turn_end()
    finally:
        r.close()
    srv.stop(signal.SIGKILL)
    srv.cleanup()
    srv = atriumd(data_dir, *args, env=env)
    assert ssh_run(srv, "keep", "cat kept.txt")[:2] == (0, "kept\n")
    r = Room(srv, "keep", user="bob")
    try:
        r.send(type="history", since=0, limit=200)
        r.expect(of_type("message", text="remember this line"))
        r.expect(of_type("tool_result", status="ok"))
        r.send(type="prompt", text="and now?")
        r.until_turn_end()
    finally:
        r.close()
    # The model's next request carries the transcript from before the restart.
    sent = json.dumps(model_server.requests[-1]["body"]["messages"])
    assert "echo kept > kept.txt" in sent and "and now?" in sent


def test_stopped_room_mounts_on_the_host(atriumd, data_dir, ssh_run, build, tmp_path):
    srv = atriumd(data_dir)
    make_room(srv, "files")
    assert ssh_run(srv, "files", "mkdir -p src && echo 'int x;' > src/a.c")[0] == 0
    db = os.path.join(str(data_dir), "rooms", "files", "workspace.db")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    # While the room runs, a second mount is refused.
    p = subprocess.run([os.path.join(build, "atrium-fs"), "mount", db, str(mnt)],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "already mounted" in p.stderr
    srv.stop()
    srv.cleanup()
    subprocess.run([os.path.join(build, "atrium-fs"), "mount", db, str(mnt)], check=True)
    try:
        with open(mnt / "src" / "a.c") as f:
            assert f.read() == "int x;\n"
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], check=True)
    assert subprocess.run([os.path.join(build, "atrium-fs"), "fsck", db]).returncode == 0


def test_command_output_streams_whole_to_the_room(room_server):
    """A shared command's and an agent command's output reach every member
    live, all of it, in order."""
    want = "".join("%d\n" % i for i in range(1, 20001))
    make_room(room_server, "stream")
    a, b = Room(room_server, "stream"), Room(room_server, "stream", user="bob")
    try:
        a.expect(of_type("welcome"))
        b.expect(of_type("welcome"))
        a.send(type="exec", id="s1", command="seq 1 20000", share=True)
        got = []
        b.expect(lambda e: (e["type"] == "exec_output" and e["id"] == "s1"
                            and got.append(e["text"])) or
                 (e["type"] == "exec_result" and e["id"] == "s1"), what="exec_result")
        assert "".join(got) == want
        a.send(type="prompt", text="run: seq 1 20000")
        got = []
        b.expect(lambda e: (e["type"] == "tool_output" and got.append(e["text"]))
                 or e["type"] == "tool_result", what="tool_result")
        assert "".join(got) == want
        b.until_turn_end()
    finally:
        a.close()
        b.close()


def test_nobody_may_log_in_as_the_agent(atriumd, data_dir, ssh_run):
    """A key named "agent" in authorized_keys is skipped: its holder could
    otherwise speak in the room as the agent."""
    pub = data_dir.pubkey("eve").split()
    with open(os.path.join(str(data_dir), "authorized_keys"), "a") as f:
        f.write("%s %s agent\n" % (pub[0], pub[1]))
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "true", user="eve")
    assert rc == 255 and "Permission denied" in err
    assert "the name 'agent' is the room's agent's" in srv.read_log()
    make_room(srv, "demo")
    assert ssh_run(srv, "demo", "true")[0] == 0


def test_agent_commands_time_out_but_peoples_do_not(atriumd, data_dir, model_server,
                                                    ssh_run):
    """--command-timeout bounds the agent's commands; a person's exec (and
    so an sftp session or an sshfs mount) runs as long as it needs."""
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test-e2e")
    srv = atriumd(data_dir, "--model-url", model_server.url,
                  "--command-timeout", "1", "--approval", "allow_all", env=env)
    make_room(srv, "demo")
    rc, out, err = ssh_run(srv, "demo", "sleep 2.5; echo survived")
    assert (rc, out) == (0, "survived\n")
    r = Room(srv, "demo")
    try:
        r.expect(of_type("welcome"))
        r.send(type="prompt", text="run: sleep 5; echo never")
        res = r.expect(of_type("tool_result"), timeout=20)
        assert res["status"] == "error"
        assert "never" not in res["output"]
        assert "command timed out after 1 s" in res["output"]
        r.until_turn_end()
    finally:
        r.close()


def _git_ssh(server, data_dir):
    return ("ssh -p %d -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
            "-o BatchMode=yes -o LogLevel=ERROR -o IdentitiesOnly=yes"
            % (server.port, data_dir.keys["alice"]))


def test_git_clone_push_and_rsync_over_ssh(atriumd, data_dir, ssh_run, tmp_path):
    srv = atriumd(data_dir)
    make_room(srv, "code")
    rc, out, err = ssh_run(srv, "code", "git init -q --bare repo.git && echo ok")
    assert (rc, out) == (0, "ok\n"), err
    env = dict(os.environ, GIT_SSH_COMMAND=_git_ssh(srv, data_dir),
               GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@x", GIT_COMMITTER_NAME="a",
               GIT_COMMITTER_EMAIL="a@x")
    url = "ssh://code@127.0.0.1:%d/workspace/repo.git" % srv.port
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", url, str(work)], env=env, check=True)
    (work / "README").write_text("hello from git\n")
    for cmd in (["add", "README"], ["commit", "-q", "-m", "first"],
                ["push", "-q", "origin", "HEAD:main"]):
        subprocess.run(["git", "-C", str(work)] + cmd, env=env, check=True,
                       capture_output=True)
    again = tmp_path / "again"
    subprocess.run(["git", "clone", "-q", "-b", "main", url, str(again)], env=env, check=True)
    assert (again / "README").read_text() == "hello from git\n"
    # The short ssh:// form names the repository from the workspace, as the
    # sftp root does; a path that exists at / keeps its meaning.
    short = tmp_path / "short"
    p = subprocess.run(["git", "clone", "-q", "-b", "main",
                        "ssh://code@127.0.0.1:%d/repo.git" % srv.port, str(short)],
                       env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (short / "README").read_text() == "hello from git\n"
    p = subprocess.run(["git", "clone", "-q", "ssh://code@127.0.0.1:%d/usr" % srv.port,
                        str(tmp_path / "usr")], env=env, capture_output=True, text=True)
    assert p.returncode != 0 and "'/usr' does not appear to be a git repository" in p.stderr

    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "f.txt").write_text("synced\n")
    rsh = _git_ssh(srv, data_dir)
    subprocess.run(["rsync", "-a", "-e", rsh, str(src) + "/", "code@127.0.0.1:dst/"],
                   check=True, capture_output=True)
    assert ssh_run(srv, "code", "cat dst/sub/f.txt")[:2] == (0, "synced\n")
    back = tmp_path / "back"
    subprocess.run(["rsync", "-a", "-e", rsh, "code@127.0.0.1:dst/", str(back) + "/"],
                   check=True, capture_output=True)
    assert (back / "sub" / "f.txt").read_text() == "synced\n"


def test_atriumd_says_it_needs_root(build):
    import shutil
    import tempfile
    # A copy the unprivileged uid can reach whatever the clone's location.
    d = tempfile.mkdtemp(prefix="atrium-nonroot-")
    try:
        os.chmod(d, 0o755)
        prog = shutil.copy(os.path.join(build, "atriumd"), d)
        p = subprocess.run(["setpriv", "--reuid=64222", "--regid=64222",
                            "--clear-groups", prog, "--data", os.path.join(d, "data")],
                           capture_output=True, text=True, timeout=10)
    finally:
        shutil.rmtree(d)
    assert p.returncode == 1, p.stderr
    assert "must run as root" in p.stderr


def test_piped_requests_get_every_answer_before_the_session_ends(room_server):
    """A script may pipe its requests in and close stdin: the session stays
    until its turn has ended and its exec has its result, then exits 0."""
    reqs = (json.dumps({"type": "prompt", "text": "run: sleep 1; echo from-the-agent"})
            + "\n" + json.dumps({"type": "exec", "id": "e1", "command": "sleep 1.5; echo done"})
            + "\n")
    make_room(room_server, "script")
    p = subprocess.run(ssh_command(room_server, "script", opts=["-s"]) + ["atrium"],
                       input=reqs, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert "turn_end" in types
    assert any(e["type"] == "tool_result" and "from-the-agent" in e["output"] for e in events)
    res = [e for e in events if e["type"] == "exec_result"]
    assert res and res[0]["stdout"] == "done\n"
    # With nothing asked, closing stdin ends the session at once.
    p = subprocess.run(ssh_command(room_server, "script", opts=["-s"]) + ["atrium"],
                       input="", capture_output=True, text=True, timeout=20)
    assert p.returncode == 0


def test_a_huge_captured_output_still_brings_its_result(room_server):
    """Captured output is escaped into one protocol line: a command that
    prints megabytes of newlines and quotes (up to six bytes of JSON each)
    still gets its exec_result, cut and marked truncated, shared or not."""
    cmd = "yes '\"' | head -c 3000000; seq 1 300000 >&2; exit 7"
    reqs = "".join(json.dumps({"type": "exec", "id": i, "command": cmd,
                               "share": share}) + "\n"
                   for i, share in (("plain", False), ("shared", True)))
    make_room(room_server, "bigout")
    p = subprocess.run(ssh_command(room_server, "bigout", opts=["-s"])
                       + ["atrium"], input=reqs, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert all(len(line.encode()) <= 1 << 20 for line in lines)
    res = {e["id"]: e for e in map(json.loads, lines)
           if e["type"] == "exec_result"}
    for i in ("plain", "shared"):
        r = res[i]
        assert r["exitCode"] == 7 and r["truncated"] is True
        assert r["stdout"].startswith('"\n"\n') and set(r["stdout"]) <= set('"\n')
        assert r["stderr"].startswith("1\n2\n3\n")


def test_approval_answered_with_y_in_the_chat(atriumd, data_dir, model_server, ssh_run):
    """Under the ask policy every member sees what the agent wants to run;
    one of them types y and it runs; n refuses the next one."""
    from test_ssh import chat_plain
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test-e2e")
    srv = atriumd(data_dir, "--model-url", model_server.url, "--approval", "ask",
                  env=env)
    a, b = chat_plain(srv, "ask", "alice"), chat_plain(srv, "ask", "bob")
    try:
        a.expect(lambda l: b"you are alice" in l)
        b.expect(lambda l: b"you are bob" in l)
        a.send("@agent run: echo yes-ran > approved.txt\n")
        for c in (a, b):
            c.expect(lambda l: b"approval needed: bash echo yes-ran" in l)
        b.send("y\n")
        a.expect(lambda l: b"agent done" in l, timeout=30)
        a.send("@agent run: echo no-ran > refused.txt\n")
        a.expect(lambda l: b"approval needed: bash echo no-ran" in l)
        a.send("n\n")
        a.expect(lambda l: b"tool denied" in l, timeout=30)
    finally:
        a.close()
        b.close()
    assert ssh_run(srv, "ask", "cat approved.txt; ls")[1] == "yes-ran\napproved.txt\n"
