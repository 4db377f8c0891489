"""/undo, /redo and the snapshot commands in the full-screen chat, through
the real OpenSSH client in tmux, on the room's real atrium-fs workspace
with the real sandbox (only the model is scripted).

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_chat_undo.py
"""
import json
import os
import shutil
import subprocess

import pytest

from conftest import SSH_OPTS, _ssh_run, ssh_run  # noqa: F401 (fixture)
from model_server import Reply, ToolCall
from test_chat import settled, srv, tmux  # noqa: F401 (fixtures)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
]


def ls(ssh_run, srv):
    rc, out, err = ssh_run(srv, "undo", "ls; cat edit")
    assert rc == 0, err
    return out


def test_undo_previews_confirms_and_redo_brings_back(srv, model_server,
                                                     tmux, ssh_run):
    tmux.open("a", srv, "undo", "alice", cols=120, rows=40)
    tmux.wait("a", "you are alice")
    tmux.keys("a", "!echo keep > keep; echo edit > edit; echo gone > gone",
              "Enter")
    # Its line shows as it starts; what it made, once it has exited.
    tmux.wait("a", lambda s: s.count("* exit 0 after") == 1)
    before = ls(ssh_run, srv)
    model_server.script(
        Reply("Changing.", tool_calls=[ToolCall("bash", {
            "command": "echo new > made && echo more >> edit && rm gone"})]),
        Reply("Changed."))
    tmux.keys("a", "@agent change the files", "Enter")
    settled(tmux, "a", "agent done")
    after = ls(ssh_run, srv)
    assert "made" in after and "gone" not in after
    # a person's own !cmd after the turn is named before anyone confirms
    tmux.keys("a", "!echo b > bobs", "Enter")
    tmux.wait("a", lambda s: s.count("* exit 0 after") == 2)

    tmux.keys("a", "/undo", "Enter")
    screen = tmux.wait("a", "y to undo")
    assert "/undo would undo the agent's turn" in screen
    assert "removes: bobs, made" in screen
    assert "brings back: gone" in screen
    assert "changes back: edit" in screen
    assert "also takes back the changes of: alice" in screen
    assert ls(ssh_run, srv) != before
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", "alice undid the agent's turn")
    assert ls(ssh_run, srv) == before

    tmux.keys("a", "/redo", "Enter")
    screen = tmux.wait("a", "y to redo")
    assert "brings back: bobs, made" in screen
    tmux.keys("a", "n", "Enter")
    tmux.wait("a", "nothing was changed")
    assert ls(ssh_run, srv) == before
    tmux.keys("a", "/redo", "Enter")
    tmux.wait("a", lambda s: s.count("y to redo") == 2)
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", "alice redid the agent's turn")
    assert ls(ssh_run, srv) == "bobs\n" + after


def test_named_snapshots_restore_and_list(srv, model_server, tmux, ssh_run):
    tmux.open("a", srv, "undo", "alice", cols=120, rows=40)
    tmux.wait("a", "you are alice")
    tmux.keys("a", "!echo one > f", "Enter")
    tmux.wait("a", "* exit 0 after")
    tmux.keys("a", "/snapshot first", "Enter")
    tmux.wait("a", "alice took snapshot first of the workspace")
    tmux.keys("a", "!echo two > f", "Enter")
    tmux.wait("a", lambda s: s.count("* exit 0 after") == 2)
    tmux.keys("a", "/snapshot turn-9", "Enter")
    tmux.wait("a", "not starting with turn- or redo-")
    tmux.keys("a", "/snapshots", "Enter")
    screen = tmux.wait("a", "snapshots of the workspace:")
    assert "  first " in screen and "turn-9" not in screen.split(
        "snapshots of the workspace:")[1]
    tmux.keys("a", "/restore first", "Enter")
    # A restore is previewed like an undo, and acts only on y.
    screen = tmux.wait("a", "y to restore")
    assert "/restore would restore the workspace to snapshot first:" in \
        screen
    assert "changes back: f" in screen
    assert ssh_run(srv, "undo", "cat f")[1] == "two\n"
    tmux.keys("a", "y", "Enter")
    screen = tmux.wait("a", "alice restored the workspace to snapshot first")
    assert "changes back: f" in screen.split(
        "alice restored the workspace to snapshot first")[1]
    assert ssh_run(srv, "undo", "cat f")[1] == "one\n"


