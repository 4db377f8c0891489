"""What atriumd keeps apart: a DATA directory others could change is
refused, no host user but root and the sandbox reaches a mounted workspace,
the sandbox's seccomp filter denies the kernel's riskiest interfaces, and an
agent that stops answering is replaced.

Run as root after `make all`:
    /usr/bin/python3 -m pytest -q tests/test_hardening.py
"""
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import DataDir, _pids_using, free_port, make_room, ssh_command

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

STRANGER = ["setpriv", "--reuid=12345", "--regid=12345", "--clear-groups"]


def start_refused(build, data):
    """atriumd on data: (exit status, stderr) of a start expected to fail."""
    p = subprocess.run([os.path.join(build, "atriumd"), "--data", str(data),
                        "--listen", "127.0.0.1:%d" % free_port()],
                       capture_output=True, text=True, timeout=20)
    return p.returncode, p.stderr


# ------------------------------------------------------- DATA's modes --

def _make_hostkey(data):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                    os.path.join(str(data), "hostkey")], check=True)
    os.remove(os.path.join(str(data), "hostkey.pub"))


@pytest.mark.parametrize("name,mode,fix", [
    ("", 0o777, "chmod 700"),
    ("", 0o770, "chmod 700"),
    ("run", 0o757, "chmod 700"),
    ("authorized_keys", 0o620, "chmod 600"),
    ("authorized_keys", 0o602, "chmod 600"),
    ("atrium.conf", 0o666, "chmod 600"),
    ("hostkey", 0o604, "chmod 600"),
    ("atriumd.lock", 0o666, "chmod 600"),
])
def test_data_others_can_change_is_refused(build, data_dir, name, mode, fix):
    path = os.path.join(str(data_dir), name) if name else str(data_dir)
    if name == "run":
        os.mkdir(path)
    elif name == "atrium.conf":
        with open(path, "w") as f:
            f.write("idle-timeout = 60\n")
    elif name == "hostkey":
        _make_hostkey(data_dir)
    elif name == "atriumd.lock":
        open(path, "w").close()
    os.chmod(path, mode)
    rc, err = start_refused(build, data_dir)
    assert rc == 1, err
    assert "%s %s" % (fix, path) in err, err
    assert not os.path.exists(os.path.join(str(data_dir), "rooms"))


def test_data_owned_by_another_user_is_refused(build, data_dir):
    path = os.path.join(str(data_dir), "authorized_keys")
    os.chown(path, 12345, 12345)
    rc, err = start_refused(build, data_dir)
    assert rc == 1 and "chown root %s" % path in err, err


# ------------------------------------------ the mounted workspace --

@pytest.fixture
def open_data(data_dir):
    """A DATA of mode 0755 on a path every host user can walk."""
    base = tempfile.mkdtemp(prefix="atrium-open-")
    os.chmod(base, 0o755)
    data = os.path.join(base, "data")
    shutil.copytree(str(data_dir), data)
    os.chmod(data, 0o755)
    yield DataDir(data, data_dir.keys)
    shutil.rmtree(base, ignore_errors=True)


def test_workspace_is_out_of_reach_of_other_host_users(open_data, atriumd,
                                                        ssh_run):
    srv = atriumd(open_data)
    make_room(srv, "vault")
    rc, out, err = ssh_run(srv, "vault", "mkdir d && echo secret > d/f.txt"
                           " && echo top > top.txt && ls")
    assert (rc, out) == (0, "d\ntop.txt\n"), err
    run = os.path.join(open_data.path, "run")
    ws = os.path.join(run, "vault", "workspace")
    for cmd in (["ls", ws], ["cat", os.path.join(ws, "top.txt")],
                ["cat", os.path.join(ws, "d", "f.txt")], ["stat", ws]):
        p = subprocess.run(STRANGER + cmd, capture_output=True, text=True)
        assert p.returncode != 0 and "Permission denied" in p.stderr, \
            (cmd, p.stdout, p.stderr)
    # DATA/run: root's, searchable, not listable; DATA/run/ROOM: root's
    # and the room's own group's alone.
    with open(os.path.join(open_data.path, "rooms", "vault", "uid")) as f:
        gid = int(f.read().split(":")[1])
    for d, want in ((run, (0, 0, 0o711)),
                    (os.path.dirname(ws), (0, gid, 0o710))):
        st = os.stat(d)
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == want, d
    # The room's own commands still work.
    rc, out, err = ssh_run(srv, "vault", "cat d/f.txt top.txt")
    assert (rc, out) == (0, "secret\ntop\n"), err


# --------------------------------------------- the sandbox's seccomp --

# Each denied syscall and the errno a command gets for it (io_uring: ENOSYS,
# as a kernel without it answers, so programs fall back).
DENIED = {
    "io_uring_setup": "ENOSYS", "io_uring_enter": "ENOSYS",
    "io_uring_register": "ENOSYS", "keyctl": "EPERM", "add_key": "EPERM",
    "request_key": "EPERM", "bpf": "EPERM", "perf_event_open": "EPERM",
    "userfaultfd": "EPERM", "mount": "EPERM", "umount2": "EPERM",
    "pivot_root": "EPERM", "fsopen": "EPERM", "fsmount": "EPERM",
    "fsconfig": "EPERM", "move_mount": "EPERM", "open_tree": "EPERM",
    "mount_setattr": "EPERM", "kexec_load": "EPERM",
    "kexec_file_load": "EPERM", "init_module": "EPERM",
    "finit_module": "EPERM", "delete_module": "EPERM",
}

