#!/usr/bin/python3
"""A scripted model server speaking the Anthropic Messages and OpenAI Chat
Completions streaming formats, for tests and demos (standard library only).

    with ModelServer() as srv:
        srv.script(Reply(text="Running it.",
                         tool_calls=[ToolCall("bash", {"command": "ls"})]),
                   Reply(text="Done."))
        ... point the agent at srv.url (anthropic) or srv.openai_url ...
        srv.wait_requests(2, timeout=10)
        assert srv.requests[1]["body"]["messages"][-1]["role"] == "user"

srv.sent holds (time.monotonic(), bytes) of every streamed event as it was
flushed, for latency measurements in the same process (make bench).

Endpoints: POST /v1/messages (Anthropic) and POST /v1/chat/completions
(OpenAI).  Responses go out as the real services send them: HTTP/1.1,
chunked transfer encoding, text/event-stream, one event per chunk, flushed
as it is written.  Each request takes the next scripted step:

    Reply(text, tool_calls, stop_reason, usage=(in, out), delay)
    Fault(status, retry_after, retry_after_ms, error_type, message)
    Cut(reply, after_events=N)      N events, then the connection is dropped
    StreamError(reply, after_events=N, error_type)  N events, then an error
    Hang()                          headers, then nothing until stop()
    Replay(path)                    a recorded response (tests/streams/),
                                    its body sent byte for byte
    Before(fn, step)                fn() returns, then step is served: a
                                    test acts at the moment the model
                                    answers (say, stops a process)
    Refuse(flavour, prompt, window, max_tokens)
                                    the refusal of a request longer than
                                    the window, as that server words it

With no step left, a default rule answers (so demos and tests across
processes work): a tool result -> "Command output:\\n" + its content; a user
line holding "run: CMD" (at its start or after a space, as in "@agent run: ls") -> "Running it." and a bash call {"command": CMD}; one holding
"read: PATH" -> "Reading it." and a read call {"path": PATH}; anything
else -> "echo: " + the user's text.

variant="ollama" sends each tool call whole in one chunk without ids and
finish_reason "stop"; variant="workers" sends finish_reason only on the
usage chunk.  Both change the OpenAI stream only.

window=N makes the server hold a model with a window of N tokens, counted
by its own tokenizer (a token per bytes_per_token bytes of the request
body): a request that does not fit is refused as the server named by
flavour refuses it (context_refusal: llamacpp, vllm, openai, anthropic),
before any scripted step is taken, and the usage it reports is its own
count.  With report="vllm" it also says its window as vLLM does, in GET
/v1/models (max_model_len); with report="llamacpp" as llama.cpp's
llama-server does: GET /v1/models names only the model's training window
(meta.n_ctx_train), GET /props the window it serves
(default_generation_settings.n_ctx).  srv.gets lists the paths asked.  Ollama is not among them: its OpenAI endpoint cuts an overlong
prompt silently (from the front, keeping about half its num_ctx) and
answers 200.

    /usr/bin/python3 tests/model_server.py --port 8089 [--variant V] [--api-key K]
"""

import argparse
import copy
import json
import random
import re
import signal
import socket
import string
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["ModelServer", "Reply", "ToolCall", "Fault", "Cut", "StreamError",
           "Hang", "Replay", "Before", "Refuse", "context_refusal",
           "default_reply"]

MAX_BODY = 64 << 20


class ToolCall:
    """One tool call in a reply; id is made up when None."""

    def __init__(self, name, input, id=None):
        self.name = name
        self.input = input
        self.id = id

    def __repr__(self):
        return "ToolCall(%r, %r, id=%r)" % (self.name, self.input, self.id)


class Reply:
    """A streamed answer: text, then tool calls.  stop_reason defaults to
    tool_use when there are calls, else end_turn (Anthropic terms; mapped to
    OpenAI's finish_reason).  usage=(input, output) tokens, estimated when
    None.  delay seconds pass before each event."""

    def __init__(self, text="", tool_calls=(), stop_reason=None, usage=None,
                 delay=0.0):
        self.text = text
        self.tool_calls = list(tool_calls or ())
        self.stop_reason = stop_reason or (
            "tool_use" if self.tool_calls else "end_turn")
        self.usage = usage
        self.delay = delay

    def __repr__(self):
        return "Reply(%r, %r, %r)" % (self.text, self.tool_calls,
                                      self.stop_reason)


