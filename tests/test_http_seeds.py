"""The seed systems' HTTP APIs over Atrium's rooms (atriumd(8), HTTP):
Cloudflare's workspace example, Duet's worker and rhema's coding agent.
Each recipe is the system's own curl command with only the Authorization
header added, run with the real curl against a running atriumd."""
import json
import os
import subprocess

import pytest

from conftest import make_room
from http_run import http_server, token_for
from test_access import wait_gone


def curl(srv, token, method, path, *args, timeout=120):
    """(status, body) of curl -X METHOD with the token."""
    p = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", "-X", method,
                        "-H", "Authorization: Bearer " + token] + list(args) +
                       ["http://127.0.0.1:%d%s" % (srv.http_port, path)],
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr
    body, _, code = p.stdout.rpartition("\n")
    return int(code), body


def model_atriumd(atriumd, data_dir, model_server, *extra):
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test-seeds")
    return http_server(atriumd, data_dir, "--provider", "anthropic",
                       "--model-url", model_server.url, "--model",
                       "test-model", *extra, env=env)


# ---- Cloudflare's workspace example: POST /c/{name}/exec ----------------

def test_cloudflare_exec_recipe(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "demo")
    assert ssh_run(srv, "demo", "printf hello > hello.txt")[0] == 0
    tok = token_for(srv, "alice")
    # examples/container/README.md: "run a command against it"
    status, body = curl(srv, tok, "POST", "/c/demo/exec",
                        "-H", "content-type: application/json",
                        "-d", '{"command":"cat /workspace/hello.txt"}')
    assert status == 200, body
    assert json.loads(body) == {"exitCode": 0, "stdout": "hello",
                                "stderr": ""}


def test_cloudflare_exec_argv_cwd_and_status(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "demo")
    assert ssh_run(srv, "demo", "mkdir -p src")[0] == 0
    tok = token_for(srv, "alice")
    status, body = curl(srv, tok, "POST", "/c/demo/exec",
                        "-H", "content-type: application/json", "-d",
                        json.dumps({"argv": ["sh", "-c", "pwd; echo $1 >&2;"
                                             " exit 4", "-", "it's"],
                                    "cwd": "/workspace/src",
                                    "encoding": "utf8"}))
    assert status == 200, body
    assert json.loads(body) == {"exitCode": 4, "stdout": "/workspace/src\n",
                                "stderr": "it's\n"}


def test_cloudflare_exec_refusals(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "demo")
    tok = token_for(srv, "alice")
    for body in ('{"command":"ls","cwd":"/etc"}',
                 '{"command":"ls","cwd":"/workspace/../etc"}',
                 '{"argv":[]}', '{"command":""}', 'not json',
                 '{"command":"ls","encoding":"base64"}'):
        status, answer = curl(srv, tok, "POST", "/c/demo/exec", "-H",
                              "content-type: application/json", "-d", body)
        assert status == 400, (body, answer)
        assert json.loads(answer)["error"]
    ro = token_for(srv, "alice", read_only=True)
    status, _ = curl(srv, ro, "POST", "/c/demo/exec", "-H",
                     "content-type: application/json", "-d",
                     '{"command":"touch x"}')
    assert status == 403
    assert ssh_run(srv, "demo", "test -e x")[0] == 1


def test_cloudflare_exec_output_is_capped(atriumd, data_dir, ssh_run):
    """Each stream stops at 1 MiB and says so with "truncated"."""
    srv = http_server(atriumd, data_dir)
    make_room(srv, "demo")
    tok = token_for(srv, "alice")
    status, body = curl(srv, tok, "POST", "/c/demo/exec", "-H",
                        "content-type: application/json", "-d",
                        '{"command":"yes | head -c 3000000"}')
    assert status == 200, body[:200]
    ans = json.loads(body)
    assert ans["exitCode"] == 0 and ans["truncated"] is True
    assert 0 < len(ans["stdout"]) <= 1 << 20
    assert set(ans["stdout"]) == {"y", "\n"}


# ---- Duet's worker ------------------------------------------------------

def test_duet_sandbox_exec(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "demo")
    tok = token_for(srv, "alice")
    status, body = curl(srv, tok, "POST", "/api/rooms/demo/sandbox/exec",
                        "-H", "content-type: application/json",
                        "-d", '{"cmd":"echo hello from the sandbox"}')
    assert status == 200, body
    ans = json.loads(body)
    assert ans["sandboxName"] == "sandbox-demo"
    res = ans["result"]
    assert res["stdout"] == "hello from the sandbox\n"
    assert res["exitCode"] == 0 and res["success"] is True
    assert res["command"] == "echo hello from the sandbox"
    status, body = curl(srv, tok, "POST", "/api/rooms/demo/sandbox/exec",
                        "-H", "content-type: application/json",
                        "-d", '{"cmd":""}')
    assert status == 400
    assert json.loads(body) == {"error": "invalid request", "details": {
        "cmd": ["Command cannot be empty"]}}


