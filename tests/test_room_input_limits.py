"""room.db's cap and the per-user rate, as a member flooding the chat
would meet them (agent/input_limits.c)."""
import os
import time

from test_agent import fast, room  # noqa: F401

KiB = 1 << 10
MiB = 1 << 20


def answers(c, n, timeout=30):
    """The next n answers to chat lines: message or error events."""
    out = []
    end = time.monotonic() + timeout
    while len(out) < n:
        while c.events and len(out) < n:
            ev = c.events.pop(0)
            if ev.get("type") in ("message", "error"):
                out.append(ev)
        assert time.monotonic() < end, out[-5:]
        if len(out) < n:
            c._read(0.2)
    return out


def db_bytes(room):
    return sum(os.path.getsize(os.path.join(room.room_dir, f))
               for f in ("room.db", "room.db-wal")
               if os.path.exists(os.path.join(room.room_dir, f)))


def test_chat_lines_are_refused_at_the_room_db_cap(room, model):
    room.start("--model-url", model.url, "--room-db-quota", "1M", *fast())
    c = room.connect()
    got = []
    for i in range(3):                       # slower than the rate
        for _ in range(10):
            c.send({"type": "chat", "text": "x" * (60 * KiB)})
        got += answers(c, 10)
        time.sleep(5)                        # the bucket refills
    errors = [e["message"] for e in got if e["type"] == "error"]
    kept = [e for e in got if e["type"] == "message"]
    assert errors and all("room.db) is full" in m and "1.0 MiB" in m
                          for m in errors), errors
    assert 10 <= len(kept) < 25
    # room.db stays near its cap, its WAL counted: the WAL is cut back
    # to an eighth of the cap when it starts over, so at most that and
    # the frames of the checkpoint's last commits remain
    assert db_bytes(room) < 4 * MiB
    wal = os.path.join(room.room_dir, "room.db-wal")
    assert os.path.getsize(wal) < 1 * MiB
    # a full room.db still runs a person's own command (it stores only
    # its audit row: rm must work), not a shared one (its output is kept)
    time.sleep(1)                            # a request's worth of refill
    x = room.connect(kind="exec")
    x.send({"type": "exec", "id": "own", "command": "echo ran"})
    r = x.wait("exec_result", id="own", timeout=60)
    x.close()
    assert r["exitCode"] == 0 and r["stdout"] == "ran\n", r
    time.sleep(1)
    x = room.connect(kind="exec")
    x.send({"type": "exec", "id": "shared", "share": True,
            "command": "echo shared"})
    err = x.wait("error", id="shared", timeout=60)
    x.close()
    assert "room.db) is full" in err["message"], err


def test_a_flood_of_chat_lines_is_refused_with_when_to_retry(room, model):
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    for i in range(50):
        c.send({"type": "chat", "text": "line %d" % i})
    got = answers(c, 50)
    refused = [e["message"] for e in got if e["type"] == "error"]
    assert len(refused) >= 15, refused
    assert "try again in" in refused[0] and "30 requests" in refused[0]


def test_an_oversized_chat_line_is_refused_with_its_size(room, model):
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    c.send({"type": "chat", "text": "y" * (65 * KiB)})
    m = c.wait("error")["message"]
    assert str(65 * KiB) in m and "65536" in m


def test_shared_commands_sent_together_stay_under_the_cap(room, model):
    """Six shared commands, each able to store 1 MiB of result, sent at
    once to a room.db capped at 4 MiB: what each may store is promised
    when it is admitted and counted until its result is stored, so those
    that would pass the cap together are refused, and room.db stays
    under its cap once all have ended (before, all six ran and stored
    5.4 MB)."""
    room.start("--model-url", model.url, "--room-db-quota", "4M", *fast())
    c = room.connect()                       # sees the shared results
    x0 = room.connect(kind="exec")           # asks, and hears refusals
    cmd = "head -c 900000 /dev/zero | tr '\\0' x"
    ids = ["s%d" % i for i in range(6)]
    for i in ids:
        x0.send({"type": "exec", "id": i, "share": True, "command": cmd})
    ended, refused = [], []
    end = time.monotonic() + 120
    while len(ended) + len(refused) < len(ids):
        for conn, kind, into in ((c, "exec_result", ended),
                                 (x0, "error", refused)):
            into += [e for e in conn.events
                     if e.get("id") in ids and e["type"] == kind]
            conn.events = [e for e in conn.events
                           if not (e.get("id") in ids and e["type"] == kind)]
        assert time.monotonic() < end, (len(ended), refused)
        if len(ended) + len(refused) < len(ids):
            c._read(0.1)
            x0._read(0.1)
    assert refused and all("room.db) is full" in e["message"]
                           for e in refused), refused
    assert all(len(e["stdout"]) == 900000 for e in ended)
    assert 1 <= len(ended) <= 3, len(ended)
    assert db_bytes(room) < 4 * MiB
