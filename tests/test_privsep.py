"""atriumd's privilege separation: the process that reads and writes the
clients' connections runs as an unprivileged user, with no capabilities,
no_new_privs and a seccomp filter; the root monitor holds no client
connection; and each process ends when the other does.

Run as root after `make all`:
    /usr/bin/python3 -m pytest -q tests/test_privsep.py
"""
import os
import pwd
import signal
import subprocess
import time

import pytest

from conftest import make_room, ssh_command

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")


def status(pid):
    """/proc/PID/status as a dict of field -> text."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def ppid(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def tcp_inodes(port):
    """Socket inodes of established TCP connections to local port."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if local_port == port and fields[3] == "01":
                    inodes.add(fields[9])
    return inodes


def holders(inodes):
    """Pids holding a socket with one of these inodes."""
    want = {"socket:[%s]" % i for i in inodes}
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir("/proc/%s/fd" % entry)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%s/fd/%s" % (entry, fd)) in want:
                    pids.add(int(entry))
            except OSError:
                pass
    return pids


def test_network_process_is_unprivileged(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    rc, out, err = ssh_run(srv, "lab", "echo", "hi")
    assert (rc, out) == (0, "hi\n"), err
    pid = srv.network_pid()
    assert pid != srv.proc.pid and ppid(pid) == srv.proc.pid
    st = status(pid)
    assert all(int(u) != 0 for u in st["Uid"].split()), st["Uid"]
    assert all(int(g) != 0 for g in st["Gid"].split()), st["Gid"]
    assert st["Groups"] == ""
    for caps in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(st[caps], 16) == 0, (caps, st[caps])
    assert st["NoNewPrivs"] == "1"
    assert st["Seccomp"] == "2"
    # The default user: atrium when it exists, else nobody.
    want = "atrium" if "atrium" in {p.pw_name for p in pwd.getpwall()} \
        else "nobody"
    assert int(st["Uid"].split()[0]) == pwd.getpwnam(want).pw_uid
    # The monitor stays root: it mounts and starts rooms.
    assert status(srv.proc.pid)["Uid"].split()[1] == "0"


def test_network_process_is_its_own_program(atriumd, data_dir, ssh_run):
    """Executed, not only forked: its memory never held the monitor's (the
    API keys), and it holds no file of DATA open (the host key was read
    and closed, DATA's lock is the monitor's alone)."""
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    pid = srv.network_pid()
    exe = os.readlink("/proc/%d/exe" % pid)
    assert os.path.basename(exe) == "atriumd-net", exe
    assert os.path.dirname(exe) == os.path.dirname(
        os.readlink("/proc/%d/exe" % srv.proc.pid))
    assert open("/proc/%d/comm" % pid).read() == "atriumd-net\n"
    data = os.path.realpath(srv.data)
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        assert not target.startswith(data + "/"), (fd, target)
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        argv = f.read().split(b"\0")
    # The settings it reads, and none of the model's or the keys'.
    assert b"--max-startups" in argv and b"--data" in argv, argv
    assert not [a for a in argv if b"api-key" in a or b"model" in a], argv
    with open("/proc/%d/environ" % pid, "rb") as f:
        env = [e for e in f.read().split(b"\0") if e]
    assert all(e.startswith(b"ATRIUM_LOG=") for e in env), env


def test_privsep_user_setting(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir, "--privsep-user", "daemon")
    make_room(srv, "lab")
    uid = int(status(srv.network_pid())["Uid"].split()[0])
    assert uid == pwd.getpwnam("daemon").pw_uid


def test_unknown_privsep_user_is_refused(build, data_dir):
    p = subprocess.run([os.path.join(build, "atriumd"), "--data",
                        str(data_dir), "--listen", "127.0.0.1:1",
                        "--privsep-user", "no-such-user-here"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 1
    assert "no user 'no-such-user-here'" in p.stderr


def test_only_the_network_process_holds_connections(atriumd, data_dir):
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    p = subprocess.Popen(ssh_command(srv, "lab", "sleep", "30"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 20
        while time.time() < deadline and not holders(tcp_inodes(srv.port)) \
                - {p.pid}:
            time.sleep(0.1)
        held = holders(tcp_inodes(srv.port)) - {p.pid}
        assert held == {srv.network_pid()}, held
    finally:
        p.kill()
        p.wait()


def test_clean_stop(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    net = srv.network_pid()
    assert srv.stop() == 0
    assert not os.path.exists("/proc/%d" % net)
    assert " ERROR " not in srv.read_log(), srv.read_log()


def test_network_process_death_stops_atriumd(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    os.kill(srv.network_pid(), signal.SIGKILL)
    srv.proc.wait(15)
    assert srv.proc.returncode == 1
    assert "network process killed by signal 9" in srv.read_log()


def test_monitor_death_ends_the_network_process(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    net = srv.network_pid()
    os.kill(srv.proc.pid, signal.SIGKILL)
    srv.proc.wait(5)
    deadline = time.time() + 10
    while time.time() < deadline and os.path.exists("/proc/%d" % net):
        time.sleep(0.1)
    assert not os.path.exists("/proc/%d" % net), \
        "the network process outlived its monitor"


def threads(pid):
    """{tid: comm} of a process's threads."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            out[int(tid)] = f.read().strip()
    return out


def test_handshake_threads_are_as_confined(atriumd, data_dir, ssh_run):
    """Key exchanges run on the network process's handshake threads
    (`ps -T` shows them as atriumd-kex), which have its uid, no
    capabilities and its seccomp filter; logins go through them."""
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    rc, out, err = ssh_run(srv, "lab", "echo", "hi")
    assert (rc, out) == (0, "hi\n"), err
    pid = srv.network_pid()
    kex = [t for t, comm in threads(pid).items() if comm == "atriumd-kex"]
    assert kex, threads(pid)
    net_uid = status(pid)["Uid"]
    for tid in kex:
        st = status_of_thread(pid, tid)
        assert st["Uid"] == net_uid and int(st["Uid"].split()[0]) != 0
        for caps in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(st[caps], 16) == 0, (tid, caps, st[caps])
        assert st["NoNewPrivs"] == "1" and st["Seccomp"] == "2", st
    assert "handshake threads" in srv.read_log()
    for _ in range(3):
        rc, out, err = ssh_run(srv, "lab", "echo", "again")
        assert (rc, out) == (0, "again\n"), err


def status_of_thread(pid, tid):
    out = {}
    with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out
