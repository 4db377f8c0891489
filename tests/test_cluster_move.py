"""Moving rooms between the hosts of a cluster (atriumd(8), CLUSTER,
Moving rooms): `atriumd cluster move ROOM [--to NODE]`, `drain [NODE]`
and `undrain NODE`.

Three etcd members, atriumd hosts "a", "b", "c" and, where files must
follow the room, tests/s3_server.py as the object store (the fixtures of
test_cluster.py and test_cluster_replicate.py), all on loopback ports,
started and stopped by pid.  What a user sees: a move under load loses
no acknowledged write or chat line, the room serves on the node asked
for, a drain empties its node, and each error says what is wrong; a move
(or an idle stop) whose last writes the store cannot take keeps the room
where it is until it can; commands running at a move are cut and never
run again; a killed move command leaves the room on one host and does
not block the next move; a move the home called off sends the room's
sessions to the home again at once, even when its command was killed;
a move works with an etcd member lost.

Run as root: /usr/bin/python3 -m pytest -q tests/test_cluster_move.py
"""
import hashlib
import json
import os
import re
import subprocess
import threading
import time

import pytest

from conftest import BUILD_DIR, make_room, ssh_command
from test_cluster import (LEASE, cgroup_prefix, etcd, hosts,  # noqa: F401
                          wait_for)
from test_cluster_replicate import AK, SK, put, s3, s3_hosts  # noqa: F401
from test_e2e import Room

CLI = os.path.join(BUILD_DIR, "atriumd")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.access("/usr/bin/etcd", os.X_OK),
                       reason="etcd-server is not installed"),
]


def cluster(etcd, *args):
    """atriumd cluster ARGS... against the test's etcd: (rc, out, err)."""
    p = subprocess.run([CLI, "cluster", *args, "--cluster",
                        "etcd=" + etcd.urls()], capture_output=True,
                       text=True, timeout=90)
    return p.returncode, p.stdout, p.stderr


def status_rooms(etcd, node):
    """{room: epoch} under node's line of `atriumd cluster status`."""
    rc, out, err = cluster(etcd, "status")
    assert rc == 0, err
    rooms, current = {}, None
    for line in out.splitlines():
        m = re.match(r"node (\S+) ", line)
        if m:
            current = m.group(1)
        m = re.match(r"  room (\S+)  epoch (\d+)", line)
        if m and current == node:
            rooms[m.group(1)] = int(m.group(2))
    return rooms


class Load:
    """Fsynced writes and chat lines through host FRONT, kept up across a
    move (each connection that ends is made again); what was
    acknowledged is remembered."""

    def __init__(self, front, ssh_run, room):
        self.front, self.ssh_run, self.room = front, ssh_run, room
        self.files, self.lines = [], []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.write),
                        threading.Thread(target=self.talk)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join()

    def write(self):
        i = 0
        while not self.stop.is_set():
            name, data = "w%04d" % i, os.urandom(1000 + (i * 7919) % 60000)
            if put(self.front, self.ssh_run, self.room, name, data):
                self.files.append((name, data))
            i += 1

    def talk(self):
        n = 0
        while not self.stop.is_set():
            chat = Room(self.front, self.room)
            try:
                while not self.stop.is_set():
                    text = "line %d" % n
                    n += 1
                    chat.send(type="chat", text=text)
                    chat.expect(lambda e, t=text: e.get("type") == "message"
                                and e.get("text") == t, 10, text)
                    self.lines.append(text)
            except (AssertionError, OSError, ValueError):
                pass        # the connection ended: the room moves
            finally:
                chat.proc.kill()
                chat.proc.wait()


