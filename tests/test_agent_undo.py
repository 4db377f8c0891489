"""Undo and redo of the agent's turns, through the room protocol, on a
real atrium-fs mount with the real sandbox (only the model is scripted)."""
import json
import os
import subprocess

import pytest

from test_agent import FS, Reply, ToolCall, fast, room  # noqa: F401

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]


def tree(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p) as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def seed(ws):
    for name in ("keep", "edit", "gone"):
        with open(os.path.join(ws, name), "w") as f:
            f.write(name + "\n")
        os.chmod(os.path.join(ws, name), 0o666)  # the sandbox uid edits


BASH = "echo new > made && echo more >> edit && rm gone"


def bash_turn(model, c, command):
    """A turn of the agent running command; its id once it has ended."""
    model.script(Reply("Working.", tool_calls=[
        ToolCall("bash", {"command": command})]), Reply("Done."))
    c.send({"type": "prompt", "text": "change things"})
    turn = c.wait("turn_start")["turn"]
    c.wait("turn_end", timeout=30)
    return turn


def run_turn(room, model, c):
    return bash_turn(model, c, BASH)


def test_undo_previews_the_turn_then_restores_and_redo_returns(room, model):
    with room.on_atrium_fs():
        seed(room.workspace)
        before = tree(room.workspace)
        room.start("--model-url", model.url, "--approval", "allow_all",
                   *fast())
        c = room.connect()
        turn = run_turn(room, model, c)
        after = tree(room.workspace)
        assert after == {"keep": "keep\n", "edit": "edit\nmore\n",
                         "made": "new\n"}
        # a person's own command in the same interval
        bob = room.connect("bob", kind="exec")
        bob.send({"type": "exec", "id": "b1", "command": "echo b > bobs"})
        assert bob.wait("exec_result", id="b1")["exitCode"] == 0

        c.send({"type": "undo"})
        p = c.wait("undo_preview")
        assert p["turn"] == turn
        assert p["added"] == ["bobs", "made"]
        assert p["removed"] == ["gone"]
        assert p["modified"] == ["edit"]
        assert p["users"] == ["bob"]
        assert p["ask"] == ["bob"]
        assert tree(room.workspace)["made"] == "new\n"   # nothing yet

        # It takes back bob's work: confirmed, it asks him first.
        c.send({"type": "undo", "confirm": True})
        q = c.wait("consent_request")
        assert (q["action"], q["turn"], q["user"], q["users"]) == (
            "undo", turn, "alice", ["bob"])
        assert tree(room.workspace)["made"] == "new\n"   # nothing yet
        b = room.connect("bob")
        b.send({"type": "consent", "id": q["id"], "approve": True})
        d = c.wait("undo_done")
        assert d["user"] == "alice" and d["agreed"] == ["bob"]
        assert c.wait("consent_end")["result"] == "agreed"
        assert (d["added"], d["removed"], d["modified"], d["users"]) == (
            p["added"], p["removed"], p["modified"], p["users"])
        assert tree(room.workspace) == before
        c.send({"type": "undo"})
        assert "no turn of the agent" in c.wait("error")["message"]

        c.send({"type": "redo"})
        r = c.wait("redo_preview")
        assert r["turn"] == turn
        assert r["added"] == ["bobs", "made"]
        assert r["removed"] == ["gone"]
        assert r["modified"] == ["edit"]
        c.send({"type": "redo", "confirm": True})
        c.wait("redo_done")
        after["bobs"] = "b\n"
        assert tree(room.workspace) == after
        names = subprocess.run(
            [FS, "snapshots", os.path.join(room.room_dir, "workspace.db")],
            capture_output=True, text=True).stdout
        assert "turn-%d" % turn in names and "redo-%d" % turn in names


def test_undo_goes_back_turn_by_turn(room, model):
    with room.on_atrium_fs():
        seed(room.workspace)
        before = tree(room.workspace)
        room.start("--model-url", model.url, "--approval", "allow_all",
                   *fast())
        c = room.connect()
        run_turn(room, model, c)
        middle = tree(room.workspace)
        model.script(Reply("Again.", tool_calls=[
            ToolCall("write", {"path": "second", "content": "2\n"})]),
            Reply("Done."))
        c.send({"type": "prompt", "text": "more"})
        c.wait("turn_end", timeout=30)
        last = tree(room.workspace)
        for want in (middle, before):
            c.send({"type": "undo", "confirm": True})
            c.wait("undo_done")
            assert tree(room.workspace) == want
        # forward again, in the order undone, through restores that gave
        # the files the kernel held new inode numbers
        for want in (middle, last):
            c.send({"type": "redo", "confirm": True})
            c.wait("redo_done")
            assert tree(room.workspace) == want
        c.send({"type": "redo"})
        assert "nothing to redo" in c.wait("error")["message"]


