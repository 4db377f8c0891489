"""The journal is the truth: a commit of room.db that fails at any point of
a turn never runs a tool twice and never shows a client an event that is
not stored.

A real atrium-agent runs with tests/fault_vfs.c preloaded (the shim VFS
of the unit tests, as a library): its K-th commit fails as on a full disk,
for every K a turn with one counted bash call makes.  The client watches,
the agent is killed, started again without the fault, and the turn ends
from room.db.  Then: the command ran at most once (its side effect is a
line appended to a file in the workspace), every stored kind of event a
client saw is in room.db with the seq it was shown with, and no seq was
shown twice, across the restart too.  A second test fails one commit only
and shows the room being told, and the turn going on once room.db takes a
write again, without a restart.  A step whose calls change nothing (read)
commits once, with the calls' ends: a failed commit anywhere in such a
turn redoes the step instead of reporting a call interrupted, and a call
that runs long is shown while it runs.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_journal.py
(make check builds build/tests/fault_vfs.so first).
"""
import os
import shutil
import signal
import tempfile
import time

import pytest

from test_agent import (BIN_DIR, FS, SANDBOX_UID, Room, fs_pid,  # noqa: F401
                        pytestmark, room, stop_process, stopped)
from model_server import Before, Reply, ToolCall

SHIM = os.path.join(BIN_DIR, "tests", "fault_vfs.so")
STORED = {"message", "prompt", "turn_start", "tool_call", "tool_result",
          "turn_end"}
PROMPT = "run: echo x >> count"

pytestmark = pytestmark + [
    pytest.mark.skipif(not os.path.exists(SHIM), reason="build first: make "
                       "build/tests/fault_vfs.so"),
]


class FaultRoom:
    """A fresh room whose agent fails its commit number `at` (0: none)."""

    def __init__(self, model, at, sticky):
        self.base = tempfile.mkdtemp(prefix="atrium-journal-")
        self.room = Room(self.base)
        # The shim writes these from inside the agent, which runs as the
        # room's uid and may write only beneath its room's directories:
        # a directory of that uid's in the run directory, on a path it
        # can walk.
        os.chmod(self.base, 0o711)
        notes = os.path.join(self.room.run_dir, "fault")
        os.mkdir(notes, 0o700)
        os.chown(notes, SANDBOX_UID, SANDBOX_UID)
        self.mark = os.path.join(notes, "fired")
        self.count = os.path.join(notes, "commits")
        self.model = model
        self.room.env.update(LD_PRELOAD=SHIM, ATRIUM_FAULT_COMMIT=str(at),
                             ATRIUM_FAULT_STICKY="1" if sticky else "0",
                             ATRIUM_FAULT_MARK=self.mark,
                             ATRIUM_FAULT_COUNT=self.count)
        self.shown = []     # every event a client was sent, live ones too

    def start(self):
        """Start the agent; False when it could not start (the fault hit
        room.db's creation: nothing was shown to anybody)."""
        try:
            self.room.start("--model-url", self.model.url,
                            "--approval", "allow_all",
                            "--retry-base-ms", "50", "--max-retries", "2")
        except AssertionError:
            return False
        return True

    def commits(self):
        try:
            with open(self.count) as f:
                return int(f.read() or 0)
        except FileNotFoundError:
            return 0

    def fired(self):
        return os.path.exists(self.mark)

    def watch(self, client, until, timeout):
        """Read client's events into shown until one satisfies until, the
        time is up, or the agent went away."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            while client.events:
                ev = client.events.pop(0)
                self.shown.append(ev)
                if until(ev):
                    return ev
            if not client._read(0.1):
                return None
        return None

    def workspace_count(self):
        try:
            with open(os.path.join(self.room.workspace, "count")) as f:
                return f.read().count("x")
        except FileNotFoundError:
            return 0

    def stored(self):
        db = self.room.db()
        try:
            return {seq: (typ, js) for seq, typ, js in db.execute(
                "SELECT seq, type, json FROM events")}
        finally:
            db.close()

    def cleanup(self):
        self.room.cleanup()
        shutil.rmtree(self.base, ignore_errors=True)


def turn_over(ev):
    return ev.get("type") == "turn_end" or (
        ev.get("type") == "notice" and "agent stopped" in ev.get("text", ""))


def check_shown_were_stored(fr):
    """Every stored kind of event shown is in room.db with its seq; no seq
    was shown for two different events."""
    stored = fr.stored()
    seen = {}
    for ev in fr.shown:
        if ev.get("replay") or ev["type"] in ("welcome", "error", "synced"):
            continue    # replays and replies carry seqs taken before
        assert ev["seq"] not in seen or seen[ev["seq"]] == ev, (
            "seq %d shown twice: %s and %s" % (ev["seq"], seen[ev["seq"]],
                                               ev))
        seen[ev["seq"]] = ev
        if ev["type"] in STORED:
            assert ev["seq"] in stored, ("shown, never stored", ev)
            assert stored[ev["seq"]][0] == ev["type"], (ev, stored[ev["seq"]])


def turns(fr):
    """The states of the room's turns in room.db."""
    db = fr.room.db()
    try:
        return [st for (st,) in db.execute("SELECT state FROM turns")]
    finally:
        db.close()