def files(ssh_run, srv):
    """The workspace as a user sees it: each file's name and contents."""
    rc, out, err = ssh_run(srv, "undo", "for f in *; do echo \"$f: "
                           "$(cat \"$f\")\"; done")
    assert rc == 0, err
    return out


def protocol_undo(ssh_run, srv):
    """An undo confirmed through the room protocol, as a program does."""
    lines = [{"type": "undo", "confirm": True},
             {"type": "sync", "id": "undone"}]
    rc, out, err = ssh_run(srv, "undo", "-s", "atrium", input="".join(
        json.dumps(o) + "\n" for o in lines))
    assert rc == 0, err
    evs = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in evs if e["type"] in (
        "undo_done", "synced", "error")] == ["undo_done", "synced"], evs


def test_redo_after_undos_across_an_exec_brings_back_the_last_turn(
        srv, model_server, tmux, ssh_run):
    """A turn undone through the protocol, its files reset by an exec, a
    second turn undone with /undo: /redo brings back the second turn's
    files, not the first's, and a second /redo nothing (the exec and the
    second turn superseded the first)."""
    tmux.open("a", srv, "undo", "alice", cols=120, rows=40)
    tmux.wait("a", "you are alice")
    reset = "echo b0 > b.txt && echo c0 > c.txt"
    assert ssh_run(srv, "undo", reset)[0] == 0
    model_server.script(
        Reply("First.", tool_calls=[ToolCall("bash", {"command":
              "echo one > a.txt && echo b1 > b.txt && rm c.txt"})]),
        Reply("Changed."))
    tmux.keys("a", "@agent change the files", "Enter")
    tmux.wait("a", lambda s: s.count("* agent done") == 1, history=True)
    assert files(ssh_run, srv) == "a.txt: one\nb.txt: b1\n"
    protocol_undo(ssh_run, srv)
    assert files(ssh_run, srv) == "b.txt: b0\nc.txt: c0\n"
    assert ssh_run(srv, "undo", reset)[0] == 0

    model_server.script(
        Reply("Second.", tool_calls=[ToolCall("bash", {"command":
              "echo two > a2.txt && echo b2 > b.txt && rm c.txt"})]),
        Reply("Changed again."))
    tmux.keys("a", "@agent change them again", "Enter")
    tmux.wait("a", lambda s: s.count("* agent done") == 2, history=True)
    second = files(ssh_run, srv)
    assert second == "a2.txt: two\nb.txt: b2\n"
    tmux.keys("a", "/undo", "Enter")
    tmux.wait("a", "y to undo")
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", lambda s: s.count("alice undid the agent's turn") == 2,
              history=True)
    assert files(ssh_run, srv) == "b.txt: b0\nc.txt: c0\n"

    tmux.keys("a", "/redo", "Enter")
    preview = tmux.wait("a", "y to redo").split("/redo would redo")[-1]
    assert preview.startswith(" the agent's turn 2:"), preview
    assert "brings back: a2.txt\n" in preview, preview
    assert "a.txt" not in preview, preview
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", "alice redid the agent's turn")
    assert files(ssh_run, srv) == second

    tmux.keys("a", "/redo", "Enter")
    tmux.wait("a", "there is nothing to redo")
    assert files(ssh_run, srv) == second


