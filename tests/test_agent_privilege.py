"""atrium-agent gives up root (agent/confine.c): under atriumd it runs as
its room's own uid and gid with no capability in any set, no_new_privs,
not dumpable and a seccomp filter; its spawner alone stays root; room.db
is the room's uid's in a directory it cannot add to; and the agent
cannot be signalled by the room's commands although they share its uid.
Files made by the tools are the room's uid's (tests/test_uids.py); the
Landlock and system-call limits are tests/unit/test_agent_confine.c.
"""
import os

import pytest

from conftest import make_room

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

BASE = 3200000          # far from every other test's uids


def procs_of(data, room):
    """{title: pid} of the room's atrium-agent and atrium-spawner."""
    room_dir = os.path.join(str(data), "rooms", room)
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        name = os.path.basename(argv[0]).decode(errors="replace")
        if (name in ("atrium-agent", "atrium-spawner") and
                room_dir.encode() in argv):
            found[name] = int(entry)
    return found


def fs_procs_of(data, room):
    """[pid] of the atrium-fs processes that serve the room's workspace."""
    db = os.path.join(str(data), "rooms", room, "workspace.db").encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"atrium-fs" and db in argv:
            found.append(int(entry))
    return found


def status(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f
                    if ":\t" in line)


def test_agent_runs_as_the_rooms_uid_with_nothing_more(atriumd, data_dir,
                                                      ssh_run):
    srv = atriumd(data_dir, "--sandbox-uid-base", str(BASE),
                  "--sandbox-uid-count", "4")
    make_room(srv, "alpha")
    rc, out, err = ssh_run(srv, "alpha", "id -u")
    assert rc == 0, err
    uid = int(out)
    assert uid == BASE
    procs = procs_of(data_dir, "alpha")
    assert set(procs) == {"atrium-agent", "atrium-spawner"}, procs
    st = status(procs["atrium-agent"])
    assert st["Uid"].split() == [str(uid)] * 4
    assert st["Gid"].split() == [str(uid)] * 4
    assert st["Groups"].strip() == ""
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(st[cap], 16) == 0, (cap, st[cap])
    assert st["NoNewPrivs"] == "1"
    assert st["Seccomp"] == "2"
    # Not dumpable: its /proc files are root's, not the room's uid's.
    assert os.stat("/proc/%d/mem" % procs["atrium-agent"]).st_uid == 0
    # The spawner is the room's privileged side.
    assert status(procs["atrium-spawner"])["Uid"].split()[1] == "0"
    # room.db is the room's uid's; the directory it is in is root's.
    room_dir = os.path.join(str(data_dir), "rooms", "alpha")
    st_dir = os.stat(room_dir)
    assert (st_dir.st_uid, st_dir.st_gid, st_dir.st_mode & 0o7777) == \
        (0, uid, 0o710)
    for name in ("room.db", "room.db-wal", "room.db-shm"):
        s = os.stat(os.path.join(room_dir, name))
        assert (s.st_uid, s.st_mode & 0o7777) == (uid, 0o600), name
    for name in ("workspace.db", "workspace.db-wal", "workspace.db-shm"):
        s = os.stat(os.path.join(room_dir, name))
        assert (s.st_uid, s.st_mode & 0o7777) == (uid, 0o600), name
    # A command of the room shares the agent's uid, but not its pid
    # namespace: it cannot name the agent to signal or trace it.
    rc, out, err = ssh_run(srv, "alpha", "kill -0 %d" % procs["atrium-agent"])
    assert rc != 0 and "No such process" in err, (out, err)
    assert status(procs["atrium-agent"])["State"][0] in "SR"


def test_workspace_daemon_serves_as_the_rooms_uid(atriumd, data_dir,
                                                  ssh_run):
    """The daemon that answers the room's commands' file requests has the
    room's uid and nothing more; only its keeper, which parses nothing,
    stays root to take the mount down."""
    srv = atriumd(data_dir, "--sandbox-uid-base", str(BASE),
                  "--sandbox-uid-count", "4")
    make_room(srv, "alpha")
    rc, out, err = ssh_run(srv, "alpha",
                           "head -c 100000 /dev/urandom > f && md5sum f "
                           "&& id -u")
    assert rc == 0, err
    digest, uid = out.split()[0], int(out.split()[-1])
    procs = fs_procs_of(data_dir, "alpha")
    assert len(procs) == 2, procs
    by_uid = {status(p)["Uid"].split()[0]: p for p in procs}
    assert set(by_uid) == {"0", str(uid)}, by_uid
    daemon, keeper = by_uid[str(uid)], by_uid["0"]
    assert status(daemon)["PPid"] == str(keeper)
    st = status(daemon)
    assert st["Uid"].split() == [str(uid)] * 4
    assert st["Gid"].split() == [str(uid)] * 4
    assert st["Groups"].strip() == ""
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(st[cap], 16) == 0, (cap, st[cap])
    assert st["NoNewPrivs"] == "1"
    assert st["Seccomp"] == "2"
    assert os.stat("/proc/%d/mem" % daemon).st_uid == 0
    # A command of the room cannot name the daemon to signal it.
    rc, out, err = ssh_run(srv, "alpha", "kill -0 %d" % daemon)
    assert rc != 0 and "No such process" in err, (out, err)
    # Across a restart the files read back as written, and the keeper
    # took the mount down (the fixture checks none is left).
    srv.stop()
    assert not fs_procs_of(data_dir, "alpha")
    srv = atriumd(data_dir, "--sandbox-uid-base", str(BASE),
                  "--sandbox-uid-count", "4")
    rc, out, err = ssh_run(srv, "alpha", "md5sum f")
    assert rc == 0, err
    assert out.split()[0] == digest
