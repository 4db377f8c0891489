"""Resource limits of rooms and users, end to end: real atriumd, real
sandbox, real cgroups (v1 or v2, whichever the host has).

Each test gives its atriumd a cgroup parent of its own (--cgroup-parent
atrium-test-...), removed afterwards, so that tests running at the same
time on the host, and a real atriumd, never share a budget or sweep each
other's groups.  Caps are small (a 256 MiB room, 200 MiB allocations) to
stay well within a shared machine.

Fail-closed is simulated honestly and without touching the host: the
test-visible setting --cgroup-root points at an empty directory, exactly
what a host without the memory, pids and cpu controllers looks like to
atriumd (nothing is mounted there, so no group can be made or limited).

Run as root after `make all`:
    /usr/bin/python3 -m pytest -q tests/test_limits.py
"""
import glob
import itertools
import os
import signal
import subprocess

import pytest

from conftest import remove_cgroups, ssh_command
from test_robustness import agent_pid, settle

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

CG = "/sys/fs/cgroup"
V2 = os.path.exists(os.path.join(CG, "cgroup.controllers"))
HIERARCHIES = [CG] if V2 else [os.path.join(CG, c)
                               for c in ("memory", "pids", "cpu")]
HAVE_CGROUPS = all(os.access(h, os.W_OK) for h in HIERARCHIES)
needs_cgroups = pytest.mark.skipif(not HAVE_CGROUPS,
                                   reason="no writable cgroup controllers")
_serial = itertools.count()


@pytest.fixture
def cgparent():
    """A cgroup parent of this test's own; removed at the end (ask for it
    before atriumd, so it outlives the server)."""
    name = "atrium-test-%d-%d" % (os.getpid(), next(_serial))
    yield name
    remove_cgroups(name)


def group(parent, *rel, ctl="memory"):
    base = CG if V2 else os.path.join(CG, ctl)
    return os.path.join(base, parent, *rel)


def cmd_groups(parent, room):
    return glob.glob(group(parent, room, "cmd-*"))


def start(atriumd, data_dir, parent, *extra):
    return atriumd(data_dir, "--cgroup-parent", parent, *extra)


