"""What each connection may cost atriumd, as a client or an operator sees
it: no SSH compression is negotiated (zlib's state is about 300 KiB per
connection, more than an idle chat member's whole cost, and the client
would choose it), and the handshake threads yield the CPU to the sessions
already in (nice 10).  make bench measures the costs themselves (its chat
part: memory per idle member, latency to 200 members).

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_session_costs.py
"""
import glob
import os
import subprocess
import time

import pytest

from conftest import make_room, ssh_command

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")


@pytest.fixture
def srv(atriumd, data_dir):
    srv = atriumd(data_dir)
    make_room(srv, "costs")
    return srv


def test_compression_is_never_negotiated(srv):
    """ssh -C asks for compression: the session works, without it."""
    argv = ssh_command(srv, "costs", "echo hello", opts=["-C", "-v"])
    argv = [a if a != "LogLevel=ERROR" else "LogLevel=DEBUG" for a in argv]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, "hello\n"), p.stderr
    chosen = [l for l in p.stderr.splitlines() if "kex: " in l and
              "compression:" in l]
    assert len(chosen) == 2, p.stderr
    assert all(l.endswith("compression: none") for l in chosen), chosen


def test_paramiko_asks_for_compression_and_gets_none(srv):
    """A library client that prefers zlib gets none, and works."""
    paramiko = pytest.importorskip("paramiko")
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    client.connect("127.0.0.1", port=srv.port, username="costs",
                   key_filename=srv.keys["alice"], compress=True,
                   allow_agent=False, look_for_keys=False)
    try:
        transport = client.get_transport()
        assert transport.remote_compression == "none"
        assert transport.local_compression == "none"
        _, out, _ = client.exec_command("echo hello")
        assert out.read() == b"hello\n"
    finally:
        client.close()


def test_handshake_threads_run_at_nice_10(srv):
    """ps -T shows atriumd-kex threads at nice 10, the main loop at the
    nice it was started with (this test's own: 0 unless run under nice)."""
    base = os.nice(0)
    pid = srv.network_pid()
    # A thread is named by its creator and lowers its own priority once it
    # runs: give a thread just made a moment to get there.
    deadline = time.time() + 5
    while True:
        nice = {}
        for task in glob.glob("/proc/%d/task/*" % pid):
            with open(task + "/comm") as f:
                comm = f.read().strip()
            with open(task + "/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            nice.setdefault(comm, set()).add(int(fields[16]))
        if nice.get("atriumd-kex") == {max(10, base)} or \
                time.time() > deadline:
            break
        time.sleep(0.1)
    # setpriority sets 10; a process started nicer than that cannot go
    # back up without privilege, and stays where it was.
    assert nice.get("atriumd-kex") == {max(10, base)}, nice
    assert nice.get("atriumd-net") == {base}, nice
