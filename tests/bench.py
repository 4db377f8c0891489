#!/usr/bin/python3
"""make bench: Atrium's speed beside its baselines, measured in one run.

Each workload runs on the baseline and on Atrium alternately, several times;
the table shows medians and the ratio (Atrium / baseline; lower is better
for times).  Nothing here asserts: the numbers are for people to read.

  filesystem  a native directory (the disk, and tmpfs) beside an atrium-fs mount;
              creates, the sequential write and random reads also beside
              libfuse's passthrough_ll (what FUSE itself allows on this
              kernel)
  ssh         OpenSSH's sshd on a loopback port beside atriumd; a login
              alone and under 20 hostile clients (the Flood class: raw
              handshakes from tests/ssh_flood.py, then OpenSSH clients),
              with atriumd's CPU per login and during the flood
  chat        one room's interactive members (issue 8's scale): a line's
              latency to 200 members (beside 1 member), the same with 10
              members stopped, and to the reading ones of 1,000 members;
              atriumd's memory per idle member with 1,000
              (absolute targets; see "chat" below for how each is measured)
  agent       one room's atrium-agent against the scripted model server:
              its own time per step, a streamed delta's latency to a
              client, its idle memory; and atriumd's CPU with 100 idle
              sessions (absolute targets, issue 9's; see "agent" below)
  http        atriumd-http beside atriumd's SSH side: a command's latency
              and throughput over HTTP beside over SSH, and a chat line's
              delay to 200 WebSocket clients (see "http" below)

Rows with a target (issue 7's, for the filesystem) say pass or MISS beside
it; notes under the table give atrium-fs's peak RSS and its database's size
against the data (atrium-fs du).

Settings (environment):
  BENCH_RUNS=5        runs of each workload (medians are shown)
  BENCH_HEAVY_RUNS=3  runs of the heavy ones: git clone, make -j2, the 1 GiB
                      sequential I/O and the random reads (at most BENCH_RUNS)
  BENCH_SMALL=1       every filesystem workload 10x smaller, for a quick run
  BENCH_LS_ENTRIES    entries of the ls -l directory (100000, or 10000 small)
  BENCH_PARTS="fs ssh chat agent http replicate"  which parts to run
  BENCH_REPLICATE_COMMITS=200  the replicate part's fsynced writes per run
  BENCH_AGENT_STEPS=200, BENCH_AGENT_DELTAS=200, BENCH_IDLE_SESSIONS=100
                      the agent part's steps, streamed deltas, idle sessions
  BENCH_CHAT_MEMBERS=200, BENCH_CHAT_IDLE=1000, BENCH_CHAT_LINES=30
                      the chat part's members, idle members, lines per row
                      (the last also the http part's WebSocket rows')
  BENCH_HTTP_EXECS=20, BENCH_HTTP_WS=200
                      the http part's runs of `true`, WebSocket clients
  BENCH_FS="tar git creates ls make seq random snap"  which filesystem
                      workloads (random reads the file seq wrote; snap times
                      snapshot, restore and drop in databases of its own)
"""
import base64
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PYTHON = sys.executable or "/usr/bin/python3"

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


def at_most(value, unit):
    """An absolute time or size of at most value."""
    return Target("<= %g%s" % (value, unit), lambda b, o, r: o <= value)


def number(x, unit):
    """x with its unit, or nothing for a row without a baseline (NaN)."""
    return "%.3g%s" % (x, unit) if x == x else "-"


class Table:
    def __init__(self):
        self.rows = []
        self.notes = []

    def add(self, name, base_name, base, ours, unit="s", target=None):
        # base None: a row with a target alone and no baseline.
        b = statistics.median(base) if base else float("nan")
        o = statistics.median(ours)
        r = o / b if b else float("nan")
        self.rows.append((name, base_name, b, o, r, unit, target))
        verdict = ""
        if target:
            verdict = "  target %s: %s" % (target.text,
                                          "pass" if target.check(b, o, r) else "MISS")
        print("  %-34s %s %s  atrium %.4g%s%s" % (name, base_name, number(b, unit),
                                                  o, unit, verdict), file=sys.stderr)

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
            print("| %s | %s | %s | %.3g %s | %s | %s | %s |" % (
                name, bn, number(b, " " + unit.strip()), o, unit.strip(),
                "%.2fx" % r if r == r else "", t.text if t else "", verdict))
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


