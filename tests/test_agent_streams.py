"""Recorded real-server responses (tests/streams/) through a whole turn of
atrium-agent: Cloudflare Workers AI, Ollama, vLLM and llama.cpp's server on
both of its APIs answering with a tool call, and the error shapes real
servers and proxies send.  Each recording is replayed byte for byte by the
scripted model server; the test asserts what the room is shown and what the
next request to the model carries.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_streams.py
"""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_server import Cut, Replay, Reply  # noqa: E402
from test_agent import fast, pytestmark, room  # noqa: E402,F401

STREAMS = os.path.join(HERE, "streams")
COMMAND = {"command": "echo hi > f.txt"}


def recording(name):
    return Replay(os.path.join(STREAMS, name))


def start(room, model, provider):
    url = model.url if provider == "anthropic" else model.openai_url
    room.start("--provider", provider, "--model-url", url,
               "--model", "test-model", "--approval", "allow_all", *fast())
    return room.connect()


def sent_call_and_result(provider, body):
    """The assistant's tool call and the tool's result as the next request
    carries them, in neutral terms: (text, id, name, input, result id,
    result)."""
    msgs = body["messages"]
    if provider == "openai":
        a = [m for m in msgs if m["role"] == "assistant"][-1]
        call = a["tool_calls"][0]
        res = [m for m in msgs if m["role"] == "tool"][-1]
        return (a["content"], call["id"], call["function"]["name"],
                json.loads(call["function"]["arguments"]),
                res["tool_call_id"], res["content"])
    a = [m for m in msgs if m["role"] == "assistant"][-1]["content"]
    text = "".join(b["text"] for b in a if b["type"] == "text")
    use = [b for b in a if b["type"] == "tool_use"][0]
    res = [b for m in msgs if m["role"] == "user" and
           isinstance(m["content"], list) for b in m["content"]
           if b.get("type") == "tool_result"][-1]
    content = res["content"]
    if isinstance(content, list):
        content = "".join(b.get("text", "") for b in content)
    return (text, use["id"], use["name"], use["input"], res["tool_use_id"],
            content)


TOOL_STREAMS = [
    # file, provider, the text streamed before the call, the call's id,
    # the prompt tokens the server reported
    ("workers_ai_tool.sse", "openai", "Writing the file.",
     "chatcmpl-tool-5c1e0a3b9d2f4e6a", 1184),
    ("ollama_tool.sse", "openai", "", "call_x4hl0v2q", 903),
    ("vllm_tool.sse", "openai", "I'll write it.",
     "chatcmpl-tool-3f1b2a9c8e7d4c21", 1021),
    ("llamacpp_chat_tool.sse", "openai", "Sure, writing it.",
     "Ewd0WXqHnSYjDgNdFp6ctbb8C6LqIa3P", 1310),
    ("llamacpp_messages_tool.sse", "anthropic", "Writing the file.",
     "Ewd0WXqHnSYjDgNdFp6ctbb8C6LqIa3P", 1290),
]


@pytest.mark.parametrize("name,provider,text,call_id,tokens_in",
                         TOOL_STREAMS, ids=[t[0] for t in TOOL_STREAMS])
def test_recorded_tool_call_turn(room, model, name, provider, text, call_id,
                                 tokens_in):
    model.script(recording(name))     # then the default rule answers
    c = start(room, model, provider)
    c.send({"type": "chat", "text": "@agent please write f.txt"})
    evs = c.collect("turn_end", timeout=20)
    # The room saw the streamed text, then the call as the server made it.
    deltas = "".join(e["text"] for e in evs if e["type"] == "agent_delta"
                     and e["turn"] == evs[-1]["turn"])
    assert deltas.startswith(text)
    said = [e["text"] for e in evs if e["type"] == "message" and
            e["user"] == "agent"]
    if text:
        assert said[0] == text
    calls = [e for e in evs if e["type"] == "tool_call"]
    assert len(calls) == 1
    assert calls[0]["name"] == "bash" and calls[0]["input"] == COMMAND
    assert calls[0]["id"] == call_id
    res = [e for e in evs if e["type"] == "tool_result"][0]
    assert res["status"] == "ok" and res["id"] == call_id
    assert said[-1].startswith("Command output:")
    assert evs[-1]["stop_reason"] == "end_turn"
    assert evs[-1]["usage"]["input_tokens"] >= tokens_in
    assert not [e for e in evs if e["type"] in ("notice", "error",
                                                "agent_discard")]
    with open(os.path.join(room.workspace, "f.txt")) as f:
        assert f.read() == "hi\n"
    # The next request carried the call back as it was made, and its
    # result under the same id.
    assert len(model.requests) == 2
    got = sent_call_and_result(provider, model.requests[1]["body"])
    assert got == (text, call_id, "bash", COMMAND, call_id, "")


ERROR_STREAMS = [
    ("llamacpp_messages_error.sse", "anthropic",
     "model error (server_error): Failed to parse input at pos 41: "
     "<tool_call>"),
    ("llamacpp_chat_error.sse", "openai",
     "model error (server_error): Failed to parse input at pos 41: "
     "<tool_call>"),
    ("openai_midstream_error.sse", "openai", "model error (server_error): "
     "The server had "
     "an error while processing your request. Sorry about that!"),
]


@pytest.mark.parametrize("name,provider,words", ERROR_STREAMS,
                         ids=[t[0] for t in ERROR_STREAMS])
