"""The room's record as people read it, through the real OpenSSH client in
tmux: approvals (who gave them, denials with their reason, timeouts, a
/stop while one waited) and a command a restart of the agent or of the
server cut (with the output it had shown) are stored events, so a
reconnect replays them exactly as they showed live, and /history finds
them, as it finds rounds of consent and commands someone stopped; an
answered prompt no longer reads as waiting, live, in a replay or after
PgUp; the approval prompt fits one line and only y or n answers it; a
tool's duration is its run, the wait for an answer shown apart.

Run as root after `make all`:
/usr/bin/python3 -m pytest -q tests/test_chat_record.py
"""
import json
import os
import re
import shutil
import signal

import pytest

from conftest import _pids_using, make_room
from model_server import Reply, ToolCall
from test_chat import settled, tmux, untimed  # noqa: F401 (fixtures)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
]

SIZES = [(80, 24), (120, 35)]


@pytest.fixture
def srv(atriumd, data_dir, model_server):
    """Approvals asked of the people here, answered within 8 s."""
    env = dict(os.environ, ANTHROPIC_API_KEY="test-key")
    return atriumd(data_dir, "--provider", "anthropic", "--model-url",
                   model_server.url, "--model", "test-model",
                   "--approval", "ask", "--approval-timeout", "8",
                   "--input-rate", "0", env=env)


def record(tmux, name, first, last):
    """The rows of name's whole scrollback from the first one holding
    first to the last one holding last; presence lines left out (who
    joined is not the record, and differs between two sessions)."""
    rows = [r.rstrip() for r in
            tmux.screen(name, history=True).split("\n")]
    start = next(i for i, r in enumerate(rows) if first in r)
    end = max(i for i, r in enumerate(rows) if last in r)
    return [r for r in rows[start:end + 1]
            if not re.search(r"\* \w+ (joined|left)$", r)]


def model_saw(model_server, text):
    """1 when some request to the model carried text."""
    return any(text in json.dumps(r["body"]) if not isinstance(r["body"], str)
               else text in r["body"] for r in model_server.requests)


@pytest.mark.parametrize("cols,rows", SIZES)
def test_approvals_replay_as_they_showed_live(srv, model_server, tmux,
                                              cols, rows):
    model_server.script(
        Reply("One.", tool_calls=[ToolCall("bash", {
            "command": "echo ran-one"})]),
        Reply("Done one."),
        Reply("Two.", tool_calls=[ToolCall("bash", {
            "command": "echo ran-two"})]),
        Reply("Done two."),
        Reply("Three.", tool_calls=[ToolCall("bash", {
            "command": "echo ran-three"})]),
        Reply("Done three."))
    tmux.open("a", srv, "rec", "alice", cols=cols, rows=rows)
    tmux.wait("a", "you are alice")
    tmux.open("b", srv, "rec", "bob", cols=cols, rows=rows)
    tmux.wait("a", "bob joined")
    # With nothing waiting, y is an ordinary line.
    tmux.keys("b", "y", "Enter")
    tmux.wait("a", "bob: y")
    tmux.keys("a", "@agent one", "Enter")
    # The prompt is one row: what will run, then how to answer.
    tmux.wait("b", "approval needed: bash echo ran-one (y/n, 8 s)")
    row = [r for r in tmux.rows("b") if "approval needed" in r]
    assert len(row) == 1 and untimed(row[0]) == \
        "! approval needed: bash echo ran-one (y/n, 8 s)", tmux.rows("b")
    # "yes" is chat, shown as chat; it answers nothing.
    tmux.keys("b", "yes", "Enter")
    tmux.wait("a", "bob: yes")
    assert "approved" not in tmux.screen("a")
    # bob takes two seconds (a command of his own) before answering.
    tmux.keys("b", "!sleep 2", "Enter")
    tmux.wait("b", "* exit 0 after")
    tmux.keys("b", "y", "Enter")
    tmux.wait("a", "Done one.")
    screen = settled(tmux, "a", "agent done")
    got = re.search(r"\* bob approved the agent's bash call \(waited "
                    r"(\d+)\.(\d) s\)", screen)
    assert got, screen
    # The tool's duration is its run alone (an echo), not the wait for
    # bob's answer before it, which its own line shows.
    took = re.search(r"\* tool ok after (\d+\.\d+) s", screen)
    waited = float("%s.%s" % got.groups())
    assert waited >= 2.0 and took, screen
    assert float(took.group(1)) < waited - 1.0, screen
    # A denial with its reason: the room sees who and why, and so does
    # the model, in the call's result.
    tmux.keys("a", "@agent two", "Enter")
    tmux.wait("b", "approval needed: bash echo ran-two (y/n, 8 s)")
    tmux.keys("b", "n not on a friday", "Enter")
    tmux.wait("a", "Done two.")
    screen = tmux.wait("a", lambda s: re.search(
        r"bob denied the agent's bash call \(waited \d+\.\d s\): not on "
        r"a friday", s), history=True)
    assert model_saw(model_server, "denied by bob: not on a friday")
    assert "bob: n not on a friday" not in screen
    # Nobody answers: after 4 s it is denied, and says so.
    tmux.keys("a", "@agent three", "Enter")
    tmux.wait("a", "Done three.", timeout=30)
    # At 80 columns the line wraps under its text: read it joined.
    settled(tmux, "a", lambda s: "approval timed out: no one answered the "
            "agent's bash call within 8 s, so it was denied" in
            " ".join(s.split()))
    live = record(tmux, "a", "alice: @agent one", "Done three.")
    assert not [r for r in live if "ran-three" in r and "tool ok" in r]
    # A reconnect (a new session of alice's) replays all of it exactly as
    # it showed live: the prompts, who answered and how, the output
    # before "tool ok", the durations.
    tmux.open("a2", srv, "rec", "alice", cols=cols, rows=rows)
    settled(tmux, "a2", "Done three.")
    replay = record(tmux, "a2", "alice: @agent one", "Done three.")
    assert replay == live, "\n".join(
        ["live:"] + live + ["replay:"] + replay)
    # /history finds the approvals.
    tmux.keys("a2", "/history approved", "Enter")
    screen = tmux.wait("a2", "hold \"approved\"")
    assert "bob approved the agent's bash call" in screen.split(
        "/history approved")[-1], screen


