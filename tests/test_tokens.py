"""Tokens for HTTP, made over SSH: `ssh HOST atrium-token create|list|revoke`.

What a user sees: create prints a token once and what it grants; list
shows ids, never a token; revoke takes one of the user's own; a key's
rooms=, expiry-time= and command= bound what it may make; an --open guest
makes none; DATA/tokens.db holds no token's text.  (That a token of a
removed key is refused is tests/unit/test_sshd_tokens.c: nothing speaks
HTTP here yet.)

Run as root after `make all`:
    /usr/bin/python3 -m pytest -q tests/test_tokens.py
"""
import calendar
import os
import re
import time

import pytest

from test_access import add_key, set_options

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

TOKEN_RE = re.compile(r"^atrium_[A-Za-z0-9_-]{43}$")


def token(ssh_run, srv, *args, user="alice", room="anything"):
    """Run atrium-token ARGS as user: (rc, stdout, stderr)."""
    return ssh_run(srv, room, "atrium-token", *args, user=user)


def create(ssh_run, srv, *args, user="alice"):
    """A new token: (its text, its id, the whole output)."""
    rc, out, err = token(ssh_run, srv, "create", *args, user=user)
    assert rc == 0, err
    lines = out.splitlines()
    assert TOKEN_RE.match(lines[0]), out
    ids = re.findall(r"^id:\s+([0-9a-f]{12})$", out, re.M)
    assert len(ids) == 1, out
    return lines[0], ids[0], out


def listed(ssh_run, srv, user="alice"):
    """list's lines by token id."""
    rc, out, err = token(ssh_run, srv, "list", user=user)
    assert rc == 0, err
    return {l.split()[0]: l for l in out.splitlines()[1:] if l.strip()}


def expiry_of(out):
    """The unix time create says the token expires at (None: never)."""
    m = re.search(r"^expires: (\S+ \S+) UTC", out, re.M)
    if not m:
        assert re.search(r"^expires: never", out, re.M), out
        return None
    return calendar.timegm(time.strptime(m.group(1), "%Y-%m-%d %H:%M"))


def test_create_shows_the_token_once_and_list_only_its_id(atriumd, data_dir,
                                                          ssh_run):
    srv = atriumd(data_dir)
    text, tid, out = create(ssh_run, srv, "--name", "ci-bot")
    assert "shown only this once" in out
    assert "ci-bot" in out
    rc, lout, err = token(ssh_run, srv, "list")
    assert rc == 0, err
    assert tid in lout and "ci-bot" in lout
    assert text not in lout and text[7:] not in lout
    # The SSH user part names no room: any text will do.
    rc, lout2, _ = ssh_run(srv, "Not.A_Room", "atrium-token", "list")
    assert rc == 0 and tid in lout2
    # The log names the token by its id, never by its text.
    log = srv.read_log()
    assert tid in log and text[7:] not in log


