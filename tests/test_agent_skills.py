"""Skills: from the room's config and from the workspace's
.atrium/skills/NAME/SKILL.md files, listed by name and description in the
system prompt, loaded whole by the `skill` tool; a SKILL.md that leads out
of the workspace is never read.  Seeding is in test_agent_seed.py.

Real parts: atrium-agent, its sandbox uid's confined reads (openat2
RESOLVE_BENEATH), atrium-fs where named, and the scripted model server.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_skills.py
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_server import Reply, ToolCall  # noqa: E402
from test_agent import (fast, pytestmark, room,  # noqa: E402,F401
                        tool_results_in)
from test_agent_security import (SECRET, host_secret,  # noqa: E402
                                 prompt_and_wait, sent_anywhere)

DEPLOY = """---
name: deploy
description: "How to ship this project to production"
---
DEPLOY-BODY: run make release, then tag it.
"""


def write_skill(room, directory, text):
    d = os.path.join(room.workspace, ".atrium", "skills", directory)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "SKILL.md"), "w") as f:
        f.write(text)
    return d


def set_skills(room, skills, user="alice"):
    c = room.connect(user)
    c.send({"type": "config", "skills": skills})
    ev = c.wait("config")
    c.close()
    room.clients.remove(c)
    return ev


def skill_call(model, name):
    model.script(Reply("Loading.", tool_calls=[ToolCall("skill",
                                                        {"name": name})]),
                 Reply("Done."))


@pytest.mark.parametrize("mounted", [False, True])
def test_skills_listed_and_loaded(room, model, mounted):
    def scenario():
        write_skill(room, "shipping", DEPLOY)
        write_skill(room, "lint", "LINT-BODY: run make lint first\n")
        room.start("--model-url", model.url, "--approval", "allow_all",
               *fast())
        ev = set_skills(room, [{"name": "review", "description":
                                "Reviewing a change", "body":
                                "REVIEW-BODY: read the diff twice"}])
        assert ev["skills"] == ["review"] and "skills" in ev["changed"]
        skill_call(model, "deploy")
        evs = prompt_and_wait(room, "ship it")
        assert evs[-1]["stop_reason"] == "end_turn"
        system = model.requests[0]["body"]["system"]
        # Names and descriptions are listed; bodies are not.
        assert "- review: Reviewing a change" in system
        assert "- deploy: How to ship this project to production" in system
        assert "- lint\n" in system      # named by its directory
        assert "shipping" not in system  # front matter's name wins
        assert "BODY" not in system
        tools = [t["name"] for t in model.requests[0]["body"]["tools"]]
        assert "skill" in tools
        res = [e for e in evs if e["type"] == "tool_result"][0]
        assert res["status"] == "ok"
        assert res["output"] == "DEPLOY-BODY: run make release, then " \
            "tag it.\n"
        assert tool_results_in(model.requests[1]["body"]) == [res["output"]]
        # The config's skill too, and an unknown name is an error.
        skill_call(model, "review")
        evs = prompt_and_wait(room, "review it")
        res = [e for e in evs if e["type"] == "tool_result"][0]
        assert res["output"] == "REVIEW-BODY: read the diff twice"
        skill_call(model, "nope")
        evs = prompt_and_wait(room, "what")
        res = [e for e in evs if e["type"] == "tool_result"][0]
        assert res["status"] == "error"
        assert 'no skill called "nope"' in res["output"]

    if mounted:
        with room.on_atrium_fs():
            scenario()
    else:
        scenario()


def test_skill_files_are_read_at_each_turn(room, model):
    room.start("--model-url", model.url, "--approval", "allow_all",
               *fast())
    prompt_and_wait(room)
    assert "Skills:" not in model.requests[-1]["body"]["system"]
    # A room without skills is not offered the tool.
    assert "skill" not in [t["name"] for t in
                           model.requests[-1]["body"]["tools"]]
    write_skill(room, "late", "---\ndescription: Added later\n---\nx\n")
    prompt_and_wait(room)
    assert "- late: Added later" in model.requests[-1]["body"]["system"]


@pytest.mark.parametrize("link", ["file", "directory", "dotdot"])
def test_symlinked_skill_out_of_workspace_is_not_read(room, model, link):
    secret = host_secret(room)
    skills = os.path.join(room.workspace, ".atrium", "skills")
    os.makedirs(skills)
    if link == "directory":
        os.symlink(os.path.dirname(secret), os.path.join(skills, "evil"))
        os.rename(secret, os.path.join(os.path.dirname(secret), "SKILL.md"))
    else:
        os.makedirs(os.path.join(skills, "evil"))
        target = secret if link == "file" else os.path.relpath(
            secret, os.path.join(skills, "evil"))
        os.symlink(target, os.path.join(skills, "evil", "SKILL.md"))
    for path in ("/etc/shadow", "/etc/passwd"):
        d = os.path.join(skills, "host" + os.path.basename(path))
        os.makedirs(d)
        os.symlink(path, os.path.join(d, "SKILL.md"))
    write_skill(room, "good", "GOOD-BODY\n")
    room.start("--model-url", model.url, "--approval", "allow_all",
               *fast())
    skill_call(model, "evil")
    evs = prompt_and_wait(room)
    system = model.requests[0]["body"]["system"]
    assert "- good" in system
    assert "evil" not in system and "hostshadow" not in system
    assert not sent_anywhere(model, SECRET)
    assert not sent_anywhere(model, "root:")
    res = [e for e in evs if e["type"] == "tool_result"][0]
    assert res["status"] == "error" and SECRET not in res["output"]
    assert "it leads outside the workspace" in room.log_text()


def test_bad_config_skills_are_refused(room, model):
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    for skills, why in [
            ([{"name": "has space", "body": "x"}], "printable ASCII"),
            ([{"description": "no name", "body": "x"}], "printable ASCII"),
            ([{"name": "a"}], '"body" string'),
            ([{"name": "a", "body": "x"}, {"name": "a", "body": "y"}],
             "repeats the name"),
            ([{"name": "s%d" % i, "body": "x"} for i in range(33)],
             "at most 32"),
            ([{"name": "big", "body": "x" * (64 * 1024 + 1)}], "over 65536"),
            ("deploy", "must be an array")]:
        c.send({"type": "config", "skills": skills})
        assert why in c.wait("error")["message"]
    # A name from a body's front matter is enough; it is stored and kept.
    c.send({"type": "config", "skills": [{"body": DEPLOY}]})
    assert c.wait("config")["skills"] == ["deploy"]
    room.proc.terminate()
    room.proc.wait(10)
    room.start()
    prompt_and_wait(room)
    assert "- deploy: How to ship" in model.requests[-1]["body"]["system"]


def test_only_the_owner_sets_skills(room, model):
    room.start("--model-url", model.url, *fast())
    room.connect("alice")             # the first user owns the room
    b = room.connect("bob")
    b.send({"type": "config", "skills": [{"name": "x", "body": "BOB"}]})
    assert "only the room's owner (alice)" in b.wait("error")["message"]
    prompt_and_wait(room)
    assert "Skills:" not in model.requests[-1]["body"]["system"]