def agent_pid(srv, room):
    """The pid of room's atrium-agent."""
    for pid in _pids_using(os.path.join(srv.data, "rooms", room)):
        try:
            with open("/proc/%d/comm" % pid) as f:
                if f.read().strip() == "atrium-agent":
                    return pid
        except OSError:
            pass
    raise AssertionError("no atrium-agent for room %s" % room)


@pytest.mark.parametrize("cols,rows", SIZES)
def test_command_cut_by_a_restart_gets_its_end(srv, tmux, cols, rows):
    tmux.open("a", srv, "cut", "alice", cols=cols, rows=rows)
    tmux.keys("a", "!echo started; echo second-line >&2; sleep 300",
              "Enter")
    tmux.wait("a", re.compile(r"^ +second-line$", re.M).search)
    pid = agent_pid(srv, "cut")
    os.kill(pid, signal.SIGKILL)
    # Live: the chat reconnects to the restarted agent and the block ends,
    # its output shown once, as it came.
    screen = tmux.wait("a", "* interrupted by a restart", timeout=30,
                       history=True)
    rows_ = [untimed(r.rstrip()) for r in screen.split("\n")]
    start = rows_.index("> alice $ echo started; echo second-line >&2; "
                        "sleep 300")
    assert "* interrupted by a restart" in rows_[start:], rows_
    block = cut_block(tmux, "a")
    assert len(block) == 4, block
    # In a new session's replay, the same block with the output it had
    # shown, ended the same way.
    tmux.open("b", srv, "cut", "alice", cols=cols, rows=rows)
    tmux.wait("b", "interrupted by a restart")
    assert cut_block(tmux, "b") == block
    # /history finds it, by its end and by its output.
    assert found_again(tmux, "b", "interrupt",
                       "* interrupted by a restart") == 1
    assert found_again(tmux, "b", "second-line",
                       "* interrupted by a restart") == 1


def cut_block(tmux, name, last="interrupted by a restart"):
    """The rows of the !echo started block in name's scrollback: its
    command, its output, its end (up to the row holding last)."""
    return [untimed(r) for r in record(tmux, name, "alice $ echo started",
                                       last)
            if "alice $" in r or "interrupted" in r or
            r.strip() in ("started", "second-line")]


