"""MCP tools: servers named in the room's config run in the room's sandbox
and speak MCP over stdio; their tools reach the model beside the built-in
ones, go through the approval policy, and their results are journaled and
shown like any tool's.  A server that crashes or writes garbage is stopped
with a clear message to the model and the room.

Real parts: atrium-agent, bubblewrap's sandbox (the server runs there as
the room's uid, in /workspace), room.db, and an MCP server written for the
tests (tests/mcp_server.py); only the model is scripted.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_mcp.py
"""
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_server import Reply, ToolCall  # noqa: E402
from test_agent import (fast, pytestmark, room,  # noqa: E402,F401
                        tool_results_in)

KEY = "sk-operator-secret-for-mcp-tests"


def server_conf(room, mode, name="calc", env=None):
    """A config entry running tests/mcp_server.py in MODE from the
    workspace, logging what it reads to /workspace/NAME.log."""
    shutil.copy(os.path.join(HERE, "mcp_server.py"),
                os.path.join(room.workspace, "mcp_server.py"))
    return {"name": name, "command": "/usr/bin/python3",
            "args": ["/workspace/mcp_server.py", mode,
                     "/workspace/%s.log" % name],
            "env": env or {}}


def configure(room, servers, user="alice"):
    c = room.connect(user)
    c.send({"type": "config", "mcp": servers})
    ev = c.wait("config")
    c.close()
    room.clients.remove(c)
    return ev


def tool_names(body):
    """The tool names a request offered, in either wire format."""
    return [t.get("name") or t.get("function", {}).get("name")
            for t in body.get("tools", [])]


def server_log(room, name="calc"):
    """The messages the server has logged so far, in order: whole lines
    only (one being appended is left for a later look)."""
    try:
        with open(os.path.join(room.workspace, name + ".log")) as f:
            data = f.read()
    except FileNotFoundError:
        return []
    return [json.loads(l) for l in data.split("\n")[:-1]]


def wait_logged(room, method, timeout=30, name="calc"):
    """The server's log once it holds a message of method.  The server
    logs each message as it reads it, after the agent wrote it: a message
    that is not answered (a notification) is in the log at some point
    after the event that made the agent send it, not at it."""
    end = time.monotonic() + timeout
    while True:
        log = server_log(room, name)
        if any(m.get("method") == method for m in log):
            return log
        if time.monotonic() > end:
            raise AssertionError("the MCP server %s did not log %s within "
                                 "%s s; it logged %s" % (
                                     name, method, timeout,
                                     [m.get("method") for m in log]))
        time.sleep(0.05)


def test_mcp_tool_through_a_turn_with_approval(room, model):
    room.start("--model-url", model.url, *fast("--approval-timeout", "30"))
    ev = configure(room, [server_conf(room, "good", env={"GREETING": "hey"})])
    assert ev["mcp"][0]["name"] == "calc" and "mcp" in ev["changed"]
    model.script(
        Reply("Adding.", tool_calls=[ToolCall("mcp__calc__add",
                                              {"a": 2, "b": 40})]),
        Reply("Shouting.", tool_calls=[ToolCall("mcp__calc__shout",
                                                {"text": "quiet"})]),
        Reply("It is 42."))
    c = room.connect()
    bob = room.connect("bob")
    c.send({"type": "prompt", "text": "what is 2 + 40?"})
    # The policy is ask (the default): a member answers.
    req = bob.wait("approval_request", timeout=30)
    assert req["tool"] == "mcp__calc__add"
    assert req["input"] == {"a": 2, "b": 40} and req["modifies"] is True
    bob.send({"type": "approve", "id": req["id"], "approve": True})
    res = c.wait("tool_result")
    assert (res["status"], res["output"]) == ("ok", "42")
    req = bob.wait("approval_request")
    bob.send({"type": "approve", "id": req["id"], "approve": True})
    res = c.wait("tool_result")
    assert res["status"] == "ok"
    assert res["output"].startswith("QUIET\n[image content (image/png) not "
                                    "shown")
    assert res["output"].endswith("greeting=hey")
    assert c.wait("turn_end")["stop_reason"] == "end_turn"
    # Both pages of tools were offered, namespaced, beside the built-ins.
    names = tool_names(model.requests[0]["body"])
    assert "bash" in names and "mcp__calc__add" in names
    assert "mcp__calc__shout" in names
    assert tool_results_in(model.requests[1]["body"])[0] == "42"
    # Journaled like any tool.
    rows = room.db().execute(
        "SELECT name, input, state, status, output FROM tool_journal"
        " ORDER BY id").fetchall()
    assert rows[0] == ("mcp__calc__add", '{"a":2,"b":40}', "ended", "ok",
                       "42")
    # What the server read: the lifecycle, then the calls.
    log = server_log(room)
    assert log[0]["method"] == "initialize"
    assert log[0]["params"]["protocolVersion"] == "2025-06-18"
    assert [m["method"] for m in log[1:]] == [
        "notifications/initialized", "tools/list", "tools/list",
        "tools/call", "tools/call"]
    assert log[3]["params"] == {"cursor": "page-2"}
    assert log[4]["params"] == {"name": "add", "arguments": {"a": 2, "b": 40}}


