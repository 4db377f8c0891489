"""atrium-agent's context compaction, driven directly on its unix socket
with a scripted model server, a real sandbox and a real room.db: with a tiny
--context-window the older turns are summarised by a model request of their
own (no tools), later requests start with that summary and carry only the
recent turns, a kill -9 during the summary request resumes cleanly, and a
provider that answers "prompt is too long" gets a summary and a retry, and a
server's refusal reaches the room in its own words while the agent takes
the window it names (kept in room.db across a restart, for that model
only), compacts to fit it and asks for no more answer than it leaves.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_compact.py
The binaries are $ATRIUM_BUILD/atrium-agent and atrium-sandbox-init
(ATRIUM_BUILD defaults to build).
"""
import json
import os
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from model_server import (CONTEXT_FLAVOURS, Fault, Hang, ModelServer,  # noqa: E402
                          Refuse, Reply, context_refusal)

# The agent and its socket, as test_agent.py drives them.
from test_agent import pytestmark, room  # noqa: E402,F401

HEAD = "Summary of the earlier conversation"
TOO_LONG = "prompt is too long: 250000 tokens > 200000 maximum"


# --- a model server that tells summary requests apart ---------------------------

class SummaryServer(ModelServer):
    """A ModelServer whose requests without tools (summary requests) take
    their steps from summary_steps, then get "Summary #N ..." answers;
    other requests take the usual script and default rule."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.summary_steps = []
        self.summaries = 0
        self._mine = threading.local()

    def _record(self, path, headers, body):
        self._mine.summary = isinstance(body, dict) and "tools" not in body
        super()._record(path, headers, body)

    def _next_step(self):
        if not getattr(self._mine, "summary", False):
            return super()._next_step()
        with self._lock:
            if self.summary_steps:
                return self.summary_steps.pop(0)
            self.summaries += 1
            return Reply(text="Summary #%d: alice and the agent traded "
                         "long lines." % self.summaries)


def is_summary(req):
    return "tools" not in req["body"]


def chat_messages(body):
    """The conversation of a request, without OpenAI's system message."""
    return [m for m in body["messages"] if m.get("role") != "system"]


def text_of(msg):
    c = msg.get("content")
    if isinstance(c, str):
        return c
    return "\n".join(b.get("text", "") for b in c if isinstance(b, dict))


@pytest.fixture
def model_class():
    """The model fixture (tests/conftest.py) starts a SummaryServer here."""
    return SummaryServer


def start(room, model, provider, *extra):
    url = model.url if provider == "anthropic" else model.openai_url
    room.start("--provider", provider, "--model-url", url,
               "--model", "test-model",
               "--retry-base-ms", "50", "--max-retries", "3", *extra)


TINY = ("--context-window", "3000", "--max-tokens", "100")


def prompt_text(n):
    """A prompt of about 800 bytes that says which turn it is."""
    return "marker-%02d " % n + " ".join("word%d" % i for i in range(130))


def turn(c, model, n, stop=None):
    """Send prompt n; its events up to turn_end, or None when stop()."""
    c.send({"type": "prompt", "text": prompt_text(n)})
    return c.collect("turn_end", timeout=30, stop=stop)


def turns_until_summary(c, model, first=1, limit=8, stop=None):
    """Run turns first, first+1, ... until one makes a summary request;
    (its number, its events or None)."""
    for n in range(first, first + limit):
        seen = sum(map(is_summary, model.requests))
        evs = turn(c, model, n, stop=stop)
        if sum(map(is_summary, model.requests)) > seen:
            return n, evs
        assert evs[-1]["stop_reason"] == "end_turn", evs
    raise AssertionError("no summary request after %d turns" % limit)


# --- the window nears: summarise, then send the summary and recent turns -------

