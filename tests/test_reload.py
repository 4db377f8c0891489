"""SIGHUP (systemctl reload): atriumd reads atrium.conf again, applies what
a room reads at its start to rooms started from then on and a new API key
to running rooms too, says in its log what it applied and what needs a
restart, and drops no connected session.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_reload.py
"""
import os
import signal
import time

import pytest

from conftest import make_room
from test_e2e import Room, of_type

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")


def wait_log(srv, text, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if text in srv.read_log():
            return
        time.sleep(0.05)
    raise AssertionError("no %r in the log:\n%s" % (text, srv.read_log()))


def write_conf(data_dir, text):
    with open(os.path.join(str(data_dir), "atrium.conf"), "w") as f:
        f.write(text)


def test_sighup_applies_a_new_api_key_and_keeps_sessions(
        atriumd, data_dir, model_server, tmp_path):
    model_server.api_key = "sk-after-reload"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    srv = atriumd(data_dir, "--provider", "anthropic", "--model-url",
                  model_server.url, "--model", "test-model", env=env)
    wait_log(srv, "NO API key configured")
    make_room(srv, "kept")
    kept = Room(srv, "kept")
    try:
        kept.expect(of_type("welcome"))
        key = tmp_path / "key"
        key.write_text("sk-after-reload\n")
        os.chmod(key, 0o600)
        write_conf(data_dir, "api-key-file = %s\nper-source-rate = 77\n" % key)
        srv.proc.send_signal(signal.SIGHUP)
        wait_log(srv, "reload applied, for rooms started from now on "
                 "(running rooms keep theirs until they stop): "
                 "api-key-file")
        wait_log(srv, "reload applied: a new API key, for every room from "
                 "its next model request")
        wait_log(srv, "room kept: new API key sent to its agent")
        wait_log(srv, "needs a restart of atriumd, so not applied: "
                 "per-source-rate")
        wait_log(srv, "model test-model (anthropic) at %s; API key "
                 "configured" % model_server.url)
        assert "sk-after-reload" not in srv.read_log()
        # The session from before the reload still talks to its room, and
        # its running agent uses the new key at once.
        kept.send(type="chat", text="still here")
        kept.expect(of_type("message", text="still here"))
        kept.send(type="prompt", text="hello from before")
        kept.until_turn_end()
        got = model_server.wait_requests(1)
        assert got[-1]["headers"]["x-api-key"] == "sk-after-reload"
        # A room started after it sends the new key to the model.
        make_room(srv, "fresh")
        fresh = Room(srv, "fresh")
        try:
            fresh.expect(of_type("welcome"))
            fresh.send(type="prompt", text="hello")
            fresh.until_turn_end()
            got = model_server.wait_requests(2)
            assert got[-1]["headers"]["x-api-key"] == "sk-after-reload"
        finally:
            fresh.close()
        # A file that does not parse changes nothing, and stops nothing.
        write_conf(data_dir, "this is not a setting\n")
        srv.proc.send_signal(signal.SIGHUP)
        wait_log(srv, "nothing changed")
        kept.send(type="chat", text="after a bad reload")
        kept.expect(of_type("message", text="after a bad reload"))
        assert srv.proc.poll() is None
    finally:
        kept.close()