def test_only_who_may_manage_the_room_may_undo(room, model):
    with room.on_atrium_fs():
        seed(room.workspace)
        room.start("--model-url", model.url, "--approval", "allow_all",
                   *fast())
        c = room.connect()
        run_turn(room, model, c)
        c.send({"type": "access", "user": "bob", "role": "member"})
        bob = room.connect("bob", may_create=False)
        bob.send({"type": "undo", "confirm": True})
        assert "owner" in bob.wait("error")["message"]
        assert os.path.exists(os.path.join(room.workspace, "made"))


def snapshot_names(room):
    out = subprocess.run(
        [FS, "snapshots", os.path.join(room.room_dir, "workspace.db")],
        capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()[1:] if line]


def test_retention_drops_old_undo_points_never_named_ones(room, model):
    with room.on_atrium_fs():
        seed(room.workspace)
        room.start("--model-url", model.url, "--approval", "allow_all",
                   "--undo-keep", "1", *fast())
        c = room.connect()
        c.send({"type": "snapshot", "name": "mine"})
        assert c.wait("snapshot")["name"] == "mine"
        first = run_turn(room, model, c)
        model.script(Reply("Again.", tool_calls=[
            ToolCall("write", {"path": "second", "content": "2\n"})]),
            Reply("Done."))
        c.send({"type": "prompt", "text": "more"})
        second = c.wait("turn_start")["turn"]
        c.wait("turn_end", timeout=30)
        names = snapshot_names(room)
        assert "mine" in names and "turn-%d" % second in names
        assert "turn-%d" % first not in names
        rows = room.db().execute("SELECT turn, snapshot FROM turn_undo "
                                 "ORDER BY turn").fetchall()
        assert rows == [(first, None), (second, "turn-%d" % second)]
        # the one kept is undone; the dropped one cannot be
        c.send({"type": "undo", "confirm": True})
        assert c.wait("undo_done")["added"] == ["second"]
        c.send({"type": "undo"})
        assert "no turn of the agent" in c.wait("error")["message"]


def test_preview_names_are_safe_for_a_terminal(room, model):
    with room.on_atrium_fs():
        room.start("--model-url", model.url, "--approval", "allow_all",
                   *fast())
        c = room.connect()
        model.script(Reply("Odd.", tool_calls=[ToolCall("bash", {
            "command": "touch \"$(printf 'a\\033[2Jb\\nc')\""})]),
            Reply("Done."))
        c.send({"type": "prompt", "text": "odd"})
        c.wait("turn_end", timeout=30)
        c.send({"type": "undo"})
        assert c.wait("undo_preview")["added"] == ["a[2Jb?c"]


def exec_ok(c, command, id):
    c.send({"type": "exec", "id": id, "command": command})
    r = c.wait("exec_result", id=id)
    assert r["exitCode"] == 0, r
    return r