PROBE_C = r"""#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#define TRY(name) do { errno = 0; long r = syscall(SYS_##name, 0, 0, 0, 0, 0, 0); \
	printf("%s %s\n", #name, r < 0 ? strerrorname_np(errno) : "OK"); } while (0)
int main(void) {
@CALLS@
	return 0;
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """A program calling each denied syscall, printing "NAME ERRNO"."""
    d = tmp_path_factory.mktemp("probe")
    src = d / "probe.c"
    src.write_text(PROBE_C.replace("@CALLS@", "\n".join(
        "\tTRY(%s);" % n for n in DENIED)))
    subprocess.run(["cc", "-O1", "-o", str(d / "probe"), str(src)],
                   check=True)
    return (d / "probe").read_bytes()


def test_sandbox_denies_risky_syscalls(atriumd, data_dir, ssh_run, probe):
    srv = atriumd(data_dir)
    make_room(srv, "jail")
    rc, out, err = ssh_run(srv, "jail", "cat > probe && chmod +x probe && "
                           "./probe && grep Seccomp_filters /proc/self/status",
                           input=probe)
    assert rc == 0, err
    got = dict(line.split() for line in out.decode().splitlines())
    filters = got.pop("Seccomp_filters:")
    assert got == DENIED
    assert filters == "2"      # the deny filter and the chown filter


def test_ordinary_programs_still_work_in_the_sandbox(atriumd, data_dir,
                                                     ssh_run):
    srv = atriumd(data_dir)
    script = (
        "set -e; git init -q repo; cd repo; echo hi > f; git add f; "
        "git -c user.name=a -c user.email=a@b commit -qm one; git log --oneline"
        " | wc -l; printf 'all:\\n\\t@echo made\\n' > Makefile; make; "
        "python3 -c 'import asyncio, subprocess, tempfile; "
        "print(asyncio.run(asyncio.sleep(0, \"py\")))'")
    make_room(srv, "jail")
    rc, out, err = ssh_run(srv, "jail", script)
    assert (rc, out) == (0, "1\nmade\npy\n"), err


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_command_does_not_run_without_its_filter(build):
    """When the kernel refuses the filter, the command is not run."""
    p = subprocess.run(["strace", "-f", "-o", "/dev/null", "-e",
                        "inject=seccomp:error=EINVAL",
                        os.path.join(build, "atrium-sandbox-init"), "3", "-n",
                        "--", "echo", "it ran"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 125
    assert "it ran" not in p.stdout
    assert "cannot install the sandbox's seccomp filter" in p.stderr
    assert "the command was not run" in p.stderr


# ------------------------------------------------ the agent's watchdog --

def agent_pid(srv, room):
    for pid in _pids_using(os.path.join(srv.data, "rooms", room)):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if os.path.basename(argv0) == b"atrium-agent":
            return pid
    return None


class ChatReader:
    """A plain chat session (ssh -T) whose lines are collected."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.lines = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def wait_for(self, text, timeout=20, count=1):
        """True once count lines holding text have come."""
        end = time.time() + timeout
        while time.time() < end:
            if sum(text in l for l in self.lines) >= count:
                return True
            time.sleep(0.05)
        return False

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def test_agent_that_stops_answering_is_restarted(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "frozen")
    rc, out, err = ssh_run(srv, "frozen", "echo before > f.txt")
    assert rc == 0, err
    chat = ChatReader(ssh_command(srv, "frozen", user="bob", opts=["-T"]))
    try:
        assert chat.wait_for(b"you are bob")
        old = agent_pid(srv, "frozen")
        os.kill(old, signal.SIGSTOP)
        start = time.time()
        while time.time() - start < 20 and agent_pid(srv, "frozen") in \
                (None, old):
            time.sleep(0.1)
        took = time.time() - start
        assert agent_pid(srv, "frozen") not in (None, old), srv.read_log()
        assert 9 <= took <= 16, took
        log = srv.read_log()
        assert "atrium-agent (pid %d) has not answered for 10 s" % old in log
        assert chat.wait_for(b"stopped answering for 10 s and was restarted")
        assert chat.wait_for(b"you are bob", timeout=20, count=2)
    finally:
        chat.close()
    rc, out, err = ssh_run(srv, "frozen", "cat f.txt")
    assert (rc, out) == (0, "before\n"), err


def test_busy_agent_is_not_killed(atriumd, data_dir, ssh_run):
    """The ping is answered from the agent's loop, which keeps turning
    while a command runs."""
    srv = atriumd(data_dir, "--agent-timeout", "2")
    make_room(srv, "busy")
    pid = agent_pid(srv, "busy")
    rc, out, err = ssh_run(srv, "busy", "sleep 5; echo slept")
    assert (rc, out) == (0, "slept\n"), err
    assert agent_pid(srv, "busy") == pid
    assert "has not answered" not in srv.read_log()
