"""The scripted model server's streams, read with an independent raw HTTP
and SSE reader: framing (chunked, one event per chunk), Anthropic's
documented event sequence, OpenAI chunks and [DONE], the variants, faults,
cuts, mid-stream errors, hangs, the default rule and the command line."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_server import (Before, Cut, Fault, Hang,  # noqa: E402
                          ModelServer, Reply, Replay, StreamError, ToolCall)

STREAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "streams")


# --- an independent client ---------------------------------------------------

class Response:
    def __init__(self, status, headers, chunks, complete, body):
        self.status = status
        self.headers = headers      # lower-case names
        self.chunks = chunks        # chunk payloads as sent
        self.complete = complete    # the terminal chunk came
        self.body = body


def _read_line(sock_file):
    line = sock_file.readline(65536)
    return line.decode("latin-1")


def post(url, path, body, headers=None, timeout=5.0):
    """POST JSON over a fresh connection; read the response by hand."""
    host, port = url.split("//")[1].split(":")
    port = int(port.split("/")[0])
    data = json.dumps(body).encode()
    hdrs = {"Host": "%s:%d" % (host, port), "Content-Type": "application/json",
            "Content-Length": str(len(data)), "Connection": "close"}
    hdrs.update(headers or {})
    req = ("POST %s HTTP/1.1\r\n" % path + "".join(
        "%s: %s\r\n" % kv for kv in hdrs.items()) + "\r\n").encode() + data
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        s.sendall(req)
        f = s.makefile("rb")
        status_line = _read_line(f)
        assert status_line.startswith("HTTP/1.1 "), status_line
        status = int(status_line.split()[1])
        headers = {}
        while True:
            line = _read_line(f).rstrip("\r\n")
            if not line:
                break
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        if "content-length" in headers:
            raw = f.read(int(headers["content-length"]))
            return Response(status, headers, [], True, raw)
        assert headers.get("transfer-encoding") == "chunked"
        chunks, complete = [], False
        while True:
            line = _read_line(f)
            if not line:
                break                   # connection closed mid-body
            size = int(line.strip(), 16)
            if size == 0:
                f.readline()
                complete = True
                break
            payload = f.read(size)
            assert f.read(2) == b"\r\n"
            chunks.append(payload)
        return Response(status, headers, chunks, complete, b"".join(chunks))
    finally:
        s.close()


def sse_events(raw):
    """Events of an SSE body: [(event name or None, data string)]."""
    text = raw.decode("utf-8").replace("\r\n", "\n")
    out = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        out.append((name, "\n".join(data)))
    return out


ANTHROPIC = {"model": "claude-test", "max_tokens": 100, "stream": True,
             "messages": [{"role": "user", "content": "hi"}]}
OPENAI = {"model": "gpt-test", "stream": True,
          "stream_options": {"include_usage": True},
          "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def srv():
    with ModelServer() as s:
        yield s


def check_anthropic_sequence(events):
    """Every event of the documented sequence, in order, data.type == name;
    returns (text, [(id, name, input)], stop_reason, usage)."""
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-1] == "message_stop"
    assert "message_delta" in names
    assert names.index("message_delta") == len(names) - 2
    text, calls, open_block, stop, usage = "", [], None, None, {}
    for name, data in events:
        d = json.loads(data)
        assert d["type"] == name
        if name == "message_start":
            assert d["message"]["role"] == "assistant"
            assert d["message"]["content"] == []
            usage["in"] = d["message"]["usage"]["input_tokens"]
        elif name == "content_block_start":
            assert open_block is None
            open_block = dict(d["content_block"], index=d["index"], json="")
        elif name == "content_block_delta":
            assert open_block and d["index"] == open_block["index"]
            if d["delta"]["type"] == "text_delta":
                text += d["delta"]["text"]
            else:
                assert d["delta"]["type"] == "input_json_delta"
                open_block["json"] += d["delta"]["partial_json"]
        elif name == "content_block_stop":
            assert open_block and d["index"] == open_block["index"]
            if open_block["type"] == "tool_use":
                assert open_block["input"] == {}
                calls.append((open_block["id"], open_block["name"],
                              json.loads(open_block["json"] or "{}")))
            open_block = None
        elif name == "message_delta":
            stop = d["delta"]["stop_reason"]
            usage["out"] = d["usage"]["output_tokens"]
        else:
            assert name in ("ping", "message_stop")
    assert open_block is None
    return text, calls, stop, usage


def openai_chunks(events):
    """The JSON chunks before [DONE], which must come last."""
    assert all(n is None for n, _ in events)
    assert events[-1][1] == "[DONE]"
    chunks = [json.loads(d) for _, d in events[:-1]]
    for c in chunks:
        assert "error" not in c
        assert c["object"] == "chat.completion.chunk"
    return chunks


def openai_assemble(chunks):
    text, calls, finish, usage = "", {}, None, None
    for c in chunks:
        if c.get("usage"):
            usage = c["usage"]
        for ch in c["choices"]:
            delta = ch["delta"]
            text += delta.get("content") or ""
            for frag in delta.get("tool_calls") or []:
                call = calls.setdefault(frag["index"],
                                        {"id": None, "name": None, "args": ""})
                if frag.get("id"):
                    call["id"] = frag["id"]
                fn = frag.get("function") or {}
                if fn.get("name"):
                    call["name"] = fn["name"]
                call["args"] += fn.get("arguments") or ""
            if ch.get("finish_reason"):
                finish = ch["finish_reason"]
    return text, [calls[i] for i in sorted(calls)], finish, usage


# --- tests ---------------------------------------------------------------------

def test_anthropic_stream(srv):
    srv.script(Reply(text="Let me look at that.", tool_calls=[
        ToolCall("bash", {"command": "ls -la /workspace"}, id="toolu_A"),
        ToolCall("read", {})], usage=(31, 17)))
    r = post(srv.url, "/v1/messages", ANTHROPIC)
    assert r.status == 200 and r.complete
    assert r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.body)
    assert len(events) == len(r.chunks)             # one event per chunk
    text, calls, stop, usage = check_anthropic_sequence(events)
    assert text == "Let me look at that."
    assert calls[0] == ("toolu_A", "bash", {"command": "ls -la /workspace"})
    assert calls[1][1:] == ("read", {}) and calls[1][0].startswith("toolu_")
    assert stop == "tool_use" and usage == {"in": 31, "out": 17}
    assert [n for n, _ in events].count("ping") == 1
    req = srv.wait_requests(1)[0]
    assert req["path"] == "/v1/messages" and req["body"] == ANTHROPIC


def test_openai_stream(srv):
    srv.script(Reply(text="Two calls.", tool_calls=[
        ToolCall("bash", {"command": "make"}), ToolCall("bash", {"command":
                                                                 "ls"})]),
               Reply(text="Done", stop_reason="max_tokens", usage=(5, 6)))
    r = post(srv.openai_url, "/v1/chat/completions", OPENAI)
    assert r.status == 200 and r.complete
    events = sse_events(r.body)
    assert len(events) == len(r.chunks)
    chunks = openai_chunks(events)
    text, calls, finish, usage = openai_assemble(chunks)
    assert text == "Two calls." and finish == "tool_calls"
    assert [json.loads(c["args"]) for c in calls] == [{"command": "make"},
                                                      {"command": "ls"}]
    assert all(c["id"].startswith("call_") and c["name"] == "bash"
               for c in calls)
    # id and name only on a call's first fragment.
    frags = [f for c in chunks for ch in c["choices"]
             for f in ch["delta"].get("tool_calls") or []]
    assert sum(1 for f in frags if "id" in f) == 2
    assert chunks[-1]["choices"] == [] and usage["total_tokens"] > 0

    r = post(srv.openai_url, "/v1/chat/completions", OPENAI)
    text, calls, finish, usage = openai_assemble(
        openai_chunks(sse_events(r.body)))
    assert (text, calls, finish) == ("Done", [], "length")
    assert usage == {"prompt_tokens": 5, "completion_tokens": 6,
                     "total_tokens": 11}


def test_openai_without_usage_option(srv):
    body = dict(OPENAI)
    del body["stream_options"]
    r = post(srv.openai_url, "/v1/chat/completions", body)
    chunks = openai_chunks(sse_events(r.body))
    assert all(c["choices"] for c in chunks)
    assert all("usage" not in c for c in chunks)


def test_variants():
    call = ToolCall("bash", {"command": "ls"})
    with ModelServer(variant="ollama") as s:
        s.script(Reply(text="ok", tool_calls=[call, call]))
        chunks = openai_chunks(sse_events(post(
            s.openai_url, "/v1/chat/completions", OPENAI).body))
        with_calls = [c for c in chunks if c["choices"] and
                      c["choices"][0]["delta"].get("tool_calls")]
        assert len(with_calls) == 1
        frags = with_calls[0]["choices"][0]["delta"]["tool_calls"]
        assert len(frags) == 2
        for f in frags:
            assert "id" not in f
            assert json.loads(f["function"]["arguments"]) == {"command": "ls"}
        assert openai_assemble(chunks)[2] == "stop"
    with ModelServer(variant="workers") as s:
        chunks = openai_chunks(sse_events(post(
            s.openai_url, "/v1/chat/completions", OPENAI).body))
        finishing = [c for c in chunks if c["choices"] and
                     c["choices"][0].get("finish_reason")]
        assert len(finishing) == 1 and finishing[0] is chunks[-1]
        assert finishing[0]["usage"]["completion_tokens"] > 0
    with pytest.raises(ValueError):
        ModelServer(variant="bogus")


def test_faults(srv):
    srv.script(Fault(429, retry_after=2), Fault(529), Fault(500),
               Fault(400, message="messages: field required"),
               Fault(429, retry_after_ms=1500, error_type="requests"),
               Fault(503))
    r = post(srv.url, "/v1/messages", ANTHROPIC)
    assert r.status == 429 and r.headers["retry-after"] == "2"
    assert r.headers["content-type"] == "application/json"
    assert json.loads(r.body)["type"] == "error"
    assert json.loads(r.body)["error"]["type"] == "rate_limit_error"
    r = post(srv.url, "/v1/messages", ANTHROPIC)
    assert r.status == 529
    assert json.loads(r.body)["error"] == {"type": "overloaded_error",
                                           "message": "Overloaded"}
    r = post(srv.url, "/v1/messages", ANTHROPIC)
    assert r.status == 500
    assert json.loads(r.body)["error"]["type"] == "api_error"
    r = post(srv.url, "/v1/messages", ANTHROPIC)
    assert r.status == 400 and json.loads(r.body)["error"] == {
        "type": "invalid_request_error", "message": "messages: field required"}
    r = post(srv.openai_url, "/v1/chat/completions", OPENAI)
    assert r.status == 429 and r.headers["retry-after-ms"] == "1500"
    assert "retry-after" not in r.headers
    err = json.loads(r.body)["error"]
    assert err["type"] == "requests" and err["message"]
    assert set(err) == {"message", "type", "param", "code"}
    r = post(srv.openai_url, "/v1/chat/completions", OPENAI)
    assert r.status == 503
    assert json.loads(r.body)["error"]["type"] == "server_error"
    assert srv.pending() == 0


def test_api_key():
    with ModelServer(api_key="sk-secret") as s:
        r = post(s.url, "/v1/messages", ANTHROPIC)
        assert r.status == 401
        assert json.loads(r.body)["error"]["type"] == "authentication_error"
        r = post(s.url, "/v1/messages", ANTHROPIC, {"x-api-key": "wrong"})
        assert r.status == 401
        r = post(s.openai_url, "/v1/chat/completions", OPENAI,
                 {"Authorization": "Bearer nope"})
        assert r.status == 401
        assert json.loads(r.body)["error"]["code"] == "invalid_api_key"
        r = post(s.url, "/v1/messages", ANTHROPIC, {"x-api-key": "sk-secret"})
        assert r.status == 200 and r.complete
        r = post(s.openai_url, "/v1/chat/completions", OPENAI,
                 {"Authorization": "Bearer sk-secret"})
        assert r.status == 200 and r.complete
        assert s.requests[3]["headers"]["x-api-key"] == "sk-secret"


def test_cut_truncates(srv):
    reply = Reply(text="one two three four five six")
    srv.script(Cut(reply, after_events=3), Cut(reply, after_events=2))
    r = post(srv.url, "/v1/messages", ANTHROPIC)
    assert r.status == 200 and not r.complete
    names = [n for n, _ in sse_events(r.body)]
    assert names == ["message_start", "content_block_start", "ping"]
    r = post(srv.openai_url, "/v1/chat/completions", OPENAI)
    assert not r.complete and len(r.chunks) == 2
    assert b"[DONE]" not in r.body


def test_stream_error(srv):
    srv.script(StreamError(Reply(text="partial answer"), after_events=4),
               StreamError(Reply(text="x"), after_events=1,
                           error_type="server_error", message="boom"))
    r = post(srv.url, "/v1/messages", ANTHROPIC)
    assert r.complete
    events = sse_events(r.body)
    assert len(events) == 5 and events[-1][0] == "error"
    assert json.loads(events[-1][1]) == {
        "type": "error", "error": {"type": "overloaded_error",
                                   "message": "Overloaded"}}
    r = post(srv.openai_url, "/v1/chat/completions", OPENAI)
    events = sse_events(r.body)
    assert len(events) == 2 and events[-1][0] is None
    assert json.loads(events[-1][1])["error"]["message"] == "boom"
    assert json.loads(events[-1][1])["error"]["type"] == "server_error"


def test_before_acts_then_serves_its_step(srv):
    done = []
    srv.script(Before(lambda: done.append(len(srv.requests)),
                      Reply(text="after")),
               Before(lambda: done.append("fault"), Fault(529)))
    r = post(srv.url, "/v1/messages", ANTHROPIC)
    assert done == [1]      # called once the request came, before answering
    text, _, _, _ = check_anthropic_sequence(sse_events(r.body))
    assert r.complete and text == "after"
    r = post(srv.url, "/v1/messages", ANTHROPIC)
    assert done == [1, "fault"] and r.status == 529


def test_replay_sends_recordings_byte_for_byte(srv):
    """Each recorded file's body goes out exactly, an event per chunk, with
    the recorded status and headers and none of the server's own."""
    names = sorted(os.listdir(STREAMS))
    assert len(names) >= 10
    for name in names:
        path = os.path.join(STREAMS, name)
        with open(path, "rb") as f:
            data = f.read()
        assert data.startswith(b"# "), name     # says what it represents
        body = data.split(b"\n\n", 1)[1]
        rec = Replay(path)
        srv.script(rec)
        r = post(srv.openai_url, "/v1/chat/completions", OPENAI)
        assert r.status == rec.status, name
        assert r.body == body, name
        assert "date" not in r.headers or any(
            k.lower() == "date" for k, _ in rec.headers), name
        if name.endswith(".sse"):
            assert r.complete and len(r.chunks) == len(body.split(b"\n\n")) - 1
            assert all(c.endswith(b"\n\n") for c in r.chunks), name