def test_mcp_server_that_crashes(room, model):
    room.start("--model-url", model.url, "--approval", "allow_all", *fast())
    configure(room, [server_conf(room, "crash")])
    model.script(
        Reply("Adding.", tool_calls=[ToolCall("mcp__calc__add",
                                              {"a": 1, "b": 1})]),
        Reply("The server crashed."))
    c = room.connect()
    c.send({"type": "prompt", "text": "add"})
    evs = c.collect("turn_end", timeout=30)
    res = [e for e in evs if e["type"] == "tool_result"][0]
    assert res["status"] == "error"
    assert "exited with status 3" in res["output"]
    assert "boom: the test server crashed" in res["output"]
    said = [e["text"] for e in evs if e["type"] == "notice"]
    assert any("the MCP server calc was stopped" in t for t in said), said
    assert "exited with status 3" in tool_results_in(
        model.requests[1]["body"])[0]


def test_mcp_server_that_sends_garbage(room, model):
    room.start("--model-url", model.url, "--approval", "allow_all", *fast())
    configure(room, [server_conf(room, "garbage")])
    model.script(
        Reply("Adding.", tool_calls=[ToolCall("mcp__calc__add",
                                              {"a": 1, "b": 1})]),
        Reply("No server."))
    c = room.connect()
    c.send({"type": "prompt", "text": "add"})
    evs = c.collect("turn_end", timeout=30)
    said = [e["text"] for e in evs if e["type"] == "notice"]
    assert any("the MCP server calc was stopped" in t and
               "not a JSON object" in t for t in said), said
    # Its tools were never offered; a call to one is refused, not run.
    assert not [n for n in tool_names(model.requests[0]["body"])
                if n.startswith("mcp__")]
    res = [e for e in evs if e["type"] == "tool_result"][0]
    assert res["status"] == "error" and "is not running" in res["output"]


def test_mcp_call_that_never_answers_times_out(room, model):
    room.start("--model-url", model.url, "--approval", "allow_all",
               "--command-timeout", "2", *fast())
    configure(room, [server_conf(room, "hang")])
    model.script(
        Reply("Adding.", tool_calls=[ToolCall("mcp__calc__add",
                                              {"a": 1, "b": 1})]),
        Reply("It hung."))
    c = room.connect()
    c.send({"type": "prompt", "text": "add"})
    evs = c.collect("turn_end", timeout=30)
    res = [e for e in evs if e["type"] == "tool_result"][0]
    assert res["status"] == "error"
    assert "did not answer within 2 s" in res["output"]
    # The call's cancellation reached the server, naming the call.
    log = wait_logged(room, "notifications/cancelled")
    call = [m for m in log if m.get("method") == "tools/call"]
    assert len(call) == 1, log
    assert log[-1]["method"] == "notifications/cancelled", log
    assert log[-1]["params"]["requestId"] == call[0]["id"], log


def test_mcp_config_is_checked(room, model):
    room.env["ANTHROPIC_API_KEY"] = KEY
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    for servers, why in [
            ([{"name": "a__b", "command": "x"}], "name must be"),
            ([{"name": "ok", "command": ""}], "needs a command"),
            ([{"name": "ok", "command": "x", "cwd": "/"}], "not \"cwd\""),
            ([{"name": "ok", "command": "x", "env": {"T": KEY}}],
             "API keys"),
            ([{"name": "ok", "command": "x"}] * 2, "names must differ"),
            ("npx server", "must be an array")]:
        c.send({"type": "config", "mcp": servers})
        assert why in c.wait("error")["message"]
    bob = room.connect("bob")
    bob.send({"type": "config", "mcp": []})
    assert "owner" in bob.wait("error")["message"]


def test_mcp_call_interrupted_by_a_crash_is_never_sent_again(room, model):
    room.start("--model-url", model.url, "--approval", "allow_all", *fast())
    configure(room, [server_conf(room, "hang")])
    model.script(
        Reply("Adding.", tool_calls=[ToolCall("mcp__calc__add",
                                              {"a": 1, "b": 1})]),
        Reply("It was interrupted."))
    c = room.connect()
    c.send({"type": "prompt", "text": "add"})
    call = c.wait("tool_call")
    wait_logged(room, "tools/call")
    room.kill9()
    room.start()
    d = room.connect("alice", since=call["seq"])
    res = d.wait("tool_result", timeout=20)
    assert res["id"] == call["id"] and res["status"] == "interrupted"
    d.wait("turn_end", timeout=20)
    # The restarted server was started for the resumed turn, yet the call
    # reached a server once only.
    methods = [m["method"] for m in server_log(room)]
    assert methods.count("tools/call") == 1
    assert methods.count("initialize") == 2


def test_mcp_tool_that_does_not_exist_is_refused_without_asking(room, model):
    room.start("--model-url", model.url, *fast())
    configure(room, [server_conf(room, "good")])
    model.script(
        Reply("Trying.", tool_calls=[ToolCall("mcp__calc__divide",
                                              {"a": 1, "b": 0})]),
        Reply("No such tool."))
    c = room.connect()
    c.send({"type": "prompt", "text": "divide"})
    evs = c.collect("turn_end", timeout=30)
    assert not [e for e in evs if e["type"] == "approval_request"]
    res = [e for e in evs if e["type"] == "tool_result"][0]
    assert res["status"] == "error"
    assert "has no tool \"mcp__calc__divide\"" in res["output"]
    assert "mcp__calc__add" in res["output"]
    assert "tools/call" not in [m["method"] for m in server_log(room)]