def test_redo_brings_back_the_last_turn_undone_not_an_earlier_one(room,
                                                                   model):
    """Undo a turn, reset its files by hand, let a second turn change them
    and undo that: redo brings back the second turn's files, and the
    first turn, which the exec and the second turn superseded, can never
    come back."""
    with room.on_atrium_fs():
        for name, text in (("b.txt", "b0\n"), ("c.txt", "c0\n")):
            with open(os.path.join(room.workspace, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(room.workspace, name), 0o666)
        room.start("--model-url", model.url, "--approval", "allow_all",
                   *fast())
        c = room.connect()
        sh = room.connect("alice", kind="exec")
        first = bash_turn(model, c, "echo one > a.txt && echo b1 > b.txt"
                          " && rm c.txt")
        c.send({"type": "undo", "confirm": True})
        assert c.wait("undo_done")["turn"] == first
        exec_ok(sh, "echo b0 > b.txt && echo c0 > c.txt", "reset")
        reset = tree(room.workspace)
        assert reset == {"b.txt": "b0\n", "c.txt": "c0\n"}

        second = bash_turn(model, c, "echo two > a2.txt && echo b2 > b.txt"
                           " && rm c.txt")
        done = {"a2.txt": "two\n", "b.txt": "b2\n"}
        assert tree(room.workspace) == done
        c.send({"type": "undo", "confirm": True})
        assert c.wait("undo_done")["turn"] == second
        assert tree(room.workspace) == reset
        c.send({"type": "undo"})
        assert "no turn of the agent" in c.wait("error")["message"]

        c.send({"type": "redo"})
        p = c.wait("redo_preview")
        assert (p["turn"], p["added"], p["removed"], p["modified"]) == (
            second, ["a2.txt"], ["c.txt"], ["b.txt"])
        c.send({"type": "redo", "confirm": True})
        assert c.wait("redo_done")["turn"] == second
        assert tree(room.workspace) == done
        assert exec_ok(sh, "cat a2.txt b.txt", "look")["stdout"] == \
            "two\nb2\n"

        c.send({"type": "redo"})
        assert "nothing to redo" in c.wait("error")["message"]
        c.send({"type": "redo", "confirm": True})
        assert "nothing to redo" in c.wait("error")["message"]
        assert tree(room.workspace) == done
        # and undo still goes back to the reset files, once
        c.send({"type": "undo", "confirm": True})
        assert c.wait("undo_done")["turn"] == second
        assert tree(room.workspace) == reset


def test_a_change_after_the_undo_supersedes_the_redo(room, model):
    """A redo would take back whatever was changed in the workspace since
    the undo: it is refused then, and reading files changes nothing."""
    with room.on_atrium_fs():
        seed(room.workspace)
        room.start("--model-url", model.url, "--approval", "allow_all",
                   *fast())
        c = room.connect()
        sh = room.connect("bob", kind="exec")
        turn = run_turn(room, model, c)
        after = tree(room.workspace)
        c.send({"type": "undo", "confirm": True})
        c.wait("undo_done")
        before = tree(room.workspace)

        exec_ok(sh, "cat keep edit gone && ls -la", "read")
        c.send({"type": "redo"})
        p = c.wait("redo_preview")
        assert p["turn"] == turn and p["users"] == []

        exec_ok(sh, "echo mine > edit", "write")
        c.send({"type": "redo", "confirm": True})
        e = c.wait("error")["message"]
        assert "nothing to redo" in e and "edit" in e
        assert tree(room.workspace) == dict(before, edit="mine\n")

        # Writing the old bytes back is a change too: what the undo left
        # is gone, and the redo with it.
        exec_ok(sh, "printf 'edit\\n' > edit", "back")
        assert tree(room.workspace) == before
        c.send({"type": "redo"})
        assert "nothing to redo" in c.wait("error")["message"]
        assert tree(room.workspace) != after


def test_consent_times_out_refuses_strangers_and_yields_to_force(room,
                                                                 model):
    """A request for consent that nobody answers ends after the approval
    timeout, naming who did not answer; only the people it asks may
    answer; a forced undo ends a waiting request and is recorded as
    forced over them."""
    with room.on_atrium_fs():
        seed(room.workspace)
        before = tree(room.workspace)
        room.start("--model-url", model.url, "--approval", "allow_all",
                   *fast())
        c = room.connect()
        run_turn(room, model, c)
        bob = room.connect("bob", kind="exec")
        bob.send({"type": "exec", "id": "b1", "command": "echo b > bobs"})
        assert bob.wait("exec_result", id="b1")["exitCode"] == 0

        c.send({"type": "undo", "confirm": True})
        q = c.wait("consent_request")
        end = c.wait("consent_end", timeout=10)
        assert (end["id"], end["result"], end["users"]) == (
            q["id"], "timeout", ["bob"])
        assert "made" in tree(room.workspace)

        c.send({"type": "undo", "confirm": True})
        q = c.wait("consent_request")
        carol = room.connect("carol")
        carol.send({"type": "consent", "id": q["id"], "approve": True})
        assert "does not ask you" in carol.wait("error")["message"]
        c.send({"type": "undo", "confirm": True})
        assert "waits for the yes" in c.wait("error")["message"]
        c.send({"type": "undo", "confirm": True, "force": True})
        end = c.wait("consent_end")
        assert (end["result"], end["user"]) == ("forced", "alice")
        d = c.wait("undo_done")
        assert d["forced"] is True and d["over"] == ["bob"]
        assert tree(room.workspace) == before


def test_a_restart_ends_a_waiting_consent_in_the_history(room, model):
    """The agent dies while a request for consent waits: the undo does not
    happen, and the restarted agent records the request's end."""
    with room.on_atrium_fs():
        seed(room.workspace)
        room.start("--model-url", model.url, "--approval", "allow_all")
        c = room.connect()
        run_turn(room, model, c)
        bob = room.connect("bob", kind="exec")
        bob.send({"type": "exec", "id": "b1", "command": "echo b > bobs"})
        assert bob.wait("exec_result", id="b1")["exitCode"] == 0
        c.send({"type": "undo", "confirm": True})
        q = c.wait("consent_request")
        changed = tree(room.workspace)
        room.kill9()
        room.start()
        ends = [json.loads(j) for (j,) in room.db().execute(
            "SELECT json FROM events WHERE type = 'consent_end'")]
        assert [(e["id"], e["result"]) for e in ends] == [
            (q["id"], "cancelled")], ends
        assert "restarted" in ends[0]["text"]
        assert tree(room.workspace) == changed
        c = room.connect("bob")
        c.send({"type": "consent", "id": q["id"], "approve": True})
        assert "has ended" in c.wait("error")["message"]