def create_tree(d, dirs, paths, block):
    """The creates workload in d: dirs directories, then a file of block
    at each of paths (relative to d)."""
    for i in range(dirs):
        os.makedirs(os.path.join(d, "tree", "d%03d" % i))
    for p in paths:
        fd = os.open(os.path.join(d, p), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
        os.write(fd, block)
        os.close(fd)


def getxattr_time(path, secs=1.0):
    """Median time of one getxattr(2) of an attribute that path lacks, in
    batches of 200 calls for secs.  On an atrium-fs mount the daemon
    answers it from memory (it knows the file has no extended attributes),
    so it is one FUSE round trip and little else; on a directory of the
    disk, the system call's own cost."""
    batches = []
    end = time.perf_counter() + secs
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        for _ in range(200):
            try:
                os.getxattr(path, "user.atrium-bench-absent")
            except OSError:
                pass
        batches.append((time.perf_counter() - t0) / 200)
    return statistics.median(batches)


# The requests a create of a small file waits for, all sent by the kernel
# (atrium-fs(8), WHAT A SMALL FILE COSTS): lookup, create, the
# security.capability getxattr of the first write, the write at close and
# the directory's getattr.
CREATE_ROUND_TRIPS = 5


def round_trip_note(table, fst):
    """The FUSE round trip of this machine, and the create rate it leaves
    any FUSE daemon that has extended attributes and lets the kernel check
    permissions: what bounds the creates row here."""
    cost = {}
    for t in ("disk", "atrium-fs"):
        p = os.path.join(fst.dirs[t], "roundtrip")
        open(p, "w").close()
        cost[t] = getxattr_time(p)
        os.unlink(p)
    trip = max(cost["atrium-fs"] - cost["disk"], 1e-9)
    table.note("FUSE round trip (a getxattr the daemon answers from memory, "
               "less the same call on the disk): %.1f us; at %d waited "
               "requests a create, at most %.0f creates/s for any such FUSE "
               "daemon on this machine (20000/s leaves %.0f us a round "
               "trip, none for the work of the program or of the daemon)"
               % (trip * 1e6, CREATE_ROUND_TRIPS, 1 / (CREATE_ROUND_TRIPS * trip),
                  1e6 / (20000 * CREATE_ROUND_TRIPS)))


def creates_stat_rm(table, fst, tmp):
    """Creates of 4 KiB files in 100 directories, stat of each (cached),
    then rm -rf of the tree, one after the other in each run.  The creates
    also run on libfuse's passthrough_ll over a directory of the disk: the
    rate FUSE itself allows here, round trips and all."""
    dirs, per = 100 // SCALE, 100
    n = dirs * per
    block = b"x" * 4096
    paths = [os.path.join("tree", "d%03d" % i, "f%03d" % j)
             for i in range(dirs) for j in range(per)]
    res = {k: {t: [] for t in fst.dirs} for k in ("create", "stat", "rm")}
    res["create"]["passthrough_ll"] = []
    with Passthrough(tmp, "ptcreates", os.path.join(tmp, "ptsource")) as pt:
        for _ in range(RUNS):
            for t, d in fst.dirs.items():
                clear(d)
                run("sync")
                t0 = time.perf_counter()
                create_tree(d, dirs, paths, block)
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
            if pt.mnt:
                clear(pt.mnt)
                run("sync")
                res["create"]["passthrough_ll"].append(
                    n / timed(lambda: create_tree(pt.mnt, dirs, paths, block)))
                clear(pt.mnt)
            fst.sample()
    round_trip_note(table, fst)
    label = "%d creates of 4 KiB in %d dirs" % (n, dirs)
    add_rows(table, label, res["create"], "/s", disk=at_least(20000, "/s"))
    if pt.mnt:
        table.add(label, "passthrough_ll", res["create"]["passthrough_ll"],
                  res["create"]["atrium-fs"], "/s")
    else:
        table.note("no libfuse passthrough available: creates are compared "
                   "with the disk and tmpfs only")
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


def seq_write_passthrough(pt, size):
    """The write of seq_rw_runs on passthrough_ll (pt, with the writeback
    cache as atrium-fs has it): the rate at which FUSE itself takes a big
    write here, whatever a daemon stores.  MB/s."""
    clear(pt.mnt)
    run("sync")
    job = fio("--filename=" + os.path.join(pt.mnt, "seq"), "--size=%d" % size,
              "--bs=1M", "--rw=write", "--end_fsync=1", "--fallocate=none")
    # Through the mount, so that the kernel lets go of the file's pages.
    clear(pt.mnt)
    run("sync")
    return job["write"]["bw_bytes"] / 1e6


def seq_rw_runs(fst, size, pt):
    """Per run and target: write (fio, 1 MiB, end_fsync), read twice warm,
    read cold; on atrium-fs a cold read after remount, and one more with its
    database's pages dropped from the host's cache too; the write alone on
    passthrough_ll (pt) when it is mounted."""
    keys = ("write", "warm", "cold", "colddb", "wamp")
    res = {k: {t: [] for t in fst.dirs} for k in keys}
    res["ptwrite"] = []
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
        if pt.mnt:
            res["ptwrite"].append(seq_write_passthrough(pt, size))
        fst.sample()
    return res


def seq_rw(table, fst, tmp):
    size = (1 << 30) // SCALE
    with Passthrough(tmp, "ptseq", os.path.join(tmp, "ptseqsource"),
                     writeback=True) as pt:
        res = seq_rw_runs(fst, size, pt)
    label = "%d MiB" % (size >> 20)
    add_rows(table, "seq write %s (fio 1M, end_fsync)" % label, res["write"],
             " MB/s", disk=at_least(700, " MB/s"))
    if res["ptwrite"]:
        table.add("seq write %s (fio 1M, end_fsync)" % label, "passthrough_ll",
                  res["ptwrite"], res["write"]["atrium-fs"], " MB/s")
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
    out = os.path.join(tmp, "passthrough_ll")
    if os.path.exists(out):
        return out
    if not os.path.exists(src):
        return None
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"],
                           capture_output=True, text=True).stdout.split()
    r = subprocess.run(["cc", "-O2", "-o", out, src] + flags,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out if r.returncode == 0 else None


def cpu_seconds(pid):
    """A process's CPU time so far (utime + stime of /proc/PID/stat), in
    seconds; 0 when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def raise_nofile():
    """Let a child open as many files as the hard limit allows:
    passthrough_ll holds a descriptor per inode the kernel knows, over
    10,000 in the creates workload, past the usual soft limit of 1,024."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Passthrough:
    """passthrough_ll mounted at tmp/NAME over source (a directory of the
    disk): what FUSE itself allows on this kernel and libfuse, with the
    example's own defaults (no writeback cache, 1 s timeouts, no xattrs),
    or with the writeback cache that atrium-fs mounts with (writeback).
    It runs in the foreground of a child whose pid is its daemon's (for its
    CPU time).  mnt is None when no passthrough could be built."""

    def __init__(self, tmp, name, source, writeback=False):
        self.tmp, self.source = tmp, source
        self.opts = "source=" + source + (",writeback" if writeback else "")
        self.path = os.path.join(tmp, name)
        self.mnt = None
        self.proc = None

    def __enter__(self):
        ptl = build_passthrough(self.tmp)
        if ptl:
            os.makedirs(self.path, exist_ok=True)
            os.makedirs(self.source, exist_ok=True)
            self.proc = subprocess.Popen(
                [ptl, "-f", "-o", self.opts, self.path],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                preexec_fn=raise_nofile)
            end = time.time() + 10
            while not os.path.ismount(self.path) and time.time() < end:
                time.sleep(0.05)
            self.mnt = self.path if os.path.ismount(self.path) else None
        return self

    def __exit__(self, *exc):
        if self.proc:
            subprocess.run(["fusermount3", "-u", self.path])
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def random_read(table, fst, tmp):
    """fio 4 KiB random reads of seq_rw's file, starting with its pages
    dropped from the kernel's cache of the file (so that FUSE requests
    reach the daemon); FUSE daemons' backing files are in the host's page
    cache.  Beside IOPS, each FUSE daemon's CPU time (user and system)
    over the run per read fio made: the work a read costs the daemon,
    which a loaded machine changes less than it changes IOPS."""
    size = (1 << 30) // SCALE
    secs = "1" if SCALE > 1 else "3"
    with Passthrough(tmp, "passthrough", fst.dirs["disk"]) as pt:
        targets = dict(fst.dirs)
        pids = {"atrium-fs": lambda: fst.pid}
        if pt.mnt:
            targets["passthrough_ll"] = pt.mnt
            pids["passthrough_ll"] = lambda: pt.proc.pid
        res = {t: [] for t in targets}
        cpu = {t: [] for t in pids}
        for _ in range(HEAVY_RUNS):
            for t, d in targets.items():
                if t == "passthrough_ll":
                    read_through(os.path.join(fst.dirs["disk"], "seq"))
                elif t == "atrium-fs":
                    read_through(fst.db)
                c0 = cpu_seconds(pids[t]()) if t in pids else 0
                job = fio("--filename=" + os.path.join(d, "seq"), "--size=%d" % size,
                          "--bs=4k", "--rw=randread", "--invalidate=1", "--norandommap",
                          "--randrepeat=0", "--time_based", "--runtime=" + secs)
                res[t].append(job["read"]["iops"])
                if t in pids and job["read"]["total_ios"]:
                    cpu[t].append((cpu_seconds(pids[t]()) - c0) * 1e6 /
                                  job["read"]["total_ios"])
            fst.sample()
    table.note("daemon CPU per 4 KiB random read (user + system over the fio "
               "run, per read fio made; median): " +
               ", ".join("%s %.1f us" % (t, statistics.median(v))
                         for t, v in cpu.items() if v))
    label = "4 KiB random read (fio)"
    if pt.mnt:
        table.add(label, "passthrough_ll", res["passthrough_ll"], res["atrium-fs"],
                  " IOPS", rate_within(1))
    else:
        table.note("no libfuse passthrough available: 4 KiB random read is "
                   "compared with the disk only")
    table.add(label, "disk, uncached", res["disk"], res["atrium-fs"], " IOPS",
              None if pt.mnt else rate_within(1))
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


def fs_cmd(*args):
    run([os.path.join(BUILD, "atrium-fs"), *args])


def db_bytes(db):
    return sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))


def fill_snap_db(db, mnt, fill):
    fs_cmd("mkfs", db)
    fs_cmd("mount", db, mnt)
    try:
        fill(mnt)
    finally:
        subprocess.run(["fusermount3", "-u", mnt])
        time.sleep(0.5)


def ten_thousand_files(mnt):
    for d in range(100):
        os.mkdir(os.path.join(mnt, "d%d" % d))
        for i in range(100):
            with open(os.path.join(mnt, "d%d" % d, "f%d" % i), "wb") as f:
                f.write(b"x" * 1000)