@pytest.mark.parametrize("cols,rows", SIZES)
def test_command_cut_by_a_server_restart_gets_its_end(srv, tmux, cols,
                                                       rows):
    """atriumd stopped (SIGTERM) and started again while a !CMD runs: a
    new session replays the block with the output it had shown and its
    end, and /history finds it."""
    tmux.open("a", srv, "down", "alice", cols=cols, rows=rows)
    tmux.keys("a", "!echo started; echo second-line >&2; sleep 300",
              "Enter")
    tmux.wait("a", re.compile(r"^ +second-line$", re.M).search)
    live = cut_block(tmux, "a", "second-line")
    assert len(live) == 3, live
    srv.stop()
    srv.start()
    tmux.open("b", srv, "down", "alice", cols=cols, rows=rows)
    tmux.wait("b", "interrupted by a restart", timeout=30)
    assert cut_block(tmux, "b") == live + ["* interrupted by a restart"]
    assert found_again(tmux, "b", "interrupt",
                       "* interrupted by a restart") == 1


@pytest.mark.parametrize("cols,rows", SIZES)
def test_stop_while_an_approval_waits(srv, model_server, tmux, cols, rows):
    """/stop while the agent waits for an answer: the request is answered
    in the record (stopped, by whom), the call ends as stopped, and a
    reconnect replays both as they showed."""
    model_server.script(
        Reply("Asking.", tool_calls=[ToolCall("bash", {
            "command": "echo never-ran"})]),
        Reply("Not asked for."))
    tmux.open("a", srv, "stopask", "alice", cols=cols, rows=rows)
    tmux.wait("a", "you are alice")
    tmux.keys("a", "@agent go", "Enter")
    tmux.wait("a", "approval needed: bash echo never-ran")
    tmux.keys("a", "/stop", "Enter")
    said = "alice stopped the agent before its bash call was answered"
    screen = settled(tmux, "a", lambda s: said in " ".join(s.split()))
    joined = " ".join(screen.split())
    assert "tool stopped: stopped by alice before it was approved" in \
        joined, screen
    assert "never-ran" not in joined.split(said)[-1], screen
    live = record(tmux, "a", "alice: @agent go", "tool stopped")
    tmux.open("a2", srv, "stopask", "alice", cols=cols, rows=rows)
    settled(tmux, "a2", "tool stopped")
    replay = record(tmux, "a2", "alice: @agent go", "tool stopped")
    # The notice "alice stopped the agent" is the moment's, not stored.
    assert replay == [r for r in live
                      if not r.endswith("* alice stopped the agent")], \
        "\n".join(["live:"] + live + ["replay:"] + replay)
    assert found_again(tmux, "a2", "before its", said) == 1


def without_preview(rows):
    """rows less a restore's preview, from its first row to its question."""
    out, skip = [], False
    for r in rows:
        skip = skip or "/restore would restore" in r
        if not skip:
            out.append(r)
        elif "y to restore" in r:
            skip = False
    return out


@pytest.mark.parametrize("cols,rows", SIZES)
def test_blocks_restores_and_kicks_replay_and_are_found(srv, tmux, cols,
                                                         rows):
    tmux.open("a", srv, "rk", "alice", cols=cols, rows=rows)
    tmux.keys("a", "!sleep 0.3; echo slept", "Enter")
    tmux.wait("a", "* exit 0 after")
    tmux.keys("a", "/snapshot keep-1", "Enter")
    tmux.wait("a", "alice took snapshot keep-1 of the workspace")
    tmux.keys("a", "/restore keep-1", "Enter")
    tmux.wait("a", "y to restore")      # a restore always previews
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", "alice restored the workspace to snapshot keep-1")
    tmux.open("b", srv, "rk", "bob", cols=cols, rows=rows)
    tmux.wait("a", "bob joined")
    tmux.keys("a", "/kick bob", "Enter")
    tmux.wait("a", "alice kicked bob")
    live = record(tmux, "a", "alice $ sleep 0.3", "alice kicked bob")
    took = [r for r in live if "exit 0 after" in r]
    assert len(took) == 1 and float(re.search(
        r"after (\d+\.\d+) s", took[0]).group(1)) >= 0.3, live
    # A new session replays the block with its duration, the restore and
    # the kick, as they showed.
    # The restore's preview was alice's alone, as she typed it: not part
    # of the room's record.
    tmux.open("c", srv, "rk", "alice", cols=cols, rows=rows)
    tmux.wait("c", "alice kicked bob")
    assert record(tmux, "c", "alice $ sleep 0.3", "alice kicked bob") == \
        [r for r in without_preview(live) if "bob joined" not in r]
    for word, line in (("restored", "alice restored the workspace to "
                        "snapshot keep-1"), ("kick", "alice kicked bob")):
        tmux.keys("c", "/history " + word, "Enter")
        screen = tmux.wait("c", "hold \"%s\"" % word)
        assert line in screen.split("/history " + word)[-1], screen


