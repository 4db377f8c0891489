"""What the agent keeps apart: the host's files from the prompt (AGENTS.md
is read beneath the workspace with the sandbox uid's rights), one
provider's key from another provider's server, and the keys from other
processes (not in the environment, not dumpable).

Real parts throughout: atrium-agent (directly, or started by atriumd), the
sandbox, atrium-fs where named, and scripted model servers that record
every request's headers and body.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_security.py
"""
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import make_room

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_server import ModelServer, Reply, ToolCall  # noqa: E402
from test_agent import (AGENT, BIN_DIR, fast,  # noqa: E402,F401
                        pytestmark, room)

SECRET = "TOPSECRET-host-file-7c1e"


def sent_anywhere(srv, text):
    """True when text is in any request srv received (headers or body)."""
    for req in srv.requests:
        if text in json.dumps(req.get("body")) or \
                any(text in str(v) for v in dict(req["headers"]).values()):
            return True
    return False


def prompt_and_wait(room, text="hi"):
    c = room.connect()
    c.send({"type": "prompt", "text": text})
    evs = c.collect("turn_end", timeout=20)
    c.close()
    room.clients.remove(c)
    return evs


def host_secret(room):
    """A file outside the workspace that only root may read."""
    path = os.path.join(room.base, "secret.txt")
    with open(path, "w") as f:
        f.write(SECRET + "\n")
    os.chmod(path, 0o600)
    return path


# --- AGENTS.md is read through the confined path -----------------------------

@pytest.mark.parametrize("link", ["absolute", "dotdot", "mounted"])
def test_agents_md_symlink_out_of_workspace_is_not_sent(room, model, link):
    secret = host_secret(room)
    target = secret if link != "dotdot" else os.path.relpath(
        secret, room.workspace)

    def scenario():
        os.symlink(target, os.path.join(room.workspace, "AGENTS.md"))
        room.start("--model-url", model.url, *fast())
        evs = prompt_and_wait(room)
        assert evs[-1]["stop_reason"] == "end_turn"
        assert len(model.requests) == 1
        assert not sent_anywhere(model, SECRET)
        assert "AGENTS.md" not in model.requests[0]["body"]["system"]
        assert "AGENTS.md not put in the system prompt: it leads outside " \
            "the workspace" in room.log_text()

    if link == "mounted":
        with room.on_atrium_fs():
            scenario()
    else:
        scenario()


@pytest.mark.parametrize("mounted", [False, True])
def test_agents_md_file_and_inner_symlink_are_sent(room, model, mounted):
    def scenario():
        agents = os.path.join(room.workspace, "AGENTS.md")
        with open(agents, "w") as f:
            f.write("RULE-ONE: be brief\n")
        room.start("--model-url", model.url, *fast())
        prompt_and_wait(room)
        assert "RULE-ONE: be brief" in model.requests[-1]["body"]["system"]
        # A relative symlink that stays inside the workspace is followed.
        os.makedirs(os.path.join(room.workspace, "docs"))
        with open(os.path.join(room.workspace, "docs", "rules.md"),
                  "w") as f:
            f.write("RULE-TWO: from docs\n")
        os.unlink(agents)
        os.symlink("docs/rules.md", agents)
        prompt_and_wait(room)
        system = model.requests[-1]["body"]["system"]
        assert "RULE-TWO: from docs" in system
        assert "RULE-ONE" not in system

    if mounted:
        with room.on_atrium_fs():
            scenario()
    else:
        scenario()


def test_agents_md_is_read_once_a_turn(room, model):
    """A turn's requests share the AGENTS.md of its first step: the agent
    rewriting it mid-turn changes the next turn's prompt, not this one's."""
    agents = os.path.join(room.workspace, "AGENTS.md")
    with open(agents, "w") as f:
        f.write("RULE-OLD: tabs\n")
    os.chmod(agents, 0o666)          # the sandbox uid may rewrite it
    room.start("--model-url", model.url, "--approval", "allow_all", *fast())
    model.script(Reply("Updating.", tool_calls=[ToolCall(
        "write", {"path": "AGENTS.md", "content": "RULE-NEW: spaces\n"})]),
        Reply("Done."), Reply("Next."))
    evs = prompt_and_wait(room, "switch to spaces")
    assert [e["status"] for e in evs if e["type"] == "tool_result"] == ["ok"]
    first, second = (r["body"]["system"] for r in model.requests[:2])
    assert "RULE-OLD: tabs" in first and second == first
    with open(agents) as f:
        assert f.read() == "RULE-NEW: spaces\n"
    prompt_and_wait(room, "and now?")
    third = model.requests[2]["body"]["system"]
    assert "RULE-NEW: spaces" in third and "RULE-OLD" not in third