def agent_turn_then_bobs_command(tmux, model_server, srv, bobs_command,
                                 bob_rows=(80, 24)):
    """alice (120x35) and bob (80x24) in room undo; the agent's turn
    changes files, then bob runs bobs_command with !.  Returns the files
    before the turn."""
    tmux.open("a", srv, "undo", "alice", cols=120, rows=35)
    tmux.wait("a", "you are alice")
    tmux.keys("a", "!echo keep > keep; echo gone > gone", "Enter")
    tmux.wait("a", "* exit 0 after")
    before = files_of(srv)
    tmux.open("b", srv, "undo", "bob", cols=bob_rows[0], rows=bob_rows[1])
    tmux.wait("b", "you are bob")
    model_server.script(
        Reply("Changing.", tool_calls=[ToolCall("bash", {
            "command": "echo new > made && rm gone"})]),
        Reply("Changed."))
    tmux.keys("a", "@agent change the files", "Enter")
    settled(tmux, "a", "agent done")
    tmux.keys("b", "!" + bobs_command, "Enter")
    # bob's screen shows alice's command's end too
    tmux.wait("b", lambda s: s.count("* exit 0 after") == 2)
    return before


def files_of(srv):
    rc, out, err = _ssh_run(srv, "undo", "for f in *; do echo \"$f: "
                            "$(cat \"$f\")\"; done")
    assert rc == 0, err
    return out


def bell(tmux, name):
    """The window's bell flag (set by a bell, never cleared here)."""
    return tmux("display-message", "-p", "-t", name,
                "#{window_bell_flag}").stdout.strip() == "1"


def test_undo_of_bobs_work_asks_bob_and_his_no_cancels_it(
        srv, model_server, tmux):
    """alice's /undo would take back bob's new file: bob sees the preview
    in his own session and must agree; his n cancels it and everyone is
    told who refused; asked again, his y lets it happen."""
    before = agent_turn_then_bobs_command(tmux, model_server, srv,
                                          "echo b > bobs")
    changed = files_of(srv)
    # Their terminals show a bell as a terminal user's tmux would.
    for pane in ("a", "b"):
        tmux("set-option", "-t", pane, "bell-action", "any")
        tmux("set-window-option", "-t", pane, "monitor-bell", "on")
    tmux.keys("a", "/undo", "Enter")
    screen = tmux.wait("a", "y asks them to agree")
    assert "also takes back the changes of: bob" in screen
    assert "it takes back work of bob" in screen
    assert not bell(tmux, "b")
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", "waiting for bob to agree")
    screen = tmux.wait("b", "y to agree, n to refuse")
    # Asked, bob's terminal rings (the bell follows the drawn request);
    # alice's, who asked, does not.
    tmux.wait("b", lambda s: bell(tmux, "b"))
    assert not bell(tmux, "a")
    assert "alice asks you to agree to /undo the agent's turn" in screen
    assert "removes: bobs, made" in screen
    assert "brings back: gone" in screen
    assert files_of(srv) == changed               # nothing until he agrees

    tmux.keys("b", "n", "Enter")
    for pane in ("a", "b"):
        tmux.wait(pane, "the /undo was cancelled: bob refused")
    assert files_of(srv) == changed

    tmux.keys("a", "/undo", "Enter")
    tmux.wait("a", lambda s: s.count("y asks them to agree") == 2)
    tmux.keys("a", "y", "Enter")
    tmux.wait("b", lambda s: s.count("y to agree, n to refuse") == 2)
    tmux.keys("b", "y", "Enter")
    for pane in ("a", "b"):
        tmux.wait(pane, "as bob agreed")
        tmux.wait(pane, "alice undid the agent's turn")
    assert files_of(srv) == before