def test_planned_move_under_load_loses_nothing(s3_hosts, etcd, ssh_run):
    a, b = s3_hosts(2)
    make_room(a, "demo")
    home, epoch = etcd.get("/atrium/rooms/demo/home")
    assert home == "a"
    # Through A: on the room's home before the move, its front after.
    with Load(a, ssh_run, "demo") as load:
        wait_for(lambda: len(load.files) > 5 and len(load.lines) > 5, 15,
                 "writes and lines through the front before the move")
        rc, out, err = cluster(etcd, "move", "demo", "--to", "b")
        moved = (len(load.files), len(load.lines))
        wait_for(lambda: len(load.files) > moved[0] + 2 and
                 len(load.lines) > moved[1] + 2, 15,
                 "writes and lines through the front after the move")
    assert rc == 0, err
    print(out)      # the pause, for a reader of the test's output
    assert re.search(r"room demo moved from a to b \(epoch %d -> \d+\): its "
                     r"people waited \d+\.\d s" % epoch, out), out
    # The new home, at a higher epoch, as the operator sees it.
    assert etcd.get("/atrium/rooms/demo/home")[0] == "b"
    rooms = status_rooms(etcd, "b")
    assert rooms.get("demo", 0) > epoch, rooms
    assert "demo" not in status_rooms(etcd, "a")
    # Every acknowledged write is on B, byte for byte.
    rc, out, err = ssh_run(b, "demo", "sha256sum w*", timeout=60)
    assert rc == 0, err
    there = dict(line.split()[::-1] for line in out.splitlines())
    lost = [n for n, d in load.files
            if there.get(n) != hashlib.sha256(d).hexdigest()]
    assert not lost, "%d of %d acknowledged writes lost" % (
        len(lost), len(load.files))
    # And every acknowledged chat line.
    history = Room(b, "demo")
    try:
        history.send(type="history", since=0, limit=500)
        for text in load.lines:
            history.expect(lambda e, t=text: e.get("type") == "message" and
                           e.get("text") == t, 30, text)
    finally:
        history.close()