@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_older_turns_are_summarised(room, model, provider):
    start(room, model, provider, *TINY)
    c = room.connect()
    n, evs = turns_until_summary(c, model)
    assert n >= 3, "a summary with nothing to summarise"
    assert evs[-1]["stop_reason"] == "end_turn"
    notices = [e["text"] for e in evs if e["type"] == "notice"]
    assert any(t.startswith("compacting the conversation: ")
               for t in notices), notices
    comp = [e for e in evs if e["type"] == "compaction"][0]
    assert comp["summary"] == ("Summary #1: alice and the agent traded "
                               "long lines.")
    assert comp["context_window"] == 3000 and comp["summarized"] > 0

    idx = [i for i, r in enumerate(model.requests) if is_summary(r)][0]
    summ, after = model.requests[idx]["body"], model.requests[idx + 1]["body"]
    # The summary request: no tools, the older turns as text in it, and
    # the summary is not streamed to the room as the agent's answer.
    assert "tools" not in summ and "tool_choice" not in summ
    sent = json.dumps(summ)
    assert "marker-01" in sent and "marker-%02d" % (n - 1) not in sent
    assert not any(e["type"] == "agent_delta" and "Summary #1" in e["text"]
                   for e in evs)
    # The next request: the summary first, then only the recent turns.
    msgs = chat_messages(after)
    assert msgs[0]["role"] == "user"
    first = text_of(msgs[0])
    assert first.index(HEAD) < first.index("Summary #1")
    body = json.dumps(after)
    assert "marker-01" not in body
    assert "marker-%02d" % (n - 1) in body and "marker-%02d" % n in body
    assert after["tools"]
    # The stored transcript is whole; the summary is kept in room.db.
    db = room.db()
    assert db.execute("SELECT count(*) FROM transcript").fetchone()[0] \
        == 2 * n
    (state, summary, cut), = db.execute(
        "SELECT state, summary, cut FROM compactions").fetchall()
    assert state == "done" and summary.startswith("Summary #1")
    stored = [json.loads(j) for j, in db.execute(
        "SELECT json FROM events WHERE type = 'compaction'")]
    assert stored and stored[0]["summary"] == summary
    assert db.execute("PRAGMA user_version").fetchone()[0] == 8

    # Later turns keep sending the summary; the next one folds it in.
    m, evs = turns_until_summary(c, model, first=n + 1)
    idx2 = [i for i, r in enumerate(model.requests) if is_summary(r)][1]
    again = json.dumps(model.requests[idx2]["body"])
    assert "Summary #1" in again and "marker-%02d" % (n - 1) in again
    last = chat_messages(model.requests[-1]["body"])
    assert "Summary #2" in text_of(last[0]) and "Summary #1" not in \
        json.dumps(last)
    assert evs[-1]["stop_reason"] == "end_turn"


def unpaired_calls(body):
    """Tool results sent without their call right before them, and calls
    without their results right after, in either wire format."""
    msgs, bad = chat_messages(body), []
    for i, m in enumerate(msgs):
        prev = msgs[i - 1] if i else {}
        if m.get("role") == "tool":            # OpenAI
            j = i - 1
            while j >= 0 and msgs[j].get("role") == "tool":
                j -= 1
            ids = [c["id"] for c in msgs[j].get("tool_calls") or []] \
                if j >= 0 else []
            if m.get("tool_call_id") not in ids:
                bad.append(m)
        elif isinstance(m.get("content"), list):   # Anthropic
            ids = [b.get("id") for b in prev.get("content") or []
                   if isinstance(b, dict) and b.get("type") == "tool_use"] \
                if isinstance(prev.get("content"), list) else []
            for b in m["content"]:
                if b.get("type") == "tool_result" and \
                        b.get("tool_use_id") not in ids:
                    bad.append(b)
    return bad


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_tool_calls_stay_paired_after_summary(room, model, provider):
    start(room, model, provider, *TINY, "--approval", "allow_all")
    c = room.connect()
    for n in range(1, 8):
        c.send({"type": "prompt", "text": "run: echo marker-%02d %s" % (
            n, "x" * 500)})
        evs = c.collect("turn_end", timeout=30)
        assert evs[-1]["stop_reason"] == "end_turn", evs
        assert [e["status"] for e in evs if e["type"] == "tool_result"] \
            == ["ok"]
        if sum(map(is_summary, model.requests)) >= 2:
            break
    else:
        raise AssertionError("fewer than two summaries in 7 turns")
    summaries = [r for r in model.requests if is_summary(r)]
    assert "[agent calls bash]" in json.dumps(summaries[0]["body"])
    for r in model.requests:
        if not is_summary(r):
            assert unpaired_calls(r["body"]) == [], r["body"]
            assert chat_messages(r["body"])[0]["role"] == "user"
    assert HEAD in json.dumps(model.requests[-1]["body"])