class Fault:
    """A non-2xx answer with the provider's documented error body."""

    def __init__(self, status, retry_after=None, retry_after_ms=None,
                 error_type=None, message=None):
        self.status = status
        self.retry_after = retry_after
        self.retry_after_ms = retry_after_ms
        self.error_type = error_type
        self.message = message


class Cut:
    """Send the first after_events events of reply, then drop the
    connection without the terminal chunk."""

    def __init__(self, reply, after_events=2):
        self.reply = reply
        self.after_events = after_events


class StreamError:
    """Send after_events events of reply, then the provider's mid-stream
    error (Anthropic `event: error`, OpenAI `data: {"error": ...}`), then end
    the body cleanly."""

    def __init__(self, reply, after_events=2, error_type="overloaded_error",
                 message=None):
        self.reply = reply
        self.after_events = after_events
        self.error_type = error_type
        self.message = message


class Hang:
    """Send the response headers and nothing more until the server stops."""


class Before:
    """Call fn() (on the server's thread), then serve step: whatever fn
    does is done before the first byte of the answer is sent."""

    def __init__(self, fn, step):
        self.fn = fn
        self.step = step


class Refuse:
    """The refusal of a request of prompt input tokens, asking max_tokens
    for its answer, by a server whose window is window tokens, as flavour
    sends it (context_refusal)."""

    def __init__(self, flavour, prompt, window, max_tokens=0):
        self.flavour = flavour
        self.prompt = prompt
        self.window = window
        self.max_tokens = max_tokens


class Replay:
    """A recorded response, sent as it was recorded.  The file holds
    "# ..." comment lines saying what it represents, then the response's
    head ("status: N" and "Name: value" header lines) up to the first empty
    line, then the body, to the end of the file, byte for byte.  A
    text/event-stream body goes out chunked, one chunk per event (as servers
    flush them); any other body with a Content-Length."""

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        head, sep, self.body = data.partition(b"\n\n")
        if not sep:
            raise ValueError("%s: no empty line after the head" % path)
        self.status = 200
        self.headers = []
        for line in head.decode().split("\n"):
            if not line or line.startswith("#"):
                continue
            name, _, value = line.partition(":")
            if name.strip().lower() == "status":
                self.status = int(value)
            else:
                self.headers.append((name.strip(), value.strip()))
        self.path = path

    def events(self):
        """The body cut after each blank line (\n\n), terminators kept."""
        out, rest = [], self.body
        while rest:
            i = rest.find(b"\n\n")
            if i < 0:
                out.append(rest)
                break
            out.append(rest[:i + 2])
            rest = rest[i + 2:]
        return out


# --- error bodies ------------------------------------------------------------

ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "There was an issue with the format or "
          "content of your request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use "
          "the specified resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of "
          "bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your "
          "per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}

OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key",
          "Incorrect API key provided. You can find your API key at "
          "https://platform.openai.com/account/api-keys."),
    403: ("invalid_request_error", "unsupported_country_region_territory",
          "Country, region, or territory not supported"),
    404: ("invalid_request_error", "model_not_found",
          "The model does not exist or you do not have access to it."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for "
          "requests. Please try again in 1s."),
    500: ("server_error", None, "The server had an error while processing "
          "your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please "
          "try again later"),
    529: ("server_error", None, "The engine is currently overloaded, please "
          "try again later"),
}


def anthropic_error_body(status, error_type=None, message=None):
    """{"type":"error","error":{"type","message"}} as the Messages API
    documents it."""
    dtype, dmsg = ANTHROPIC_ERRORS.get(
        status, ("api_error" if status >= 500 else "invalid_request_error",
                 "Error %d" % status))
    return {"type": "error",
            "error": {"type": error_type or dtype, "message": message or dmsg}}


def openai_error_body(status, error_type=None, message=None):
    """{"error":{"message","type","param","code"}} as OpenAI sends it."""
    dtype, dcode, dmsg = OPENAI_ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error",
                 None, "Error %d" % status))
    return {"error": {"message": message or dmsg, "type": error_type or dtype,
                      "param": None, "code": dcode}}


# --- the default rule ----------------------------------------------------------