def test_duet_message_answers_at_turn_end(atriumd, data_dir, model_server,
                                          ssh_run):
    srv = model_atriumd(atriumd, data_dir, model_server)
    make_room(srv, "demo")
    # a line said earlier over SSH is in the room's messages
    rc, _, err = ssh_run(srv, "demo", "atrium", opts=("-s",),
                         input='{"type":"chat","text":"said before"}\n')
    assert rc == 0, err
    tok = token_for(srv, "alice")
    status, body = curl(srv, tok, "POST", "/api/rooms/demo/messages",
                        "-H", "content-type: application/json",
                        "-d", '{"text":"hello duet","userId":"u1"}')
    assert status == 200, body
    ans = json.loads(body)
    # the scripted model echoes what it was sent: who said it, then the
    # prompt's text unchanged
    assert ans["reply"] == "echo: alice:\nhello duet"
    last = ans["messages"][-2:]
    assert [(m["role"], m.get("userId"), m["text"]) for m in last] == [
        ("user", "u1", "hello duet"), ("agent", None, ans["reply"])]
    assert all(m["ts"] > 0 for m in last)
    assert {"role": "user", "userId": "alice", "text": "said before"} in [
        {k: m[k] for k in ("role", "userId", "text")} for m in
        ans["messages"][:-2]]
    # the model saw the text as the prompt
    assert "hello duet" in json.dumps(model_server.requests[-1]["body"])
    status, body = curl(srv, tok, "POST", "/api/rooms/demo/messages",
                        "-H", "content-type: application/json",
                        "-d", '{"text":"   "}')
    assert status == 400
    assert json.loads(body)["details"] == {"text": ["Text cannot be empty"]}


def test_duet_delete_room(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "demo")
    assert ssh_run(srv, "demo", "echo kept > f")[0] == 0
    bob = token_for(srv, "bob")
    status, body = curl(srv, bob, "DELETE", "/api/rooms/demo")
    assert status == 403, body
    assert ssh_run(srv, "demo", "cat f")[1] == "kept\n"
    alice = token_for(srv, "alice")
    status, body = curl(srv, alice, "DELETE", "/api/rooms/demo")
    assert status == 200, body
    assert json.loads(body) == {"deleted": "demo"}
    assert wait_gone(srv, "demo")
    status, body = curl(srv, alice, "DELETE", "/api/rooms/demo")
    assert status == 404, body


# ---- rhema's coding agent -----------------------------------------------

def test_rhema_config_and_session(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "s1")
    tok = token_for(srv, "alice")
    status, body = curl(srv, tok, "POST", "/sessions/s1/config", "-H",
                        "content-type: application/json", "-d", json.dumps({
                            "model": "test-model", "approval": "ask_client",
                            "allow_list": ["read"],
                            "skills": [{"name": "greet",
                                        "description": "Say hello",
                                        "body": "Say hello warmly."}]}))
    assert status == 200, body
    assert json.loads(body) == {"model": "test-model",
                                "approval": "ask_client",
                                "allow_list": ["read"], "skills": ["greet"]}
    status, body = curl(srv, tok, "GET", "/sessions/s1/session")
    assert status == 200, body
    rec = json.loads(body)
    assert rec["id"] == "s1"
    assert rec["config"]["approval"] == "ask_client"
    assert rec["config"]["model"] == "test-model"
    cfg = [e for e in rec["events"] if e["type"] == "config"][-1]
    assert cfg["approval"] == "ask_client" and cfg["user"] == "alice"
    assert rec["seq"] >= cfg["seq"]
    for bad in ({"approval": "sometimes"}, {"temperature": 0.2}, {}):
        status, body = curl(srv, tok, "POST", "/sessions/s1/config", "-H",
                            "content-type: application/json", "-d",
                            json.dumps(bad))
        assert status == 400, (bad, body)
    # only the room's owner sets it
    status, body = curl(srv, token_for(srv, "bob"), "POST",
                        "/sessions/s1/config", "-H",
                        "content-type: application/json", "-d",
                        '{"approval":"allow_all"}')
    assert status == 403, body
    assert "owner" in json.loads(body)["error"]