def wait_turns_done(fr, client, timeout=20):
    """Wait until room.db has turns and all are done, reading client's
    events meanwhile; then until client has been shown the last event
    stored (client joined with since=, so one stored before it joined
    comes as a replay; a later one live, which the agent announces just
    after the commit that stored it, so maybe after room.db says done)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        st = turns(fr)
        if st and all(s == "done" for s in st):
            last = max(fr.stored(), default=0)
            if not any(ev.get("seq", 0) >= last for ev in fr.shown):
                fr.watch(client, lambda ev: ev.get("seq", 0) >= last,
                         max(0.0, end - time.monotonic()))
            return True
        fr.watch(client, lambda ev: False, 0.2)
    return False


def ran_at_most_once(fr, at):
    """The counted command ran once or not at all; not at all only when no
    result said it ran."""
    n = fr.workspace_count()
    assert n <= 1, "commit %d failed: the command ran %d times" % (at, n)
    if n == 0:
        results = [e for e in fr.shown if e["type"] == "tool_result"]
        assert not any(r["status"] == "ok" for r in results), results


def run_with_fault(model, at, sticky, prompt=PROMPT, check=ran_at_most_once,
                   setup=None):
    """One turn with commit `at` failing; then a clean restart that ends
    the turn from room.db.  Whether the fault fired."""
    fr = FaultRoom(model, at, sticky)
    try:
        if setup:
            setup(fr)
        if fr.start():
            c = fr.room.connect("alice")
            c.send({"type": "prompt", "text": prompt})
            fr.watch(c, turn_over, 20)
            fr.room.kill9()
        fired = fr.fired()
        fr.room.env["ATRIUM_FAULT_COMMIT"] = "0"
        assert fr.start(), fr.room.log_text()
        # Back as a client does after a restart: asking for what it missed
        # (the resumed turn may end before it joins).
        c = fr.room.connect("alice", since=max(
            (ev.get("seq", 0) for ev in fr.shown), default=0))
        if not turns(fr):
            # The prompt never made it into room.db: ask again.
            c.send({"type": "prompt", "text": prompt})
        assert wait_turns_done(fr, c), (at, turns(fr), fr.shown[-10:],
                                        fr.room.log_text()[-3000:])
        check(fr, at)
        check_shown_were_stored(fr)
        return fired
    finally:
        fr.cleanup()


def clean_commits(model, prompt, setup=None):
    """The commits a clean run of one turn of prompt makes: (before the
    prompt, after the turn), with the events shown."""
    fr = FaultRoom(model, 0, True)
    try:
        if setup:
            setup(fr)
        assert fr.start()
        c = fr.room.connect("alice")
        before = fr.commits()
        c.send({"type": "prompt", "text": prompt})
        # turn_end goes out after the commit that stores it, the turn's
        # last: the count is the turn's whole.
        assert fr.watch(c, lambda ev: ev.get("type") == "turn_end", 20)
        check_shown_were_stored(fr)
        return before, fr.commits(), fr.shown, fr.workspace_count()
    finally:
        fr.cleanup()


def test_failed_commit_at_every_checkpoint_never_runs_twice(model):
    # A clean run says how many commits a turn makes.
    before, after, _, count = clean_commits(model, PROMPT)
    assert count == 1
    assert after - before >= 4, (before, after)    # one per checkpoint
    fired_in_turn = 0
    for at in range(before + 1, after + 1):
        fired_in_turn += run_with_fault(model, at, sticky=True)
    assert fired_in_turn >= after - before


NOTES = "the notes say: ship on Friday\n"
READ_PROMPT = "read: notes.txt"


def write_notes(fr):
    with open(os.path.join(fr.room.workspace, "notes.txt"), "w") as f:
        f.write(NOTES)


def read_answered(fr, at):
    """The read was answered with the file's text, and never reported as
    interrupted: a failed commit redid its step."""
    results = [e for e in fr.shown if e["type"] == "tool_result"]
    assert results and not any(r["status"] == "interrupted"
                               for r in results), (at, results)
    said = [e.get("text", "") for e in fr.shown if e["type"] == "message"
            and e.get("user") == "agent"]
    assert any("ship on Friday" in t for t in said), (at, said)


def test_a_step_of_reads_commits_once_and_a_failed_commit_redoes_it(model):
    """A turn of one read makes one commit fewer than the same turn with a
    command, since the read's step commits once; failing any commit of it
    redoes the step after the restart, and the read is never reported as
    interrupted."""
    b_before, b_after, _, _ = clean_commits(model, PROMPT)
    before, after, shown, _ = clean_commits(model, READ_PROMPT, write_notes)
    kinds = [e["type"] for e in shown]
    assert kinds.index("tool_call") < kinds.index("tool_result"), kinds
    assert after - before == b_after - b_before - 1, (
        (before, after), (b_before, b_after))
    fired_in_turn = 0
    for at in range(before + 1, after + 1):
        fired_in_turn += run_with_fault(model, at, sticky=True,
                                        prompt=READ_PROMPT,
                                        check=read_answered, setup=write_notes)
    assert fired_in_turn >= after - before


def fresh_db(fr):
    """Start the room over: no room.db, no count in the workspace."""
    if os.path.exists(os.path.join(fr.room.workspace, "count")):
        os.unlink(os.path.join(fr.room.workspace, "count"))
    for f in ("room.db", "room.db-wal", "room.db-shm"):
        if os.path.exists(os.path.join(fr.room.room_dir, f)):
            os.unlink(os.path.join(fr.room.room_dir, f))


def test_one_failed_commit_stops_the_turn_and_says_so(model):
    """Fail the one commit that records a tool call's start, which holds
    the model's answer that asked for the call too (room.db takes writes
    again right after): the call is not announced, the command does not
    run, the turn stops and the room is told; the next chat line is
    stored, and the turn goes on from room.db without a restart, asking
    the model again and running the command once."""
    fr = FaultRoom(model, 0, False)
    try:
        # Which commit records the start: the first one, after the join,
        # whose failure comes after the model answered and leaves the call
        # unannounced.
        assert fr.start()
        # The join's presence goes out after the commit of the join.
        fr.room.connect("alice").wait("presence", joined="alice")
        fr.room.kill9()
        joined = fr.commits()
        for at in range(joined, joined + 8):
            fresh_db(fr)
            fr.shown = []
            fr.room.env["ATRIUM_FAULT_COMMIT"] = str(at)
            if os.path.exists(fr.mark):
                os.unlink(fr.mark)
            assert fr.start()
            asked = len(model.requests)
            c = fr.room.connect("alice")
            c.send({"type": "prompt", "text": PROMPT})
            stopped = fr.watch(c, turn_over, 5)
            kinds = [e["type"] for e in fr.shown]
            if stopped and stopped["type"] == "notice" and \
                    len(model.requests) > asked and "tool_call" not in kinds:
                break
            fr.room.kill9()
        else:
            raise AssertionError("no commit failed at the tool's start")
        assert "room.db could not record" in stopped["text"]
        assert fr.fired()
        assert "tool_result" not in kinds, kinds
        assert "Running it." not in [e.get("text") for e in fr.shown
                                     if e["type"] == "message"]
        assert fr.workspace_count() == 0
        c.send({"type": "chat", "text": "room.db works again"})
        assert fr.watch(c, lambda ev: ev.get("type") == "turn_end", 20), \
            fr.shown[-10:]
        assert fr.workspace_count() == 1
        check_shown_were_stored(fr)
        texts = [e.get("text") for e in fr.shown if e["type"] == "message"]
        assert "room.db works again" in texts
    finally:
        fr.cleanup()


def test_replies_take_no_seq_so_a_reconnect_sees_no_gap(room):
    """Answers to one connection carry the last room seq and take none: the
    next room event follows the one before them, and a client that comes
    back with since= gets it with no gap."""
    room.start()
    a = room.connect("alice", kind="control")
    a.send({"type": "chat", "text": "one"})
    one = a.wait("message", text="one")
    for i in range(3):
        a.send({"type": "who"})
        a.send({"type": "usage"})
        a.send({"type": "nonsense"})
        a.send({"type": "sync", "id": str(i)})
        synced = a.wait("synced", id=str(i))
        assert synced["seq"] == one["seq"]
    assert a.welcome["seq"] < one["seq"]
    a.send({"type": "chat", "text": "two"})
    two = a.wait("message", text="two")
    assert two["seq"] == one["seq"] + 1
    b = room.connect("bob", kind="control", since=one["seq"])
    assert b.welcome["seq"] == two["seq"]
    got = b.wait("message", text="two")
    assert got["replay"] and got["seq"] == two["seq"]


@pytest.mark.skipif(not os.path.exists(FS) or not os.path.exists("/dev/fuse"),
                    reason="needs atrium-fs and /dev/fuse")
def test_a_long_call_that_changes_nothing_is_shown_while_it_runs(room, model):
    """A held step is announced once the hold's time is up: the call of a
    grep that cannot end yet reaches the room while it runs, and its result
    follows once it ends.  The workspace is on atrium-fs, stopped as the
    model answers, so the grep waits for its first directory listing (the
    kernel never keeps atrium-fs's listings) until the test, having seen
    the call, lets atrium-fs go on."""
    with room.on_atrium_fs():
        os.mkdir(os.path.join(room.workspace, "d"))
        for i in range(20):
            with open(os.path.join(room.workspace, "d", "f%d.txt" % i),
                      "w") as f:
                f.write("a needle\n" if i == 7 else "nothing here\n")
        fs = fs_pid(room)
        model.script(Before(lambda: stop_process(fs), Reply(
                         "", tool_calls=[ToolCall("grep", {
                             "pattern": "needle", "path": "d"})])),
                     Reply("Done."))
        room.start("--model-url", model.url, "--approval", "allow_all")
        c = room.connect("alice")
        c.send({"type": "prompt", "text": "find the needle"})
        try:
            shown = c.collect("tool_call", timeout=30)
            # atrium-fs has not answered since before the call started.
            assert stopped(fs)
            assert "tool_result" not in [e["type"] for e in shown], shown
        finally:
            os.kill(fs, signal.SIGCONT)
        call = shown[-1]
        evs = c.collect("turn_end", timeout=30)
        res = [e for e in evs if e["type"] == "tool_result"]
        assert len(res) == 1, evs
        assert res[0]["id"] == call["id"] and res[0]["seq"] > call["seq"]
        assert (res[0]["status"], res[0]["output"]) == \
            ("ok", "d/f7.txt:1: a needle"), res
