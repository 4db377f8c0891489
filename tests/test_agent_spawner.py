"""The process that forks the agent's sandboxes: atrium-agent starts it
before any thread and any key, so every command is forked by a small
single-threaded process holding no key, yet is still the agent's own
child (stopped, reaped and timed by it as before).

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_spawner.py
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_server import Reply, ToolCall  # noqa: E402
from test_agent import fast, pytestmark, room  # noqa: E402,F401

KEY = "sk-ant-spawnertest-5d0c"


def children(pid):
    """{pid: (comm, threads)} of pid's children."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/status" % p) as f:
                st = dict(line.split(":\t", 1) for line in f if ":\t" in line)
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(st["PPid"]) == pid:
            out[int(p)] = (st["Name"].strip(), int(st["Threads"]))
    return out


def wait_for(cond, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    return cond()


def test_sandboxes_are_forked_by_the_spawner(room, model):
    room.env["ANTHROPIC_API_KEY"] = KEY
    model.script(Reply("", tool_calls=[ToolCall(
        "bash", {"command": "sleep 1.5; echo from-the-sandbox"})]),
        Reply("Done."))
    agent = room.start("--model-url", model.url, *fast("--approval",
                                                         "allow_all"))
    kids = children(agent.pid)
    spawners = [p for p, (name, _) in kids.items() if name == "atrium-spawner"]
    assert len(spawners) == 1, kids
    spawner = spawners[0]
    assert kids[spawner][1] == 1        # single-threaded
    with open("/proc/%d/environ" % spawner, "rb") as f:
        assert KEY.encode() not in f.read()
    with open("/proc/%d/cmdline" % spawner, "rb") as f:
        argv = [a for a in f.read().split(b"\0") if a]
    assert argv == [b"atrium-spawner", b"--room-dir", room.room_dir.encode()]

    c = room.connect()
    c.send({"type": "prompt", "text": "go"})
    c.wait("tool_call")
    # The command (bwrap) is the agent's child, not the spawner's.
    bwrap = wait_for(lambda: [p for p, (name, _) in children(
        agent.pid).items() if name == "bwrap"])
    assert bwrap, children(agent.pid)
    assert children(spawner) == {}
    res = c.wait("tool_result", timeout=20)
    assert res["status"] == "ok" and "from-the-sandbox" in res["output"]
    c.wait("turn_end")

    # It goes with the agent.
    room.kill9()
    assert wait_for(lambda: not os.path.exists("/proc/%d/status" % spawner)
                    or "State:\tZ" in open("/proc/%d/status" % spawner).read())
