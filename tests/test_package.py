"""The Debian package round trip, as an operator does it on this machine:
`make deb` (dpkg-buildpackage, debhelper, lintian-clean), `dpkg -i`, the
atrium user, its sandbox uid range and /var/lib/atrium made, the unit
enabled, atriumd serving a real OpenSSH client from the installed layout
(started by hand where systemd is not running), `dpkg -r` keeping the data
and the user, `dpkg -P` removing them.

Needs dpkg-buildpackage (make deps installs it); skipped where atrium is
already installed, so an operator's own install is never touched.

Run as root: /usr/bin/python3 -m pytest -q tests/test_package.py
"""
import glob
import os
import pwd
import grp
import shutil
import signal
import subprocess
import time

import pytest

from conftest import ROOT, SSH_OPTS, free_port, mounts_under

DATA = "/var/lib/atrium"
SUBIDS = "atrium:2000000000:65536"
WANTS = "/etc/systemd/system/multi-user.target.wants/atriumd.service"


def installed():
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "atrium"],
                       capture_output=True, text=True)
    return "ok installed" in p.stdout or "config-files" in p.stdout


def user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def group_exists(name):
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


pytestmark = [
    pytest.mark.alone,  # adds the user atrium, which other servers would use
    pytest.mark.skipif(os.geteuid() != 0, reason="dpkg -i needs root"),
    pytest.mark.skipif(not shutil.which("dpkg-buildpackage"),
                       reason="no dpkg-buildpackage (make deps installs it)"),
    pytest.mark.skipif(installed() or user_exists("atrium"),
                       reason="atrium is installed here, or its user exists: "
                       "not touching an operator's install"),
]


def users_processes(name, settle=0):
    """Pids running with name's uid as their real, effective, saved or
    filesystem uid (what userdel refuses for; pgrep -u sees the effective
    one alone), once none is left or settle seconds have passed: the
    processes of an atriumd just stopped take a moment to end."""
    uid = str(pwd.getpwnam(name).pw_uid)
    end = time.time() + settle
    while True:
        pids = []
        for entry in os.listdir("/proc"):
            try:
                with open("/proc/%s/status" % entry) as f:
                    ids = [line.split()[1:5] for line in f
                           if line.startswith("Uid:")][0]
            except (OSError, IndexError):
                continue
            if uid in ids:
                pids.append(entry)
        if not pids or time.time() >= end:
            return pids
        time.sleep(0.1)


def has_line(path, line):
    try:
        with open(path) as f:
            return line in f.read().split("\n")
    except FileNotFoundError:
        return False


def dpkg(*args):
    p = subprocess.run(["dpkg"] + list(args), capture_output=True, text=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    assert p.returncode == 0, p.stdout + p.stderr
    return p


def build_deb(tmp_path):
    build = tmp_path / "build"
    p = subprocess.run(["make", "-s", "-C", ROOT, "deb", "BUILD=%s" % build,
                        "DEB_BUILD_OPTIONS=nocheck noautodbgsym"],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    debs = glob.glob(str(build / "deb" / "atrium_*_*.deb"))
    assert len(debs) == 1, debs
    return debs[0]


def serve_and_connect(tmp_path, data_dir):
    """Start the installed atriumd by hand (no systemd here), as the unit
    would, and run a command in a room with the real OpenSSH client."""
    with open(os.path.join(DATA, "authorized_keys"), "w") as f:
        f.write(data_dir.pubkey("alice") + "\n")
    os.chmod(os.path.join(DATA, "authorized_keys"), 0o600)
    port = free_port()
    log = open(tmp_path / "atriumd.log", "w")
    # --exec-creates-rooms: the command below makes its room.
    proc = subprocess.Popen(["/usr/sbin/atriumd", "--data", DATA, "--listen",
                             "127.0.0.1:%d" % port, "--exec-creates-rooms"],
                            stdout=log, stderr=log)
    try:
        end = time.time() + 15
        while time.time() < end:
            p = subprocess.run(["ssh", "-p", str(port), "-i",
                                data_dir.keys["alice"]] + SSH_OPTS +
                               ["packaged@127.0.0.1", "echo",
                                "from-the-package"],
                               capture_output=True, text=True, timeout=60)
            if p.returncode != 255:
                break
            time.sleep(0.2)
        text = (tmp_path / "atriumd.log").read_text()
        assert (p.returncode, p.stdout) == (0, "from-the-package\n"), \
            p.stderr + text
        with open(os.path.join(DATA, "run", "atriumd-network.pid")) as f:
            net = int(f.read())
        with open("/proc/%d/status" % net) as f:
            uid = [line.split()[1] for line in f
                   if line.startswith("Uid:")][0]
        assert int(uid) == pwd.getpwnam("atrium").pw_uid
        assert os.readlink("/proc/%d/exe" % net) == \
            "/usr/libexec/atrium/atriumd-net"
        assert "programs /usr/sbin/../bin/atrium-fs and " \
            "/usr/sbin/../libexec/atrium/atrium-agent" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for m in sorted(mounts_under(os.path.join(DATA, "run")), reverse=True):
            subprocess.run(["fusermount3", "-u", "-z", m], capture_output=True)
        log.close()


def test_package_builds_installs_serves_and_purges(tmp_path, data_dir):
    deb = build_deb(tmp_path)
    info = subprocess.run(["dpkg-deb", "-f", deb, "Depends"],
                          capture_output=True, text=True, check=True).stdout
    for dep in ("bubblewrap", "fuse3", "openssh-sftp-server"):
        assert dep in info, info
    try:
        dpkg("-i", deb)
        assert user_exists("atrium")
        assert pwd.getpwnam("atrium").pw_shell in ("/usr/sbin/nologin",
                                                   "/bin/false")
        assert has_line("/etc/subuid", SUBIDS)
        assert has_line("/etc/subgid", SUBIDS)
        assert os.stat(DATA).st_mode & 0o777 == 0o700
        assert os.path.islink(WANTS)
        assert os.access("/usr/libexec/atrium/atrium-sandbox-init", os.X_OK)
        assert not os.path.exists("/usr/bin/atrium-sandbox-init")
        if os.path.isdir("/run/systemd/system"):
            subprocess.run(["systemctl", "stop", "atriumd"], check=True)
        serve_and_connect(tmp_path, data_dir)

        dpkg("-r", "atrium")
        assert not os.path.exists("/usr/sbin/atriumd")
        assert user_exists("atrium"), "remove keeps the user"
        assert os.path.isdir(os.path.join(DATA, "rooms", "packaged")), \
            "remove keeps the rooms"

        # Another atriumd on this machine (a test of another checkout) may
        # have started as atrium while the package was in: then purge
        # must say the user is in use instead of removing it.
        busy = users_processes("atrium", settle=15)
        p = dpkg("-P", "atrium")
        if busy:
            assert "the user atrium is still in use" in p.stderr, p.stderr
        else:
            assert not user_exists("atrium"), p.stderr
            assert not group_exists("atrium")
            assert not has_line("/etc/subuid", SUBIDS)
            assert not has_line("/etc/subgid", SUBIDS)
        assert not os.path.exists(DATA)
        assert not os.path.lexists(WANTS)
    finally:
        if installed():
            subprocess.run(["dpkg", "-P", "atrium"], capture_output=True)
        # The user this test made must not outlive it: other checkouts'
        # atriumd would keep starting as it (their processes keep its
        # uid; new ones fall back to nobody again).
        if user_exists("atrium"):
            subprocess.run(["userdel", "-f", "atrium"], capture_output=True)
        if group_exists("atrium"):
            subprocess.run(["groupdel", "-f", "atrium"], capture_output=True)