def test_move_to_a_node_lands_there_and_its_people_are_told(s3_hosts, etcd,
                                                            ssh_run):
    a, b, c = s3_hosts(3)
    make_room(a, "demo")
    _, epoch = etcd.get("/atrium/rooms/demo/home")
    data = os.urandom(70000)
    assert put(a, ssh_run, "demo", "kept", data)
    # Someone is in the room on A when it moves.
    there = subprocess.Popen(ssh_command(a, "demo", "echo in; sleep 60"),
                             stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert there.stdout.readline() == "in\n"
        rc, out, err = cluster(etcd, "move", "demo", "--to", "c")
        assert rc == 0, err
        assert "room demo moved from a to c" in out, out
        _, said = there.communicate(timeout=15)
        assert "room demo is moving to another host (c); connect again" \
            in said, said
    finally:
        if there.poll() is None:
            there.kill()
            there.wait()
    home, epoch_c = etcd.get("/atrium/rooms/demo/home")
    assert home == "c" and epoch_c > epoch
    # C started it at once; A, the old home, reaches it there now.
    wait_for(lambda: "moved here; starting it" in c.read_log(), 10,
             "C to start the room")
    # (B never had the room: its record is not there, and a front
    # admits a command only to a room it knows.)
    for front in (a, c):
        rc, out, err = ssh_run(front, "demo", "sha256sum kept", timeout=60)
        assert rc == 0, (front.extra[5], err)
        assert out.split()[0] == hashlib.sha256(data).hexdigest()
    assert etcd.get("/atrium/rooms/demo/home") == ("c", epoch_c)


def test_drain_moves_every_room_and_takes_no_new_ones(s3_hosts, etcd,
                                                      ssh_run):
    a, b = s3_hosts(2)
    for room in ("one", "two"):
        make_room(a, room)
    assert set(status_rooms(etcd, "a")) == {"one", "two"}
    rc, out, err = cluster(etcd, "drain", "a")
    assert rc == 0, err
    assert "room one moved from a to b" in out, out
    assert "room two moved from a to b" in out, out
    assert "node a is drained: 2 room(s) moved, 0 failed" in out, out
    assert status_rooms(etcd, "a") == {}
    assert set(status_rooms(etcd, "b")) == {"one", "two"}
    assert re.search(r"^node a .* drained$", cluster(etcd, "status")[1],
                     re.M)
    # A new room reached through A lives on B; A holds nothing.
    make_room(a, "three")
    assert etcd.get("/atrium/rooms/three/home")[0] == "b"
    # Undrained, A takes rooms again.
    rc, out, err = cluster(etcd, "undrain", "a")
    assert rc == 0 and "node a takes rooms again" in out, err
    assert " drained" not in cluster(etcd, "status")[1]
    make_room(a, "four")
    assert etcd.get("/atrium/rooms/four/home")[0] == "a"


def test_errors_say_what_is_wrong(hosts, etcd, ssh_run):
    a, b = hosts(2, lease=10)
    make_room(a, "demo")
    rc, _, err = cluster(etcd, "move", "nosuch")
    assert rc == 1
    assert "there is no room nosuch in the cluster" in err, err
    rc, _, err = cluster(etcd, "move", "demo", "--to", "zz")
    assert rc == 1
    assert "node zz is unknown or not alive" in err, err
    rc, _, err = cluster(etcd, "move", "demo", "--to", "a")
    assert rc == 1 and "room demo is on node a already" in err, err
    rc, _, err = cluster(etcd, "drain", "zz")
    assert rc == 1 and "node zz is unknown or not alive" in err, err
    rc, _, err = cluster(etcd, "move")
    assert rc == 2 and "usage: atriumd cluster move ROOM" in err, err
    # These hosts run without --s3: the room's files would stay behind.
    rc, _, err = cluster(etcd, "move", "demo", "--to", "b")
    assert rc == 1
    assert ("room demo's writes are not streamed to an object store" in err
            and "--force moves it all the same" in err), err
    assert etcd.get("/atrium/rooms/demo/home")[0] == "a"
    # A dead home: the command says so and points at its lease.
    a.proc.kill()
    a.proc.wait()
    rc, _, err = cluster(etcd, "move", "demo", "--to", "b", "--force")
    assert rc == 1
    assert "host a, which holds room demo, does not answer" in err, err
    assert "when a's lease ends" in err, err
    # Nothing moved meanwhile: the room is still a's until its lease ends.
    assert etcd.get("/atrium/rooms/demo/home")[0] == "a"


def sha_of(srv, ssh_run, room, names):
    """{name: sha256} of room's files NAMES as host SRV serves them."""
    rc, out, err = ssh_run(srv, room, "sha256sum " + " ".join(names),
                           timeout=60)
    assert rc == 0, err
    return dict(line.split()[::-1] for line in out.splitlines())


def test_a_move_whose_last_writes_cannot_be_stored_keeps_the_room(
        s3_hosts, s3, etcd, ssh_run):
    a, b = s3_hosts(2)
    make_room(a, "demo")
    home = etcd.get("/atrium/rooms/demo/home")
    assert home[0] == "a"
    stored, unstored = os.urandom(70000), os.urandom(90000)
    assert put(a, ssh_run, "demo", "stored", stored)
    # The store stops answering: the next write is acknowledged (it is
    # durable on A) but cannot reach the store before the move.
    s3.set(refuse=True)
    assert put(a, ssh_run, "demo", "unstored", unstored)
    t = time.monotonic()
    rc, out, err = cluster(etcd, "move", "demo", "--to", "b")
    took = time.monotonic() - t
    assert rc == 1, out
    assert "room demo stays on host a, which serves it as before" in err, err
    assert "could not be stored in the object store" in err, err
    assert "move it again once the object store answers" in err, err
    assert took < 30, took      # told, not timed out
    # A kept the room at its epoch: B never took it.
    assert etcd.get("/atrium/rooms/demo/home") == home
    assert "this node keeps it" in a.read_log()
    assert "demo" not in status_rooms(etcd, "b")
    # The store answers again: A serves the room with every write, and
    # a move now takes every write to B, byte for byte.
    s3.set(refuse=False)
    want = {"stored": hashlib.sha256(stored).hexdigest(),
            "unstored": hashlib.sha256(unstored).hexdigest()}
    assert sha_of(a, ssh_run, "demo", want) == want
    assert etcd.get("/atrium/rooms/demo/home")[0] == "a"
    rc, out, err = cluster(etcd, "move", "demo", "--to", "b")
    assert rc == 0, err
    assert "room demo moved from a to b" in out, out
    assert sha_of(b, ssh_run, "demo", want) == want


def test_a_called_off_move_sends_sessions_to_the_home_at_once(
        s3_hosts, s3, etcd, ssh_run):
    a, b, c = s3_hosts(3)
    make_room(a, "demo")
    home = etcd.get("/atrium/rooms/demo/home")
    assert home[0] == "a"
    unstored = os.urandom(90000)
    s3.set(refuse=True)
    assert put(a, ssh_run, "demo", "unstored", unstored)
    want = {"unstored": hashlib.sha256(unstored).hexdigest()}
    # The command is killed once the home is on its move: its request
    # would last on the command's lease (more than 30 s).
    p = subprocess.Popen([CLI, "cluster", "move", "demo", "--to", "b",
                          "--cluster", "etcd=" + etcd.urls()],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: etcd.get("/atrium/moving/demo")[0], 15,
                 "the home to take the request")
        rev = etcd.get("/atrium/moves/demo")[1]
    finally:
        p.kill()
        p.wait()
    assert rev > 0
    # The home cannot store its last writes: it calls the move off and
    # removes the request with it.
    wait_for(lambda: " kept: " in (etcd.get("/atrium/moving/demo")[0] or
                                   ""), 60, "the home to call the move off")
    wait_for(lambda: etcd.get("/atrium/moves/demo")[1] != rev, 10,
             "the called-off request to go before its lease ends")
    assert "the called-off move request is removed" in a.read_log()
    # A session through a third host reaches the room on A, with every
    # write; B never took it.
    s3.set(refuse=False)
    assert sha_of(c, ssh_run, "demo", want) == want
    assert etcd.get("/atrium/rooms/demo/home") == home
    assert "demo" not in status_rooms(etcd, "b")
    assert etcd.get("/atrium/moves/demo") == (None, 0)


def streamed_hosts(hosts, s3, tmp_path, n, *extra, lease=LEASE):
    """n hosts streaming to s3, with EXTRA arguments (s3_hosts' own)."""
    creds = tmp_path / "creds-streamed"
    creds.write_text("%s\n%s\n" % (AK, SK))
    os.chmod(str(creds), 0o600)
    return hosts(n, lease=lease,
                 extra=("--s3", s3.url, "--s3-bucket", "atrium",
                        "--s3-credentials", str(creds), *extra))


def test_a_move_cuts_running_commands_and_never_runs_them_again(
        hosts, s3, etcd, ssh_run, model, tmp_path):
    a, b = streamed_hosts(hosts, s3, tmp_path, 2, "--model-url", model.url,
                          "--approval", "allow_all")
    make_room(a, "demo")
    # A person's command over ssh, and the agent's bash tool, both
    # running when the room moves.
    there = subprocess.Popen(
        ssh_command(a, "demo", "echo in; sleep 30; echo ran >> ssh.log"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    chat = Room(a, "demo")
    try:
        assert there.stdout.readline() == "in\n"
        chat.send(type="prompt", text="run: echo x >> tool.log; sleep 30; "
                  "echo y >> tool.log")
        call = chat.expect(lambda e: e.get("type") == "tool_call", 30,
                           "the bash call")
        wait_for(lambda: ssh_run(a, "demo", "cat tool.log")[1] == "x\n", 15,
                 "the agent's command to run")
        rc, out, err = cluster(etcd, "move", "demo", "--to", "b")
        assert rc == 0, err
        assert "room demo moved from a to b" in out, out
        _, said = there.communicate(timeout=15)
        assert "room demo is moving to another host (b); connect again" \
            in said, said
        assert there.returncode == 1, (there.returncode, said)
    finally:
        chat.proc.kill()
        chat.proc.wait()
        if there.poll() is None:
            there.kill()
            there.wait()
    # On B the agent's transcript shows the call interrupted, and the
    # turn goes on from there.
    history = Room(b, "demo")
    try:
        history.send(type="history", since=0, limit=500)
        res = history.expect(lambda e: e.get("type") == "tool_result" and
                             e.get("id") == call["id"], 30,
                             "the call's result")
        assert res["status"] == "interrupted", res
        history.expect(lambda e: e.get("type") == "turn_end", 30,
                       "the turn to end")
    finally:
        history.close()
    sent = json.dumps(model.requests[-1]["body"]["messages"])
    assert "interrupted" in sent
    # Neither command ran again, nor on past the move.
    assert ssh_run(b, "demo", "cat tool.log")[1] == "x\n"
    rc, _, _ = ssh_run(b, "demo", "test -e ssh.log")
    assert rc == 1


def test_a_move_whose_command_is_killed_ends_on_one_host(s3_hosts, etcd,
                                                         ssh_run):
    a, b = s3_hosts(2)
    make_room(a, "demo")
    _, epoch = etcd.get("/atrium/rooms/demo/home")
    data = os.urandom(80000)
    assert put(a, ssh_run, "demo", "kept", data)
    want = {"kept": hashlib.sha256(data).hexdigest()}
    p = subprocess.Popen([CLI, "cluster", "move", "demo", "--to", "b",
                          "--cluster", "etcd=" + etcd.urls()],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: etcd.get("/atrium/moves/demo")[0], 10,
                 "the command's request")
    finally:
        p.kill()
        p.wait()
    # The request outlives the command (on its lease): the move goes on
    # and the room ends on B alone, at a new epoch, with every write.
    wait_for(lambda: etcd.get("/atrium/rooms/demo/home")[0] == "b", 30,
             "B to hold the room")
    assert etcd.get("/atrium/rooms/demo/home")[1] > epoch
    assert "demo" not in status_rooms(etcd, "a")
    assert sha_of(b, ssh_run, "demo", want) == want
    assert sha_of(a, ssh_run, "demo", want) == want     # relayed to B
    assert etcd.get("/atrium/rooms/demo/home")[0] == "b"
    # The killed command's request still lasts, but it is over: a later
    # move does not wait for its lease to end.
    assert etcd.get("/atrium/moves/demo")[0]
    rc, out, err = cluster(etcd, "move", "demo", "--to", "a")
    assert rc == 0, err
    assert "room demo moved from b to a" in out, out
    assert sha_of(a, ssh_run, "demo", want) == want
    assert "demo" not in status_rooms(etcd, "b")


# etcd's election after its leader's loss must end within the lease's
# margin (as test_losing_one_etcd_member_changes_nothing).
@pytest.mark.alone
def test_a_move_while_an_etcd_member_is_lost(hosts, s3, etcd, ssh_run,
                                             tmp_path):
    a, b = streamed_hosts(hosts, s3, tmp_path, 2, "--per-source-rate", "0",
                          lease=5)
    make_room(a, "demo")
    _, epoch = etcd.get("/atrium/rooms/demo/home")
    data = os.urandom(80000)
    assert put(a, ssh_run, "demo", "kept", data)
    want = {"kept": hashlib.sha256(data).hexdigest()}
    # The leader goes: two members of three still make a quorum.
    etcd.kill(etcd.leader())
    rc, out, err = cluster(etcd, "move", "demo", "--to", "b")
    assert rc == 0, err
    assert "room demo moved from a to b" in out, out
    home, epoch_b = etcd.get("/atrium/rooms/demo/home")
    assert home == "b" and epoch_b > epoch
    # Nothing else changed for the room's people: every write is there,
    # reached through either host, and no host lost its hold meanwhile.
    assert sha_of(b, ssh_run, "demo", want) == want
    assert sha_of(a, ssh_run, "demo", want) == want
    for h in (a, b):
        assert "hold on it ended" not in h.read_log()
    assert etcd.get("/atrium/rooms/demo/home") == (home, epoch_b)


def test_an_idle_stop_keeps_the_home_until_the_store_has_every_write(
        hosts, s3, etcd, ssh_run, tmp_path):
    a, b = streamed_hosts(hosts, s3, tmp_path, 2, "--idle-timeout", "1")
    make_room(a, "demo")
    home = etcd.get("/atrium/rooms/demo/home")
    assert home[0] == "a"
    s3.set(refuse=True)
    data = os.urandom(90000)
    assert put(a, ssh_run, "demo", "late", data)
    # The room idles and stops; its shipper cannot store the write, so
    # A keeps the home (well past the time an unused home is given up).
    wait_for(lambda: "before it stored every commit" in a.read_log(), 30,
             "the room to stop with a write unstored")
    # Its third try to store it comes well after an unused home would
    # have been given up (10 s after it was won).
    wait_for(lambda: "storing its last commits (atrium-replicate pid" in
             a.read_log() and ", try 3)" in a.read_log(), 60,
             "A to try a third time")
    assert etcd.get("/atrium/rooms/demo/home") == home
    # The store answers again: A stores the write, then lets the home go.
    s3.set(refuse=False)
    wait_for(lambda: "the object store has every commit now" in
             a.read_log(), 30, "A to store the write")
    wait_for(lambda: etcd.get("/atrium/rooms/demo/home")[0] is None, 30,
             "A to give the home up")
    # B, using it next, has the write byte for byte.
    make_room(b, "demo")
    want = {"late": hashlib.sha256(data).hexdigest()}
    assert sha_of(b, ssh_run, "demo", want) == want
    assert etcd.get("/atrium/rooms/demo/home")[0] == "b"