def one_big_file(mnt):
    big_file(mnt, "big", 1024 // SCALE)


def big_file(mnt, name, mib):
    with open(os.path.join(mnt, name), "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))


def a_turns_changes(mnt):
    """What one turn of an agent might change in the held tree, the same
    each time (the restore after it undoes it): ten files rewritten longer,
    ten made, ten removed, one renamed, 1 MiB of the big file rewritten."""
    def p(*parts):
        return os.path.join(mnt, *parts)

    for i in range(10):
        with open(p("d1", "f%d" % i), "ab") as f:
            f.write(b"y" * 500)
        with open(p("d2", "new%d" % i), "wb") as f:
            f.write(b"z" * 1000)
        os.unlink(p("d3", "f%d" % i))
    os.rename(p("d4", "f0"), p("d5", "renamed"))
    with open(p("big"), "r+b") as f:
        f.seek((100 if SCALE == 1 else 10) << 20)
        f.write(os.urandom(1 << 20))


def read_whole(path):
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass


def restore_held_tree(table, tmp):
    """A mounted restore of 10,000 files and one 512 MiB file made in that
    mount, as a room's are: the kernel holds every inode, name and page
    (the big file is read whole before each snapshot).  Timed right after
    the snapshot (nothing changed) and after a turn's changes
    (a_turns_changes), which leave a changed big file the kernel holds: its
    snapshot version comes back under a new inode number, and the kernel
    drops the old one's pages."""
    mib = 512 // SCALE
    db, mnt = os.path.join(tmp, "held.db"), os.path.join(tmp, "heldmnt")
    os.mkdir(mnt)
    fs_cmd("mkfs", db)
    fs_cmd("mount", db, mnt)
    res = {"nothing changed": [], "after a turn's changes": []}
    try:
        ten_thousand_files(mnt)
        big_file(mnt, "big", mib)
        for i in range(RUNS):
            for kind, change in (("nothing changed", None),
                                 ("after a turn's changes", a_turns_changes)):
                name = "h%d%s" % (i, kind[0])
                read_whole(os.path.join(mnt, "big"))
                fs_cmd("snapshot", db, name)
                if change:
                    change(mnt)
                t0 = time.perf_counter()
                fs_cmd("restore", db, name)
                res[kind].append(time.perf_counter() - t0)
                fs_cmd("drop", db, name)
    finally:
        subprocess.run(["fusermount3", "-u", mnt])
        time.sleep(0.5)
    for kind, times in res.items():
        table.add("restore, 10,000 files + %d MiB held, %s" % (mib, kind),
                  "-", None, times, "s", at_most(0.2, " s"))


def snapshot_ops(db, runs, tag):
    """Times of snapshot, restore and drop of db, runs times each."""
    res = {"snapshot": [], "restore": [], "drop": []}
    for i in range(runs):
        for op in ("snapshot", "restore", "drop"):
            t0 = time.perf_counter()
            fs_cmd(op, db, "%s%d" % (tag, i))
            res[op].append(time.perf_counter() - t0)
    return res


def snapshot_costs(table, tmp):
    """Issue 10's targets: snapshot, restore and drop of a 10,000-file
    workspace under 200 ms, mounted (the command asks the daemon, as a room
    does) and, without a target, unmounted (a process that opens and closes
    the database); a snapshot of a tree holding a 1 GiB file writes under
    1 MiB (database and WAL growth); a 64 MiB rewrite of that file
    afterwards costs about those 64 MiB; a mounted restore of 10,000 files
    and a 512 MiB file that the kernel holds under 200 ms
    (restore_held_tree)."""
    mnt = os.path.join(tmp, "snapmnt")
    os.mkdir(mnt)
    files, big = os.path.join(tmp, "files.db"), os.path.join(tmp, "big.db")
    fill_snap_db(files, mnt, ten_thousand_files)
    fill_snap_db(big, mnt, one_big_file)
    fs_cmd("mount", files, mnt)
    try:
        res = snapshot_ops(files, RUNS, "m")
    finally:
        subprocess.run(["fusermount3", "-u", mnt])
        time.sleep(0.5)
    for op in ("snapshot", "restore", "drop"):
        table.add("%s, 10,000 files, mounted" % op, "-", None, res[op], "s",
                  at_most(0.2, " s"))
    res = snapshot_ops(files, RUNS, "u")
    for op in ("snapshot", "restore", "drop"):
        table.add("%s, 10,000 files, unmounted" % op, "-", None, res[op], "s")
    start = db_bytes(big)
    fs_cmd("snapshot", big, "s")
    taken = db_bytes(big) - start
    table.add("snapshot of a %d MiB file, growth" % (1024 // SCALE), "-", None,
              [taken / 1e6], " MB", at_most(1.048576, " MB"))
    fs_cmd("mount", big, mnt)
    try:
        with open(os.path.join(mnt, "big"), "r+b") as f:
            f.seek(100 << 20 if SCALE == 1 else 10 << 20)
            for _ in range(64 // SCALE):
                f.write(os.urandom(1 << 20))
    finally:
        subprocess.run(["fusermount3", "-u", mnt])
        time.sleep(0.5)
    rewritten = db_bytes(big) - start - taken
    table.add("rewrite %d MiB after it, growth" % (64 // SCALE), "-", None,
              [rewritten / 1e6], " MB",
              at_most(1.1 * (64 // SCALE) * 1.048576, " MB"))
    restore_held_tree(table, tmp)


def fs_workloads(table, tmp):
    with FsTargets(tmp) as fst:
        steps = [("tar", "tar x, grep", lambda: tar_and_grep(table, fst, tmp)),
                 ("git", "git clone", lambda: git_clone(table, fst, tmp)),
                 ("creates", "creates, stat, rm", lambda: creates_stat_rm(table, fst, tmp)),
                 ("ls", "ls -l", lambda: ls_big_dir(table, fst)),
                 ("make", "make -j2", lambda: make_j2(table, fst, tmp)),
                 ("seq", "sequential I/O", lambda: seq_rw(table, fst, tmp)),
                 ("random", "random read", lambda: random_read(table, fst, tmp)),
                 ("snap", "snapshots", lambda: snapshot_costs(table, tmp))]
        chosen = os.environ.get("BENCH_FS", " ".join(k for k, _, _ in steps)).split()
        for key, name, step in steps:
            if key not in chosen:
                continue
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


def start_atriumd(tmp, key, *extra):
    port = free_port()
    data = os.path.join(tmp, "data")
    os.mkdir(data, 0o700)
    with open(key + ".pub") as f:
        pub = f.read().split()
    with open(os.path.join(data, "authorized_keys"), "w") as f:
        f.write("%s %s bench\n" % (pub[0], pub[1]))
    # --exec-creates-rooms: the rows make their rooms with `ssh ROOM@ true`.
    p = subprocess.Popen([os.path.join(BUILD, "atriumd"), "--data", data,
                          "--listen", "127.0.0.1:%d" % port, "--model-url",
                          "http://127.0.0.1:9", "--exec-creates-rooms",
                          *extra],
                         stdout=subprocess.DEVNULL,
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
    repeat handshakes up to the server's expensive step.  Bounded: they
    stop when the block ends.

    The handshakes are tests/ssh_flood.py's by default: they stop at the
    server's key exchange reply and cost this machine next to nothing, as
    attackers on other hosts would.  With openssh=True they are OpenSSH
    clients offering a refused key instead; each spends more CPU on its
    handshake than the server does, on this same machine, so that row
    measures the host's CPU shared with the attackers as much as atriumd.
    Both run at nice 19 in this process's own autogroup: a new session
    (setsid) would give each its own, where nice counts for nothing."""

    def __init__(self, port, badkey, idle=10, handshakes=10, openssh=False):
        self.port, self.badkey = port, badkey
        self.idle, self.handshakes = idle, handshakes
        self.openssh = openssh
        self.stop = False
        self.report = ""

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

    def _start_handshakes(self):
        sources = ["127.0.9.%d" % (i + 1) for i in range(self.handshakes)]
        if not self.openssh:
            return [subprocess.Popen(["nice", "-n", "19", PYTHON,
                                      os.path.join(ROOT, "tests", "ssh_flood.py"),
                                      str(self.port)] + sources,
                                     stdout=subprocess.PIPE, text=True,
                                     process_group=0)]
        loop = ("while :; do ssh -p %d -b $1 -i %s -o BatchMode=yes "
                "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                "-o LogLevel=QUIET x@127.0.0.1 true; done" % (self.port,
                                                             self.badkey))
        return [subprocess.Popen(["nice", "-n", "19", "bash", "-c", loop,
                                  "flood", src], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, process_group=0)
                for src in sources]

    def __enter__(self):
        import threading
        self.threads = [threading.Thread(target=self._hold,
                                         args=("127.0.8.%d" % (i + 1),))
                        for i in range(self.idle)]
        for t in self.threads:
            t.start()
        self.procs = self._start_handshakes()
        time.sleep(1)
        return self

    def __exit__(self, *exc):
        self.stop = True
        for p in self.procs:
            if self.openssh:
                os.killpg(p.pid, signal.SIGKILL)
            else:
                p.terminate()
                self.report = p.communicate(timeout=30)[0].strip()
            p.wait()
        for t in self.threads:
            t.join()


def login_under_flood(table, tmp, key, port, openssh=False):
    """A user's `ssh HOST true` from an address of its own, alone and with
    twenty hostile clients (the issue's target: within 2x), and atriumd's
    network process's CPU per login, alone."""
    badkey = os.path.join(tmp, "badkey")
    if not os.path.exists(badkey):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", badkey])
    login = ssh_cmd(key, port, "bench", "true")
    login[1:1] = ["-b", "127.0.10.1"]
    net = network_pid(port)
    cpu0 = process_cpu(net)
    alone = [timed(lambda: run(login)) for _ in range(RUNS * 2)]
    per_login = (process_cpu(net) - cpu0) / len(alone)
    with Flood(port, badkey, openssh=openssh) as flood:
        cpu0, t0 = process_cpu(net), time.monotonic()
        loaded = [timed(lambda: run(login, timeout=60)) for _ in range(RUNS * 2)]
        flood_cpu = (process_cpu(net) - cpu0) / (time.monotonic() - t0)
    name = "ssh HOST true, 20 hostile clients"
    if openssh:
        name += " (OpenSSH clients on this host)"
    table.add(name, "unloaded atriumd", alone, loaded)
    table.note("%s: slowest of %d logins %.3f s (unloaded median %.4f s); "
               "atriumd's network process used %.1f ms of CPU per login "
               "unloaded, %.0f%% of a CPU during the flood%s" % (
                   name, len(loaded), max(loaded), statistics.median(alone),
                   per_login * 1000, flood_cpu * 100,
                   "; " + flood.report if flood.report else ""))


def network_pid(port):
    """The process listening on port: atriumd's network process."""
    out = subprocess.run(["ss", "-Hltnp", "sport = :%d" % port],
                         capture_output=True, text=True).stdout
    return int(out.split("pid=")[1].split(",")[0])


def process_cpu(pid):
    """CPU seconds pid's threads have run, from the scheduler's own count
    (nanoseconds; utime and stime tick only every 10 ms)."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that just ended
    return total / 1e9


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
        login_under_flood(table, tmp, key, aport, openssh=True)
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


# --- chat --------------------------------------------------------------------
#
# Many interactive members of one room, each an SSH connection of its own
# (from its own loopback address, paced under the admission limits) with
# a pty request (xterm, 80x24) and a shell: the full-screen chat, as a
# person's terminal gets it.  The reading members are libssh sessions in
# tests/bench/chat_readers.c, the sender and the stopped members asyncssh
# ones here.  Why not all in Python: one asyncio loop decrypting 1,000
# packets per line spent about 40 ms of CPU on it (about what atriumd
# spent), on the same two cores, so the row measured the bench as much as
# the server; the C readers cost what one person's ssh costs per line.
#
#   latency   one member types a line and Enter; the time until the line's
#             text has arrived on every reading member's connection (each
#             arrival is one sample, stamped on CLOCK_MONOTONIC, the same
#             clock as the send's; the client's own decryption counts).
#             Measured with one other member (the baseline), with 200,
#             and with every member of the 1,000 that reads.
#   stopped   the same with 200 members while 10 more stopped reading
#             (a window of 2 KiB they never reopen) after 200 KiB of a
#             command's output was shown to all.
#   memory    PSS and RSS of atriumd's two processes (monitor and network)
#             before and after members joined (up to 1,000) and went idle,
#             each reading once atriumd gave freed memory back; the delta
#             divided by the members who joined in between.

CHAT_ROOM = "chatbench"
CHAT_MEMBERS = int(os.environ.get("BENCH_CHAT_MEMBERS", "200"))
CHAT_IDLE = int(os.environ.get("BENCH_CHAT_IDLE", "1000"))
CHAT_LINES = int(os.environ.get("BENCH_CHAT_LINES", "30"))


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def process_memory(pid):
    """(PSS, RSS) of pid in bytes."""
    pss = rss = 0
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Pss:"):
                pss = int(line.split()[1]) * 1024
            elif line.startswith("Rss:"):
                rss = int(line.split()[1]) * 1024
    return pss, rss


class ChatMembers:
    """One room's chat members.  The readers, whose arrivals are measured,
    are tests/bench/chat_readers.c's libssh sessions (why: see its head);
    the sender and the stopped members, whose bytes are not timed, are
    asyncssh connections in one asyncio loop here.  Arrivals are stamped
    on CLOCK_MONOTONIC (time.monotonic() here, the same clock there) as
    each member reads them."""

    def __init__(self, port, key):
        import asyncio
        import asyncssh
        self.asyncio, self.asyncssh = asyncio, asyncssh
        self.port, self.keyfile = port, key
        self.key = asyncssh.read_private_key(key)
        self.loop = asyncio.new_event_loop()
        self.members = []    # asyncssh ones: (conn, chan, sess)
        self.nreaders = 0
        self.nsource = 0
        self.readers = None   # started by the first open_readers

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    def _session_class(self):
        bench = self

        class Member(self.asyncssh.SSHClientSession):
            def __init__(self):
                self.tail = ""
                self.ready = bench.asyncio.Event()

            def data_received(self, data, datatype):
                if not self.ready.is_set():
                    self.tail = (self.tail + data)[-256:]
                    if CHAT_ROOM + ">" in self.tail:
                        self.ready.set()
        return Member

    async def _open_one(self, window=None):
        self.nsource += 1
        source = "127.0.%d.%d" % (20 + self.nsource // 250, 1 + self.nsource % 250)
        conn = await self.asyncssh.connect(
            "127.0.0.1", self.port, username=CHAT_ROOM, client_keys=[self.key],
            known_hosts=None, local_addr=(source, 0),
            encryption_algs=["aes128-gcm@openssh.com"])
        kw = {"window": window, "max_pktsize": 1024} if window else {}
        chan, sess = await conn.create_session(
            self._session_class(), term_type="xterm", term_size=(80, 24), **kw)
        await self.asyncio.wait_for(sess.ready.wait(), 120)
        return conn, chan, sess

    async def _open(self, n, window=None):
        sem = self.asyncio.Semaphore(16)   # handshakes at once

        async def one():
            async with sem:
                return await self._open_one(window)
        return await self.asyncio.gather(*[one() for _ in range(n)])

    def open(self, n, window=None):
        """n more asyncssh members (the sender; window: stopped ones),
        each once it shows the prompt."""
        got = self.run(self._open(n, window))
        self.members += got
        return got

    def _ask(self, line):
        self.readers.stdin.write(line + "\n")
        self.readers.stdin.flush()

    def _answer(self):
        line = self.readers.stdout.readline()
        if not line:
            raise RuntimeError("chat_readers ended")
        return line.split()

    def open_readers(self, n):
        """n more reading members, each once it shows the prompt."""
        if not self.readers:
            self.readers = subprocess.Popen(
                [os.path.join(BUILD, "tests", "chat_readers"), str(self.port),
                 self.keyfile, CHAT_ROOM, "60"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, text=True, bufsize=1)
        self._ask("open %d" % n)
        # The loop runs meanwhile: the asyncssh members read the joins.
        got = self.run(self.loop.run_in_executor(None, self._answer))
        self.nreaders = int(got[1])

    def count(self):
        return self.nreaders + len(self.members)

    async def _say(self, sender, text, receivers, timeout, awaited):
        self._ask("await %d %d %s" % (timeout * 1000, receivers,
                                      awaited or text))
        armed = await self.loop.run_in_executor(None, self._answer)
        assert armed == ["armed"], armed
        t0 = time.monotonic()
        sender[1].write(text + "\r")
        got = await self.loop.run_in_executor(None, self._answer)
        return [float(t) - t0 for t in got[2:]]

    def say(self, sender, text, receivers, timeout=10, awaited=None):
        """Send text (and Enter) from sender; each reader's delay until it
        showed awaited (text by default), for up to receivers readers."""
        return self.run(self._say(sender, text, receivers, timeout, awaited))

    def settle(self, seconds):
        self.run(self.asyncio.sleep(seconds))

    def close(self):
        try:
            if self.readers:
                self._ask("quit")
                self.readers.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            self.readers.kill()
        for conn, chan, sess in self.members:
            conn.close()
        self.run(self.asyncio.sleep(0.5))
        self.loop.close()


def chat_latencies(members, sender, receivers, lines, tag):
    """Every receiver's delay for each of lines chat lines."""
    out = []
    for i in range(lines):
        got = members.say(sender, "%s-%04d-zq" % (tag, i), receivers)
        if len(got) < receivers:
            print("  %s line %d: %d of %d members saw it in 10 s"
                  % (tag, i, len(got), receivers), file=sys.stderr)
            got += [10.0] * (receivers - len(got))
        out += got
        members.settle(0.05)
    return out


def atriumd_pids(proc, data):
    with open(os.path.join(data, "run", "atriumd-network.pid")) as f:
        return [proc.pid, int(f.read())]


def atriumd_memory(pids):
    pss = rss = 0
    for pid in pids:
        p, r = process_memory(pid)
        pss, rss = pss + p, rss + r
    return pss, rss


def chat_stopped_members(members, sender, n):
    """n members that stop reading, then enough of a command's output for
    all (about 200 KiB) that their queues fill."""
    stopped = members.open(n, window=2048)
    for conn, chan, sess in stopped:
        chan.pause_reading()
    members.say(sender, "!seq 1 30000; echo seq-$((1+1))-zq", CHAT_MEMBERS,
                timeout=60, awaited="seq-2-zq")
    members.settle(2)   # past the stall: their queued frames dropped


def chat_workloads(table, tmp):
    tmp = os.path.join(tmp, "chat")   # a DATA of its own beside the ssh part's
    os.mkdir(tmp)
    key = os.path.join(tmp, "chatkey")
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
    # One sender says some ninety lines in a minute: the per-person rate
    # (--input-rate, 30 per 15 s) would refuse part of them, and this
    # measures the fan-out, not that limit.
    atriumd, port = start_atriumd(tmp, key, "--input-rate", "0")
    data = os.path.join(tmp, "data")
    members = ChatMembers(port, key)
    try:
        run(ssh_cmd(key, port, "bench", "true"))  # nothing to do with rooms yet
        sender, = members.open(1)
        members.open_readers(1)
        members.settle(1)
        alone = chat_latencies(members, sender, 1, CHAT_LINES, "one")
        members.open_readers(CHAT_MEMBERS - 1)
        members.settle(2)
        many = chat_latencies(members, sender, CHAT_MEMBERS, CHAT_LINES, "many")
        table.add("chat line to %d members, p99" % CHAT_MEMBERS, "to 1 member",
                  [percentile(alone, 0.99)], [percentile(many, 0.99)],
                  target=at_most(0.05, "s"))
        table.note("chat line to %d members: p50 %.1f ms, p99 %.1f ms, max "
                   "%.1f ms (%d samples); to 1 member p50 %.1f ms" % (
                       CHAT_MEMBERS, percentile(many, 0.5) * 1e3,
                       percentile(many, 0.99) * 1e3, max(many) * 1e3,
                       len(many), percentile(alone, 0.5) * 1e3))
        chat_stopped_members(members, sender, 10)
        slow = chat_latencies(members, sender, CHAT_MEMBERS, CHAT_LINES, "slow")
        table.add("... with 10 members stopped, p99", "none stopped",
                  [percentile(many, 0.99)], [percentile(slow, 0.99)],
                  target=at_most(0.05, "s"))
        pids = atriumd_pids(atriumd, data)
        # Both readings after atriumd gave freed memory back (every 5 s).
        members.settle(6)
        before = atriumd_memory(pids)
        n_before = members.count()
        members.open_readers(CHAT_IDLE - n_before)
        members.settle(6)
        after = atriumd_memory(pids)
        n = members.count() - n_before
        table.add("atriumd PSS per idle member (%d)" % members.count(),
                  "", None, [(after[0] - before[0]) / n / 1024], " KiB",
                  target=at_most(256, " KiB"))
        table.add("atriumd RSS per idle member (%d)" % members.count(),
                  "", None, [(after[1] - before[1]) / n / 1024], " KiB",
                  target=at_most(256, " KiB"))
        # Every reading member (all but the sender and the 10 stopped).
        check = chat_latencies(members, sender, members.nreaders, CHAT_LINES,
                               "all")
        table.add("chat line to %d members (%d in the room), p99" % (
                      members.nreaders, members.count()),
                  "to %d members" % CHAT_MEMBERS, [percentile(many, 0.99)],
                  [percentile(check, 0.99)], target=at_most(0.05, "s"))
        table.note("chat line to %d members: p50 %.1f ms, p99 %.1f ms, max "
                   "%.1f ms (%d samples)" % (
                       members.nreaders, percentile(check, 0.5) * 1e3,
                       percentile(check, 0.99) * 1e3, max(check) * 1e3,
                       len(check)))
    finally:
        members.close()
        atriumd.send_signal(signal.SIGTERM)
        try:
            atriumd.wait(10)
        except subprocess.TimeoutExpired:
            atriumd.kill()


# --- agent -------------------------------------------------------------------
#
# Rooms' atrium-agents, started directly on plain workspace directories
# (as tests/test_agent.py does), against tests/model_server.py (in a
# process of its own for the step time, in this one for the rest); then
# atriumd with idle sessions.
#
#   step time  a turn of BENCH_AGENT_STEPS steps, each a model answer with
#              one read call of a small file, run with ATRIUM_LOG=debug,
#              against a model server in a process of its own at
#              SCHED_IDLE (REMOTE_MODEL: a server on another machine):
#              the agent logs each step's own time (its loop's working
#              time, so neither the model's nor a command's; the step's
#              checkpoint commits included), median and p99; and the
#              part of it spent on a CPU (the rest: waiting for one, on a
#              busy machine, or in a blocking system call)
#   delta      an answer of BENCH_AGENT_DELTAS words streamed 10 ms apart:
#              each word from the moment the model server flushed it to
#              the moment a client connected to the agent's socket read
#              it, median (both clocks are this process's)
#   memory     the agent's own resident memory (RssAnon: libraries' pages
#              are shared by every agent, and shown in a note) when its
#              room is idle: freshly started with one member connected,
#              and after the step-time turn
#   idle CPU   atriumd's two processes (every thread) with
#              BENCH_IDLE_SESSIONS interactive chat members idle, over
#              10 s, from each thread's schedstat run time

AGENT_STEPS = int(os.environ.get("BENCH_AGENT_STEPS", "200"))
AGENT_DELTAS = int(os.environ.get("BENCH_AGENT_DELTAS", "200"))
IDLE_SESSIONS = int(os.environ.get("BENCH_IDLE_SESSIONS", "100"))


def vm_rss(pid):
    """(VmRSS, RssAnon) of pid in bytes: all its resident pages, and those
    of them that are its own (the rest are shared libraries' pages, shared
    with every other agent)."""
    got = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("VmRSS:", "RssAnon:")):
                got[line.split(":")[0]] = int(line.split()[1]) * 1024
    return got.get("VmRSS", 0), got.get("RssAnon", 0)


def cpu_ns(pids):
    """Run time so far of every thread of pids, in ns."""
    total = 0
    for pid in pids:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    total += int(f.read().split()[0])
            except FileNotFoundError:
                pass    # a thread that ended
    return total


def stamped_client(test_agent):
    """test_agent.Client whose events carry "_t", the monotonic time at
    which they were read."""
    class Stamped(test_agent.Client):
        def _read(self, timeout):
            n = len(self.events)
            ok = super()._read(timeout)
            now = time.monotonic()
            for ev in self.events[n:]:
                ev["_t"] = now
            return ok
    return Stamped


# The scripted model of the step-time turn, in a process of its own at
# SCHED_IDLE: it stands for a server on another machine, so its work (a
# request's JSON parsed in Python, the answer streamed) takes no CPU that
# the agent wants, as it would take none on the room's host.  On a CPU the
# agent also wants, it would run when woken by the agent's request and
# preempt the agent, and the measured step would hold the model's time.
REMOTE_MODEL = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
from model_server import ModelServer, Reply, ToolCall
steps = int(sys.argv[2])
m = ModelServer().start()
m.script(*[Reply("", tool_calls=[ToolCall("read", {"path": "small.txt"})])
           for _ in range(steps)], Reply("Done."))
print(m.url, flush=True)
sys.stdin.read()
m.stop()
"""


def remote_model(steps):
    """A model server (see REMOTE_MODEL) scripted for steps read calls and
    an answer: the process, with its URL as .url."""
    proc = subprocess.Popen([sys.executable, "-c", REMOTE_MODEL,
                             os.path.dirname(os.path.abspath(__file__)),
                             str(steps)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    proc.url = proc.stdout.readline().strip()
    if not proc.url.startswith("http://"):
        proc.kill()
        proc.wait()
        raise RuntimeError("the step-time model server did not start "
                           "(its error is above)")
    return proc


def agent_step_times(room, client):
    """Each step's own time in seconds, from the agent's debug lines."""
    import re
    with open(os.path.join(room.workspace, "small.txt"), "w") as f:
        f.write("hello\n" * 10)
    client.send({"type": "prompt", "text": "read it %d times" % AGENT_STEPS})
    evs = client.collect("turn_end", timeout=60 + AGENT_STEPS)
    if evs[-1].get("stop_reason") != "end_turn":
        print("  agent steps: the turn ended with %s" % evs[-1], file=sys.stderr)
    found = re.findall(r"step \d+: agent time (\d+) us, cpu (\d+) us",
                       room.log_text())
    return [int(w) / 1e6 for w, c in found], [int(c) / 1e6 for w, c in found]


def agent_delta_latencies(model, client):
    """Each streamed word's delay from the model server to the client."""
    import re
    from model_server import Reply
    words = ["d%04dq" % i for i in range(AGENT_DELTAS)]
    model.sent.clear()
    model.script(Reply(" ".join(words), delay=0.01))
    client.send({"type": "prompt", "text": "stream"})
    evs = client.collect("turn_end", timeout=60)
    arrived = {}
    for ev in evs:
        if ev["type"] == "agent_delta":
            for w in re.findall(r"d\d{4}q", ev["text"]):
                arrived.setdefault(w, ev["_t"])
    sent = {}
    for t, data in list(model.sent):
        for w in re.findall(rb"d\d{4}q", data):
            sent.setdefault(w.decode(), t)
    return [arrived[w] - sent[w] for w in words if w in arrived and w in sent]


def agent_room(tmp, name):
    import test_agent
    base = os.path.join(tmp, name)
    os.mkdir(base)
    room = test_agent.Room(base)
    room.env["ATRIUM_LOG"] = "debug"
    return room, stamped_client(test_agent)


def agent_turns(table, tmp):
    from model_server import ModelServer
    fresh, Client = agent_room(tmp, "agent-idle")
    room, _ = agent_room(tmp, "agent-turns")
    streamer, _ = agent_room(tmp, "agent-deltas")
    model = remote_model(AGENT_STEPS)
    try:
        room.start("--model-url", model.url, "--approval", "allow_all",
                   "--max-steps", str(AGENT_STEPS + 10))
        c = Client(room.sock)
        steps = agent_step_times(room, c)
        c.close()
        time.sleep(2)
        busy_rss = vm_rss(room.proc.pid)
    finally:
        room.cleanup()
        model.communicate("")
    with ModelServer() as model:
        try:
            fresh.start("--model-url", model.url)
            idle_client = Client(fresh.sock)
            time.sleep(2)
            idle_rss = vm_rss(fresh.proc.pid)
            idle_client.close()
            fresh.cleanup()
            streamer.start("--model-url", model.url, "--approval", "allow_all")
            c = Client(streamer.sock)
            lat = agent_delta_latencies(model, c)
            c.close()
        finally:
            fresh.cleanup()
            streamer.cleanup()
    if steps[0]:
        wall, cpu = steps
        table.add("agent's own time per step, p99 (%d)" % len(wall), "",
                  None, [percentile(wall, 0.99) * 1e3], " ms",
                  target=at_most(2, " ms"))
        table.add("... of it on a CPU, p99", "", None,
                  [percentile(cpu, 0.99) * 1e3], " ms",
                  target=at_most(2, " ms"))
        table.note("agent's own time per step: median %.3f ms, p99 %.3f ms, "
                   "max %.3f ms (%d steps); on a CPU: median %.3f ms, p99 "
                   "%.3f ms" % (
                       statistics.median(wall) * 1e3,
                       percentile(wall, 0.99) * 1e3, max(wall) * 1e3,
                       len(wall), statistics.median(cpu) * 1e3,
                       percentile(cpu, 0.99) * 1e3))
    if lat:
        table.add("model delta to client, median (%d)" % len(lat), "", None,
                  [statistics.median(lat) * 1e3], " ms",
                  target=at_most(5, " ms"))
        table.note("model delta to client: median %.2f ms, p99 %.2f ms" % (
            statistics.median(lat) * 1e3, percentile(lat, 0.99) * 1e3))
    table.add("idle room's agent RSS, its own", "", None,
              [idle_rss[1] / 2**20], " MiB", target=at_most(4, " MiB"))
    table.add("... after %d steps, idle" % AGENT_STEPS, "", None,
              [busy_rss[1] / 2**20], " MiB", target=at_most(4, " MiB"))
    table.note("idle agent RSS with shared libraries' pages: %.1f MiB fresh, "
               "%.1f MiB after the turns (anonymous: %.1f and %.1f MiB)" % (
                   idle_rss[0] / 2**20, busy_rss[0] / 2**20,
                   idle_rss[1] / 2**20, busy_rss[1] / 2**20))


def atriumd_idle_cpu(table, tmp):
    tmp = os.path.join(tmp, "idle")
    os.mkdir(tmp)
    key = os.path.join(tmp, "idlekey")
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
    atriumd, port = start_atriumd(tmp, key)
    members = ChatMembers(port, key)
    try:
        members.open(IDLE_SESSIONS)
        members.settle(3)
        pids = atriumd_pids(atriumd, os.path.join(tmp, "data"))
        before = cpu_ns(pids)
        members.settle(10)
        used = cpu_ns(pids) - before
    finally:
        members.close()
        atriumd.send_signal(signal.SIGTERM)
        try:
            atriumd.wait(10)
        except subprocess.TimeoutExpired:
            atriumd.kill()
    table.add("atriumd CPU, %d idle sessions, 10 s" % IDLE_SESSIONS, "",
              None, [used / 1e9 / 10 * 100], " %", target=at_most(0.05, " %"))
    table.note("atriumd with %d idle sessions: %.2f ms of CPU in 10 s" % (
        IDLE_SESSIONS, used / 1e6))


def agent_workloads(table, tmp):
    agent_turns(table, tmp)
    atriumd_idle_cpu(table, tmp)


# --- http --------------------------------------------------------------------
#
# atriumd-http beside atriumd's SSH side, in one atriumd with --http-listen:
#
#   exec       a command in a room, over SSH (the real OpenSSH client,
#              `ssh ROOM@HOST CMD`) and over HTTP (curl's POST to
#              /api/rooms/ROOM/exec, as atriumd(8) shows it), alternately:
#              `true`'s latency, p50 and p99 of BENCH_HTTP_EXECS each
#              (a client process started per run on both sides); 100 MB
#              through stdin into `wc -c` (curl -T -: a chunked body) and
#              100 MB out of `head -c` (over HTTP as base64 in JSON lines,
#              as the API sends it), in MB/s of the command's bytes
#   events     a chat line sent over SSH by a chat member (asyncssh, as the
#              chat part's sender) to WebSocket clients of the same room
#              (tests/bench/ws_readers.c: C clients, since Python's would
#              spend as much CPU per message as the server does): the time
#              from the line's Enter to its arrival at each client, p99
#              with 1 client and with BENCH_HTTP_WS clients

HTTP_EXECS = int(os.environ.get("BENCH_HTTP_EXECS", "20"))
HTTP_WS = int(os.environ.get("BENCH_HTTP_WS", "200"))
HTTP_MB = 100 * 1000 * 1000
HTTP_ROOM = "bench"


def http_token(key, port):
    """A token for the bench's key: ssh HOST atrium-token create."""
    out = subprocess.run(ssh_cmd(key, port, "bench", "atrium-token", "create"),
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0]


def curl_exec(hport, token, query, *extra):
    """curl's POST of a command to the bench room, as atriumd(8) shows."""
    return ["curl", "-sS", "--fail", "-X", "POST", "-H",
            "Authorization: Bearer " + token] + list(extra) + [
            "http://127.0.0.1:%d/api/rooms/%s/exec?%s" % (hport, HTTP_ROOM,
                                                          query)]


def http_exec_latency(table, key, port, hport, token):
    out = subprocess.run(curl_exec(hport, token, "command=true"),
                         capture_output=True, text=True, check=True).stdout
    if json.loads(out.splitlines()[-1]) != {"exit": 0}:
        raise RuntimeError("exec over HTTP: %r" % out[-200:])
    ssh, http = [], []
    for _ in range(HTTP_EXECS):
        ssh.append(timed(lambda: run(ssh_cmd(key, port, HTTP_ROOM, "true"))))
        http.append(timed(lambda: run(curl_exec(hport, token,
                                                "command=true"))))
    for p in (0.5, 0.99):
        table.add("exec true over HTTP (curl), p%d" % (p * 100),
                  "over SSH", [percentile(ssh, p)], [percentile(http, p)])


def http_stdout(body):
    """The stdout of an exec's response (JSON lines, base64 data)."""
    return b"".join(base64.b64decode(r["data"]) for r in map(
        json.loads, body.splitlines()) if r.get("stream") == "stdout")


def http_exec_stream(key, port, hport, token, direction):
    """(SSH, HTTP) MB/s of 100 MB into wc -c ("in") or out of head -c
    ("out"), one run each."""
    rates = []
    for over in ("ssh", "http"):
        src = None
        if direction == "in":
            src = subprocess.Popen(["head", "-c", str(HTTP_MB), "/dev/zero"],
                                   stdout=subprocess.PIPE)
            cmd = (ssh_cmd(key, port, HTTP_ROOM, "wc -c") if over == "ssh"
                   else curl_exec(hport, token, "command=wc+-c", "-T", "-"))
        else:
            head = "head -c %d /dev/zero" % HTTP_MB
            cmd = (ssh_cmd(key, port, HTTP_ROOM, head) if over == "ssh" else
                   curl_exec(hport, token, "command=" + head.replace(" ", "+")))
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdin=src.stdout if src else None,
                           stdout=subprocess.PIPE, check=True)
        took = time.perf_counter() - t0
        if src:
            src.wait()
            said = p.stdout if over == "ssh" else http_stdout(p.stdout)
            if said.strip() != str(HTTP_MB).encode():
                raise RuntimeError("wc -c over %s: %r" % (over, said[-200:]))
        rates.append(HTTP_MB / took / 1e6)
    return rates


def http_exec_throughput(table, key, port, hport, token):
    for direction, label in (("in", "100 MB into exec stdin (wc -c)"),
                             ("out", "100 MB out of exec (head -c)")):
        ssh, http = [], []
        for _ in range(HEAVY_RUNS):
            a, b = http_exec_stream(key, port, hport, token, direction)
            ssh.append(a)
            http.append(b)
        table.add(label + " over HTTP", "over SSH", ssh, http, " MB/s")


def http_ws_latency(table, port, hport, key, token):
    """A chat line's delay to 1 WebSocket client, then to HTTP_WS."""
    members = ChatMembers(port, key)
    try:
        sender, = members.open(1)
        members.readers = subprocess.Popen(
            [os.path.join(BUILD, "tests", "ws_readers"), str(hport), token,
             CHAT_ROOM, "40"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, bufsize=1)
        members._ask("open 1")
        members._answer()
        members.settle(1)
        alone = chat_latencies(members, sender, 1, CHAT_LINES, "ws1")
        members._ask("open %d" % (HTTP_WS - 1))
        members._answer()
        members.settle(2)
        many = chat_latencies(members, sender, HTTP_WS, CHAT_LINES, "wsn")
        table.add("chat line to %d WebSockets, p99" % HTTP_WS,
                  "to 1 WebSocket", [percentile(alone, 0.99)],
                  [percentile(many, 0.99)])
        table.note("chat line (sent over SSH) to %d WebSocket clients: p50 "
                   "%.1f ms, p99 %.1f ms, max %.1f ms (%d samples); to 1 "
                   "p50 %.1f ms" % (HTTP_WS, percentile(many, 0.5) * 1e3,
                                    percentile(many, 0.99) * 1e3,
                                    max(many) * 1e3, len(many),
                                    percentile(alone, 0.5) * 1e3))
    finally:
        members.close()


def http_workloads(table, tmp):
    tmp = os.path.join(tmp, "http")   # a DATA of its own
    os.mkdir(tmp)
    key = os.path.join(tmp, "httpkey")
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
    hport = free_port()
    # --input-rate 0: the WebSocket rows' sender says more lines a minute
    # than a person may; this measures the fan-out, not that limit.
    atriumd, port = start_atriumd(tmp, key, "--input-rate", "0",
                                  "--http-listen", "127.0.0.1:%d" % hport)
    try:
        wait_port(hport)
        for room in (HTTP_ROOM, CHAT_ROOM):
            run(ssh_cmd(key, port, room, "true"))   # the rooms, started
        token = http_token(key, port)
        http_exec_latency(table, key, port, hport, token)
        http_exec_throughput(table, key, port, hport, token)
        http_ws_latency(table, port, hport, key, token)
    finally:
        atriumd.send_signal(signal.SIGTERM)
        try:
            atriumd.wait(10)
        except subprocess.TimeoutExpired:
            atriumd.kill()


# --- replicate ---------------------------------------------------------------
#
# The added commit latency of streaming a room's writes (atriumd(8),
# CLUSTER): 4 KiB written and fsynced on an atrium-fs mount, one commit
# each, with no streaming (the baseline) and with every commit going to
# atrium-replicate run, which stores it in tests/s3_server.py and advances
# the manifest in a real etcd member.  And the failover time: three etcd
# members, two atriumd hosts with --s3, kill -9 of a room's home, and the
# seconds until `ssh ROOM@other true` answers (the rest of the lease, the
# claim, the restore, the start).  Needs Debian's etcd-server.

REPLICATE_COMMITS = int(os.environ.get("BENCH_REPLICATE_COMMITS", "200"))


def fsync_latencies(mnt, n):
    """Seconds of each of n 4 KiB write + fsync, each to a file of its own."""
    out, block = [], os.urandom(4096)
    for i in range(n):
        t = time.monotonic()
        fd = os.open(os.path.join(mnt, "c%d" % i), os.O_WRONLY | os.O_CREAT,
                     0o644)
        os.write(fd, block)
        os.fsync(fd)
        os.close(fd)
        out.append(time.monotonic() - t)
    return out


def replicate_run(tmp, streamed, etcd, s3, epoch):
    """One run: the median commit latency (s), and the shipper's status."""
    from test_replicate import Shipper, Mount
    d = tempfile.mkdtemp(dir=tmp)
    if not streamed:
        m = Mount(pathlib_path(d))
        run([os.path.join(BUILD, "atrium-fs"), "mount", m.db, m.dir])
        try:
            return statistics.median(fsync_latencies(m.dir, REPLICATE_COMMITS))
        finally:
            subprocess.run(["fusermount3", "-u", m.dir])
    sh = Shipper(pathlib_path(d), s3, etcd, "bench", epoch)
    sh.mount()
    try:
        lat = statistics.median(fsync_latencies(sh.m.dir, REPLICATE_COMMITS))
    finally:
        status, err = sh.finish()
    if status != 0:
        sys.exit("atrium-replicate failed: " + err)
    return lat


def pathlib_path(d):
    import pathlib
    return pathlib.Path(d)


FAILOVER_LEASE = 3     # --cluster-lease of the failover runs, s


def failover_host(tmp, key, etcd, s3, name, creds):
    """An atriumd host of the cluster streaming to s3: (proc, port)."""
    d = tempfile.mkdtemp(dir=tmp)
    return start_atriumd(d, key, "--cluster", "etcd=" + etcd.urls(),
                         "--node", name, "--cluster-lease",
                         str(FAILOVER_LEASE), "--cgroup-parent",
                         "atrium-bench-" + name, "--s3", s3.url,
                         "--s3-bucket", "atrium", "--s3-credentials", creds)


def failover_run(tmp, key, etcd, s3, creds, room):
    """Seconds from kill -9 of a room's home to the room answering
    `ssh ROOM@other true` on the other host (lease end, claim, restore,
    start)."""
    a, aport = failover_host(tmp, key, etcd, s3, "a", creds)
    b, bport = failover_host(tmp, key, etcd, s3, "b", creds)
    try:
        run(ssh_cmd(key, aport, room, "true"))
        run(ssh_cmd(key, aport, room, "head -c 1000000 /dev/urandom > f; "
                    "sync f"))
        a.kill()
        a.wait()
        t = time.monotonic()
        while subprocess.run(ssh_cmd(key, bport, room, "true"),
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL).returncode != 0:
            if time.monotonic() - t > 60:
                sys.exit("failover: room %s never answered on host b" % room)
        return time.monotonic() - t
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.terminate()
                p.wait()


def replicate_failover(table, tmp, s3):
    from test_cluster import Etcd as Etcd3
    key = os.path.join(tmp, "failover-key")
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
    creds = os.path.join(tmp, "failover-creds")
    with open(creds, "w") as f:
        f.write("%s\n%s\n" % (s3.access_key, s3.secret_key))
    os.chmod(creds, 0o600)
    d = tempfile.mkdtemp(dir=tmp)
    etcd = Etcd3(d).start()
    try:
        times = [failover_run(tmp, key, etcd, s3, creds, "fo%d" % i)
                 for i in range(RUNS)]
    finally:
        etcd.stop()
    table.add("failover, kill -9 of the home", "", None, times,
              target=at_most(FAILOVER_LEASE + 5, "s"))
    table.note("failover: lease %d s; runs %s s" % (
        FAILOVER_LEASE, ", ".join("%.2f" % t for t in times)))


def replicate_workloads(table, tmp):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import s3_server
    from test_replicate import Etcd, AK, SK
    if not os.access("/usr/bin/etcd", os.X_OK):
        table.note("replicate: skipped, no /usr/bin/etcd (etcd-server)")
        return
    etcd = Etcd(tmp)
    try:
        with s3_server.S3Server(AK, SK) as s3:
            base, ours = [], []
            for _ in range(RUNS):
                etcd.delete("/atrium/rooms/bench/home")
                epoch = etcd.claim("bench", "n1")
                base.append(replicate_run(tmp, False, etcd, s3, epoch))
                ours.append(replicate_run(tmp, True, etcd, s3, epoch))
            table.add("4 KiB write+fsync, streamed", "not streamed", base,
                      ours, target=within(1.5))
            table.note("replicate: %d fsynced commits per run; the store "
                       "holds %d objects after %d runs"
                       % (REPLICATE_COMMITS, len(s3.objects()), RUNS))
            replicate_failover(table, tmp, s3)
    finally:
        etcd.stop()


def main():
    if os.geteuid() != 0:
        sys.exit("make bench needs root (FUSE mounts, tmpfs, sshd)")
    table = Table()
    parts = os.environ.get("BENCH_PARTS",
                           "fs ssh chat agent http replicate").split()
    with tempfile.TemporaryDirectory(prefix="atrium-bench-") as tmp:
        if "fs" in parts:
            print("filesystem workloads (%d runs, %d of the heavy ones%s)..."
                  % (RUNS, HEAVY_RUNS, ", 1/10 size" if SCALE > 1 else ""),
                  file=sys.stderr)
            fs_workloads(table, tmp)
        if "ssh" in parts:
            print("ssh workloads...", file=sys.stderr)
            ssh_workloads(table, tmp)
        if "chat" in parts:
            print("chat workloads...", file=sys.stderr)
            chat_workloads(table, tmp)
        if "agent" in parts:
            print("agent workloads...", file=sys.stderr)
            agent_workloads(table, tmp)
        if "http" in parts:
            print("http workloads...", file=sys.stderr)
            http_workloads(table, tmp)
        if "replicate" in parts:
            print("replicate workloads...", file=sys.stderr)
            replicate_workloads(table, tmp)
    table.show()


if __name__ == "__main__":
    main()
