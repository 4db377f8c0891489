#!/usr/bin/python3
"""make bench: Atrium's speed beside its baselines, measured in one run.

Each workload runs on the baseline and on Atrium alternately, several times;
the table shows medians and the ratio (Atrium / baseline; lower is better
for times).  Nothing here asserts: the numbers are for people to read.

  filesystem  a native directory (the disk, and tmpfs) beside an atrium-fs mount
  ssh         OpenSSH's sshd on a loopback port beside atriumd

Rows with a target (issue 7's, for the filesystem) say pass or MISS beside
it; notes under the table give atrium-fs's peak RSS and its database's size
against the data (atrium-fs du).

Settings (environment):
  BENCH_RUNS=5        runs of each workload (medians are shown)
  BENCH_HEAVY_RUNS=3  runs of the heavy ones: git clone, make -j2, the 1 GiB
                      sequential I/O and the random reads (at most BENCH_RUNS)
  BENCH_SMALL=1       every filesystem workload 10x smaller, for a quick run
  BENCH_LS_ENTRIES    entries of the ls -l directory (100000, or 10000 small)
  BENCH_PARTS="fs ssh"  which parts to run
  BENCH_FS_STEPS      the filesystem steps to run, comma-separated (all when
                      unset): tar x, git clone, creates, ls -l, make -j2,
                      sequential I/O, random read (which reads the file
                      that sequential I/O leaves)
"""
import json
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
# The heavy workloads (git clone, make, 1 GiB of I/O, random reads) run
# fewer times, to keep the whole of make bench under about 20 minutes.
HEAVY_RUNS = int(os.environ.get("BENCH_HEAVY_RUNS", str(min(RUNS, 3))))
# BENCH_SMALL=1 scales every filesystem workload down 10x for a quick run.
SCALE = 10 if os.environ.get("BENCH_SMALL") == "1" else 1
LS_ENTRIES = int(os.environ.get("BENCH_LS_ENTRIES", str(100000 // SCALE)))


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


class Target:
    """An issue's target for one row, shown beside its ratio: the row passes
    when check(baseline, atrium, ratio) holds."""

    def __init__(self, text, check):
        self.text, self.check = text, check


def within(x):
    """A time at most x times the baseline's."""
    return Target("<= %gx" % x, lambda b, o, r: r <= x)


def rate_within(x):
    """A rate at least the baseline's divided by x."""
    return Target(">= 1/%gx" % x if x != 1 else ">= 1x",
                  lambda b, o, r: r >= 1 / x)


def at_least(value, unit):
    """An absolute rate of at least value."""
    return Target(">= %g%s" % (value, unit), lambda b, o, r: o >= value)


class Table:
    def __init__(self):
        self.rows = []
        self.notes = []

    def add(self, name, base_name, base, ours, unit="s", target=None):
        b, o = statistics.median(base), statistics.median(ours)
        r = o / b if b else float("nan")
        self.rows.append((name, base_name, b, o, r, unit, target))
        verdict = ""
        if target:
            verdict = "  target %s: %s" % (target.text,
                                          "pass" if target.check(b, o, r) else "MISS")
        print("  %-34s %s %.4g%s  atrium %.4g%s%s" % (name, base_name, b, unit, o,
                                                      unit, verdict), file=sys.stderr)

    def note(self, text):
        """A line printed under the table (peak RSS, database size...)."""
        self.notes.append(text)
        print("  " + text, file=sys.stderr)

    def show(self):
        print()
        print("ratio = atrium / baseline: below 1 is faster for times (s),"
              " above 1 is faster for rates (/s, MB/s).  Medians.")
        print()
        print("| workload | baseline | baseline | atrium | ratio | target | |")
        print("|---|---|---:|---:|---:|---|---|")
        for name, bn, b, o, r, unit, t in self.rows:
            verdict = ("pass" if t.check(b, o, r) else "**MISS**") if t else ""
            print("| %s | %s | %.3g %s | %.3g %s | %.2fx | %s | %s |" % (
                name, bn, b, unit.strip(), o, unit.strip(), r,
                t.text if t else "", verdict))
        if self.notes:
            print()
            for n in self.notes:
                print("- " + n)


# --- filesystem --------------------------------------------------------------
#
# Every workload runs on a directory of the disk (the file system holding
# the bench's tmp dir), on a tmpfs and on an atrium-fs mount whose database
# lives on that same disk, alternately, RUNS (or HEAVY_RUNS) times.  The
# targets are issue 7's, on the workloads of shared/ROADMAP.md.

def fio(*args):
    """Run fio with args; its JSON report's first job."""
    out = subprocess.run(["fio", "--name=bench", "--ioengine=psync",
                          "--output-format=json"] + list(args),
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out[out.index("{"):])["jobs"][0]


def drop_file_cache(*paths):
    """Drop the clean page-cache pages of these files only (not the whole
    machine's, which other work on it would feel)."""
    for p in paths:
        if not os.path.exists(p):
            continue
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_through(path):
    """Read a file once, so that the host's page cache holds it."""
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def proc_field(pid, name, field):
    """An integer field of /proc/PID/NAME ("VmHWM:" of status, in kB; or
    "write_bytes:" of io), or 0 when the process is gone."""
    try:
        with open("/proc/%d/%s" % (pid, name)) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class FsTargets:
    """The three directories the workloads run in, and the atrium-fs mount
    (remounted for cold reads), whose daemons' peak RSS is kept."""

    def __init__(self, tmp):
        self.db = os.path.join(tmp, "ws.db")
        self.mnt = os.path.join(tmp, "mnt")
        self.dirs = {"disk": os.path.join(tmp, "disk"),
                     "tmpfs": os.path.join(tmp, "tmpfs"),
                     "atrium-fs": self.mnt}
        self.pid = 0
        self.hwm_kb = 0

    def __enter__(self):
        for d in self.dirs.values():
            os.mkdir(d)
        run(["mount", "-t", "tmpfs", "-o", "size=4g", "bench", self.dirs["tmpfs"]])
        run([os.path.join(BUILD, "atrium-fs"), "mkfs", self.db])
        self.mount()
        return self

    def __exit__(self, *exc):
        self.unmount()
        subprocess.run(["umount", self.dirs["tmpfs"]])

    def mount(self):
        run([os.path.join(BUILD, "atrium-fs"), "mount", self.db, self.mnt])
        with open(self.db + "-mount") as f:
            self.pid = int(f.readline())

    def sample(self):
        """Keep the daemon's peak RSS (VmHWM: the kernel's high-water mark
        of its resident set, so no peak between samples is missed)."""
        self.hwm_kb = max(self.hwm_kb, proc_field(self.pid, "status", "VmHWM:"))

    def unmount(self):
        if not self.pid:
            return
        self.sample()
        subprocess.run(["fusermount3", "-u", self.mnt])
        end = time.time() + 60
        while os.path.exists("/proc/%d" % self.pid) and time.time() < end:
            time.sleep(0.05)
        self.pid = 0

    def remount(self):
        self.unmount()
        self.mount()


def clear(d):
    for name in os.listdir(d):
        p = os.path.join(d, name)
        if os.path.isdir(p) and not os.path.islink(p):
            run(["rm", "-rf", p])
        else:
            os.unlink(p)


def each(fst, work, reset, runs=None):
    """Run work(dir) on every target, alternately, runs times: the times
    (or what work returns, when it returns a number) per target."""
    out = {t: [] for t in fst.dirs}
    for _ in range(runs or RUNS):
        for t, d in fst.dirs.items():
            reset(d)
            run("sync")
            t0 = time.perf_counter()
            r = work(d)
            took = time.perf_counter() - t0
            out[t].append(r if isinstance(r, (int, float)) else took)
        fst.sample()
    return out


def add_rows(table, label, res, unit="s", disk=None, tmpfs=None):
    """Atrium beside the disk and beside tmpfs, each with its target."""
    table.add(label, "disk", res["disk"], res["atrium-fs"], unit, disk)
    table.add(label, "tmpfs", res["tmpfs"], res["atrium-fs"], unit, tmpfs)


def make_tarball(tmp):
    """/usr/include as a tar (every SCALE-th file when BENCH_SMALL)."""
    tarball = os.path.join(tmp, "include.tar")
    if SCALE == 1:
        run(["tar", "cf", tarball, "-C", "/usr", "include"])
        return tarball
    files = []
    for dirpath, _, names in os.walk("/usr/include"):
        files += [os.path.relpath(os.path.join(dirpath, n), "/usr") for n in names]
    listing = os.path.join(tmp, "include.list")
    with open(listing, "w") as f:
        f.write("\n".join(sorted(files)[::SCALE]) + "\n")
    run(["tar", "cf", tarball, "-C", "/usr", "-T", listing])
    return tarball


def tar_and_grep(table, fst, tmp):
    tarball = make_tarball(tmp)
    res = each(fst, lambda d: run(["tar", "xf", tarball, "-C", d]), clear)
    add_rows(table, "tar x of /usr/include", res, disk=within(4))
    # The trees of the last run stay: grep reads them warm.
    res = each(fst, lambda d: subprocess.run(["grep", "-r", "-q",
                                              "zzzz-not-there", d]), lambda d: None)
    add_rows(table, "grep -r (warm)", res)
    for d in fst.dirs.values():
        clear(d)


def make_git_repo(path, files):
    """A repository of files small text files in 50 directories, one commit."""
    os.makedirs(path)
    for i in range(files):
        sub = os.path.join(path, "src%02d" % (i % 50))
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, "file%05d.txt" % i), "w") as f:
            f.write("".join("line %d of file %d: %s\n" % (j, i, "x" * (i % 61))
                            for j in range(20 + i % 80)))
    git = ["git", "-C", path, "-c", "user.name=bench", "-c",
           "user.email=bench@localhost"]
    run(git + ["init", "-q"])
    run(git + ["add", "-A"])
    run(git + ["commit", "-q", "-m", "bench"])


def git_clone(table, fst, tmp):
    src = os.path.join(tmp, "repo")
    make_git_repo(src, 3000 // SCALE)
    res = each(fst, lambda d: run(["git", "clone", "-q", "--no-local", src,
                                   os.path.join(d, "clone")]), clear, HEAVY_RUNS)
    add_rows(table, "git clone --no-local, %d files" % (3000 // SCALE), res,
             disk=within(1.6))


def creates_stat_rm(table, fst):
    """Creates of 4 KiB files in 100 directories, stat of each (cached),
    then rm -rf of the tree, one after the other in each run."""
    dirs, per = 100 // SCALE, 100
    n = dirs * per
    block = b"x" * 4096
    paths = [os.path.join("tree", "d%03d" % i, "f%03d" % j)
             for i in range(dirs) for j in range(per)]
    res = {k: {t: [] for t in fst.dirs} for k in ("create", "stat", "rm")}
    for _ in range(RUNS):
        for t, d in fst.dirs.items():
            clear(d)
            run("sync")
            t0 = time.perf_counter()
            for i in range(dirs):
                os.makedirs(os.path.join(d, "tree", "d%03d" % i))
            for p in paths:
                fd = os.open(os.path.join(d, p), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
                os.write(fd, block)
                os.close(fd)
            res["create"][t].append(n / (time.perf_counter() - t0))
            full = [os.path.join(d, p) for p in paths]
            for p in full:
                os.stat(p)
            t0 = time.perf_counter()
            for _ in range(5):
                for p in full:
                    os.stat(p)
            res["stat"][t].append(time.perf_counter() - t0)
            run("sync")
            t0 = time.perf_counter()
            run(["rm", "-rf", os.path.join(d, "tree")])
            res["rm"][t].append(time.perf_counter() - t0)
        fst.sample()
    add_rows(table, "%d creates of 4 KiB in %d dirs" % (n, dirs), res["create"],
             "/s", disk=at_least(20000, "/s"))
    add_rows(table, "stat x5 of %d cached files" % n, res["stat"], tmpfs=within(2))
    add_rows(table, "rm -rf of a %d-file tree" % n, res["rm"], disk=within(3))


def ls_big_dir(table, fst):
    """ls -l of one directory of LS_ENTRIES empty files (made once)."""
    for d in fst.dirs.values():
        big = os.path.join(d, "big")
        os.mkdir(big)
        for i in range(LS_ENTRIES):
            os.close(os.open(os.path.join(big, "entry%06d" % i),
                             os.O_CREAT | os.O_WRONLY, 0o644))
    res = each(fst, lambda d: subprocess.run(["ls", "-l", os.path.join(d, "big")],
                                             stdout=subprocess.DEVNULL, check=True),
               lambda d: None)
    add_rows(table, "ls -l of %d entries" % LS_ENTRIES, res, disk=within(3))
    for d in fst.dirs.values():
        clear(d)


def make_c_project(path, files):
    """files small C files, a header and a Makefile that links them."""
    os.makedirs(path)
    with open(os.path.join(path, "Makefile"), "w") as f:
        f.write("SRCS := $(wildcard *.c)\nprog: $(SRCS:.c=.o)\n\t$(CC) -o $@ $^\n"
                "%.o: %.c common.h\n\t$(CC) -O1 -Wall -c -o $@ $<\n")
    with open(os.path.join(path, "common.h"), "w") as f:
        f.write("".join("int f%d(int x);\n" % i for i in range(files)))
    for i in range(files):
        with open(os.path.join(path, "f%d.c" % i), "w") as f:
            f.write('#include "common.h"\nint f%d(int x)\n{\n\tint s = 0;\n'
                    '\tfor (int i = 0; i < x; i++)\n\t\ts += i * %d;\n'
                    '\treturn s;\n}\n' % (i, i + 1))
    with open(os.path.join(path, "main.c"), "w") as f:
        f.write('#include "common.h"\nint main(void)\n{\n\tint s = 0;\n%s'
                '\treturn s & 1;\n}\n' % "".join("\ts += f%d(%d);\n" % (i, i)
                                                 for i in range(files)))


def make_j2(table, fst, tmp):
    src = os.path.join(tmp, "cproj")
    make_c_project(src, 300 // SCALE)
    # The outer make's jobserver does not reach this one: a make of its own.
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "CFLAGS")}

    def reset(d):
        clear(d)
        run(["cp", "-a", src, os.path.join(d, "proj")])
    res = each(fst, lambda d: run(["make", "-s", "-j2", "-C", os.path.join(d, "proj")],
                                  env=env), reset, HEAVY_RUNS)
    add_rows(table, "make -j2, %d C files" % (300 // SCALE), res, disk=within(1.5))
    for d in fst.dirs.values():
        clear(d)


def seq_rw_runs(fst, size):
    """Per run and target: write (fio, 1 MiB, end_fsync), read twice warm,
    read cold; on atrium-fs a cold read after remount, and one more with its
    database's pages dropped from the host's cache too."""
    keys = ("write", "warm", "cold", "colddb", "wamp")
    res = {k: {t: [] for t in fst.dirs} for k in keys}
    for _ in range(HEAVY_RUNS):
        for t, d in fst.dirs.items():
            clear(d)
            run("sync")
            f = os.path.join(d, "seq")
            common = ["--filename=" + f, "--size=%d" % size, "--bs=1M"]
            io0 = proc_field(fst.pid, "io", "write_bytes:")
            # fio's own time: from the first write to the end of its fsync
            # (its start-up, a third of a second, left out).
            job = fio(*common, "--rw=write", "--end_fsync=1", "--fallocate=none")
            res["write"][t].append(job["write"]["bw_bytes"] / 1e6)
            if t == "atrium-fs":
                res["wamp"][t].append((proc_field(fst.pid, "io", "write_bytes:") - io0) / size)
            for _ in range(2):
                job = fio(*common, "--rw=read", "--invalidate=0")
            res["warm"][t].append(job["read"]["bw_bytes"] / 1e6)
            if t == "atrium-fs":
                fst.remount()
            elif t == "disk":
                drop_file_cache(f)
            job = fio(*common, "--rw=read", "--invalidate=1")
            res["cold"][t].append(job["read"]["bw_bytes"] / 1e6)
            if t == "atrium-fs":
                fst.remount()
                drop_file_cache(fst.db, fst.db + "-wal")
                job = fio(*common, "--rw=read", "--invalidate=1")
                res["colddb"][t].append(job["read"]["bw_bytes"] / 1e6)
        fst.sample()
    return res


def seq_rw(table, fst):
    size = (1 << 30) // SCALE
    res = seq_rw_runs(fst, size)
    label = "%d MiB" % (size >> 20)
    add_rows(table, "seq write %s (fio 1M, end_fsync)" % label, res["write"],
             " MB/s", disk=at_least(700, " MB/s"))
    add_rows(table, "seq read %s, warm" % label, res["warm"], " MB/s",
             tmpfs=rate_within(1.5))
    table.add("seq read %s, cold (remount)" % label, "disk, uncached",
              res["cold"]["disk"], res["cold"]["atrium-fs"], " MB/s",
              at_least(1000, " MB/s"))
    table.add("seq read %s, cold, DB uncached too" % label, "disk, uncached",
              res["cold"]["disk"], res["colddb"]["atrium-fs"], " MB/s")
    table.note("atrium-fs daemon's disk writes during the %s write: %.2fx the "
               "data (median; the WAL and any checkpoint during the write, not later ones)"
               % (label, statistics.median(res["wamp"]["atrium-fs"])))


def build_passthrough(tmp):
    """libfuse's passthrough_ll, built from libfuse3-dev's examples; None
    when they are missing.  Debian ships no passthrough_hp (a C++ example
    that is not among libfuse3-dev's examples), so this low-level C
    passthrough of the same library stands in for it."""
    src = "/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c"
    if not os.path.exists(src):
        return None
    out = os.path.join(tmp, "passthrough_ll")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"],
                           capture_output=True, text=True).stdout.split()
    r = subprocess.run(["cc", "-O2", "-o", out, src] + flags,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out if r.returncode == 0 else None


def random_read(table, fst, tmp):
    """fio 4 KiB random reads of seq_rw's file, starting with its pages
    dropped from the kernel's cache of the file (so that FUSE requests
    reach the daemon); FUSE daemons' backing files are in the host's page
    cache."""
    size = (1 << 30) // SCALE
    secs = "1" if SCALE > 1 else "3"
    ptl = build_passthrough(tmp)
    pmnt = os.path.join(tmp, "passthrough")
    targets = dict(fst.dirs)
    if ptl:
        os.mkdir(pmnt)
        run([ptl, "-o", "source=" + fst.dirs["disk"], pmnt])
        targets["passthrough_ll"] = pmnt
    res = {t: [] for t in targets}
    try:
        for _ in range(HEAVY_RUNS):
            for t, d in targets.items():
                if t == "passthrough_ll":
                    read_through(os.path.join(fst.dirs["disk"], "seq"))
                elif t == "atrium-fs":
                    read_through(fst.db)
                job = fio("--filename=" + os.path.join(d, "seq"), "--size=%d" % size,
                          "--bs=4k", "--rw=randread", "--invalidate=1", "--norandommap",
                          "--randrepeat=0", "--time_based", "--runtime=" + secs)
                res[t].append(job["read"]["iops"])
            fst.sample()
    finally:
        if ptl:
            subprocess.run(["fusermount3", "-u", pmnt])
    label = "4 KiB random read (fio)"
    if ptl:
        table.add(label, "passthrough_ll", res["passthrough_ll"], res["atrium-fs"],
                  " IOPS", rate_within(1))
    else:
        table.note("no libfuse passthrough available: 4 KiB random read is "
                   "compared with the disk only")
    table.add(label, "disk, uncached", res["disk"], res["atrium-fs"], " IOPS",
              None if ptl else rate_within(1))
    table.add(label, "tmpfs", res["tmpfs"], res["atrium-fs"], " IOPS")


def database_size(table, fst):
    """atrium-fs du of the database once unmounted: its size against the
    data it holds at the end of the run."""
    out = subprocess.run([os.path.join(BUILD, "atrium-fs"), "du", fst.db],
                         capture_output=True, text=True, check=True).stdout
    u = dict(line.split(":", 1) for line in out.splitlines())
    data, db, wal = (int(u[k].split()[0]) for k in ("data stored", "database", "wal"))
    table.note("atrium-fs du at the end: %.1f MB of file data stored, database "
               "%.1f MB + WAL %.1f MB (overhead %s; freed pages of earlier "
               "workloads are kept by SQLite for reuse)"
               % (data / 1e6, db / 1e6, wal / 1e6, u["overhead"].strip()))


def fs_workloads(table, tmp):
    with FsTargets(tmp) as fst:
        steps = [("tar x, grep", lambda: tar_and_grep(table, fst, tmp)),
                 ("git clone", lambda: git_clone(table, fst, tmp)),
                 ("creates, stat, rm", lambda: creates_stat_rm(table, fst)),
                 ("ls -l", lambda: ls_big_dir(table, fst)),
                 ("make -j2", lambda: make_j2(table, fst, tmp)),
                 ("sequential I/O", lambda: seq_rw(table, fst)),
                 ("random read", lambda: random_read(table, fst, tmp))]
        only = os.environ.get("BENCH_FS_STEPS")
        if only:
            wanted = [w.strip() for w in only.split(",")]
            steps = [s for s in steps if any(s[0].startswith(w) for w in wanted)]
        for name, step in steps:
            t0 = time.time()
            print(" %s..." % name, file=sys.stderr)
            step()
            print(" %s: %.0f s" % (name, time.time() - t0), file=sys.stderr)
    hwm = fst.hwm_kb / 1024
    table.note("atrium-fs peak RSS (VmHWM, largest of its daemons this run): "
               "%.1f MiB (bound 128 MiB: %s)" % (hwm, "pass" if hwm <= 128 else "**MISS**"))
    database_size(table, fst)


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
    parts = os.environ.get("BENCH_PARTS", "fs ssh").split()
    with tempfile.TemporaryDirectory(prefix="atrium-bench-") as tmp:
        if "fs" in parts:
            print("filesystem workloads (%d runs, %d of the heavy ones%s)..."
                  % (RUNS, HEAVY_RUNS, ", 1/10 size" if SCALE > 1 else ""),
                  file=sys.stderr)
            fs_workloads(table, tmp)
        if "ssh" in parts:
            print("ssh workloads...", file=sys.stderr)
            ssh_workloads(table, tmp)
    table.show()


if __name__ == "__main__":
    main()
