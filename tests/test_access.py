"""Room access through the real OpenSSH client: owners, members, private
rooms, invite and kick, admins (atrium-admin), rooms= limits on creation,
the rooms listing, deletion, and what survives a restart.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_access.py
"""
import json
import os
import sqlite3
import subprocess
import time

import pytest

from conftest import _pids_using, make_room, ssh_command
from test_ssh import Lines, chat_plain, json_lines

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")


def add_key(data_dir, user, options=""):
    """A new key pair for user, listed in authorized_keys with options."""
    path = os.path.join(os.path.dirname(data_dir.keys["alice"]), "id_" + user)
    if not os.path.exists(path):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                        user + "@test", "-f", path], check=True)
    data_dir.keys[user] = path
    with open(os.path.join(str(data_dir), "authorized_keys"), "a") as f:
        f.write((options + " " if options else "") + data_dir.pubkey(user) + "\n")


def set_options(data_dir, user, options):
    """Rewrite user's line of authorized_keys with options."""
    path = os.path.join(str(data_dir), "authorized_keys")
    key = data_dir.pubkey(user)
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if key not in l]
    lines.append(options + " " + key)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def events(srv, room, *requests, user="alice", until=None, timeout=20):
    """Send requests on the atrium subsystem; the events seen until
    until(event) holds (then the session is closed)."""
    c = Lines(ssh_command(srv, room, "-s", "atrium", user=user))
    seen = []
    try:
        c.expect(lambda l: json.loads(l)["type"] == "welcome")
        for r in requests:
            c.send(json.dumps(r) + "\n")
        if until:
            c.expect(lambda l: seen.append(json.loads(l)) or until(seen[-1]),
                     timeout)
    finally:
        c.close()
    return seen


def access_change(change, **fields):
    return lambda e: (e["type"] == "access" and e.get("change") == change
                      and all(e.get(k) == v for k, v in fields.items()))


def make_private(srv, room, user="alice"):
    events(srv, room, {"type": "visibility", "visibility": "private"},
           user=user, until=access_change("visibility", visibility="private"))


def invite(srv, room, who, user="alice"):
    events(srv, room, {"type": "invite", "user": who}, user=user,
           until=access_change("invite", user=who))


def wait_log(srv, text, timeout=5):
    end = time.time() + timeout
    while time.time() < end and text not in srv.read_log():
        time.sleep(0.05)
    return srv.read_log()


REFUSED = "does not exist or you may not enter it"


def refused_private(rc, err, owner="alice"):
    """Refused as an outsider is: told neither that the room exists nor
    who owns it."""
    return rc == 1 and REFUSED in err and owner not in err


