#!/usr/bin/python3
"""make bench: Atrium's speed beside its baselines, measured in one run.

Each workload runs on the baseline and on Atrium alternately, several times;
the table shows medians and the ratio (Atrium / baseline; lower is better
for times).  Nothing here asserts: the numbers are for people to read.

  filesystem  a native directory (the disk, and tmpfs) beside an atrium-fs mount
  ssh         OpenSSH's sshd on a loopback port beside atriumd
"""
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, os.environ.get("ATRIUM_BUILD", "build"))
RUNS = int(os.environ.get("BENCH_RUNS", "5"))


def run(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), check=True,
                          stdout=subprocess.DEVNULL, **kw)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("port %d never answered" % port)


class Table:
    def __init__(self):
        self.rows = []

    def add(self, name, base_name, base, ours, unit="s"):
        b, o = statistics.median(base), statistics.median(ours)
        self.rows.append((name, base_name, b, o, o / b if b else float("nan"), unit))
        print("  %-34s %s %.4g%s  atrium %.4g%s" % (name, base_name, b, unit, o, unit),
              file=sys.stderr)

    def show(self):
        print()
        print("ratio = atrium / baseline: below 1 is faster for times (s),"
              " above 1 is faster for rates (MB/s).")
        print()
        print("| workload | baseline | baseline | atrium | ratio |")
        print("|---|---|---:|---:|---:|")
        for name, bn, b, o, r, unit in self.rows:
            print("| %s | %s | %.3g %s | %.3g %s | %.2fx |" % (name, bn, b, unit, o, unit, r))


# --- filesystem --------------------------------------------------------------

def make_tree_tarball(tmp):
    tarball = os.path.join(tmp, "include.tar")
    run(["tar", "cf", tarball, "-C", "/usr", "include"])
    return tarball


def fs_workloads(table, tmp):
    tarball = make_tree_tarball(tmp)
    db = os.path.join(tmp, "ws.db")
    mnt = os.path.join(tmp, "mnt")
    disk = os.path.join(tmp, "disk")
    tmpfs = os.path.join(tmp, "tmpfs")
    for d in (mnt, disk, tmpfs):
        os.mkdir(d)
    run(["mount", "-t", "tmpfs", "-o", "size=4g", "bench", tmpfs])
    run([os.path.join(BUILD, "atrium-fs"), "mkfs", db])
    run([os.path.join(BUILD, "atrium-fs"), "mount", db, mnt])
    try:
        targets = [("disk", disk), ("tmpfs", tmpfs), ("atrium-fs", mnt)]

        def each(label, work, reset):
            times = {t: [] for t, _ in targets}
            for _ in range(RUNS):
                for t, d in targets:
                    reset(d)
                    run("sync")
                    times[t].append(timed(lambda: work(d)))
            for base in ("disk", "tmpfs"):
                table.add(label, base, times[base], times["atrium-fs"])

        def clear(d):
            for name in os.listdir(d):
                p = os.path.join(d, name)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                else:
                    os.unlink(p)

        each("tar x of /usr/include", lambda d: run(["tar", "xf", tarball, "-C", d]), clear)

        def creates(d):
            for i in range(20):
                sub = os.path.join(d, "d%d" % i)
                os.mkdir(sub)
                for j in range(100):
                    with open(os.path.join(sub, "f%d" % j), "wb") as f:
                        f.write(b"x" * 4096)
        each("2,000 creates of 4 KiB", creates, clear)

        def seqwrite(d):
            run(["dd", "if=/dev/zero", "of=" + os.path.join(d, "big"), "bs=1M",
                 "count=256", "conv=fsync"], stderr=subprocess.DEVNULL)
        each("write 256 MiB, fsync", seqwrite, clear)

        def grep(d):
            subprocess.run(["grep", "-r", "-q", "zzzz-not-there", d])
        each("grep -r (warm)", grep, lambda d: None)
    finally:
        subprocess.run(["fusermount3", "-u", mnt])
        subprocess.run(["umount", tmpfs])


