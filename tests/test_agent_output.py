"""A bash call's output beyond what the model is sent (the first and last
32 KiB): the model and the room get the head, the tail, a note of what was
cut and where the whole output is saved in the workspace
(/workspace/.atrium/output/), written the way the file tools write
(beneath the workspace, as the room's uid, within its quota); the newest
20 such files are kept; a save that cannot be made is said in the note and
the turn goes on.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_agent_output.py
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from conftest import make_room  # noqa: E402
from test_agent import fast, pytestmark, room  # noqa: E402,F401
from test_e2e import Room as Session, of_type  # noqa: E402

SEQ = "seq 1 40000"
SEQ_OUT = "".join("%d\n" % i for i in range(1, 40001))
SAVED = re.compile(r"\[the whole output \((\d+) bytes\) is saved in "
                   r"(/workspace/\.atrium/output/bash-[0-9-]+-[\w-]+\.txt)\]")


def run_tool(c, command):
    """Ask the agent to run command; its tool_result."""
    c.send({"type": "prompt", "text": "run: " + command})
    evs = c.collect("turn_end", timeout=60)
    return [e for e in evs if e["type"] == "tool_result"][0]


def test_long_output_saved_over_ssh(atriumd, data_dir, model_server, ssh_run):
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test-output")
    srv = atriumd(data_dir, "--provider", "anthropic", "--model-url",
                  model_server.url, "--model", "test-model",
                  "--approval", "allow_all", env=env)
    make_room(srv, "demo")
    s = Session(srv, "demo")
    try:
        s.expect(of_type("welcome"))
        s.send(type="prompt", text="run: " + SEQ)
        res = s.expect(of_type("tool_result"), timeout=60)
        s.until_turn_end()
    finally:
        s.close()
    out = res["output"]
    assert out.startswith("1\n2\n3\n") and "\n40000\n" in out
    assert "bytes of output cut here" in out
    m = SAVED.search(out)
    assert m and int(m.group(1)) == len(SEQ_OUT), out[-300:]
    # The model got the same note.
    sent = json.dumps(model_server.requests[1]["body"]["messages"])
    assert m.group(2) in sent
    # Anyone in the room reads the whole output there, owned by the room.
    rc, got, err = ssh_run(srv, "demo", "cat " + m.group(2))
    assert rc == 0 and got == SEQ_OUT
    rc, owner, err = ssh_run(srv, "demo", "stat -c %u " + m.group(2))
    with open(os.path.join(str(data_dir), "rooms", "demo", "uid")) as f:
        assert owner.strip() == f.read().split(":")[0]


def test_save_beyond_the_quota_is_said_and_the_turn_goes_on(
        atriumd, data_dir, model_server, ssh_run):
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test-output")
    srv = atriumd(data_dir, "--provider", "anthropic", "--model-url",
                  model_server.url, "--model", "test-model", "--quota", "1M",
                  "--approval", "allow_all",
                  env=env)
    make_room(srv, "demo")
    s = Session(srv, "demo")
    try:
        s.expect(of_type("welcome"))
        s.send(type="prompt", text="run: head -c 3000000 /dev/zero | tr "
               "'\\0' x")
        res = s.expect(of_type("tool_result"), timeout=60)
        end = s.until_turn_end()
    finally:
        s.close()
    assert res["status"] == "ok"
    assert ("[the whole output (3000000 bytes) could not be saved in the "
            "workspace: the workspace is full (its quota)]") in res["output"]
    assert end["stop_reason"] == "end_turn"
    rc, got, err = ssh_run(srv, "demo", "ls -A .atrium/output | wc -l")
    assert (rc, got) == (0, "0\n")


def test_only_the_newest_files_are_kept(room, model):
    out_dir = os.path.join(room.workspace, ".atrium", "output")
    os.makedirs(out_dir)
    for d in (out_dir, os.path.dirname(out_dir)):
        os.chmod(d, 0o777)  # the room's uid writes here, as in a room
    old = ["bash-20200101-000000-%03d-x.txt" % i for i in range(25)]
    for name in old:
        with open(os.path.join(out_dir, name), "w") as f:
            f.write("old\n")
    with open(os.path.join(out_dir, "notes.txt"), "w") as f:
        f.write("not ours\n")
    room.start("--model-url", model.url, "--approval", "allow_all", *fast())
    c = room.connect()
    res = run_tool(c, SEQ)
    m = SAVED.search(res["output"])
    assert m, res["output"][-300:]
    names = sorted(os.listdir(out_dir))
    assert os.path.basename(m.group(2)) in names
    assert "notes.txt" in names
    ours = [n for n in names if n.startswith("bash-")]
    assert len(ours) == 20 and ours[:19] == old[-19:]


def test_a_symlink_out_of_the_workspace_saves_nothing(room, model, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(outside, 0o777)
    os.symlink(str(outside), os.path.join(room.workspace, ".atrium"))
    room.start("--model-url", model.url, "--approval", "allow_all", *fast())
    c = room.connect()
    res = run_tool(c, SEQ)
    assert res["status"] == "ok"
    assert "could not be saved in the workspace" in res["output"]
    assert os.listdir(str(outside)) == []


def test_short_output_saves_nothing(room, model):
    room.start("--model-url", model.url, "--approval", "allow_all", *fast())
    c = room.connect()
    res = run_tool(c, "seq 1 1000")
    assert "saved" not in res["output"]
    assert not os.path.exists(os.path.join(room.workspace, ".atrium"))
