"""The seed systems' HTTP APIs over Atrium's rooms (atriumd(8), HTTP):
Cloudflare's workspace example, Duet's worker and rhema's coding agent.
Each recipe is the system's own curl command with only the Authorization
header added, run with the real curl against a running atriumd."""
import json
import os
import subprocess

import pytest

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
    assert ssh_run(srv, "demo", "true")[0] == 0
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
    assert ssh_run(srv, "demo", "true")[0] == 0
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
    assert ssh_run(srv, "demo", "true")[0] == 0
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
    assert ssh_run(srv, "demo", "true")[0] == 0
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
    # the model saw the text as the prompt
    assert "hello duet" in json.dumps(model_server.requests[-1]["body"])
    status, body = curl(srv, tok, "POST", "/api/rooms/demo/messages",
                        "-H", "content-type: application/json",
                        "-d", '{"text":"   "}')
    assert status == 400
    assert json.loads(body)["details"] == {"text": ["Text cannot be empty"]}


def test_duet_delete_room(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
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