def test_revoke_removes_the_token(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    _, keep, _ = create(ssh_run, srv)
    _, gone, _ = create(ssh_run, srv)
    rc, out, err = token(ssh_run, srv, "revoke", gone)
    assert rc == 0, err
    assert "revoked token " + gone in out
    ids = listed(ssh_run, srv)
    assert gone not in ids and keep in ids
    rc, out, err = token(ssh_run, srv, "revoke", gone)
    assert rc == 1 and "no token " + gone in err


def test_read_only_and_rooms_tokens_are_listed_as_such(atriumd, data_dir,
                                                       ssh_run):
    srv = atriumd(data_dir)
    _, ro, out = create(ssh_run, srv, "--read-only", "--rooms", "alpha,beta")
    assert re.search(r"^access:\s+read-only$", out, re.M)
    assert re.search(r"^rooms:\s+alpha,beta$", out, re.M)
    _, rw, _ = create(ssh_run, srv)
    ids = listed(ssh_run, srv)
    assert ids[ro].split()[2] == "read-only" and "alpha,beta" in ids[ro]
    assert ids[rw].split()[2] == "read-write" and " * " in ids[rw]


@pytest.mark.parametrize("given,hours", [("12h", 12), ("30d", 720),
                                         (None, 720), ("never", None)])
def test_expiry(atriumd, data_dir, ssh_run, given, hours):
    srv = atriumd(data_dir)
    before = time.time()
    _, _, out = create(ssh_run, srv,
                       *(("--expires", given) if given else ()))
    when = expiry_of(out)
    if hours is None:
        assert when is None
    else:
        # Shown to the minute.
        assert before + hours * 3600 - 60 <= when <= time.time() + hours * 3600


@pytest.mark.parametrize("args", [
    ("--expires", "soon"), ("--expires", "12"), ("--expires", "0d"),
    ("--expires", "-1d"), ("--expires", "99999d"), ("--expires", "1d2h"),
    ("--bogus",), ("--rooms", "Bad_Room"), ("--rooms", "a,,b"),
    ("--read-only", "--read-only"), ("--name",), ("extra",),
])
def test_bad_arguments_are_usage_errors(atriumd, data_dir, ssh_run, args):
    srv = atriumd(data_dir)
    rc, out, err = token(ssh_run, srv, "create", *args)
    assert rc == 2, (out, err)
    assert "usage: atrium-token" in err
    assert "atrium_" not in out
    assert listed(ssh_run, srv) == {}


def test_control_bytes_never_reach_the_terminal(atriumd, data_dir,
                                                ssh_run):
    srv = atriumd(data_dir)
    for args in (("--name", "a\x1b]0;pwned\x07"), ("--\x1b[2Jx",),
                 ("--rooms", "a\x1b[31m")):
        rc, out, err = token(ssh_run, srv, "create", *args)
        assert rc == 2, (args, err)
        assert "\x1b" not in err and "\x07" not in err, (args, err)
        assert "usage: atrium-token" in err


def test_bad_commands_are_usage_errors(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    for args in ((), ("frobnicate",), ("list", "extra"), ("revoke",),
                 ("revoke", "nothex"), ("revoke", "ABCDEF123456")):
        rc, out, err = token(ssh_run, srv, *args)
        assert rc == 2 and "usage: atrium-token" in err, (args, err)


def test_another_users_token_cannot_be_revoked(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    _, tid, _ = create(ssh_run, srv, user="alice")
    assert tid not in listed(ssh_run, srv, user="bob")
    rc, out, err = token(ssh_run, srv, "revoke", tid, user="bob")
    assert rc == 1 and "bob has no token " + tid in err
    assert tid in listed(ssh_run, srv, user="alice")


def test_an_admin_lists_and_revokes_every_token(atriumd, data_dir, ssh_run):
    add_key(data_dir, "root-op", 'atrium-admin')
    srv = atriumd(data_dir)
    _, tid, _ = create(ssh_run, srv, user="alice")
    ids = listed(ssh_run, srv, user="root-op")
    assert tid in ids and ids[tid].split()[1] == "alice"
    rc, _, err = token(ssh_run, srv, "revoke", tid, user="root-op")
    assert rc == 0, err
    assert tid not in listed(ssh_run, srv, user="alice")


def test_tokens_db_holds_no_token_text(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    made = [create(ssh_run, srv)[0] for _ in range(3)]
    stored = b""
    for name in ("tokens.db", "tokens.db-wal", "tokens.db-shm"):
        path = os.path.join(str(data_dir), name)
        if os.path.exists(path):
            assert os.stat(path).st_mode & 0o777 == 0o600, name
            with open(path, "rb") as f:
                stored += f.read()
    assert stored, "no tokens.db"
    for t in made:
        assert t.encode() not in stored and t[7:].encode() not in stored


def test_a_key_with_rooms_names_only_rooms_its_pattern_allows(atriumd,
                                                              data_dir,
                                                              ssh_run):
    set_options(data_dir, "alice", 'rooms="proj-*"')
    srv = atriumd(data_dir)
    create(ssh_run, srv, "--rooms", "proj-a,proj-b")
    rc, out, err = token(ssh_run, srv, "create", "--rooms", "proj-a,other")
    assert rc == 1 and "'other'" in err and "rooms=" in err
    assert "atrium_" not in out
    assert len(listed(ssh_run, srv)) == 1


def test_a_token_expires_no_later_than_its_key(atriumd, data_dir, ssh_run):
    end = time.gmtime(time.time() + 2 * 86400)
    set_options(data_dir, "alice",
                'expiry-time="%s"' % time.strftime("%Y%m%d%H%MZ", end))
    srv = atriumd(data_dir)
    _, _, out = create(ssh_run, srv, "--expires", "never")
    assert expiry_of(out) == calendar.timegm(end) - end.tm_sec
    assert "(the key's expiry-time)" in out
    _, _, out = create(ssh_run, srv, "--expires", "12h")
    assert "(the key's expiry-time)" not in out


def test_a_key_with_a_forced_command_makes_no_token(atriumd, data_dir,
                                                    ssh_run):
    set_options(data_dir, "alice", 'command="echo forced"')
    srv = atriumd(data_dir)
    rc, out, err = token(ssh_run, srv, "create")
    assert rc == 1, (out, err)
    assert "forced command" in err and "atrium_" not in out
    assert "forced" not in out


def test_a_forced_atrium_token_command_runs_as_written(atriumd, data_dir,
                                                       ssh_run):
    set_options(data_dir, "alice",
                'command="atrium-token create --read-only --expires 12h"')
    srv = atriumd(data_dir)
    # Whatever the client asks, the forced command is what runs.
    rc, out, err = token(ssh_run, srv, "create", "--expires", "never")
    assert rc == 0, err
    assert re.search(r"^access:\s+read-only$", out, re.M)
    assert expiry_of(out) is not None
    rc, out, err = ssh_run(srv, "room", "true")
    assert rc == 0 and TOKEN_RE.match(out.splitlines()[0]), err


def test_an_open_guest_makes_no_token(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir, "--open")
    rc, out, err = token(ssh_run, srv, "create", user="eve")
    assert rc == 1, (out, err)
    assert "guest" in err and "atrium_" not in out
