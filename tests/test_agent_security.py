"""What the agent keeps apart: the host's files from the prompt (AGENTS.md
is read beneath the workspace with the sandbox uid's rights).

Real parts throughout: atrium-agent (directly, or started by atriumd), the
sandbox, atrium-fs where named, and scripted model servers that record
every request's headers and body.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_security.py
"""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_agent import (fast, model, pytestmark,  # noqa: E402,F401
                        room)

SECRET = "TOPSECRET-host-file-7c1e"


def sent_anywhere(srv, text):
    """True when text is in any request srv received (headers or body)."""
    for req in srv.requests:
        if text in json.dumps(req.get("body")) or \
                any(text in str(v) for v in dict(req["headers"]).values()):
            return True
    return False


def prompt_and_wait(room, text="hi"):
    c = room.connect()
    c.send({"type": "prompt", "text": text})
    evs = c.collect("turn_end", timeout=20)
    c.close()
    room.clients.remove(c)
    return evs


def host_secret(room):
    """A file outside the workspace that only root may read."""
    path = os.path.join(room.base, "secret.txt")
    with open(path, "w") as f:
        f.write(SECRET + "\n")
    os.chmod(path, 0o600)
    return path


# --- AGENTS.md is read through the confined path -----------------------------

@pytest.mark.parametrize("link", ["absolute", "dotdot", "mounted"])
def test_agents_md_symlink_out_of_workspace_is_not_sent(room, model, link):
    secret = host_secret(room)
    target = secret if link != "dotdot" else os.path.relpath(
        secret, room.workspace)

    def scenario():
        os.symlink(target, os.path.join(room.workspace, "AGENTS.md"))
        room.start("--model-url", model.url, *fast())
        evs = prompt_and_wait(room)
        assert evs[-1]["stop_reason"] == "end_turn"
        assert len(model.requests) == 1
        assert not sent_anywhere(model, SECRET)
        assert "AGENTS.md" not in model.requests[0]["body"]["system"]
        assert "AGENTS.md not put in the system prompt: it leads outside " \
            "the workspace" in room.log_text()

    if link == "mounted":
        with room.on_atrium_fs():
            scenario()
    else:
        scenario()


@pytest.mark.parametrize("mounted", [False, True])
def test_agents_md_file_and_inner_symlink_are_sent(room, model, mounted):
    def scenario():
        agents = os.path.join(room.workspace, "AGENTS.md")
        with open(agents, "w") as f:
            f.write("RULE-ONE: be brief\n")
        room.start("--model-url", model.url, *fast())
        prompt_and_wait(room)
        assert "RULE-ONE: be brief" in model.requests[-1]["body"]["system"]
        # A relative symlink that stays inside the workspace is followed.
        os.makedirs(os.path.join(room.workspace, "docs"))
        with open(os.path.join(room.workspace, "docs", "rules.md"),
                  "w") as f:
            f.write("RULE-TWO: from docs\n")
        os.unlink(agents)
        os.symlink("docs/rules.md", agents)
        prompt_and_wait(room)
        system = model.requests[-1]["body"]["system"]
        assert "RULE-TWO: from docs" in system
        assert "RULE-ONE" not in system

    if mounted:
        with room.on_atrium_fs():
            scenario()
    else:
        scenario()


def test_agents_md_unreadable_by_sandbox_uid_is_not_sent(room, model):
    """Read with the sandbox uid's rights, not root's."""
    agents = os.path.join(room.workspace, "AGENTS.md")
    with open(agents, "w") as f:
        f.write(SECRET + "\n")
    os.chmod(agents, 0o600)          # root's own file in the workspace
    room.start("--model-url", model.url, *fast())
    prompt_and_wait(room)
    assert not sent_anywhere(model, SECRET)
