"""atrium-agent's token usage, its cost and its caps, driven directly on its
unix socket with a scripted model server, a real sandbox and a real
room.db: usage rows per turn, per person and per model; the `usage` event
with today, this month, the breakdowns and the cost from the operator's
price table; the step cap (--max-steps) and the daily token cap
(--max-tokens-per-day), which the room's owner may lower, never raise.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_cost.py
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from conftest import make_room  # noqa: E402
from model_server import ModelServer, Reply, ToolCall  # noqa: E402

# The agent and its socket, as test_agent.py drives them.
from test_agent import fast, pytestmark, room  # noqa: E402,F401


def ask(c, text, user="alice"):
    """Send a prompt as user; the events of its turn, up to its turn_end
    (what the connection saw of earlier turns is skipped)."""
    c.send({"type": "prompt", "text": text})
    start = c.wait("turn_start", timeout=30, user=user)
    return c.collect("turn_end", timeout=30, turn=start["turn"])


def test_usage_recorded_per_turn_user_and_model(room, model):
    model.script(Reply("one", usage=(100, 10)), Reply("two", usage=(200, 20)),
                 Reply("three", usage=(7, 3)))
    room.start("--model-url", model.url, "--model", "m-priced",
               "--prices", "m-priced=3/15, other=1/2", *fast())
    alice = room.connect()
    bob = room.connect("bob", may_create=False)
    ask(alice, "first")
    ask(alice, "second")
    end = ask(bob, "third", "bob")[-1]
    assert end["usage"] == {"input_tokens": 7, "output_tokens": 3}
    with room.db() as db:
        turns = db.execute("SELECT user, input_tokens, output_tokens FROM"
                           " turns ORDER BY id").fetchall()
        users = db.execute("SELECT user, model, input_tokens, output_tokens,"
                           " requests FROM usage_users ORDER BY user")
        users = users.fetchall()
    assert turns == [("alice", 100, 10), ("alice", 200, 20), ("bob", 7, 3)]
    assert users == [("alice", "m-priced", 300, 30, 2),
                     ("bob", "m-priced", 7, 3, 1)]
    bob.send({"type": "usage"})
    ev = bob.wait("usage")
    # Today's totals stay where they were, for older clients.
    assert (ev["input_tokens"], ev["output_tokens"]) == (307, 33)
    today, month = ev["today"], ev["this_month"]
    assert ev["month"] == ev["day"][:7]
    for p in (today, month):
        assert (p["input_tokens"], p["output_tokens"], p["requests"]) == \
            (307, 33, 3)
        assert p["models"][0]["model"] == "m-priced"
        # 307 * $3 + 33 * $15 per million tokens.
        assert abs(p["cost"] - (307 * 3 + 33 * 15) / 1e6) < 1e-9
        assert [(u["user"], u["input_tokens"], u["output_tokens"])
                for u in p["users"]] == [("alice", 300, 30), ("bob", 7, 3)]
    assert ev["max_steps"] == 50 and ev["max_tokens_per_day"] is None


def test_no_cost_without_a_price(room, model):
    model.script(Reply("one", usage=(10, 1)))
    room.start("--model-url", model.url, "--model", "m-free",
               "--prices", "m-priced=3/15", *fast())
    c = room.connect()
    ask(c, "hi")
    c.send({"type": "usage"})
    ev = c.wait("usage")
    assert "cost" not in ev["today"]
    assert "cost" not in ev["today"]["models"][0]
    assert ev["today"]["input_tokens"] == 10


def test_step_cap_stops_a_model_that_calls_tools_forever(room):
    calls = [Reply("again", [ToolCall("bash", {"command": "true"})])
             for _ in range(10)]
    with ModelServer() as srv:
        srv.script(*calls)
        room.start("--model-url", srv.url, "--max-steps", "3",
                   "--approval", "allow_all", *fast())
        c = room.connect()
        evs = ask(c, "loop")
        assert evs[-1]["stop_reason"] == "max_steps"
        assert len(srv.requests) == 3
        said = [e["text"] for e in evs if e["type"] == "message" and
                e.get("user") == "agent"]
        assert "I stopped after 3 model requests in this turn" in said[-1]
        assert len([e for e in evs if e["type"] == "tool_result"]) == 3
    with room.db() as db:
        row = db.execute("SELECT stop_reason, steps FROM turns").fetchone()
        stored = db.execute("SELECT json FROM events WHERE type = 'message'"
                            " AND json LIKE '%I stopped after 3%'").fetchall()
    assert row == ("max_steps", 3)
    assert len(stored) == 1


def test_owner_lowers_caps_never_raises(room, model):
    room.start("--model-url", model.url, "--max-steps", "5",
               "--max-tokens-per-day", "1000", *fast())
    owner = room.connect()
    bob = room.connect("bob", may_create=False)
    bob.send({"type": "caps", "max_steps": 2})
    assert "owner" in bob.wait("error")["message"]
    owner.send({"type": "caps", "max_steps": 9})
    err = owner.wait("error")["message"]
    assert "above this room's maximum of 5" in err
    owner.send({"type": "caps", "max_steps": 2, "max_tokens_per_day": "50"})
    ev = bob.wait("caps")
    assert (ev["max_steps"], ev["max_tokens_per_day"], ev["by"]) == \
        (2, 50, "alice")
    # Kept across a restart.
    room.cleanup()
    room.procs, room.clients = [], []
    room.start()
    c = room.connect()
    c.send({"type": "caps"})
    ev = c.wait("caps")
    assert (ev["max_steps"], ev["max_tokens_per_day"]) == (2, 50)
    assert ev["max"] == {"max_steps": 5, "max_tokens_per_day": 1000}
    c.send({"type": "caps", "max_steps": "max"})
    assert c.wait("caps")["max_steps"] == 5


def test_daily_token_cap_refuses_the_next_prompt(room, model):
    model.script(Reply("big", usage=(900, 200)), Reply("never"))
    room.start("--model-url", model.url, "--max-tokens-per-day", "1000",
               *fast())
    c = room.connect()
    first = ask(c, "first")
    assert first[-1]["stop_reason"] == "end_turn"
    evs = ask(c, "second")
    assert evs[-1]["stop_reason"] == "max_tokens_per_day"
    said = [e["text"] for e in evs if e["type"] == "message" and
            e.get("user") == "agent"]
    assert said == ["This room has used its 1000 tokens for today (UTC), "
                    "the most it allows; I can work again after midnight "
                    "UTC, or when the owner or the operator raises the cap."]
    assert len(model.requests) == 1
    assert model.pending() == 1


def test_caps_and_prices_from_atrium_conf_and_flags(atriumd, data_dir,
                                                     model_server):
    from test_e2e import Room as Session, of_type
    with open(os.path.join(str(data_dir), "atrium.conf"), "w") as f:
        f.write("max_steps = 7\nmax-tokens-per-day = 5000\n"
                "prices = test-model=2/8\n")
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test-cost")
    # A flag overrides the file.
    srv = atriumd(data_dir, "--provider", "anthropic", "--model-url",
                  model_server.url, "--model", "test-model",
                  "--max-steps", "6", env=env)
    model_server.script(Reply("hi", usage=(1000, 100)))
    make_room(srv, "demo")
    s = Session(srv, "demo")
    try:
        s.expect(of_type("welcome"))
        s.send(type="prompt", text="hello")
        s.until_turn_end()
        s.send(type="usage")
        ev = s.expect(of_type("usage"))
        s.send(type="caps")
        caps = s.expect(of_type("caps"))
    finally:
        s.close()
    assert (ev["max_steps"], ev["max_tokens_per_day"]) == (6, 5000)
    assert abs(ev["today"]["cost"] - (1000 * 2 + 100 * 8) / 1e6) < 1e-9
    assert caps["max"] == {"max_steps": 6, "max_tokens_per_day": 5000}


# --- a malformed price table stops the start, it is not "unpriced" ------------

BAD_PRICES = "m-priced=3/15, other=1-2"


def _refused(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    assert p.returncode == 2
    assert 'prices: entry "other=1-2" is not MODEL=IN/OUT' in p.stderr
    assert "dollars per million input and output tokens" in p.stderr


def test_atriumd_refuses_a_malformed_price_flag(build, data_dir):
    from conftest import free_port
    _refused([os.path.join(build, "atriumd"), "--data", str(data_dir),
              "--listen", "127.0.0.1:%d" % free_port(),
              "--prices", BAD_PRICES])


def test_atriumd_refuses_a_malformed_price_in_atrium_conf(build, data_dir):
    from conftest import free_port
    with open(os.path.join(str(data_dir), "atrium.conf"), "w") as f:
        f.write("prices = %s\n" % BAD_PRICES)
    _refused([os.path.join(build, "atriumd"), "--data", str(data_dir),
              "--listen", "127.0.0.1:%d" % free_port()])


def test_agent_refuses_a_malformed_price_table(room):
    from test_agent import AGENT, BIN_DIR
    _refused([AGENT, "--room-dir", room.room_dir, "--run-dir", room.run_dir,
              "--bin-dir", BIN_DIR, "--model-url", "http://127.0.0.1:9",
              "--prices", BAD_PRICES])