# --- refusals of a request longer than the window --------------------------------
#
# Each server's own words and body, byte for byte:
#   llamacpp   llama.cpp's llama-server (tools/server: format_error_response,
#              ERROR_TYPE_EXCEED_CONTEXT_SIZE), nlohmann's compact JSON; it
#              counts the prompt alone (n_prompt_tokens >= n_ctx)
#   vllm       vLLM's OpenAI server (ErrorResponse{error: ErrorInfo}),
#              FastAPI's compact JSON; the prompt alone, then prompt plus
#              max_tokens (its message then ends in " None", as v0.10 has it)
#   openai     api.openai.com, JSON indented by four spaces, code
#              context_length_exceeded
#   anthropic  the Messages API: "prompt is too long", or, with max_tokens,
#              "input length and `max_tokens` exceed context limit"

CONTEXT_FLAVOURS = ("llamacpp", "vllm", "openai", "anthropic")


def context_refusal(flavour, prompt, window, max_tokens=0):
    """(status, [(header, value)], body bytes) of flavour's refusal of a
    request of prompt input tokens asking max_tokens for its answer."""
    if flavour == "llamacpp":
        body = {"error": {
            "code": 400,
            "message": "request (%d tokens) exceeds the available context "
                       "size (%d tokens), try increasing it" % (prompt, window),
            "type": "exceed_context_size_error",
            "n_prompt_tokens": prompt, "n_ctx": window}}
        return 400, [("Content-Type", "application/json; charset=utf-8"),
                     ("Server", "llama.cpp")], \
            json.dumps(body, separators=(",", ":")).encode()
    if flavour == "vllm":
        if prompt >= window:
            msg = ("This model's maximum context length is %d tokens. "
                   "However, your request has %d input tokens. Please reduce "
                   "the length of the input messages." % (window, prompt))
        else:
            msg = ("'max_tokens' or 'max_completion_tokens' is too large: "
                   "%d. This model's maximum context length is %d tokens and "
                   "your request has %d input tokens (%d > %d - %d). None" % (
                       max_tokens, window, prompt, max_tokens, window, prompt))
        body = {"error": {"message": msg, "type": "BadRequestError",
                          "param": None, "code": 400}}
        return 400, [("content-type", "application/json"),
                     ("server", "uvicorn")], \
            json.dumps(body, separators=(",", ":"),
                       ensure_ascii=False).encode()
    if flavour == "openai":
        if prompt >= window:
            msg = ("This model's maximum context length is %d tokens. "
                   "However, your messages resulted in %d tokens. Please "
                   "reduce the length of the messages." % (window, prompt))
        else:
            msg = ("This model's maximum context length is %d tokens. "
                   "However, you requested %d tokens (%d in the messages, %d "
                   "in the completion). Please reduce the length of the "
                   "messages or completion." % (
                       window, prompt + max_tokens, prompt, max_tokens))
        body = {"error": {"message": msg, "type": "invalid_request_error",
                          "param": "messages",
                          "code": "context_length_exceeded"}}
        return 400, [("Content-Type", "application/json"),
                     ("x-request-id", "req_" + _rand(32))], \
            (json.dumps(body, indent=4) + "\n").encode()
    if flavour == "anthropic":
        if prompt > window:
            msg = "prompt is too long: %d tokens > %d maximum" % (prompt, window)
        else:
            msg = ("input length and `max_tokens` exceed context limit: %d + "
                   "%d > %d, decrease input length or `max_tokens` and try "
                   "again" % (prompt, max_tokens, window))
        rid = "req_" + _rand(24)
        body = {"type": "error", "error": {"type": "invalid_request_error",
                                           "message": msg},
                "request_id": rid}
        return 400, [("Content-Type", "application/json"),
                     ("request-id", rid)], \
            json.dumps(body, separators=(",", ":")).encode()
    raise ValueError("flavour must be one of %s" % (CONTEXT_FLAVOURS,))


def context_refuses(flavour, prompt, window, max_tokens):
    """Does flavour's server refuse this request?  llama.cpp looks at the
    prompt alone; the others at the prompt and the answer asked for."""
    if flavour == "llamacpp":
        return prompt >= window
    if flavour == "anthropic":
        return prompt + max_tokens > window
    return prompt >= window or prompt + max_tokens > window