def test_agents_md_unreadable_by_sandbox_uid_is_not_sent(room, model):
    """Read with the sandbox uid's rights, not root's."""
    agents = os.path.join(room.workspace, "AGENTS.md")
    with open(agents, "w") as f:
        f.write(SECRET + "\n")
    os.chmod(agents, 0o600)          # root's own file in the workspace
    room.start("--model-url", model.url, *fast())
    prompt_and_wait(room)
    assert not sent_anywhere(model, SECRET)


# --- keys and URLs per provider ---------------------------------------------

KEY_A = "sk-ant-only-for-anthropic-41"
KEY_O = "sk-oai-only-for-openai-97"


@pytest.fixture
def two_servers():
    anth = ModelServer(api_key=KEY_A).start()
    oai = ModelServer(api_key=KEY_O).start()
    try:
        yield anth, oai
    finally:
        anth.stop()
        oai.stop()


def headers_of(srv):
    return [{k.lower(): v for k, v in dict(r["headers"]).items()}
            for r in srv.requests]


def test_provider_switch_sends_each_key_only_to_its_own_server(
        room, two_servers):
    anth, oai = two_servers
    room.env.update(ANTHROPIC_API_KEY=KEY_A, OPENAI_API_KEY=KEY_O)
    room.start("--provider", "anthropic", "--model-url", anth.url,
               "--openai-url", oai.openai_url, *fast())
    evs = prompt_and_wait(room, "first")
    assert evs[-1]["stop_reason"] == "end_turn"
    c = room.connect()
    c.send({"type": "config", "provider": "openai", "model": "gpt-test"})
    ev = c.wait("config")
    assert ev["provider"] == "openai" and ev["model"] == "gpt-test"
    c.send({"type": "prompt", "text": "second"})
    assert c.wait("turn_end", timeout=20)["stop_reason"] == "end_turn"
    # Back to anthropic without a model: the operator's default model.
    c.send({"type": "config", "provider": "anthropic"})
    ev = c.wait("config")
    assert ev["provider"] == "anthropic"
    assert ev["model"] == "claude-sonnet-4-5"
    c.send({"type": "prompt", "text": "third"})
    assert c.wait("turn_end", timeout=20)["stop_reason"] == "end_turn"
    assert len(anth.requests) == 2 and len(oai.requests) == 1
    for h in headers_of(anth):
        assert h.get("x-api-key") == KEY_A and "authorization" not in h
    for h in headers_of(oai):
        assert h.get("authorization") == "Bearer " + KEY_O
        assert "x-api-key" not in h
    assert oai.requests[0]["path"] == "/v1/chat/completions"
    assert oai.requests[0]["body"]["model"] == "gpt-test"
    assert not sent_anywhere(anth, KEY_O) and not sent_anywhere(oai, KEY_A)


def test_switch_to_unconfigured_provider_is_refused(room, two_servers):
    anth, oai = two_servers
    oai.api_key = None               # a local server that needs no key
    room.start("--provider", "openai", "--model", "local",
               "--model-url", oai.openai_url, *fast())
    c = room.connect()
    c.send({"type": "config", "provider": "anthropic"})
    err = c.wait("error")
    assert "provider anthropic is not configured on this server" in \
        err["message"]
    assert "ANTHROPIC_API_KEY" in err["message"]
    c.send({"type": "prompt", "text": "still here"})
    assert c.wait("turn_end", timeout=20)["stop_reason"] == "end_turn"
    assert len(oai.requests) == 1 and not anth.requests
    # openai has no default model: a switch to it must name one.
    room.cleanup()
    room.env.update(OPENAI_API_KEY=KEY_O)
    room.start("--provider", "anthropic", "--model-url", anth.url,
               "--openai-url", oai.openai_url, *fast())
    c = room.connect()
    c.send({"type": "config", "provider": "openai"})
    assert "needs a model name" in c.wait("error")["message"]


@pytest.mark.parametrize("field", ["model_url", "url", "base_url",
                                   "api_key", "openai-url"])
def test_config_cannot_set_url_or_key(room, model, field):
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    c.send({"type": "config", field: "http://evil.example/", "model": "m"})
    err = c.wait("error")
    assert "cannot be set by a room" in err["message"]
    assert "operator" in err["message"]
    prompt_and_wait(room)
    assert model.requests[-1]["body"]["model"] != "m"   # nothing applied