def test_owner_forces_an_undo_over_bobs_work_and_it_is_recorded(
        srv, model_server, tmux):
    """The owner's /undo ! acts without bob's yes, says so to both, and a
    new session of bob's replays it from the room's history."""
    before = agent_turn_then_bobs_command(tmux, model_server, srv,
                                          "echo b > bobs", bob_rows=(120, 35))
    tmux.keys("a", "/undo !", "Enter")
    screen = tmux.wait("a", "y to undo it anyway, over the work of bob")
    assert "also takes back the changes of: bob" in screen
    tmux.keys("a", "y", "Enter")
    forced = "alice undid the agent's turn 1, forced over the work of bob"
    tmux.wait("a", forced)
    tmux.wait("b", forced)
    assert files_of(srv) == before
    tmux("kill-session", "-t", "b")
    tmux.open("b", srv, "undo", "bob", cols=80, rows=24)
    tmux.wait("b", "forced over the work of", history=True)


def test_a_command_that_only_read_is_nobodys_work_to_ask_about(
        srv, model_server, tmux):
    """bob's !cat changed nothing: /undo and /redo neither name nor ask
    him."""
    before = agent_turn_then_bobs_command(tmux, model_server, srv,
                                          "cat made")
    changed = files_of(srv)
    tmux.keys("a", "/undo", "Enter")
    screen = tmux.wait("a", "y to undo, n to leave")
    preview = screen.split("/undo would undo")[1].split("y to undo")[0]
    assert "bob" not in preview, preview
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", "alice undid the agent's turn")
    assert files_of(srv) == before
    tmux.keys("b", "!cat keep", "Enter")
    tmux.wait("b", lambda s: s.count("* exit 0 after") == 3)
    tmux.keys("a", "/redo", "Enter")
    screen = tmux.wait("a", "y to redo, n to leave")
    preview = screen.split("/redo would redo")[1].split("y to redo")[0]
    assert "bob" not in preview, preview
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", "alice redid the agent's turn")
    assert files_of(srv) == changed
    assert "asks you" not in tmux.screen("b", history=True)


def alice_and_bob(tmux, srv, bob_size=(80, 24)):
    """alice (120x35) and bob in room undo, after alice's first files.
    Returns the files then."""
    tmux.open("a", srv, "undo", "alice", cols=120, rows=35)
    tmux.wait("a", "you are alice")
    tmux.keys("a", "!echo keep > keep; echo gone > gone", "Enter")
    tmux.wait("a", "* exit 0 after")
    tmux.open("b", srv, "undo", "bob", cols=bob_size[0], rows=bob_size[1])
    tmux.wait("b", "you are bob")
    return files_of(srv)


def undo_preview(tmux, times):
    """alice's /undo, the times-th: its preview, once shown whole."""
    tmux.keys("a", "/undo", "Enter")
    screen = tmux.wait("a", lambda s: s.count("/undo would undo") == times
                       and ("y to undo, n to leave" in s.split(
                           "/undo would undo")[-1] or "y asks them" in
                           s.split("/undo would undo")[-1]), history=True)
    return screen.split("/undo would undo")[-1].split("undo |")[0]


def undo_asks(tmux, who, times=1):
    """alice's /undo (the times-th): its preview must name who and ask
    them."""
    preview = undo_preview(tmux, times)
    assert who in names_after(preview, "also takes back the changes of: "), \
        preview
    assert who in names_after(preview, "it takes back work of ",
                              end=":"), preview
    return preview


def names_after(preview, head, end="\n"):
    """The names a preview's line lists after head ([] without it)."""
    if head not in preview:
        return []
    return preview.split(head, 1)[1].split(end, 1)[0].split(", ")


def test_undo_of_a_turn_bob_asked_for_asks_bob(srv, model_server, tmux):
    """The agent's turn that bob's @agent started is bob's work: alice's
    /undo of it names him and waits for his yes."""
    before = alice_and_bob(tmux, srv)
    model_server.script(
        Reply("Changing.", tool_calls=[ToolCall("bash", {
            "command": "echo new > made && rm gone"})]),
        Reply("Changed."))
    tmux.keys("b", "@agent change the files", "Enter")
    settled(tmux, "a", "agent done")
    changed = files_of(srv)
    undo_asks(tmux, "bob")
    tmux.keys("a", "y", "Enter")
    tmux.wait("b", "y to agree, n to refuse")
    assert files_of(srv) == changed
    tmux.keys("b", "y", "Enter")
    tmux.wait("a", "alice undid the agent's turn")
    assert files_of(srv) == before