WS_CLIENT = r'''
import asyncio, json, sys
import websockets

async def main():
    url, token = sys.argv[1], sys.argv[2]
    script = json.loads(sys.stdin.read())
    async with websockets.connect(
            url, extra_headers={"Authorization": "Bearer " + token}) as ws:
        ask = None
        for step in script:
            if "send" in step:
                await ws.send(json.dumps(step["send"]))
                continue
            if "approve" in step:
                await ws.send(json.dumps({"type": "approve", "id": ask,
                                          "approve": step["approve"]}))
                continue
            want = step["until"]
            while True:
                ev = json.loads(await asyncio.wait_for(ws.recv(), 60))
                print(json.dumps(ev), flush=True)
                if ev.get("type") == "approval_request":
                    ask = ev["id"]
                if ev.get("type") == want:
                    break
                if want == "approval_request" and ev.get("type") == "turn_end":
                    break

asyncio.run(main())
'''


def ws_session(srv, token, room, script):
    """Run script ([{"send": msg} | {"until": type} | {"approve": bool}],
    the last for the latest approval_request) on one connection to the
    session's WebSocket, with Debian's python3-websockets; the events
    received."""
    p = subprocess.run(["/usr/bin/python3", "-c", WS_CLIENT,
                        "ws://127.0.0.1:%d/sessions/%s/ws" % (srv.http_port,
                                                              room), token],
                       input=json.dumps(script), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


def of(events, type_):
    return [e for e in events if e["type"] == type_]


def test_rhema_websocket_approve_and_deny(atriumd, data_dir, model_server,
                                          ssh_run):
    srv = model_atriumd(atriumd, data_dir, model_server)
    make_room(srv, "s1")
    tok = token_for(srv, "alice")
    status, body = curl(srv, tok, "POST", "/sessions/s1/config", "-H",
                        "content-type: application/json", "-d",
                        '{"approval":"ask_client"}')
    assert status == 200, body
    seen = ws_session(srv, tok, "s1", [
        {"send": {"type": "chat", "text": "run: echo approved-ran"}},
        {"until": "approval_request"}, {"approve": True},
        {"until": "turn_end"},
        {"send": {"type": "chat", "text": "run: touch denied-file"}},
        {"until": "approval_request"}, {"approve": False},
        {"until": "turn_end"}])
    first = seen[:[e["type"] for e in seen].index("turn_end") + 1]
    second = seen[len(first):]
    ask = of(first, "approval_request")[0]
    assert ask["tool"] == "bash" and ask["timeout_s"] == 120
    assert ask["input"] == {"command": "echo approved-ran"}
    # the streamed answer: deltas that make the agent's texts
    answers = of(first, "assistant_message")
    assert "".join(e["text"] for e in of(first, "text_delta")) == \
        "".join(e["text"] for e in answers)
    assert answers[0]["text"] == "Running it."
    assert of(first, "approval_result")[0]["status"] == "approved"
    res = of(first, "tool_result")[0]
    assert res["status"] == "ok" and "approved-ran" in res["output"]
    assert "approved-ran" in answers[-1]["text"]
    assert of(second, "approval_result")[0]["status"] == "denied"
    assert of(second, "tool_result")[0]["status"] == "denied"
    assert ssh_run(srv, "s1", "test -e denied-file")[0] == 1
    # and the record holds it all, as rhema's events
    status, body = curl(srv, tok, "GET", "/sessions/s1/session")
    kinds = [e["type"] for e in json.loads(body)["events"]]
    assert kinds.count("approval_request") == 2
    assert "user_message" in kinds and "assistant_message" in kinds


def test_rhema_websocket_stop_and_bad_messages(atriumd, data_dir,
                                               model_server, ssh_run):
    from model_server import Hang
    srv = model_atriumd(atriumd, data_dir, model_server)
    make_room(srv, "s1")
    tok = token_for(srv, "alice")
    model_server.script(Hang())
    seen = ws_session(srv, tok, "s1", [
        {"send": {"type": "dance"}}, {"until": "error"},
        {"send": {"type": "chat", "text": "think forever"}},
        {"until": "turn_start"},
        {"send": {"type": "stop"}}, {"until": "turn_end"}])
    assert "chat, approve or stop" in of(seen, "error")[0]["message"]
    assert of(seen, "turn_end")[0]["turn"] == of(seen, "turn_start")[0]["turn"]


def test_rhema_unanswered_ask_client_is_denied(atriumd, data_dir,
                                               model_server, ssh_run):
    """ask_client's 120 s, shortened here: no answer is a denial."""
    srv = model_atriumd(atriumd, data_dir, model_server,
                        "--approval-timeout", "2")
    make_room(srv, "s1")
    tok = token_for(srv, "alice")
    seen = ws_session(srv, tok, "s1", [
        {"send": {"type": "chat", "text": "run: touch late-file"}},
        {"until": "turn_end"}])
    assert of(seen, "approval_request")[0]["timeout_s"] == 2
    assert of(seen, "approval_result")[0]["status"] == "timed_out"
    assert of(seen, "tool_result")[0]["status"] == "denied"
    assert ssh_run(srv, "s1", "test -e late-file")[0] == 1