def test_summary_request_refused_is_made_smaller(room, model):
    model.summary_steps = [Fault(400, error_type="invalid_request_error",
                                 message=TOO_LONG)]
    start(room, model, "anthropic", "--context-window", "6000",
          "--max-tokens", "100")
    c = room.connect()
    n, evs = turns_until_summary(c, model, limit=15)
    assert evs[-1]["stop_reason"] == "end_turn", evs
    first, second = [json.dumps(r["body"]) for r in model.requests
                     if is_summary(r)]
    assert "marker-01" in first and "left out" not in first
    # The retry leaves the oldest messages out, keeps the latest.
    assert len(second) < len(first) * 3 / 4
    assert "marker-01" not in second and "oldest messages are left out" \
        in second
    assert "marker-%02d" % (n - 2) in second
    assert any(e["type"] == "compaction" for e in evs)
    assert HEAD in json.dumps(model.requests[-1]["body"])


def test_kill9_during_summary_request_resumes(room, model):
    model.summary_steps = [Hang()]
    start(room, model, "anthropic", *TINY)
    c = room.connect()
    n, evs = turns_until_summary(
        c, model, stop=lambda: any(map(is_summary, model.requests)))
    assert evs is None           # the summary request hangs
    first = [r for r in model.requests if is_summary(r)][0]
    pending = room.db().execute("SELECT state FROM compactions").fetchall()
    assert pending == [("pending",)]
    last = room.db().execute("SELECT max(seq) FROM events").fetchone()[0]
    room.kill9()
    room.start()
    # Everything since the kill, replayed: the resumed turn may be done
    # with its summary before bob's connection is in.
    d = room.connect("bob", since=last)
    evs = d.collect("turn_end", timeout=30)
    assert evs[-1]["stop_reason"] == "end_turn", evs
    # The summary request was made again, the same as the lost one.
    summaries = [r for r in model.requests if is_summary(r)]
    assert len(summaries) == 2
    assert summaries[1]["body"] == first["body"]
    assert any(e["type"] == "compaction" for e in evs)
    after = chat_messages(model.requests[-1]["body"])
    assert HEAD in text_of(after[0])
    assert "marker-%02d" % n in json.dumps(after)
    rows = room.db().execute("SELECT state FROM compactions").fetchall()
    assert rows == [("done",)]
    # The answer of the resumed turn is in the room, once.
    answers = [e for e in evs if e["type"] == "message" and
               e.get("user") == "agent"]
    assert len(answers) == 1 and "marker-%02d" % n in answers[0]["text"]


# --- the provider says the prompt is too long ---------------------------------------

@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_prompt_too_long_summarises_and_retries(room, model, provider):
    start(room, model, provider)        # the provider's usual window
    c = room.connect()
    for n in (1, 2, 3):
        assert turn(c, model, n)[-1]["stop_reason"] == "end_turn"
    assert not any(map(is_summary, model.requests))
    model.script(Fault(400, error_type="invalid_request_error",
                       message=TOO_LONG))
    before = len(model.requests)
    evs = turn(c, model, 4)
    assert evs[-1]["stop_reason"] == "end_turn", evs
    reqs = model.requests[before:]
    assert [is_summary(r) for r in reqs] == [False, True, False]
    assert "marker-01" in json.dumps(reqs[1]["body"])
    retry = json.dumps(reqs[2]["body"])
    assert HEAD in retry and "marker-01" not in retry
    assert "marker-03" in retry and "marker-04" in retry
    notice = [e["text"] for e in evs if e["type"] == "notice"][0]
    assert notice.startswith("compacting the conversation: the model "
                             'server refused it: "%s"' % TOO_LONG)
    assert not any(e["type"] == "error" for e in evs)
    reason, = room.db().execute("SELECT reason FROM compactions").fetchone()
    assert reason == "refused"


def test_prompt_too_long_again_fails_the_turn(room, model):
    start(room, model, "anthropic")
    c = room.connect()
    for n in (1, 2, 3):
        turn(c, model, n)
    model.script(*[Fault(400, error_type="invalid_request_error",
                         message=TOO_LONG)] * 2)
    before = len(model.requests)
    evs = turn(c, model, 4)
    assert [is_summary(r) for r in model.requests[before:]] == \
        [False, True, False]
    assert evs[-1]["stop_reason"] == "error"
    err = [e for e in evs if e["type"] == "error"][0]["message"]
    assert "too long" in err and "even after" in err
    assert "new, shorter prompt" in err
    # The room goes on: the next turn works and keeps the summary.
    evs = turn(c, model, 5)
    assert evs[-1]["stop_reason"] == "end_turn"
    assert HEAD in json.dumps(model.requests[-1]["body"])