def alices_turn(tmux, model_server):
    """alice's @agent turn makes made and removes gone."""
    model_server.script(
        Reply("Changing.", tool_calls=[ToolCall("bash", {
            "command": "echo new > made && rm gone"})]),
        Reply("Changed."))
    tmux.keys("a", "@agent change the files", "Enter")
    settled(tmux, "a", "agent done")


def test_keys_bob_typed_into_alices_terminal_are_his_work(
        srv, model_server, tmux):
    """alice opens /term; bob, attached too, types a command that makes a
    file: alice's /undo names bob (not only the terminal's opener)."""
    alice_and_bob(tmux, srv)
    alices_turn(tmux, model_server)
    for pane in ("a", "b"):
        tmux.keys(pane, "/term", "Enter")
        tmux.wait(pane, "Ctrl-] back to the chat")
    tmux.keys("b", "-l", "echo b > bobs && echo typed-$((6*7))")
    tmux.keys("b", "Enter")
    tmux.wait("a", lambda s: any(r.rstrip() == "typed-42"
                                 for r in s.split("\n")))
    tmux.keys("b", "-l", "exit")
    tmux.keys("b", "Enter")
    for pane in ("a", "b"):
        tmux.wait(pane, "the room's terminal ended")
    assert "bobs: b" in files_of(srv)
    undo_asks(tmux, "bob")


def bobs(srv):
    """bob's ssh options for sftp, scp, sshfs, rsync and git."""
    return ["-i", srv.keys["bob"]] + SSH_OPTS


def run_ok(argv, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                       **kw)
    assert p.returncode == 0, (argv, p.stdout, p.stderr)
    return p.stdout


def bob_sftp(srv, tmp_path, batch):
    run_ok(["sftp", "-P", str(srv.port), "-b", "-"] + bobs(srv) +
           ["undo@127.0.0.1"], input=batch, cwd=str(tmp_path))


def bob_sshfs(srv, mnt):
    os.makedirs(mnt, exist_ok=True)
    run_ok(["sshfs", "-p", str(srv.port), "-o", "IdentityFile=" +
            srv.keys["bob"]] + sum((["-o", o] for o in SSH_OPTS[1::2]), [])
           + ["undo@127.0.0.1:", mnt])


def bob_writes(how, srv, tmp_path):
    """bob changes the workspace through how, a way other than the chat."""
    local = tmp_path / "up"
    local.write_text("uploaded\n")
    port, dest = str(srv.port), "undo@127.0.0.1:"
    if how == "sftp":
        bob_sftp(srv, tmp_path, "put up bobs\n")
    elif how == "scp":
        run_ok(["scp", "-q", "-P", port] + bobs(srv) + [str(local),
               dest + "bobs"])
    elif how == "scp-legacy":
        run_ok(["scp", "-q", "-O", "-P", port] + bobs(srv) + [str(local),
               dest + "bobs"])
    elif how == "sshfs":
        mnt = str(tmp_path / "mnt")
        bob_sshfs(srv, mnt)
        try:
            with open(os.path.join(mnt, "bobs"), "w") as f:
                f.write("uploaded\n")
        finally:
            run_ok(["fusermount3", "-u", mnt])
    elif how == "rsync":
        run_ok(["rsync", "-e", " ".join(["ssh", "-p", port] + bobs(srv)),
                str(local), dest + "bobs"])
    elif how == "git":
        repo = tmp_path / "repo"
        env = dict(os.environ, GIT_SSH_COMMAND=" ".join(["ssh"] + bobs(srv)),
                   GIT_AUTHOR_NAME="bob", GIT_AUTHOR_EMAIL="bob@example",
                   GIT_COMMITTER_NAME="bob", GIT_COMMITTER_EMAIL="b@example")
        run_ok(["git", "init", "-q", str(repo)], env=env)
        (repo / "bobs").write_text("committed\n")
        run_ok(["git", "-C", str(repo), "add", "bobs"], env=env)
        run_ok(["git", "-C", str(repo), "commit", "-qm", "bob's"], env=env)
        run_ok(["git", "-C", str(repo), "push", "-q", "ssh://undo@127.0.0.1:"
                + port + "/workspace/bare.git", "HEAD:main"], env=env)


