"""atriumd's loops when nothing happens: with idle sessions open (chat on a
terminal, the atrium subsystem) neither of its processes nor the network
process's handshake threads wake up on their own; timers are deadlines,
not a periodic tick.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_loop_idle.py
"""
import json
import os
import time

import pytest

from conftest import ssh_command
from test_chat import Tmux
from test_ssh import Lines

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    # Other tests' mounts, processes and load wake a server for reasons
    # of the host's; what is counted here is the server's own wake-ups.
    pytest.mark.alone,
]

QUIET_S = 5


def switches(pid):
    """Context switches of every thread of pid so far: each wake-up from a
    sleep is at least one."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches",
                                        "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass    # a thread that ended
    return total


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t.kill()


def test_idle_atriumd_with_idle_sessions_does_not_wake(atriumd, data_dir,
                                                        tmux):
    # --agent-timeout 0: the watchdog's pings are wake-ups by design.
    srv = atriumd(data_dir, "--agent-timeout", "0")
    controls = []
    try:
        for room in ("quiet", "calm", "quiet"):
            c = Lines(ssh_command(srv, room, "-s", "atrium"))
            c.expect(lambda l: json.loads(l)["type"] == "welcome")
            controls.append(c)
        tmux.open("chat", srv, "quiet")
        # What the chat's join sets off is over once the room's other
        # members were told and the chat's status line shows it.
        for c in (controls[0], controls[2]):
            c.expect(lambda l: json.loads(l).get("type") == "presence" and
                     json.loads(l).get("joined") == "alice")
        tmux.wait("chat", lambda s: "here: alice" in tmux.rows("chat")[-2])
        pids = {"monitor": srv.proc.pid, "network": srv.network_pid()}
        before = {k: switches(p) for k, p in pids.items()}
        time.sleep(QUIET_S)
        woke = {k: switches(p) - before[k] for k, p in pids.items()}
        print("wake-ups in %d s: %s" % (QUIET_S, woke))
        # A periodic tick of 100 ms would be 50 per thread here.
        assert woke["network"] <= 3, woke
        assert woke["monitor"] <= 3, woke
        # And the sessions are still served.
        tmux.keys("chat", "/who", "Enter")
        tmux.wait("chat", "alice")
    finally:
        for c in controls:
            c.close()


def test_deadlines_still_fire_on_an_idle_loop(atriumd, data_dir, tmux,
                                              model_server):
    # "bob is typing" is shown for 6 s and then cleared by a deadline of
    # the chat's: nothing else happens on the server meanwhile, so only the
    # loop's timer can clear it.
    srv = atriumd(data_dir, "--agent-timeout", "0", "--provider", "anthropic",
                  "--model-url", model_server.url, "--model", "test-model",
                  env=dict(os.environ, ANTHROPIC_API_KEY="test-key"))
    tmux.open("a", srv, "notes", "alice", cols=100, rows=20)
    tmux.open("b", srv, "notes", "bob", cols=100, rows=20)
    tmux.wait("a", lambda s: "bob" in tmux.rows("a")[-2])
    tmux.keys("b", "-l", "half a thought")
    tmux.wait("a", lambda s: "bob is typing" in tmux.rows("a")[-2])
    shown = time.time()
    tmux.wait("a", lambda s: "is typing" not in tmux.rows("a")[-2], timeout=15)
    assert time.time() - shown < 9, "the typing note outlived its 6 s"