def test_prompt_too_long_with_nothing_to_summarise(room, model):
    start(room, model, "openai")
    c = room.connect()
    model.script(Fault(400, error_type="invalid_request_error",
                       message=TOO_LONG))
    evs = turn(c, model, 1)
    assert evs[-1]["stop_reason"] == "error"
    err = [e for e in evs if e["type"] == "error"][0]["message"]
    assert "too long" in err and "nothing older" in err
    assert not any(map(is_summary, model.requests))
    assert room.db().execute("SELECT count(*) FROM compactions"
                             ).fetchone()[0] == 0
    assert turn(c, model, 2)[-1]["stop_reason"] == "end_turn"


# --- a server's own window: its refusal, in its words, teaches the window -------

WINDOW = 9000           # the server's, in its tokens
PROVIDER_OF = {"llamacpp": "openai", "vllm": "openai", "openai": "openai",
               "anthropic": "anthropic"}


def refusal_words(flavour, prompt, max_tokens, window=WINDOW):
    """The message of flavour's refusal, as its body carries it."""
    status, headers, body = context_refusal(flavour, prompt, window,
                                            max_tokens)
    return json.loads(body)["error"]["message"]


def fits(model, req):
    """Does the request's input and answer fit the server's window?"""
    body = req["body"]
    asked = body.get("max_tokens") or body.get("max_completion_tokens")
    return model.count_tokens(body) + asked <= WINDOW


@pytest.mark.parametrize("flavour", CONTEXT_FLAVOURS)
def test_server_window_learned_from_its_refusal(room, flavour):
    """A server with a window of 9000 of its tokens (a token every 3 bytes,
    where the agent guesses 4), the agent set to its usual window and an
    8192-token answer: the server refuses once, the room reads why in the
    server's own words, and from then on every request fits: compacted to
    the window the server named, and asking for no more answer than that
    window leaves."""
    model = SummaryServer(window=WINDOW, flavour=flavour, bytes_per_token=3)
    model.start()
    try:
        start(room, model, PROVIDER_OF[flavour], "--max-tokens", "8192")
        c = room.connect()
        seen, refused_at, more = [], None, 2
        for n in range(1, 26):
            before = len(model.requests)
            evs = turn(c, model, n)
            seen += evs
            assert evs[-1]["stop_reason"] == "end_turn", evs
            if model.refused and refused_at is None:
                refused_at = before
            if refused_at is not None and any(
                    e["type"] == "compaction" for e in seen):
                more -= 1
                if more == 0:       # two turns past the compaction
                    break
        assert refused_at is not None, "the server never refused"
        # Refused once: the agent learnt the window from it.
        assert len(model.refused) == 1, model.refused
        prompt, asked = model.refused[0]
        assert asked == 8192
        words = refusal_words(flavour, prompt, asked)
        notices = [e["text"] for e in seen if e["type"] == "notice"]
        assert any('"%s"' % words in t for t in notices), (words, notices)
        assert not any(e["type"] == "error" for e in seen)
        # Compacted to the server's window, not the assumed one.
        comps = [e for e in seen if e["type"] == "compaction"]
        assert comps and all(e["context_window"] == WINDOW for e in comps)
        # Every request after the refusal fits, its answer included.
        after = [r for r in model.requests[refused_at:]
                 if r["body"] is not None]
        bad = [(model.count_tokens(r["body"]), r["body"].get("max_tokens") or
                r["body"].get("max_completion_tokens"))
               for r in after[1:] if not fits(model, r)]
        assert not bad, bad
    finally:
        model.stop()