def test_protocol_records_answers_and_timeouts(srv, model_server):
    """Over the room protocol: the request and its outcome are stored
    events, replayed with a history request; a denial's reason reaches
    the model; a timeout is recorded as such."""
    from test_ssh import json_lines
    model_server.script(
        Reply("", tool_calls=[ToolCall("bash", {"command": "echo a"})]),
        Reply("Refused."),
        Reply("", tool_calls=[ToolCall("bash", {"command": "echo b"})]),
        Reply("Timed out."))
    make_room(srv, "proto")
    j = json_lines(srv, "proto", "alice")

    def event(type_, **match):
        return json.loads(j.expect(lambda l: json.loads(l)["type"] == type_
                                   and all(json.loads(l).get(k) == v
                                           for k, v in match.items()),
                                   timeout=30))
    try:
        event("welcome")
        j.send(json.dumps({"type": "prompt", "text": "a"}) + "\n")
        req = event("approval_request")
        assert req["seq"] > 0 and req["seconds"] == 8
        j.send(json.dumps({"type": "approve", "id": req["id"],
                           "approve": False,
                           "reason": "use b\x1b[31m instead"}) + "\n")
        res = event("approval_result")
        assert res["status"] == "denied" and res["user"] == "alice"
        assert res["reason"] == "use b[31m instead", res
        assert res["text"].startswith("alice denied the agent's bash call "
                                      "(waited "), res
        out = event("tool_result")
        assert out["output"] == "denied by alice: use b[31m instead"
        event("turn_end")
        assert model_saw(model_server, "denied by alice: use b[31m instead")
        j.send(json.dumps({"type": "prompt", "text": "b"}) + "\n")
        req2 = event("approval_request")
        late = event("approval_result", id=req2["id"])
        assert late["status"] == "timed_out" and "user" not in late
        event("turn_end")
        j.send(json.dumps({"type": "history", "match": "denied"}) + "\n")
        j.send('{"type":"sync","id":"s1"}\n')
        found = []
        while True:
            ev = json.loads(j.expect(lambda l: True, timeout=30))
            if ev["type"] == "synced":
                break
            found.append(ev)
        assert [e["type"] for e in found if e.get("replay")] == [
            "approval_result", "tool_result", "approval_result",
            "tool_result"], found
    finally:
        j.close()


@pytest.mark.parametrize("cols,rows", SIZES)
def test_joining_while_a_request_waits(srv, model_server, tmux, cols, rows):
    """Who joins while the agent waits sees the request as it was asked,
    then how long is left, once; their y answers it."""
    model_server.script(
        Reply("", tool_calls=[ToolCall("bash", {"command": "echo late"})]),
        Reply("Done late."))
    tmux.open("a", srv, "join", "alice", cols=cols, rows=rows)
    tmux.keys("a", "@agent go", "Enter")
    tmux.wait("a", "approval needed: bash echo late (y/n, 8 s)")
    tmux.open("b", srv, "join", "bob", cols=cols, rows=rows)
    screen = tmux.wait("b", re.compile(
        r"the agent still waits for an answer \(y/n, \d+ s left\)").search)
    assert screen.count("approval needed: bash echo late (y/n, 8 s)") == 1, \
        screen
    tmux.keys("b", "y", "Enter")
    tmux.wait("a", "bob approved the agent's bash call")
    tmux.wait("a", "Done late.")
    # Answered, neither line bob was shown reads as waiting any more.
    screen = settled(tmux, "b", "Done late.")
    rows_ = [untimed(r.rstrip()) for r in screen.split("\n")]
    assert not [r for r in rows_ if "(y/n," in r], screen
    assert "* bash echo late: approved by bob" in rows_, screen
    assert "* the agent waits no more: approved by bob" in rows_, screen