def test_recorded_midstream_error_is_shown_dropped_and_retried(
        room, model, name, provider, words):
    model.script(recording(name), Reply(text="All good."))
    c = start(room, model, provider)
    c.send({"type": "prompt", "text": "hi"})
    evs = c.collect("turn_end", timeout=20)
    types = [e["type"] for e in evs]
    # "Ok." streamed, then clients are told to drop it before the retry.
    first = types.index("agent_delta")
    assert evs[first]["text"] == "Ok."
    drop = types.index("agent_discard")
    assert first < drop < types.index("notice")
    assert evs[drop]["turn"] == evs[-1]["turn"]
    assert evs[drop]["step"] == 1 and evs[drop]["retry"] is True
    # One line for the failed attempt, in the server's own words.
    notices = [e["text"] for e in evs if e["type"] == "notice"]
    assert len(notices) == 1, notices
    assert words in notices[0] and "retrying" in notices[0]
    assert "cut short" not in notices[0]
    # The answer is the retry's alone, shown, stored and in the transcript.
    assert "".join(e["text"] for e in evs[drop:]
                   if e["type"] == "agent_delta") == "All good."
    said = [e["text"] for e in evs if e["type"] == "message" and
            e["user"] == "agent"]
    assert said == ["All good."]
    assert evs[-1]["stop_reason"] == "end_turn"
    assert len(model.requests) == 2
    db = room.db()
    stored = [json.loads(j)["text"] for (j,) in db.execute(
        "SELECT json FROM events WHERE type = 'message'")
        if json.loads(j).get("user") == "agent"]
    assert stored == ["All good."]
    answers = [r for (r,) in db.execute(
        "SELECT json FROM transcript WHERE role = 'assistant'")]
    assert len(answers) == 1 and "All good." in answers[0]
    assert "Ok." not in answers[0]
    # The discard is live only, as the deltas it voids.
    assert not db.execute("SELECT 1 FROM events WHERE type = "
                          "'agent_discard'").fetchall()


def test_connection_dropped_mid_answer_says_so_and_drops_the_text(room,
                                                                  model):
    model.script(Cut(Reply(text="partial words here"), after_events=5),
                 Reply(text="Whole."))
    c = start(room, model, "anthropic")
    c.send({"type": "prompt", "text": "hi"})
    evs = c.collect("turn_end", timeout=20)
    types = [e["type"] for e in evs]
    assert types.index("agent_delta") < types.index("agent_discard") < \
        types.index("notice")
    notices = [e["text"] for e in evs if e["type"] == "notice"]
    assert len(notices) == 1
    assert "broke during the answer" in notices[0], notices
    assert [e["text"] for e in evs if e["type"] == "message"] == ["Whole."]


def test_midstream_error_every_attempt_fails_the_turn(room, model):
    model.script(*[recording("llamacpp_messages_error.sse")] * 3)
    c = start(room, model, "anthropic")
    c.send({"type": "prompt", "text": "hi"})
    evs = c.collect("turn_end", timeout=20)
    drops = [e for e in evs if e["type"] == "agent_discard"]
    assert [d["retry"] for d in drops] == [True, True, False]
    notices = [e["text"] for e in evs if e["type"] == "notice"]
    assert len(notices) == 2
    assert all("Failed to parse input at pos 41" in n for n in notices)
    err = [e for e in evs if e["type"] == "error"]
    assert len(err) == 1 and "Failed to parse input at pos 41" in \
        err[0]["message"]
    assert evs[-1]["stop_reason"] == "error"
    assert len(model.requests) == 3


def test_proxy_html_error_page_is_one_clean_line(room, model):
    model.script(recording("proxy_502.http"), Reply(text="back"))
    c = start(room, model, "openai")
    c.send({"type": "prompt", "text": "hi"})
    evs = c.collect("turn_end", timeout=20)
    notices = [e["text"] for e in evs if e["type"] == "notice"]
    assert len(notices) == 1
    assert "(502): 502 Bad Gateway 502 Bad Gateway nginx/1.22.1" in \
        notices[0]
    assert "<" not in notices[0] and "\r" not in notices[0]
    assert "agent_discard" not in [e["type"] for e in evs]  # nothing shown
    assert [e["text"] for e in evs if e["type"] == "message"][-1] == "back"


def test_refused_request_fails_at_once_with_server_message(room, model):
    model.script(recording("llamacpp_400.http"))
    c = start(room, model, "openai")
    c.send({"type": "prompt", "text": "hi"})
    evs = c.collect("turn_end", timeout=20)
    assert not [e for e in evs if e["type"] == "notice"]
    err = [e for e in evs if e["type"] == "error"]
    assert len(err) == 1
    assert "(400): invalid_request_error: Unsupported JSON schema: " \
        "{\"type\":\"object\",\"patternProperties\":{}}" in err[0]["message"]
    assert evs[-1]["stop_reason"] == "error"
    assert len(model.requests) == 1


def test_refusal_sent_as_a_stream_shows_the_servers_message(room, model):
    model.script(recording("sse_error_400.sse"))
    c = start(room, model, "openai")
    c.send({"type": "prompt", "text": "hi"})
    evs = c.collect("turn_end", timeout=20)
    err = [e for e in evs if e["type"] == "error"]
    assert len(err) == 1
    assert "(400): invalid_request_error: Invalid value for " \
        "'temperature': must be at most 2." in err[0]["message"]
    assert "data:" not in err[0]["message"]
    assert evs[-1]["stop_reason"] == "error"
    assert len(model.requests) == 1


def test_server_error_event_stream_is_shown_and_retried(room, model):
    model.script(recording("event_error_503.sse"), Reply(text="back"))
    c = start(room, model, "anthropic")
    c.send({"type": "prompt", "text": "hi"})
    evs = c.collect("turn_end", timeout=20)
    notices = [e["text"] for e in evs if e["type"] == "notice"]
    assert len(notices) == 1
    assert "(503): unavailable_error: Loading model" in notices[0]
    assert "event:" not in notices[0]
    assert [e["text"] for e in evs if e["type"] == "message"][-1] == "back"