def undo_leaves_out(tmux, who, times):
    """alice's /undo (the times-th): its preview must not name who; n
    leaves the workspace as it is."""
    preview = undo_preview(tmux, times)
    assert who not in preview, preview
    tmux.keys("a", "n", "Enter")
    tmux.wait("a", lambda s: s.count("nothing was changed") == times,
              history=True)


def bob_opens_sftp(tmux, srv, tmp_path):
    """bob's interactive sftp in pane s, in tmp_path."""
    tmux("new-session", "-d", "-s", "s", "-x", "100", "-y", "30", "-c",
         str(tmp_path), " ".join(["sftp", "-P", str(srv.port)] + bobs(srv) +
                                 ["undo@127.0.0.1"]))
    tmux.wait("s", "sftp>")


@pytest.mark.parametrize("how", ["sftp", "scp", "scp-legacy", "sshfs",
                                 "rsync", "git"])
def test_an_open_sftp_session_that_read_is_nobodys_until_bob_writes(
        srv, model_server, tmux, tmp_path, how):
    """bob's interactive sftp stays open while the agent's turn writes and
    while he only downloads: alice's /undo does not name him.  Once he
    changes the workspace, through that session (sftp's put) or another
    way (scp, legacy scp, an sshfs mount, rsync, git push), it does."""
    alice_and_bob(tmux, srv)
    if how == "git":
        assert _ssh_run(srv, "undo", "git init -q --bare bare.git")[0] == 0
    bob_opens_sftp(tmux, srv, tmp_path)
    alices_turn(tmux, model_server)
    tmux.keys("s", "get made got", "Enter")
    tmux.wait("s", lambda s: s.count("sftp>") == 2)
    assert (tmp_path / "got").read_text() == "new\n"
    undo_leaves_out(tmux, "bob", 1)
    if how == "sftp":
        (tmp_path / "up").write_text("uploaded\n")
        tmux.keys("s", "put up bobs", "Enter")
        tmux.wait("s", lambda s: s.count("sftp>") == 3)
    else:
        bob_writes(how, srv, tmp_path)
    if how == "git":
        assert "bob's" in _ssh_run(srv, "undo",
                                    "git -C bare.git log main")[1]
    else:
        assert "bobs: " in files_of(srv)
    undo_asks(tmux, "bob", times=2)


def test_an_sshfs_mount_that_wrote_before_the_turn_and_then_read_is_not_asked(
        srv, model_server, tmux, tmp_path):
    """bob's sshfs mount writes a file before the agent's turn, stays
    mounted while the turn writes, then only reads and is unmounted:
    alice's /undo of the turn takes none of his work back and does not
    name him."""
    alice_and_bob(tmux, srv)
    mnt = str(tmp_path / "mnt")
    bob_sshfs(srv, mnt)
    try:
        with open(os.path.join(mnt, "early"), "w") as f:
            f.write("before the turn\n")
        assert "early: before the turn" in files_of(srv)
        alices_turn(tmux, model_server)
        with open(os.path.join(mnt, "made")) as f:
            assert f.read() == "new\n"
    finally:
        run_ok(["fusermount3", "-u", mnt])
    undo_leaves_out(tmux, "bob", 1)