def test_openai_without_model_is_refused_at_start(room):
    p = subprocess.run([AGENT, "--room-dir", room.room_dir, "--run-dir",
                        room.run_dir, "--bin-dir", BIN_DIR, "--provider",
                        "openai", "--model-url", "http://127.0.0.1:9/v1"],
                       env=room.env, capture_output=True, text=True,
                       timeout=20)
    assert p.returncode == 2
    assert "provider openai needs a model name" in p.stderr
    assert "--model NAME" in p.stderr


# --- the process: no key in the environment, not dumpable ---------------------

def read_as_nobody(path):
    """What another uid gets reading path: "read" or "denied"."""
    def drop():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    p = subprocess.run(["cat", path], preexec_fn=drop, capture_output=True,
                       timeout=20)
    return "read" if p.returncode == 0 else "denied"


def check_process_keeps_keys(pid, log, *keys, names_too=True):
    """No key in pid's environment or argv, nothing of it readable by
    another uid, and the agent made itself non-dumpable (it checks that
    itself with PR_GET_DUMPABLE and says so); with names_too, not even the
    variables' names (atriumd never passes them; an agent started by hand
    can only wipe their values)."""
    with open("/proc/%d/environ" % pid, "rb") as f:
        env = f.read()
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        cmdline = f.read()
    for k in keys:
        assert k.encode() not in env
        assert k.encode() not in cmdline
    assert not names_too or b"API_KEY" not in env
    assert read_as_nobody("/proc/%d/environ" % pid) == "denied"
    assert "process not dumpable)" in log()


def test_agent_started_by_hand_wipes_its_environment(room, model):
    room.env.update(ANTHROPIC_API_KEY="sk-by-hand-5521")
    model.api_key = "sk-by-hand-5521"
    p = room.start("--model-url", model.url, *fast())
    check_process_keeps_keys(p.pid, room.log_text, "sk-by-hand-5521",
                             names_too=False)
    assert "keys from the environment" in room.log_text()
    evs = prompt_and_wait(room)
    assert [e for e in evs if e["type"] == "message"
            and e["user"] == "agent"]
    assert model.requests[0]["headers"]["x-api-key"] == "sk-by-hand-5521"


def pids_of(prog, data):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(prog.encode()) and \
                any(str(data).encode() in a for a in argv):
            out.append(int(d))
    return out


def test_atriumd_hands_keys_on_a_pipe(atriumd, data_dir, ssh_run):
    """Through atriumd: the agent authenticates with keys it got on a pipe;
    neither its environment nor argv nor atriumd's environment shows them,
    and AGENTS.md linked by a person to a host file stays out of the
    prompt."""
    from test_e2e import Room as Client, of_type
    anth = ModelServer(api_key=KEY_A).start()
    oai = ModelServer(api_key=KEY_O).start()
    secret = os.path.join(os.path.dirname(str(data_dir)), "host-secret.txt")
    with open(secret, "w") as f:
        f.write(SECRET + "\n")
    try:
        env = dict(os.environ, ANTHROPIC_API_KEY=KEY_A, OPENAI_API_KEY=KEY_O)
        srv = atriumd(data_dir, "--provider", "anthropic", "--model-url",
                      anth.url, "--openai-url", oai.openai_url, env=env)
        make_room(srv, "demo")
        rc, out, err = ssh_run(srv, "demo", "ln -s %s AGENTS.md" % secret)
        assert rc == 0, err
        r = Client(srv, "demo")
        try:
            r.expect(of_type("welcome"))
            r.send(type="prompt", text="hello")
            assert r.until_turn_end()["stop_reason"] == "end_turn"
            r.send(type="config", provider="openai", model="gpt-test")
            r.expect(of_type("config", provider="openai"))
            r.send(type="prompt", text="again")
            assert r.until_turn_end()["stop_reason"] == "end_turn"
            agents = pids_of("atrium-agent", data_dir)
            assert len(agents) == 1
            check_process_keeps_keys(agents[0], srv.read_log, KEY_A, KEY_O)
            assert "keys from atriumd" in srv.read_log()
        finally:
            r.close()
        with open("/proc/%d/environ" % srv.proc.pid, "rb") as f:
            daemon_env = f.read()
        assert KEY_A.encode() not in daemon_env
        assert KEY_O.encode() not in daemon_env
        assert len(anth.requests) == 1 and len(oai.requests) == 1
        assert headers_of(anth)[0]["x-api-key"] == KEY_A
        assert headers_of(oai)[0]["authorization"] == "Bearer " + KEY_O
        assert not sent_anywhere(anth, SECRET)
        assert not sent_anywhere(oai, SECRET)
        assert "AGENTS.md not put in the system prompt" in srv.read_log()
    finally:
        anth.stop()
        oai.stop()