# --- ssh -----------------------------------------------------------------------

def ssh_cmd(key, port, user, *cmd):
    return ["ssh", "-p", str(port), "-i", key, "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
            "-o", "LogLevel=ERROR", "%s@127.0.0.1" % user] + list(cmd)


def start_openssh(tmp, key):
    port = free_port()
    hostkey = os.path.join(tmp, "sshd_hostkey")
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostkey])
    auth = os.path.join(tmp, "sshd_authorized_keys")
    shutil.copy(key + ".pub", auth)
    os.chmod(auth, 0o600)
    cfg = os.path.join(tmp, "sshd_config")
    with open(cfg, "w") as f:
        f.write("HostKey %s\nAuthorizedKeysFile %s\nPermitRootLogin prohibit-password\n"
                "PasswordAuthentication no\nUsePAM no\nStrictModes no\n"
                "ListenAddress 127.0.0.1\nPidFile none\n" % (hostkey, auth))
    os.makedirs("/run/sshd", exist_ok=True)
    p = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", cfg, "-p", str(port)],
                         stderr=subprocess.DEVNULL)
    wait_port(port)
    return p, port


def start_atriumd(tmp, key):
    port = free_port()
    data = os.path.join(tmp, "data")
    os.mkdir(data, 0o700)
    with open(key + ".pub") as f:
        pub = f.read().split()
    with open(os.path.join(data, "authorized_keys"), "w") as f:
        f.write("%s %s bench\n" % (pub[0], pub[1]))
    p = subprocess.Popen([os.path.join(BUILD, "atriumd"), "--data", data,
                          "--listen", "127.0.0.1:%d" % port, "--model-url",
                          "http://127.0.0.1:9"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    wait_port(port)
    return p, port


def host_fingerprint(hostkey):
    out = subprocess.run(["ssh-keygen", "-lf", hostkey], capture_output=True,
                         text=True, check=True).stdout
    return out.split()[1]


def pscp_upload(table, tmp, key, *servers):
    """PuTTY's SFTP upload (4 KiB writes, no cap but the window) of 16 MiB,
    to each (port, user, remote path, host key) in turn."""
    if not shutil.which("pscp"):
        print("pscp missing (putty-tools): skipping its upload", file=sys.stderr)
        return
    ppk = key + ".ppk"
    run(["puttygen", key, "-O", "private", "-o", ppk])
    src = os.path.join(tmp, "pscp.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(16 << 20))
    env = dict(os.environ, HOME=tmp)  # PuTTY keeps its settings under HOME
    results = [[] for _ in servers]
    for _ in range(RUNS):
        for (port, user, path, hostkey), out in zip(servers, results):
            cmd = ["pscp", "-sftp", "-q", "-batch", "-P", str(port), "-i", ppk,
                   "-hostkey", host_fingerprint(hostkey), src,
                   "%s@127.0.0.1:%s" % (user, path)]
            out.append(timed(lambda: run(cmd, env=env)))
    table.add("pscp SFTP upload of 16 MiB", "OpenSSH sshd", *results)


class Flood:
    """Hostile clients, each from its own loopback address: idle ones that
    hold TCP connections open (and reopen them when dropped), and ones that
    repeat handshakes up to the server's expensive step (key exchange and a
    refused key).  Bounded: they stop when the block ends."""

    def __init__(self, port, badkey, idle=10, handshakes=10):
        self.port, self.badkey = port, badkey
        self.idle, self.handshakes = idle, handshakes
        self.stop = False

    def _hold(self, source):
        held = []
        while not self.stop:
            held = [s for s in held if s.fileno() >= 0]
            while len(held) < 10 and not self.stop:
                s = socket.socket()
                try:
                    s.bind((source, 0))
                    s.connect(("127.0.0.1", self.port))
                    held.append(s)
                except OSError:
                    s.close()
                    break
            time.sleep(0.2)
            for s in list(held):
                s.setblocking(False)
                try:
                    if s.recv(1, socket.MSG_PEEK) == b"":
                        s.close()
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
        for s in held:
            s.close()

    def __enter__(self):
        import threading
        self.threads = [threading.Thread(target=self._hold,
                                         args=("127.0.8.%d" % (i + 1),))
                        for i in range(self.idle)]
        for t in self.threads:
            t.start()
        loop = ("while :; do ssh -p %d -b 127.0.9.$1 -i %s -o BatchMode=yes "
                "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                "-o LogLevel=QUIET x@127.0.0.1 true; done" % (self.port,
                                                             self.badkey))
        # At the lowest CPU priority: the attackers stand for other hosts,
        # and on this machine their own ssh processes would otherwise take
        # the CPU that the measured login (client and server) needs.
        self.procs = [subprocess.Popen(["nice", "-n", "19", "bash", "-c", loop,
                                        "flood", str(i + 1)],
                                       stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL,
                                       start_new_session=True)
                      for i in range(self.handshakes)]
        time.sleep(1)
        return self

    def __exit__(self, *exc):
        self.stop = True
        for p in self.procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        for t in self.threads:
            t.join()


def login_under_flood(table, tmp, key, port):
    """A user's `ssh HOST true` from an address of its own, alone and with
    twenty hostile clients (the issue's target: within 2x)."""
    badkey = os.path.join(tmp, "badkey")
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", badkey])
    login = ssh_cmd(key, port, "bench", "true")
    login[1:1] = ["-b", "127.0.10.1"]
    alone = [timed(lambda: run(login)) for _ in range(RUNS * 2)]
    with Flood(port, badkey):
        loaded = [timed(lambda: run(login, timeout=60)) for _ in range(RUNS * 2)]
    table.add("ssh HOST true, 20 hostile clients", "unloaded atriumd",
              alone, loaded)


def ssh_workloads(table, tmp):
    key = os.path.join(tmp, "key")
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
    sshd, sport = start_openssh(tmp, key)
    atriumd, aport = start_atriumd(tmp, key)
    try:
        run(ssh_cmd(key, aport, "bench", "true"))  # start the room once
        base, ours = [], []
        for _ in range(RUNS * 4):
            base.append(timed(lambda: run(ssh_cmd(key, sport, "root", "true"))))
            ours.append(timed(lambda: run(ssh_cmd(key, aport, "bench", "true"))))
        table.add("ssh HOST true", "OpenSSH sshd", base, ours)
        size = 256 << 20
        base, ours = [], []
        for _ in range(RUNS):
            for port, user, out in ((sport, "root", base), (aport, "bench", ours)):
                src = subprocess.Popen(["head", "-c", str(size), "/dev/zero"],
                                       stdout=subprocess.PIPE)
                t = timed(lambda: run(ssh_cmd(key, port, user, "cat > /dev/null"),
                                      stdin=src.stdout))
                src.wait()
                out.append(size / t / 1e6)
        table.add("256 MiB through exec stdin", "OpenSSH sshd", base, ours, " MB/s")
        login_under_flood(table, tmp, key, aport)
        pscp_upload(table, tmp, key, (sport, "root", "/tmp/bench-pscp",
                                      os.path.join(tmp, "sshd_hostkey")),
                    (aport, "bench", "pscp.bin",
                     os.path.join(tmp, "data", "hostkey")))
    finally:
        for p in (sshd, atriumd):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    if os.geteuid() != 0:
        sys.exit("make bench needs root (FUSE mounts, tmpfs, sshd)")
    table = Table()
    with tempfile.TemporaryDirectory(prefix="atrium-bench-") as tmp:
        print("filesystem workloads (%d runs each)..." % RUNS, file=sys.stderr)
        fs_workloads(table, tmp)
        print("ssh workloads...", file=sys.stderr)
        ssh_workloads(table, tmp)
    table.show()


if __name__ == "__main__":
    main()