def test_hang_and_stop():
    s = ModelServer().start()
    s.script(Hang())
    host, port = s.url.split("//")[1].split(":")
    c = socket.create_connection((host, int(port)), timeout=5)
    body = json.dumps(ANTHROPIC).encode()
    c.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: %d"
              b"\r\n\r\n%s" % (len(body), body))
    head = b""
    while b"\r\n\r\n" not in head:
        head += c.recv(4096)
    assert head.startswith(b"HTTP/1.1 200")
    rest = head.split(b"\r\n\r\n", 1)[1]
    c.settimeout(0.5)
    with pytest.raises(socket.timeout):
        rest += c.recv(4096)
    assert rest == b""
    t = time.monotonic()
    s.stop()
    c.settimeout(5)
    assert c.recv(4096) == b""      # released and closed, no terminal chunk
    assert time.monotonic() - t < 5
    c.close()


def test_default_rule(srv):
    r = post(srv.url, "/v1/messages", dict(ANTHROPIC, messages=[
        {"role": "user", "content": [{"type": "text",
                                      "text": "please\nrun: echo hi"}]}]))
    text, calls, stop, _ = check_anthropic_sequence(sse_events(r.body))
    assert text == "Running it." and stop == "tool_use"
    assert calls[0][1:] == ("bash", {"command": "echo hi"})
    r = post(srv.url, "/v1/messages", dict(ANTHROPIC, messages=[
        {"role": "user", "content": "run: ls"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                                           "name": "bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result",
                                      "tool_use_id": "t1",
                                      "content": "a.txt\n"}]}]))
    text, calls, stop, _ = check_anthropic_sequence(sse_events(r.body))
    assert (text, calls, stop) == ("Command output:\na.txt\n", [], "end_turn")
    r = post(srv.openai_url, "/v1/chat/completions", dict(OPENAI, messages=[
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hello there"}]))
    assert openai_assemble(openai_chunks(sse_events(r.body)))[0] == \
        "echo: hello there"
    r = post(srv.openai_url, "/v1/chat/completions", dict(OPENAI, messages=[
        {"role": "user", "content": "run: pwd"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "/workspace"}]))
    assert openai_assemble(openai_chunks(sse_events(r.body)))[0] == \
        "Command output:\n/workspace"
    r = post(srv.openai_url, "/v1/chat/completions", dict(OPENAI, messages=[
        {"role": "user", "content": "run: make test"}]))
    text, calls, finish, _ = openai_assemble(openai_chunks(sse_events(r.body)))
    assert text == "Running it." and finish == "tool_calls"
    assert json.loads(calls[0]["args"]) == {"command": "make test"}


def test_keep_alive_and_wait_requests(srv):
    import http.client
    host, port = srv.url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    for _ in range(2):
        conn.request("POST", "/v1/messages", json.dumps(ANTHROPIC),
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        assert b"message_stop" in resp.read()
    conn.close()
    assert len(srv.wait_requests(2, timeout=1)) == 2
    with pytest.raises(AssertionError):
        srv.wait_requests(3, timeout=0.2)
    r = post(srv.url, "/v1/unknown", {})
    assert r.status == 404


def test_delay_streams_slowly(srv):
    srv.script(Reply(text="a b c", delay=0.1))
    t = time.monotonic()
    r = post(srv.url, "/v1/messages", ANTHROPIC)
    assert r.complete and time.monotonic() - t >= 0.8   # about 10 events


def test_command_line():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.Popen([sys.executable, os.path.join(here, "model_server.py"),
                          "--port", str(port), "--variant", "workers"],
                         stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert "http://127.0.0.1:%d" % port in line
        r = post("http://127.0.0.1:%d" % port, "/v1/chat/completions",
                 dict(OPENAI, messages=[{"role": "user", "content": "yo"}]))
        assert openai_assemble(openai_chunks(sse_events(r.body)))[0] == \
            "echo: yo"
    finally:
        p.terminate()
        assert p.wait(5) == 0
