"""An MCP server for the tests: stdio transport, newline-delimited JSON-RPC
2.0, protocol revision 2025-06-18.  Run in the room's sandbox by
atrium-agent as `python3 mcp_server.py MODE LOG`; every message it reads is
appended to LOG (one JSON line each) so a test can check what the agent
sent.

Tools (two, on two pages of tools/list to exercise the cursor):
  add    {a, b}  -> text "a+b"
  shout  {text}  -> text upper-cased, an image block, and $GREETING

MODE:
  good     answers everything
  crash    exits with status 3 (after a line on stderr) on tools/call
  garbage  answers tools/list with a line that is not JSON
  hang     never answers tools/call
"""
import json
import os
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "good"
LOG = sys.argv[2] if len(sys.argv) > 2 else None

ADD = {"name": "add", "description": "Add two integers.",
       "inputSchema": {"type": "object", "properties": {
           "a": {"type": "integer"}, "b": {"type": "integer"}},
           "required": ["a", "b"]}}
SHOUT = {"name": "shout", "description": "Upper-case a text.",
         "inputSchema": {"type": "object", "properties": {
             "text": {"type": "string"}}, "required": ["text"]}}


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def log(msg):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(msg) + "\n")


def call(params):
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "add":
        return {"content": [{"type": "text",
                             "text": str(args["a"] + args["b"])}]}
    if name == "shout":
        return {"content": [
            {"type": "text", "text": args.get("text", "").upper()},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "text", "text": "greeting=%s" %
             os.environ.get("GREETING", "")}]}
    return {"content": [{"type": "text", "text": "no tool " + str(name)}],
            "isError": True}


def answer(msg):
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "test-mcp", "version": "1"}}})
    elif method == "tools/list":
        if MODE == "garbage":
            sys.stdout.write("this is not JSON at all\n")
            sys.stdout.flush()
        elif (msg.get("params") or {}).get("cursor") == "page-2":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [SHOUT]}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "tools": [ADD], "nextCursor": "page-2"}})
    elif method == "tools/call":
        if MODE == "crash":
            sys.stderr.write("boom: the test server crashed\n")
            sys.stderr.flush()
            sys.exit(3)
        if MODE == "hang":
            return
        send({"jsonrpc": "2.0", "id": mid, "result": call(msg["params"])})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid,
              "error": {"code": -32601, "message": "method not found"}})


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        log(msg)
        answer(msg)


if __name__ == "__main__":
    main()