def found_again(tmux, name, word, line):
    """How many more times line shows in name's scrollback (its rows
    joined) once /history WORD answered: the search's hits (the typed
    command is not echoed, and the replay shows line already)."""
    def joined():
        return " ".join(tmux.screen(name, history=True).split())
    before = joined().count(line)
    tmux.keys(name, "/history " + word, "Enter")
    tmux.wait(name, lambda s: re.search(
        r"history holds? \"%s\"" % re.escape(word), s), history=True)
    return joined().count(line) - before


def test_history_finds_consent_asked_refused_and_given(srv, model_server,
                                                       tmux):
    """A round of consent for /undo, refused, then one agreed: a new
    session's /history finds the question, the refusal, the yes and the
    undo done as bob agreed."""
    model_server.script(
        Reply("Changing.", tool_calls=[ToolCall("bash", {
            "command": "echo new > made"})]),
        Reply("Changed."))
    tmux.open("a", srv, "agree", "alice", cols=120, rows=35)
    tmux.wait("a", "you are alice")
    tmux.open("b", srv, "agree", "bob", cols=120, rows=35)
    tmux.wait("a", "bob joined")
    tmux.keys("a", "@agent change", "Enter")
    tmux.wait("a", "approval needed: bash echo new > made")
    tmux.keys("a", "y", "Enter")
    settled(tmux, "a", "Changed.")
    tmux.keys("b", "!echo b > bobs", "Enter")
    tmux.wait("a", "* exit 0 after")
    for answer in ("n", "y"):
        tmux.keys("a", "/undo", "Enter")
        tmux.wait("a", lambda s, n=answer: s.count(
            "y asks them to agree") == (1 if n == "n" else 2))
        tmux.keys("a", "y", "Enter")
        tmux.wait("b", lambda s, n=answer: s.count(
            "y to agree, n to refuse") == (1 if n == "n" else 2))
        tmux.keys("b", answer, "Enter")
        tmux.wait("a", "bob refused" if answer == "n" else "as bob agreed")
    tmux.open("c", srv, "agree", "alice", cols=120, rows=35)
    tmux.wait("c", "as bob agreed")
    # Both questions, and bob's yes.
    assert found_again(tmux, "c", "agree", "waiting for bob to agree to "
                       "your /undo") == 2
    assert found_again(tmux, "c", "asks", "waiting for bob to agree to "
                       "your /undo") == 2
    assert found_again(tmux, "c", "refused", "the /undo was cancelled: bob "
                       "refused") == 1
    assert found_again(tmux, "c", "agreed", "alice undid the agent's turn 1, "
                       "as bob agreed") == 1
    assert found_again(tmux, "c", "agreed", "* bob agreed") == 1