@pytest.mark.parametrize("flavour", CONTEXT_FLAVOURS)
def test_refusal_shows_the_servers_words_and_figures(room, model, flavour):
    """A refusal with nothing older to summarise ends the turn with the
    server's message and figures, not an estimate and an assumed window."""
    start(room, model, PROVIDER_OF[flavour])
    c = room.connect()
    model.script(Refuse(flavour, 41705, 32768))
    evs = turn(c, model, 1)
    assert evs[-1]["stop_reason"] == "error"
    err = [e for e in evs if e["type"] == "error"][0]["message"]
    assert '"%s"' % refusal_words(flavour, 41705, 0, 32768) in err, err
    assert "41705" in err and "32768" in err
    assert "context-window" not in err and "128000" not in err
    assert "200000" not in err


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_max_tokens_never_asks_past_the_window(room, model, provider):
    """A configured answer larger than the window's room: each request asks
    for what the window leaves after its input, less the margin, and the
    turns go on (summarised as they grow) instead of every request looking
    too big."""
    start(room, model, provider, "--context-window", "6000",
          "--max-tokens", "8192")
    c = room.connect()
    for n in range(1, 7):
        assert turn(c, model, n)[-1]["stop_reason"] == "end_turn"
    assert any(map(is_summary, model.requests))
    for req in model.requests:
        body = req["body"]
        asked = body.get("max_tokens") or body.get("max_completion_tokens")
        least_input = len(json.dumps(body["messages"],
                                     separators=(",", ":"))) // 4
        assert 256 <= asked <= 6000 - 6000 // 50 - least_input, (
            asked, least_input)


@pytest.mark.parametrize("report", ["vllm", "llamacpp"])
def test_server_window_from_what_it_says_of_itself(room, report):
    """A server that says its window (vLLM's /v1/models max_model_len,
    llama.cpp's /props n_ctx): the agent asks it once as it starts,
    compacts to that window and is never refused, though it assumed 128000
    tokens."""
    model = SummaryServer(window=WINDOW, flavour=report, report=report)
    model.start()
    try:
        start(room, model, "openai", "--max-tokens", "8192")
        asked = ["/v1/models"] if report == "vllm" else ["/v1/models",
                                                          "/props"]
        assert model.wait_gets(len(asked)) == asked
        c = room.connect()
        seen = []
        for n in range(1, 16):
            seen += turn(c, model, n)
            assert seen[-1]["stop_reason"] == "end_turn", seen
            if any(e["type"] == "compaction" for e in seen):
                break
        assert model.refused == []
        comps = [e for e in seen if e["type"] == "compaction"]
        assert comps and comps[0]["context_window"] == WINDOW
        assert model.gets == asked      # once
        bad = [(i, model.count_tokens(r["body"]), r["body"].get("max_tokens"))
               for i, r in enumerate(model.requests)
               if r["body"] is not None and not fits(model, r)]
        assert not bad, bad
    finally:
        model.stop()


@pytest.mark.parametrize("flavour", ["llamacpp", "anthropic"])
def test_learned_window_survives_a_restart(room, model, flavour):
    """The window a refusal named is kept in room.db: after the agent is
    killed and started again, its first request already asks for no more
    answer than that window leaves (not the 8192 the usual window would
    allow), until the room's model is another one."""
    provider = PROVIDER_OF[flavour]
    start(room, model, provider, "--max-tokens", "8192")
    c = room.connect()
    model.script(Refuse(flavour, 100, 4000))
    turn(c, model, 1)
    first = model.requests[0]["body"]
    assert (first.get("max_tokens") or
            first.get("max_completion_tokens")) == 8192
    room.kill9()
    start(room, model, provider, "--max-tokens", "8192")
    c = room.connect()
    before = len(model.requests)
    assert turn(c, model, 2)[-1]["stop_reason"] == "end_turn"
    asked = [r["body"].get("max_tokens") or
             r["body"].get("max_completion_tokens")
             for r in model.requests[before:] if r["body"] is not None]
    assert asked and all(0 < n < 4000 for n in asked), asked
    # Another model forgets it: the usual window, the configured answer.
    room.kill9()
    room.start("--provider", provider, "--model-url", model.url if
               provider == "anthropic" else model.openai_url,
               "--model", "other-model", "--max-tokens", "8192")
    c = room.connect()
    before = len(model.requests)
    assert turn(c, model, 3)[-1]["stop_reason"] == "end_turn"
    asked = [r["body"].get("max_tokens") or
             r["body"].get("max_completion_tokens")
             for r in model.requests[before:] if r["body"] is not None]
    assert asked and all(n == 8192 for n in asked), asked