def _text_of(content):
    """Text of a message content: a string or a list of blocks/parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def default_reply(api, body):
    """The answer of the default rule for a parsed request body."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    result = None
    if api == "openai" and last.get("role") == "tool":
        result = _text_of(last.get("content"))
    elif api == "anthropic" and isinstance(last.get("content"), list):
        for block in last["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                result = _text_of(block.get("content"))
    if result is not None:
        return Reply(text="Command output:\n" + result)
    text = ""
    for m in reversed(messages):
        if m.get("role") == "user":
            text = _text_of(m.get("content"))
            break
    for line in text.splitlines():
        # "run: CMD" may follow a mention, as in "@agent run: ls".
        at = line.find("run: ")
        if at >= 0 and (at == 0 or line[at - 1] == " ") and line[at + 5:].strip():
            return Reply(text="Running it.",
                         tool_calls=[ToolCall("bash",
                                              {"command": line[at + 5:].strip()})])
        if line.startswith("read: ") and line[6:].strip():
            return Reply(text="Reading it.",
                         tool_calls=[ToolCall("read",
                                              {"path": line[6:].strip()})])
    return Reply(text="echo: " + text)


# --- event streams -------------------------------------------------------------

def _rand(n):
    return "".join(random.choice(string.ascii_letters + string.digits)
                   for _ in range(n))


def _pieces(text, size=0):
    """text in streaming-sized pieces (words with their spaces, or size
    characters), concatenating back to text."""
    if not text:
        return []
    if size:
        return [text[i:i + size] for i in range(0, len(text), size)]
    parts = re.findall(r"\s*\S+", text)
    tail = text[len("".join(parts)):]
    if tail:
        parts.append(tail)
    return parts


def _usage(reply, body):
    if reply.usage:
        return reply.usage
    size = len(json.dumps(body))
    out = len(reply.text) // 4 + 1 + 12 * len(reply.tool_calls)
    return (max(1, size // 4), out)


def anthropic_events(reply, body):
    """The reply as Anthropic SSE events: [(name, data dict)]."""
    model = body.get("model", "claude")
    tin, tout = _usage(reply, body)
    ev = [("message_start", {"type": "message_start", "message": {
        "id": "msg_" + _rand(24), "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": tin, "output_tokens": 1}}})]
    index = 0
    if reply.text:
        ev.append(("content_block_start", {
            "type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}))
        ev.append(("ping", {"type": "ping"}))
        for piece in _pieces(reply.text):
            ev.append(("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}}))
        ev.append(("content_block_stop",
                   {"type": "content_block_stop", "index": index}))
        index += 1
    else:
        ev.append(("ping", {"type": "ping"}))
    for call in reply.tool_calls:
        ev.append(("content_block_start", {
            "type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use",
                              "id": call.id or "toolu_" + _rand(24),
                              "name": call.name, "input": {}}}))
        args = json.dumps(call.input) if call.input else ""
        for piece in [""] + _pieces(args, 12):
            ev.append(("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}}))
        ev.append(("content_block_stop",
                   {"type": "content_block_stop", "index": index}))
        index += 1
    ev.append(("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": tout}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return ev


FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
          "stop_sequence": "stop", "refusal": "content_filter"}


def openai_events(reply, body, variant=None):
    """The reply as OpenAI SSE data payloads: [dict or "[DONE]"]."""
    cid = "chatcmpl-" + _rand(20)
    created = int(time.time())
    model = body.get("model", "gpt")
    usage_on = bool((body.get("stream_options") or {}).get("include_usage"))
    fp = "fp_ollama" if variant == "ollama" else "fp_" + _rand(10).lower()
    tin, tout = _usage(reply, body)

    def chunk(delta, finish=None):
        c = {"id": cid, "object": "chat.completion.chunk", "created": created,
             "model": model, "system_fingerprint": fp,
             "choices": [{"index": 0, "delta": delta, "logprobs": None,
                          "finish_reason": finish}]}
        if usage_on and variant != "ollama":
            c["usage"] = None
        return c

    ev = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in _pieces(reply.text):
        ev.append(chunk({"content": piece}))
    if variant == "ollama" and reply.tool_calls:
        ev.append(chunk({"role": "assistant", "content": "", "tool_calls": [
            {"index": i, "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.input)}}
            for i, c in enumerate(reply.tool_calls)]}))
    else:
        for i, call in enumerate(reply.tool_calls):
            ev.append(chunk({"tool_calls": [{
                "index": i, "id": call.id or "call_" + _rand(24),
                "type": "function",
                "function": {"name": call.name, "arguments": ""}}]}))
            for piece in _pieces(json.dumps(call.input), 12):
                ev.append(chunk({"tool_calls": [{
                    "index": i, "function": {"arguments": piece}}]}))
    finish = FINISH.get(reply.stop_reason, "stop")
    if variant == "ollama" and finish == "tool_calls":
        finish = "stop"
    usage = {"prompt_tokens": tin, "completion_tokens": tout,
             "total_tokens": tin + tout}
    if variant == "workers":
        ev.append({"id": cid, "object": "chat.completion.chunk",
                   "created": created, "model": model,
                   "choices": [{"index": 0, "delta": {"content": ""},
                                "logprobs": None, "finish_reason": finish}],
                   "usage": usage})
    else:
        ev.append(chunk({}, finish))
        if usage_on:
            ev.append({"id": cid, "object": "chat.completion.chunk",
                       "created": created, "model": model,
                       "system_fingerprint": fp, "choices": [],
                       "usage": usage})
    ev.append("[DONE]")
    return ev


def encode_anthropic(event):
    name, data = event
    return ("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode()


def encode_openai(event):
    if event == "[DONE]":
        return b"data: [DONE]\n\n"
    return ("data: %s\n\n" % json.dumps(
        event, separators=(",", ":"))).encode()


# --- the HTTP side ---------------------------------------------------------------

class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "atrium-model-server/1"

    def log_message(self, fmt, *args):
        if self.server.owner.verbose:
            sys.stderr.write("model_server: " + (fmt % args) + "\n")

    def _read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                if len(data) + size > MAX_BODY:
                    raise ValueError("request body too large")
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("request body too large")
        return self.rfile.read(length)

    def _send_json(self, status, obj, extra=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _authorized(self, api):
        key = self.server.owner.api_key
        if not key:
            return True
        if api == "anthropic":
            return self.headers.get("x-api-key") == key
        return self.headers.get("Authorization") == "Bearer " + key

    def do_POST(self):
        owner = self.server.owner
        api = {"/v1/messages": "anthropic",
               "/v1/chat/completions": "openai"}.get(self.path.split("?")[0])
        try:
            raw = self._read_body()
            body = json.loads(raw) if raw else {}
        except (ValueError, UnicodeDecodeError):
            body = None
        owner._record(self.path, self.headers, body)
        error_body = anthropic_error_body if api != "openai" \
            else openai_error_body
        if api is None:
            return self._send_json(404, error_body(404))
        if not self._authorized(api):
            return self._send_json(401, error_body(401))
        if not isinstance(body, dict):
            return self._send_json(400, error_body(
                400, message="The request body is not valid JSON."))
        if owner.window and self._window_refuses(body):
            return
        step = owner._next_step() or default_reply(api, body)
        self._serve_step(api, body, step)

    def do_GET(self):
        owner = self.server.owner
        path = self.path.split("?")[0]
        body = owner.self_report(path)
        if body is None:
            self._send_json(404, openai_error_body(404))
        else:
            self._send_json(200, body)
        with owner._lock:   # once answered: a test waits for it
            owner.gets.append(path)
            owner._lock.notify_all()

    def _window_refuses(self, body):
        """Refuse a request past the server's window (ModelServer window=);
        True when it did."""
        owner = self.server.owner
        prompt = owner.count_tokens(body)
        max_tokens = body.get("max_tokens") or \
            body.get("max_completion_tokens") or 0
        if not context_refuses(owner.flavour, prompt, owner.window,
                               max_tokens):
            return False
        with owner._lock:
            owner.refused.append((prompt, max_tokens))
        self._send_raw(*context_refusal(owner.flavour, prompt, owner.window,
                                        max_tokens))
        return True

    def _send_raw(self, status, headers, data):
        self.send_response_only(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _serve_step(self, api, body, step):
        if isinstance(step, Before):
            step.fn()
            return self._serve_step(api, body, step.step)
        if isinstance(step, Fault):
            return self._fault(api, step)
        if isinstance(step, Refuse):
            return self._send_raw(*context_refusal(
                step.flavour, step.prompt, step.window, step.max_tokens))
        if isinstance(step, Replay):
            return self._replay(step)
        if isinstance(step, Hang):
            self._start_stream(api)
            self.server.owner._released.wait()
            return self._drop()
        reply = step.reply if isinstance(step, (Cut, StreamError)) else step
        if self.server.owner.window and reply.usage is None:
            out = _usage(reply, body)[1]
            reply = copy.copy(reply)     # the usage of the server's count
            reply.usage = (self.server.owner.count_tokens(body), out)
        if api == "anthropic":
            events = [encode_anthropic(e) for e in anthropic_events(reply, body)]
        else:
            events = [encode_openai(e) for e in openai_events(
                reply, body, self.server.owner.variant)]
        self._start_stream(api)
        limit = step.after_events if isinstance(step, (Cut, StreamError)) \
            else len(events)
        for data in events[:limit]:
            if reply.delay:
                time.sleep(reply.delay)
            self._chunk(data)
        if isinstance(step, Cut):
            return self._drop()
        if isinstance(step, StreamError):
            self._chunk(self._stream_error(api, step))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _replay(self, step):
        # The recorded head only: no Server or Date of this server's own.
        self.log_request(step.status)
        self.send_response_only(step.status)
        stream = any(k.lower() == "content-type" and "event-stream" in v
                     for k, v in step.headers)
        for k, v in step.headers:
            self.send_header(k, v)
        if not stream:
            self.send_header("Content-Length", str(len(step.body)))
            self.end_headers()
            self.wfile.write(step.body)
            self.wfile.flush()
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for data in step.events():
            self._chunk(data)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _stream_error(self, api, step):
        # The status whose documented message fits the error type.
        status = {"overloaded_error": 529, "rate_limit_error": 429,
                  "invalid_request_error": 400}.get(step.error_type, 500)
        if api == "anthropic":
            return encode_anthropic(("error", anthropic_error_body(
                status, step.error_type, step.message)))
        return encode_openai(openai_error_body(status, step.error_type,
                                               step.message))

    def _fault(self, api, f):
        body = (anthropic_error_body if api == "anthropic"
                else openai_error_body)(f.status, f.error_type, f.message)
        extra = []
        if f.retry_after is not None:
            extra.append(("retry-after", str(f.retry_after)))
        if f.retry_after_ms is not None:
            extra.append(("retry-after-ms", str(f.retry_after_ms)))
        if api == "anthropic":
            extra.append(("request-id", "req_" + _rand(24)))
            if f.status >= 500 or f.status in (408, 409, 429):
                extra.append(("x-should-retry", "true"))
        self._send_json(f.status, body, extra)

    def _start_stream(self, api):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8"
                         if api == "anthropic" else "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        if api == "anthropic":
            self.send_header("request-id", "req_" + _rand(24))
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
        self.server.owner.sent.append((time.monotonic(), data))

    def _drop(self):
        """Close the connection at once: no terminal chunk."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # A client that hangs up mid-stream is normal in tests (cancelled
        # turns, retries); anything else is shown.
        if not isinstance(sys.exc_info()[1], (ConnectionError, OSError)):
            super().handle_error(request, client_address)


class ModelServer:
    """A scripted model server on 127.0.0.1; see the module docstring."""

    def __init__(self, api_key=None, variant=None, port=0, host="127.0.0.1",
                 verbose=False, window=0, flavour="llamacpp",
                 bytes_per_token=4, report=None):
        if variant not in (None, "ollama", "workers"):
            raise ValueError("variant must be None, 'ollama' or 'workers'")
        if flavour not in CONTEXT_FLAVOURS:
            raise ValueError("flavour must be one of %s" % (CONTEXT_FLAVOURS,))
        self.api_key = api_key
        self.variant = variant
        self.window = window
        self.flavour = flavour
        self.bytes_per_token = bytes_per_token
        self.refused = []   # (prompt, max_tokens) of each window refusal
        self.report = report
        self.gets = []      # paths of GET requests
        self.verbose = verbose
        self.requests = []
        self.sent = []      # (time.monotonic(), event bytes) once flushed
        self._steps = []
        self._lock = threading.Condition()
        self._released = threading.Event()
        self._host, self._port = host, port
        self._httpd = None
        self._thread = None

    @property
    def url(self):
        """The Anthropic base URL, http://127.0.0.1:PORT."""
        return "http://%s:%d" % (self._host, self._httpd.server_address[1])

    @property
    def openai_url(self):
        """The OpenAI base URL, .url + "/v1"."""
        return self.url + "/v1"

    def start(self):
        self._released.clear()
        self._httpd = _Server((self._host, self._port), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._released.set()
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(5)
            self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def script(self, *steps):
        """Append steps; each request takes the next one."""
        with self._lock:
            self._steps.extend(steps)
        return self

    def pending(self):
        """Steps not yet used."""
        with self._lock:
            return len(self._steps)

    def wait_requests(self, n, timeout=10.0):
        """Wait until n requests have come; the requests, or AssertionError."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self.requests) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        "model server: %d request(s) after %.1f s, wanted %d"
                        % (len(self.requests), timeout, n))
                self._lock.wait(left)
            return list(self.requests)

    def self_report(self, path):
        """What GET path answers about the model (report=), or None."""
        if self.report == "vllm" and path == "/v1/models":
            return {"object": "list", "data": [{
                "id": "test-model", "object": "model", "created": 1765000000,
                "owned_by": "vllm", "root": "test-model", "parent": None,
                "max_model_len": self.window, "permission": [{
                    "id": "modelperm-" + _rand(32),
                    "object": "model_permission", "created": 1765000000,
                    "allow_create_engine": False, "allow_sampling": True,
                    "allow_logprobs": True, "allow_search_indices": False,
                    "allow_view": True, "allow_fine_tuning": False,
                    "organization": "*", "group": None,
                    "is_blocking": False}]}]}
        if self.report == "llamacpp" and path == "/v1/models":
            return {"models": [{"name": "test-model", "model": "test-model",
                                "type": "model", "capabilities": ["completion"]}],
                    "object": "list", "data": [{
                        "id": "test-model", "object": "model",
                        "created": 1765000000, "owned_by": "llamacpp",
                        "meta": {"vocab_type": 2, "n_vocab": 151936,
                                 "n_ctx_train": 262144, "n_embd": 2048,
                                 "n_params": 30532122624,
                                 "size": 17659361280}}]}
        if self.report == "llamacpp" and path == "/props":
            return {"default_generation_settings": {
                        "id": 0, "id_task": -1, "n_ctx": self.window,
                        "speculative": False, "is_processing": False},
                    "total_slots": 1, "model_path": "/models/test-model.gguf",
                    "modalities": {"vision": False, "audio": False},
                    "build_info": "b6000-0000000"}
        return None

    def count_tokens(self, body):
        """The input tokens of a request body by this server's tokenizer:
        its messages, system prompt and tools."""
        if not isinstance(body, dict):
            return 0
        size = len(json.dumps([body.get("system"), body.get("messages"),
                               body.get("tools")]))
        return -(-size // self.bytes_per_token)

    def wait_gets(self, n, timeout=10.0):
        """Wait until n GET requests were answered; their paths."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self.gets) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("model server: %d GET(s), wanted %d"
                                         % (len(self.gets), n))
                self._lock.wait(left)
            return list(self.gets)

    def _record(self, path, headers, body):
        with self._lock:
            self.requests.append({
                "path": path,
                "headers": {k.lower(): v for k, v in headers.items()},
                "body": body})
            self._lock.notify_all()

    def _next_step(self):
        with self._lock:
            return self._steps.pop(0) if self._steps else None


def main(argv=None):
    ap = argparse.ArgumentParser(description="A scripted model server "
                                 "(Anthropic and OpenAI streaming formats) "
                                 "answering by its default rule.")
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--variant", choices=["ollama", "workers"])
    ap.add_argument("--api-key", help="require this key (x-api-key or "
                    "Authorization: Bearer)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    srv = ModelServer(api_key=args.api_key, variant=args.variant,
                      port=args.port, host=args.host, verbose=args.verbose)
    try:
        srv.start()
    except OSError as e:
        sys.exit("model_server: cannot listen on %s:%d: %s (pick another "
                 "--port)" % (args.host, args.port, e.strerror))
    print("model server on %s (anthropic), %s (openai)"
          % (srv.url, srv.openai_url), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    try:
        while not stop.wait(1):
            pass
    except KeyboardInterrupt:
        pass
    srv.stop()


if __name__ == "__main__":
    main()