def sftp(srv, room, user, batch):
    p = subprocess.run(["sftp", "-P", str(srv.port), "-i", srv.keys[user],
                        "-o", "StrictHostKeyChecking=no",
                        "-o", "UserKnownHostsFile=/dev/null",
                        "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
                        "-b", "-", "%s@127.0.0.1" % room],
                       input=batch, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def listing(srv, user, room="anything"):
    """The rooms user may enter, by name, from the rooms subsystem."""
    p = subprocess.run(ssh_command(srv, room, "-s", "rooms", user=user),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    ev = json.loads(p.stdout)
    assert ev["type"] == "rooms"
    return {r["room"]: r for r in ev["rooms"]}


@pytest.fixture
def srv(atriumd, data_dir):
    return atriumd(data_dir)


def test_creator_owns_and_private_room_refuses_others_everywhere(srv, ssh_run):
    make_room(srv, "secret")
    rc, out, err = ssh_run(srv, "secret", "echo made")
    assert (rc, out) == (0, "made\n"), err
    welcome = json_lines(srv, "secret")
    w = json.loads(welcome.expect(lambda l: b"welcome" in l))
    welcome.close()
    assert (w["owner"], w["visibility"]) == ("alice", "open")
    rc, out, err = ssh_run(srv, "secret", "echo bob-in", user="bob")
    assert (rc, out) == (0, "bob-in\n"), err        # open: anyone enters
    make_private(srv, "secret")
    # exec
    rc, out, err = ssh_run(srv, "secret", "echo bob-in", user="bob")
    assert refused_private(rc, err) and out == "", err
    # sftp
    rc, out, err = sftp(srv, "secret", "bob", "ls\n")
    assert rc != 0 and REFUSED in err and "alice" not in err, err
    # the atrium subsystem
    rc, out, err = ssh_run(srv, "secret", "-s", "atrium", user="bob",
                           input='{"type":"chat","text":"hi"}\n')
    assert refused_private(rc, err) and out == "", err
    # the chat
    rc, out, err = ssh_run(srv, "secret", user="bob", opts=["-T"], input="hi\n")
    assert refused_private(rc, err), err
    log = wait_log(srv, "bob refused chat")
    for what in ("exec", "sftp", "the atrium subsystem", "chat"):
        assert "bob refused %s in room 'secret': private, owner alice" % what \
            in log, log
    # the owner still enters
    rc, out, err = ssh_run(srv, "secret", "echo alice-in")
    assert (rc, out) == (0, "alice-in\n"), err


def test_invite_lets_in_and_remove_ends_the_chat(srv, ssh_run):
    make_room(srv, "team")
    make_private(srv, "team")
    invite(srv, "team", "bob")
    rc, out, err = ssh_run(srv, "team", "echo bob-in", user="bob")
    assert (rc, out) == (0, "bob-in\n"), err
    b = chat_plain(srv, "team", "bob")
    try:
        b.expect(lambda l: b"you are bob" in l)
        seen = events(srv, "team", {"type": "remove", "user": "bob"},
                      until=access_change("remove", user="bob"))
        assert seen[-1]["members"] == [] and seen[-1]["by"] == "alice"
        b.proc.wait(15)
        assert b.proc.returncode == 1
        err = b.proc.stderr.read().decode()
        assert "alice removed you from room 'team'" in err, err
    finally:
        b.close()
    rc, out, err = ssh_run(srv, "team", "echo bob-in", user="bob")
    assert refused_private(rc, err), err


def test_kick_ends_a_running_command(srv, ssh_run):
    make_room(srv, "work")
    make_private(srv, "work")
    invite(srv, "work", "bob")
    p = subprocess.Popen(ssh_command(srv, "work", "echo started; sleep 60",
                                     user="bob"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline() == "started\n"
        events(srv, "work", {"type": "kick", "user": "bob"},
               until=access_change("kick", user="bob"))
        p.wait(15)
        assert p.returncode == 1
        assert "alice kicked you from room 'work'" in p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_kick_keeps_out_for_a_while_remove_takes_the_membership(srv,
                                                                 ssh_run):
    """As in IRC: a kick sends a person out and keeps them out for a
    while, their membership kept; /remove is the membership's end."""
    make_room(srv, "club")
    make_private(srv, "club")
    invite(srv, "club", "bob")
    b = chat_plain(srv, "club", "bob")
    try:
        b.expect(lambda l: b"you are bob" in l)
        # The reason reaches terminals: its control bytes do not.
        seen = events(srv, "club", {"type": "kick", "user": "bob",
                                    "reason": "spam\x1b[2J\x07 again"},
                      until=access_change("kick", user="bob"))
        assert seen[-1]["members"] == ["bob"], seen[-1]
        assert seen[-1]["seconds"] == 300 and seen[-1]["by"] == "alice"
        assert seen[-1]["reason"] == "spam[2J again", seen[-1]
        b.proc.wait(15)
        assert b.proc.returncode == 1
        err = b.proc.stderr.read().decode()
        assert "atrium: alice kicked you from room 'club' (spam[2J again); " \
            "you may come back in 5 minutes" in err, err
    finally:
        b.close()
    # Kept out, from every kind of session, while the kick lasts.
    rc, out, err = ssh_run(srv, "club", "echo bob-in", user="bob")
    assert rc != 0 and out == "" and "kicked you from room 'club'" in err \
        and "may come back in" in err, (rc, out, err)
    # Nobody of that name here: nothing to kick.
    seen = events(srv, "club", {"type": "kick", "user": "bob"},
                  until=lambda e: e["type"] == "error")
    assert "bob is not in this room; /remove takes a membership away" in \
        seen[-1]["message"], seen[-1]
    # The owner is never kicked.
    seen = events(srv, "club", {"type": "kick", "user": "alice"},
                  until=lambda e: e["type"] == "error")
    assert "alice owns this room and cannot be kicked" in \
        seen[-1]["message"], seen[-1]
    # remove ends the membership.
    seen = events(srv, "club", {"type": "remove", "user": "bob"},
                  until=access_change("remove", user="bob"))
    assert seen[-1]["members"] == [], seen[-1]
    seen = events(srv, "club", {"type": "remove", "user": "bob"},
                  until=lambda e: e["type"] == "error")
    assert "bob is not a member of this room" in seen[-1]["message"]
    rc, out, err = ssh_run(srv, "club", "echo alice-in")
    assert (rc, out) == (0, "alice-in\n"), err


def test_a_kick_ends_and_lets_back_in(srv, data_dir, ssh_run):
    """The kick is stored with its end: once past, the person comes back."""
    make_room(srv, "brief")
    b = chat_plain(srv, "brief", "bob")
    try:
        b.expect(lambda l: b"you are bob" in l)
        events(srv, "brief", {"type": "kick", "user": "bob"},
               until=access_change("kick", user="bob"))
        b.proc.wait(15)
    finally:
        b.close()
    rc, out, err = ssh_run(srv, "brief", "echo bob-in", user="bob")
    assert rc != 0 and "kicked you" in err, (rc, out, err)
    db = sqlite3.connect(os.path.join(str(data_dir), "rooms", "brief",
                                      "room.db"))
    with db:
        until, by = db.execute("SELECT value FROM config WHERE key = "
                               "'kicked:bob'").fetchone()[0].split()
        assert by == "alice" and 290 <= int(until) - time.time() <= 300
        db.execute("UPDATE config SET value = ? WHERE key = 'kicked:bob'",
                   ("%d alice" % (time.time() - 1),))
    db.close()
    rc, out, err = ssh_run(srv, "brief", "echo bob-in", user="bob")
    assert (rc, out) == (0, "bob-in\n"), err


def test_only_the_chat_creates_a_room(atriumd, data_dir, ssh_run):
    """`ssh -p 2222 host pwd` sends the local login name as the room:
    a command, sftp or a program naming a room that is not there is
    refused with how to name one, and nothing is made; the chat makes
    the room, and `rooms` needs none."""
    srv = atriumd(data_dir)
    for what in (["pwd"], ["-s", "sftp"], ["-s", "atrium"]):
        rc, out, err = ssh_run(srv, "root", *what, input="")
        assert rc == 1 and out == "", (what, rc, out, err)
        assert "atrium: there is no room 'root'.  The SSH user names the " \
            "room: ssh -p PORT ROOM@HOST COMMAND (without ROOM@, ssh sends " \
            "your local login name)." in err, (what, err)
        assert "ssh -s -p PORT HOST rooms lists the rooms you may enter" \
            in err, err
    assert not os.path.exists(os.path.join(str(data_dir), "rooms", "root"))
    rc, out, err = ssh_run(srv, "root", "-s", "rooms")
    assert rc == 0 and json.loads(out)["rooms"] == [], (rc, out, err)
    # The chat creates it; then commands run in it.
    c = chat_plain(srv, "made", "alice")
    try:
        c.expect(lambda l: b"you are alice" in l)
        hint = c.expect(lambda l: b"you own room made now" in l)
        assert b"the SSH user names the room (ssh -t ROOM@HOST; without " \
            b"ROOM@, ssh sends your local login name)" in hint, hint
    finally:
        c.close()
    rc, out, err = ssh_run(srv, "made", "echo in-made")
    assert (rc, out) == (0, "in-made\n"), err
    # A key that may not create the name hears what it always heard.
    add_key(data_dir, "dave", 'rooms="team-*"')
    rc, out, err = ssh_run(srv, "other", "true", user="dave")
    assert rc == 1 and "does not exist or you may not enter it" in err, err


def test_exec_creates_rooms_brings_back_the_old_way(atriumd, data_dir,
                                                   ssh_run):
    """--exec-creates-rooms: a command, sftp or the atrium subsystem
    naming a room that is not there makes it, its user the owner, as
    atriumd did by default once.  (The only test that starts atriumd with
    it: every other one makes its rooms as a person does, in the chat.)"""
    srv = atriumd(data_dir, "--exec-creates-rooms")
    rc, out, err = ssh_run(srv, "byexec", "echo made")
    assert (rc, out) == (0, "made\n"), err
    rc, out, err = ssh_run(srv, "bysftp", "-s", "sftp", input="")
    assert rc == 0, err
    rc, out, err = ssh_run(srv, "byprotocol", "-s", "atrium", user="bob",
                           input="")
    assert rc == 0, err
    mine = listing(srv, "alice")
    assert mine["byexec"]["owner"] == mine["bysftp"]["owner"] == "alice", mine
    assert listing(srv, "bob")["byprotocol"]["owner"] == "bob"


def count(pred, n):
    """A predicate true at the n-th event for which pred holds."""
    seen = []
    return lambda e: pred(e) and (seen.append(e) or len(seen) == n)


def is_error(e):
    return e["type"] == "error"


def test_only_the_owner_manages_the_room(srv, ssh_run):
    make_room(srv, "shared")
    invite(srv, "shared", "bob")
    seen = events(srv, "shared",
                  {"type": "config", "approval": "allow_all"},
                  {"type": "invite", "user": "carol"},
                  {"type": "kick", "user": "alice"},
                  {"type": "visibility", "visibility": "private"},
                  user="bob", until=count(is_error, 4))
    errors = [e["message"] for e in seen if is_error(e)]
    assert len(errors) == 4
    for m in errors:
        assert "only the room's owner (alice) or an admin may" in m, m
    assert not any(e["type"] in ("config", "access") and not e.get("replay")
                   for e in seen), seen
    # The chat's /policy is the same request.
    b = chat_plain(srv, "shared", "bob")
    try:
        b.expect(lambda l: b"you are bob" in l)
        b.send("/policy allow_all\n")
        b.expect(lambda l: b"only the room's owner (alice)" in l)
    finally:
        b.close()
    # The owner may.
    seen = events(srv, "shared", {"type": "config", "approval": "allow_all"},
                  until=lambda e: e["type"] == "config")
    assert seen[-1]["approval"] == "allow_all"


def test_admin_key_enters_and_manages_a_private_room(srv, data_dir, ssh_run):
    make_room(srv, "vault")
    make_private(srv, "vault")
    add_key(data_dir, "root", "atrium-admin")
    rc, out, err = ssh_run(srv, "vault", "echo admin-in", user="root")
    assert (rc, out) == (0, "admin-in\n"), err
    invite(srv, "vault", "bob", user="root")
    rc, out, err = ssh_run(srv, "vault", "echo bob-in", user="bob")
    assert (rc, out) == (0, "bob-in\n"), err
    assert "vault" in listing(srv, "root")


def test_rooms_option_limits_creation(srv, data_dir, ssh_run):
    make_room(srv, "lobby")  # alice makes it
    set_options(data_dir, "bob", 'rooms="bob-*,!bob-admin"')
    rc, out, err = ssh_run(srv, "elsewhere", "echo made", user="bob")
    assert rc == 1 and out == "", err
    assert ("room 'elsewhere' does not exist or you may not enter it. "
            "Check the name;") in err
    assert ('Your key may create only rooms matching "bob-*,!bob-admin".'
            in err)
    assert not os.path.exists(os.path.join(srv.data, "rooms", "elsewhere"))
    rc, out, err = ssh_run(srv, "bob-admin", "echo made", user="bob")
    assert rc == 1 and "may create only rooms matching" in err
    make_room(srv, "bob-1", user="bob")
    rc, out, err = ssh_run(srv, "bob-1", "echo made", user="bob")
    assert (rc, out) == (0, "made\n"), err
    rc, out, err = ssh_run(srv, "lobby", "echo in", user="bob")
    assert (rc, out) == (0, "in\n"), err           # existing, open
    assert listing(srv, "bob")["bob-1"]["owner"] == "bob"
    assert "may create only rooms=" in wait_log(srv, "may create only")


def test_outsider_learns_neither_owner_nor_existence(srv, data_dir, ssh_run):
    # A private room refuses an outsider without naming its owner, and in
    # the words a room that does not exist gets, for every kind of use.
    make_room(srv, "alpha")
    make_private(srv, "alpha")
    set_options(data_dir, "bob", 'rooms="bob-*"')
    rc, out, err = ssh_run(srv, "alpha", "echo in", user="bob")
    assert rc == 1 and out == "", err
    assert "alice" not in err and "owner is" not in err, err
    rc2, out2, err2 = ssh_run(srv, "nothere", "echo in", user="bob")
    assert rc2 == 1 and out2 == "", err2
    assert err.replace("alpha", "ROOM") == err2.replace("nothere", "ROOM")
    assert ("atrium: room 'alpha' does not exist or you may not enter it. "
            "Check the name; if the room is private, ask its owner (or the "
            "server's operator) to /invite bob in the room's chat.") in err
    for argv in ((), ("-s", "atrium")):
        rc, out, err = ssh_run(srv, "alpha", *argv, user="bob",
                               opts=["-T"], input="hi\n")
        assert refused_private(rc, err), err
    # The operator's log still says what it was and whose.
    log = wait_log(srv, "bob refused exec in room 'alpha'")
    assert ("bob refused exec in room 'alpha': private, owner alice, not a "
            "member") in log, log
    assert ("bob refused exec in room 'nothere': it does not exist and the "
            "key may create only rooms=\"bob-*\"") in log, log
    # A member is let in as before.
    invite(srv, "alpha", "bob")
    rc, out, err = ssh_run(srv, "alpha", "echo in", user="bob")
    assert (rc, out) == (0, "in\n"), err


def test_listing_shows_the_rooms_a_user_may_enter(srv, ssh_run):
    make_room(srv, "hidden")
    make_room(srv, "public")
    make_private(srv, "hidden")
    mine = listing(srv, "alice")
    assert set(mine) >= {"hidden", "public"}
    assert mine["hidden"]["visibility"] == "private"
    assert mine["hidden"]["owner"] == "alice"
    assert mine["public"]["visibility"] == "open"
    assert mine["hidden"]["state"] in ("running", "stopped")
    bobs = listing(srv, "bob", room="hidden")   # any name: nothing entered
    assert "hidden" not in bobs and "public" in bobs
    invite(srv, "hidden", "bob")
    bobs = listing(srv, "bob")
    assert bobs["hidden"]["members"] == ["bob"]
    # The same from the protocol and the chat.
    seen = events(srv, "public", {"type": "rooms"}, user="bob",
                  until=lambda e: e["type"] == "rooms")
    assert {r["room"] for r in seen[-1]["rooms"]} == set(bobs)
    b = chat_plain(srv, "public", "bob")
    try:
        b.expect(lambda l: b"you are bob" in l)
        b.send("/rooms\n")
        b.expect(lambda l: b"room hidden: private" in l and b"owner alice" in l)
    finally:
        b.close()


def room_dir(srv, room):
    return os.path.join(srv.data, "rooms", room)


def wait_gone(srv, room, timeout=20):
    end = time.time() + timeout
    while time.time() < end and (os.path.exists(room_dir(srv, room)) or
                                 _pids_using(room_dir(srv, room))):
        time.sleep(0.1)
    return not os.path.exists(room_dir(srv, room)) and \
        not _pids_using(room_dir(srv, room))


def test_owner_deletes_a_room_from_the_chat(srv, ssh_run):
    make_room(srv, "doomed")
    ssh_run(srv, "doomed", "echo x > f")
    b = chat_plain(srv, "doomed", "bob")
    a = chat_plain(srv, "doomed", "alice")
    try:
        b.expect(lambda l: b"you are bob" in l)
        a.expect(lambda l: b"you are alice" in l)
        b.send("/delete doomed\n")
        b.expect(lambda l: b"only the room's owner (alice)" in l)
        a.send("/delete\n")
        a.expect(lambda l: b"to confirm" in l)
        assert os.path.exists(room_dir(srv, "doomed"))
        a.send("/delete doomed\n")
        b.proc.wait(15)
        assert b.proc.returncode == 1
        assert "room 'doomed' was deleted by alice" in b.proc.stderr.read().decode()
    finally:
        a.close()
        b.close()
    assert wait_gone(srv, "doomed")
    assert not os.path.exists(os.path.join(srv.data, "run", "doomed"))
    assert "room doomed: deleted" in wait_log(srv, "room doomed: deleted")
    # The name is free again: a new room, a new owner.
    make_room(srv, "doomed", user="bob")
    rc, out, err = ssh_run(srv, "doomed", "ls", user="bob")
    assert (rc, out) == (0, ""), err
    assert listing(srv, "bob")["doomed"]["owner"] == "bob"


def test_owner_deletes_a_room_by_protocol(srv, ssh_run):
    make_room(srv, "gone")
    seen = events(srv, "gone", {"type": "delete", "room": "other"},
                  until=is_error)
    assert "name it" in seen[-1]["message"]
    c = Lines(ssh_command(srv, "gone", "-s", "atrium"))
    c.expect(lambda l: b"welcome" in l)
    c.send('{"type":"delete","room":"gone"}\n')
    c.proc.wait(15)
    assert c.proc.returncode == 1
    assert "deleted by alice" in c.proc.stderr.read().decode()
    assert wait_gone(srv, "gone")


def test_state_survives_a_restart(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "kept")
    make_private(srv, "kept")
    invite(srv, "kept", "bob")
    add_key(data_dir, "carol")
    srv.stop()
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "kept", "echo bob-in", user="bob")
    assert (rc, out) == (0, "bob-in\n"), err
    rc, out, err = ssh_run(srv, "kept", "echo carol-in", user="carol")
    assert refused_private(rc, err), err
    assert listing(srv, "bob")["kept"]["members"] == ["bob"]


def atriumd_room(build, *args):
    p = subprocess.run([os.path.join(build, "atriumd"), "room"] + list(args),
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_operator_deletes_a_room_while_atriumd_runs(srv, build, ssh_run):
    make_room(srv, "busy")
    make_private(srv, "busy")
    a = chat_plain(srv, "busy", "alice")
    try:
        a.expect(lambda l: b"you are alice" in l)
        assert _pids_using(room_dir(srv, "busy"))
        rc, out, err = atriumd_room(build, "list", srv.data)
        assert rc == 0, err
        rooms = {r["room"]: r for r in json.loads(out)["rooms"]}
        assert rooms["busy"]["visibility"] == "private"
        assert rooms["busy"]["state"] == "running"
        rc, out, err = atriumd_room(build, "delete", srv.data, "busy")
        assert rc == 0 and json.loads(out) == {"type": "deleted",
                                               "room": "busy"}, err
        a.proc.wait(15)
        assert a.proc.returncode == 1
        assert "deleted by the server's operator" in \
            a.proc.stderr.read().decode()
    finally:
        a.close()
    assert wait_gone(srv, "busy", timeout=1)
    rc, out, err = atriumd_room(build, "delete", srv.data, "busy")
    assert rc == 1 and "there is no room 'busy'" in err


def test_operator_deletes_a_room_while_atriumd_is_stopped(atriumd, data_dir,
                                                         build, ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "old")
    ssh_run(srv, "old", "echo x > f")
    make_room(srv, "young")
    srv.stop()
    rc, out, err = atriumd_room(build, "list", srv.data)
    assert rc == 0, err
    rooms = {r["room"]: r for r in json.loads(out)["rooms"]}
    assert rooms["old"]["owner"] == "alice"
    assert rooms["old"]["state"] == "stopped"
    rc, out, err = atriumd_room(build, "delete", srv.data, "old")
    assert rc == 0, err
    assert not os.path.exists(room_dir(srv, "old"))
    assert os.path.exists(room_dir(srv, "young"))
    rc, out, err = atriumd_room(build, "delete", srv.data, "../x")
    assert rc == 2 and "usage" in err