@pytest.mark.parametrize("cols,rows", SIZES)
def test_an_answered_prompt_reads_as_answered(srv, model_server, tmux, cols,
                                              rows):
    """Once answered (approved, denied with a reason, timed out, or the
    turn stopped), a prompt no longer reads as waiting anywhere in
    anyone's scrollback: its row says how it ended, live and in a
    reconnect's replay alike."""
    model_server.script(
        Reply("One.", tool_calls=[ToolCall("bash", {
            "command": "echo ran-one"})]),
        Reply("Done one."),
        Reply("Two.", tool_calls=[ToolCall("bash", {
            "command": "echo ran-two"})]),
        Reply("Done two."),
        Reply("Three.", tool_calls=[ToolCall("bash", {
            "command": "echo ran-three"})]),
        Reply("Done three."),
        Reply("Four.", tool_calls=[ToolCall("bash", {
            "command": "echo ran-four"})]),
        Reply("Not asked for."))
    tmux.open("a", srv, "ans", "alice", cols=cols, rows=rows)
    tmux.wait("a", "you are alice")
    tmux.open("b", srv, "ans", "bob", cols=cols, rows=rows)
    tmux.wait("a", "bob joined")
    tmux.keys("a", "@agent one", "Enter")
    tmux.wait("b", "approval needed: bash echo ran-one (y/n, 8 s)")
    tmux.keys("b", "y", "Enter")
    tmux.wait("a", "Done one.")
    tmux.keys("a", "@agent two", "Enter")
    tmux.wait("b", "approval needed: bash echo ran-two (y/n, 8 s)")
    tmux.keys("b", "n not today", "Enter")
    tmux.wait("a", "Done two.")
    tmux.keys("a", "@agent three", "Enter")
    tmux.wait("a", "Done three.", timeout=30)
    tmux.keys("a", "@agent four", "Enter")
    tmux.wait("a", "approval needed: bash echo ran-four (y/n, 8 s)")
    tmux.keys("a", "/stop", "Enter")
    answered = ["* bash echo ran-one: approved by bob",
                "* bash echo ran-two: denied by bob: not today",
                "* bash echo ran-three: not answered in time, so denied",
                "* bash echo ran-four: stopped by alice before an answer"]

    def reads_answered(name):
        screen = settled(tmux, name, "agent done (stopped")
        rows_ = [untimed(r.rstrip()) for r in screen.split("\n")]
        assert not [r for r in rows_ if "(y/n," in r], screen
        for row in answered:
            assert row in rows_, (row, screen)
        return screen
    for name in ("a", "b"):
        reads_answered(name)
    live = [r for r in record(tmux, "a", "alice: @agent one",
                              "agent done (stopped")
            if not r.endswith("* alice stopped the agent")]
    tmux.open("a2", srv, "ans", "alice", cols=cols, rows=rows)
    reads_answered("a2")
    replay = record(tmux, "a2", "alice: @agent one", "agent done (stopped")
    assert replay == live, "\n".join(
        ["live:"] + live + ["replay:"] + replay)


def test_history_finds_a_command_someone_stopped(srv, tmux):
    """A !CMD stopped with /kill ends as the chat said ("alice's command
    ended by SIGINT"), and /history finds it by those words."""
    tmux.open("a", srv, "killed", "alice", cols=80, rows=24)
    tmux.wait("a", "you are alice")
    tmux.keys("a", "!sleep 300", "Enter")
    tmux.wait("a", "alice $ sleep 300")
    tmux.keys("a", "/kill", "Enter")
    tmux.wait("a", "alice's command ended by SIGINT")
    tmux.open("c", srv, "killed", "alice", cols=80, rows=24)
    tmux.wait("c", "alice's command ended by SIGINT")
    assert found_again(tmux, "c", "SIGINT",
                       "alice's command ended by SIGINT") == 1


@pytest.mark.parametrize("cols,rows", SIZES)
def test_an_answered_prompt_reads_as_answered_after_pgup(srv, model_server,
                                                         tmux, cols, rows):
    """A prompt older than a new session's replay, loaded with PgUp, reads
    as answered there too."""
    from test_chat_scroll import page_key
    from test_chat_ui import seed
    model_server.script(
        Reply("One.", tool_calls=[ToolCall("bash", {
            "command": "echo ran-one"})]),
        Reply("Done one."))
    tmux.open("a", srv, "far", "alice", cols=cols, rows=rows)
    tmux.wait("a", "you are alice")
    tmux.keys("a", "@agent one", "Enter")
    tmux.wait("a", "approval needed: bash echo ran-one (y/n, 8 s)")
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", "Done one.")
    seed(srv, "far", ["filler %03d" % i for i in range(80)])
    tmux.open("b", srv, "far", "alice", cols=cols, rows=rows)
    tmux.wait("b", "filler 079")
    assert "ran-one" not in tmux.screen("b", history=True)
    for _ in range(40):
        screen = tmux.screen("b")
        if "bash echo ran-one" in screen:
            break
        page_key(tmux, "b", "PPage")
    else:
        pytest.fail("PgUp did not reach the approval")
    rows_ = [untimed(r.rstrip()) for r in screen.split("\n")]
    assert "* bash echo ran-one: approved by alice" in rows_, screen
    assert not [r for r in rows_ if "(y/n," in r], screen