def popen_ssh(srv, room, cmd, user="alice"):
    return subprocess.Popen(ssh_command(srv, room, cmd, user=user),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


# ------------------------------------------------------------ room caps --

ALLOC = ("python3 -c \"import time; b = b'x' * (200 << 20); "
         "print('allocated', flush=True); time.sleep(4)\"")


@needs_cgroups
def test_room_memory_cap_holds_across_commands(cgparent, atriumd, data_dir):
    """Three commands each allocating 200 MiB under a 256 MiB room cap (and
    a 2 GiB per-command cap): the room never holds more than its cap, and
    the users see which commands were killed or could not allocate."""
    srv = start(atriumd, data_dir, cgparent, "--room-memory", "256M",
                "--sandbox-memory-mb", "2048")
    procs = [popen_ssh(srv, "demo", ALLOC) for _ in range(3)]
    results = [p.communicate(timeout=90) + (p.returncode,) for p in procs]
    ok = [r for r in results if r[2] == 0 and r[0] == "allocated\n"]
    failed = [r for r in results if r not in ok]
    assert len(ok) <= 1, results
    assert failed, results
    for out, err, rc in failed:
        # What the user sees: killed by the OOM killer before it could
        # report (the exit-signal KILL, which ssh reports as 255), or
        # python's MemoryError (exit 1, with the traceback on stderr).
        assert "allocated" not in out, (out, err, rc)
        assert rc == 255 or (rc == 1 and "MemoryError" in err), \
            (out, err, rc)
    if V2:
        peak_file, limit_file = "memory.peak", "memory.max"
    else:
        peak_file, limit_file = ("memory.max_usage_in_bytes",
                                 "memory.limit_in_bytes")
    room = group(cgparent, "demo")
    with open(os.path.join(room, limit_file)) as f:
        assert int(f.read()) == 256 << 20
    if os.path.exists(os.path.join(room, peak_file)):
        with open(os.path.join(room, peak_file)) as f:
            assert int(f.read()) <= 256 << 20


FORKS = ("python3 -c \"import os, time\nn = 0\ntry:\n"
         "    while n < 200:\n"
         "        if os.fork() == 0:\n            time.sleep(5); os._exit(0)\n"
         "        n += 1\n"
         "except OSError as e:\n    print('forks', n, e.errno)\n"
         "else:\n    print('forks', n, 0)\"")


@needs_cgroups
def test_room_pids_cap(cgparent, atriumd, data_dir, ssh_run):
    """A room capped at 40 processes stops a fork loop well before the
    per-command cap (512) would."""
    srv = start(atriumd, data_dir, cgparent, "--room-pids", "40")
    rc, out, err = ssh_run(srv, "demo", FORKS, timeout=60)
    words = out.split()
    assert words[:1] == ["forks"], (rc, out, err)
    assert int(words[1]) < 40 and int(words[2]) == 11, out   # EAGAIN
    with open(group(cgparent, "demo", ctl="pids") + "/pids.max") as f:
        assert f.read().strip() == "40"


@needs_cgroups
def test_cpu_and_nesting_written(cgparent, atriumd, data_dir):
    """room-cpus takes a fraction, and a command never gets more than its
    room (clamped, since v1 refuses a quota above the parent's): one CPU
    per command becomes half of one under a room of 0.5."""
    srv = start(atriumd, data_dir, cgparent, "--room-cpus", "0.5",
                "--total-cpus", "1.5")
    p = popen_ssh(srv, "demo", "sleep 30")
    try:
        assert settle(lambda: cmd_groups(cgparent, "demo"), 15)
        cmd = os.path.basename(cmd_groups(cgparent, "demo")[0])
        if V2:
            quota = lambda *rel: open(group(cgparent, *rel) +
                                      "/cpu.max").read().split()[0]
        else:
            quota = lambda *rel: open(group(cgparent, *rel, ctl="cpu") +
                                      "/cpu.cfs_quota_us").read().strip()
        assert quota() == "150000"
        assert quota("demo") == "50000"
        assert quota("demo", cmd) == "50000"
    finally:
        p.terminate()
        p.communicate(timeout=30)


# --------------------------------------------------------- fail closed --

def test_commands_refused_when_limits_cannot_be_applied(
        cgparent, atriumd, data_dir, ssh_run, tmp_path):
    """A cgroup root with no controllers (an empty directory): atriumd
    warns at start, and every command is refused with a clear message."""
    empty = tmp_path / "no-cgroups"
    empty.mkdir()
    srv = start(atriumd, data_dir, cgparent, "--cgroup-root", str(empty))
    rc, out, err = ssh_run(srv, "demo", "echo ran")
    assert rc != 0 and "ran" not in out, (rc, out, err)
    assert "resource limits" in err and "cannot be applied" in err, err
    log = srv.read_log()
    assert "WARN" in log and "memory, pids, cpu" in log, log
    assert "every command will be refused" in log, log


def test_no_limits_runs_commands_and_warns(cgparent, atriumd, data_dir,
                                           ssh_run, tmp_path):
    empty = tmp_path / "no-cgroups"
    empty.mkdir()
    srv = start(atriumd, data_dir, cgparent, "--cgroup-root", str(empty),
                "--no-limits")
    rc, out, err = ssh_run(srv, "demo", "echo ran")
    assert (rc, out) == (0, "ran\n"), err
    warn = [l for l in srv.read_log().splitlines()
            if " WARN " in l and "--no-limits" in l]
    assert warn and "memory, pids, cpu" in warn[0], srv.read_log()


# ------------------------------------------------------ groups cleaned --

@needs_cgroups
def test_groups_removed_at_end_and_stale_swept(cgparent, atriumd, data_dir,
                                                ssh_run):
    """A command's group goes when it ends; one left by a dead agent is
    swept when atriumd starts, and when a killed agent is restarted."""
    stale = [os.path.join(h, cgparent, "demo", "cmd-1-1")
             for h in HIERARCHIES]
    for d in stale:
        os.makedirs(d)
    srv = start(atriumd, data_dir, cgparent)
    assert not any(os.path.exists(d) for d in stale)
    assert "removed 1 stale command cgroup" in srv.read_log()

    rc, out, err = ssh_run(srv, "demo", "true")
    assert rc == 0, err
    assert settle(lambda: not cmd_groups(cgparent, "demo"), 5)

    # kill -9 the agent while a command runs: its group is left behind
    # until the restarted agent sweeps it.
    p = popen_ssh(srv, "demo", "sleep 300")
    assert settle(lambda: cmd_groups(cgparent, "demo"), 15)
    old = cmd_groups(cgparent, "demo")
    pid = agent_pid(srv, "demo")
    os.kill(pid, signal.SIGKILL)
    p.communicate(timeout=30)
    rc, out, err = ssh_run(srv, "demo", "echo again")
    assert (rc, out) == (0, "again\n"), err
    assert agent_pid(srv, "demo") not in (None, pid)
    assert settle(lambda: not any(os.path.exists(d) for d in old), 10), old


@needs_cgroups
def test_second_server_under_one_parent_is_refused(cgparent, atriumd,
                                                   data_dir, ssh_run,
                                                   tmp_path):
    """A server's start removes the room groups left empty under its
    parent: a second live atriumd under the same parent is refused before
    it sweeps, naming the first, whose idle room keeps its group; once the
    first has stopped, the parent is free again."""
    first = start(atriumd, data_dir, cgparent)
    rc, out, err = ssh_run(first, "demo", "true")
    assert rc == 0, err
    room_groups = [os.path.join(h, cgparent, "demo") for h in HIERARCHIES]
    assert settle(lambda: not cmd_groups(cgparent, "demo"), 5)
    assert all(os.path.isdir(d) for d in room_groups)

    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    keys = other / "authorized_keys"
    keys.write_bytes((tmp_path / "data" / "authorized_keys").read_bytes())
    keys.chmod(0o600)
    with pytest.raises(RuntimeError) as refused:
        start(atriumd, str(other), cgparent)
    said = str(refused.value)
    assert "cgroup parent %s under %s is in use: atriumd pid %d holds" % (
        cgparent, CG, first.proc.pid) in said, said
    assert "give this one a --cgroup-parent of its own" in said
    assert all(os.path.isdir(d) for d in room_groups)
    rc, out, err = ssh_run(first, "demo", "echo still")
    assert (rc, out) == (0, "still\n"), err

    first.stop()
    second = start(atriumd, str(other), cgparent)
    assert "is in use" not in second.read_log()


@needs_cgroups
def test_transfer_groups_swept_and_limits_fail_closed(
        cgparent, atriumd, data_dir, ssh_run, tmp_path):
    """A room transfer's helper group left by a dead atriumd is swept when
    atriumd starts; where the room's limits cannot be applied an import
    is refused before its helper runs, as a command is."""
    stale = [os.path.join(h, cgparent, "demo", "xfer-1-1")
             for h in HIERARCHIES]
    for d in stale:
        os.makedirs(d)
    srv = start(atriumd, data_dir, cgparent)
    assert not any(os.path.exists(d) for d in stale)
    rc, out, err = ssh_run(srv, "demo", "echo hi > f")
    assert rc == 0, err
    p = subprocess.run(ssh_command(srv, "demo", "atrium-export"),
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    srv.stop()
    empty = tmp_path / "no-cgroups"
    empty.mkdir()
    srv = start(atriumd, data_dir, cgparent, "--cgroup-root", str(empty))
    q = subprocess.run(ssh_command(srv, "copy", "atrium-import"),
                       input=p.stdout, capture_output=True, timeout=120)
    assert q.returncode != 0
    assert b"limits cannot be applied" in q.stderr, q.stderr
    assert not os.path.exists(os.path.join(srv.data, "rooms", "copy"))


def tracer(pid):
    """The pid tracing pid (0: none)."""
    with open("/proc/%d/status" % pid) as f:
        return int([line.split()[1] for line in f
                    if line.startswith("TracerPid:")][0])


@needs_cgroups
def test_busy_command_group_is_retried_not_slept_on(cgparent, atriumd,
                                                     data_dir, ssh_run,
                                                     tmp_path):
    """A command's group that cannot be removed yet when the command ends
    (busy: here a group below it, as while its killed processes go) is
    retried from a timer: the agent's loop never sleeps on it, answers
    the next request meanwhile, and removes the group once it can go."""
    srv = start(atriumd, data_dir, cgparent)
    # The command ends when the test lets it: once strace watches.
    p = subprocess.Popen(ssh_command(srv, "busy", "head -c 1 >/dev/null"),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert settle(lambda: cmd_groups(cgparent, "busy"), 15)
    cmd = cmd_groups(cgparent, "busy")[0]
    hold = os.path.join(cmd, "hold")
    os.mkdir(hold)
    trace = str(tmp_path / "agent.trace")
    # The loop is the agent's main thread: every sleep of it shows here.
    apid = agent_pid(srv, "busy")
    st = subprocess.Popen(["strace", "-qq", "-e",
                           "trace=nanosleep,clock_nanosleep", "-o", trace,
                           "-p", str(apid)], stderr=subprocess.DEVNULL)
    try:
        assert settle(lambda: tracer(apid) == st.pid, 15), \
            "strace did not attach to the agent"
        assert p.communicate(input="x", timeout=30)[0] == ""
        rc, out, err = ssh_run(srv, "busy", "echo answered")
        assert (rc, out) == (0, "answered\n"), err
        assert os.path.isdir(cmd), "the busy group was removed anyway?"
    finally:
        st.terminate()
        st.wait()
    with open(trace) as f:
        slept = [l for l in f if "nanosleep" in l]
    assert not slept, slept[:5]
    os.rmdir(hold)
    assert settle(lambda: not os.path.exists(cmd), 15), cmd


# ------------------------------------------------------------ user caps --

@needs_cgroups
def test_user_concurrent_commands_cap(cgparent, atriumd, data_dir, ssh_run):
    """16 commands of alice across two rooms run; the 17th is refused with
    the cap named; bob is not affected."""
    # 17 connections at once from one address: past the per-source
    # admission limits, which are not what this test is about.
    srv = start(atriumd, data_dir, cgparent, "--per-source-rate", "0",
                "--per-source-startups", "0")
    procs = [popen_ssh(srv, room, "sleep 60")
             for room in ("one", "two") for _ in range(8)]
    try:
        assert settle(lambda: len(cmd_groups(cgparent, "one")) +
                      len(cmd_groups(cgparent, "two")) == 16, 60)
        rc, out, err = ssh_run(srv, "one", "echo seventeenth")
        assert rc != 0 and "seventeenth" not in out, (rc, out, err)
        assert "max-commands-per-user = 16" in err, err
        rc, out, err = ssh_run(srv, "two", "echo bob", user="bob")
        assert (rc, out) == (0, "bob\n"), err
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.communicate(timeout=30)


def test_user_rooms_created_cap(cgparent, atriumd, data_dir, ssh_run):
    srv = start(atriumd, data_dir, cgparent, "--max-rooms-per-user", "2",
                "--no-limits")
    for room in ("r1", "r2"):
        rc, out, err = ssh_run(srv, room, "true")
        assert rc == 0, err
    rc, out, err = ssh_run(srv, "r3", "true")
    assert rc != 0 and "max-rooms-per-user = 2" in err, (rc, err)
    assert not os.path.exists(os.path.join(srv.data, "rooms", "r3"))
    rc, out, err = ssh_run(srv, "r1", "echo old")     # not a creation
    assert (rc, out) == (0, "old\n"), err
    rc, out, err = ssh_run(srv, "r3", "true", user="bob")
    assert rc == 0, err


def test_workspace_quota_through_atriumd(atriumd, data_dir, ssh_run):
    """--quota reaches each room's workspace: a write past it fails with
    "Disk quota exceeded", df shows the quota, and deleting makes room."""
    srv = atriumd(data_dir, "--quota", "8M")
    rc, out, err = ssh_run(srv, "quota", "head -c 10M /dev/zero > f; "
                           "echo rc=$?; df -B1 --output=size /workspace | tail -1")
    assert "Disk quota exceeded" in err, err
    lines = out.split()
    assert lines[0] == "rc=1", out
    assert int(lines[1]) == 8 << 20, out
    rc, out, err = ssh_run(srv, "quota", "rm f; head -c 5M /dev/zero > g && "
                           "stat -c %s g")
    assert (rc, out) == (0, "%d\n" % (5 << 20)), err


# ------------------------------------------- the owner lowers the limits --

def _limits(ev, by=None):
    return ev["type"] == "limits" and (by is None or ev.get("by") == by)


def _room_file(parent, room, ctl, name):
    if V2:
        name = {"memory.limit_in_bytes": "memory.max",
                "cpu.cfs_quota_us": "cpu.max"}.get(name, name)
    with open(os.path.join(group(parent, room, ctl=ctl), name)) as f:
        return f.read().split()[0]


def _alloc(mib):
    return ("python3 -c \"b = b'x' * (%d << 20); print('allocated', "
            "flush=True)\"" % mib)


@needs_cgroups
def test_owner_lowers_room_memory_at_once(cgparent, atriumd, data_dir,
                                          ssh_run):
    """The owner lowers the room's memory below the operator's: the room's
    group holds the new limit at once, a command allocating more than it
    is killed (or cannot allocate) and one under it runs."""
    from test_access import events
    srv = start(atriumd, data_dir, cgparent, "--room-memory", "1G",
                "--sandbox-memory-mb", "2048")
    rc, out, err = ssh_run(srv, "lean", _alloc(200))
    assert (rc, out) == (0, "allocated\n"), err      # the operator's 1 GiB
    seen = events(srv, "lean", {"type": "limits", "memory": "100M"},
                  until=lambda e: _limits(e, by="alice"))
    assert seen[-1]["memory"] == 100 << 20
    assert seen[-1]["max"]["memory"] == 1 << 30
    assert _room_file(cgparent, "lean", "memory",
                      "memory.limit_in_bytes") == str(100 << 20)
    rc, out, err = ssh_run(srv, "lean", _alloc(200))
    assert "allocated" not in out, (rc, out, err)
    assert rc == 255 or (rc == 1 and "MemoryError" in err), (rc, out, err)
    rc, out, err = ssh_run(srv, "lean", _alloc(20))
    assert (rc, out) == (0, "allocated\n"), err


@needs_cgroups
def test_limits_owner_only_never_above_and_kept(cgparent, atriumd, data_dir,
                                                ssh_run):
    """A member cannot change the limits (told who the owner is), the owner
    cannot raise them above the operator's (told the maximum), and what the
    owner set survives an atriumd restart, in the room's group too."""
    from test_access import events
    from test_ssh import chat_plain
    srv = start(atriumd, data_dir, cgparent, "--room-pids", "300",
                "--room-cpus", "1")
    ssh_run(srv, "kept", "true")                     # alice owns it
    seen = events(srv, "kept", {"type": "limits", "pids": 50},
                  user="bob", until=lambda e: e["type"] == "error")
    assert "only the room's owner (alice)" in seen[-1]["message"], seen
    b = chat_plain(srv, "kept", "bob")
    try:
        b.expect(lambda l: b"you are bob" in l)
        b.send("/limits cpus 0.2\n")
        b.expect(lambda l: b"only the room's owner (alice)" in l)
        b.send("/limits\n")                          # anyone may look
        b.expect(lambda l: b"limits of this room: " in l and
                 b"300 pids" in l)
    finally:
        b.close()
    seen = events(srv, "kept", {"type": "limits", "pids": 301},
                  {"type": "limits", "cpus": "2"},
                  until=count_errors(2))
    errors = [e["message"] for e in seen if e["type"] == "error"]
    assert "pids 301 is above this room's maximum of 300" in errors[0]
    assert "cpus 2 is above this room's maximum of 1" in errors[1]
    a = chat_plain(srv, "kept", "alice")
    try:
        a.expect(lambda l: b"you are alice" in l)
        a.send("/limits pids 120 cpus 0.5\n")
        a.expect(lambda l: b"alice set the room's limits: " in l and
                 b"120 pids, 0.5 CPUs" in l)
    finally:
        a.close()
    assert _room_file(cgparent, "kept", "pids", "pids.max") == "120"
    srv.stop()
    srv = start(atriumd, data_dir, cgparent, "--room-pids", "300",
                "--room-cpus", "1")
    seen = events(srv, "kept", {"type": "limits"},
                  until=lambda e: _limits(e) and not e.get("replay"))
    assert (seen[-1]["pids"], seen[-1]["cpus"]) == (120, 0.5), seen[-1]
    assert _room_file(cgparent, "kept", "pids", "pids.max") == "120"
    assert _room_file(cgparent, "kept", "cpu", "cpu.cfs_quota_us") == "50000"


def count_errors(n):
    seen = []
    return lambda e: e["type"] == "error" and (seen.append(e) or
                                               len(seen) == n)


# ---------------------------------- every kind of command counts per user --

@needs_cgroups
def test_user_cap_counts_chat_and_protocol_execs(cgparent, atriumd, data_dir,
                                                 ssh_run):
    """With a cap of 2: an ssh exec and a chat !sleep in another room run;
    a subsystem exec, a chat !command and an ssh exec are then refused
    with the cap named; once one ends, a subsystem exec is accepted.  The
    cap is per person: bob runs meanwhile."""
    import json
    from test_ssh import Lines, chat_plain
    srv = start(atriumd, data_dir, cgparent, "--max-commands-per-user", "2")
    running = popen_ssh(srv, "one", "sleep 60")
    chat = chat_plain(srv, "two", "alice")
    ctl = Lines(ssh_command(srv, "one", "-s", "atrium"))
    try:
        chat.expect(lambda l: b"you are alice" in l)
        chat.send("!sleep 60\n")
        assert settle(lambda: len(cmd_groups(cgparent, "one")) +
                      len(cmd_groups(cgparent, "two")) == 2, 30)
        ctl.expect(lambda l: json.loads(l)["type"] == "welcome")
        ctl.send(json.dumps({"type": "exec", "id": "e3",
                             "command": "echo third"}) + "\n")
        line = ctl.expect(lambda l: json.loads(l).get("id") == "e3")
        ev = json.loads(line)
        assert ev["type"] == "error", ev
        assert "max-commands-per-user = 2" in ev["message"], ev
        chat.send("!echo fourth\n")
        chat.expect(lambda l: b"max-commands-per-user = 2" in l)
        rc, out, err = ssh_run(srv, "one", "echo fifth")
        assert rc != 0 and "max-commands-per-user = 2" in err, (rc, err)
        rc, out, err = ssh_run(srv, "one", "echo bob", user="bob")
        assert (rc, out) == (0, "bob\n"), err
        running.terminate()
        running.communicate(timeout=30)
        assert settle(lambda: len(cmd_groups(cgparent, "one")) == 0, 30)
        ctl.send(json.dumps({"type": "exec", "id": "e6",
                             "command": "echo sixth"}) + "\n")
        line = ctl.expect(lambda l: json.loads(l).get("id") == "e6" and
                          json.loads(l)["type"] in ("exec_result", "error"))
        ev = json.loads(line)
        assert ev["type"] == "exec_result" and ev["stdout"] == "sixth\n", ev
    finally:
        if running.poll() is None:
            running.terminate()
            running.communicate(timeout=30)
        ctl.close()
        chat.close()
