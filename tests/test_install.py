"""How an operator installs and starts Atrium: `make install` and
`make uninstall` (every path), `--version` and `--log-level` on every
program, hardened binaries (hardening-check), the start-up lines (the host
key's fingerprint as ssh-keygen prints it, the address, the data directory,
the model and whether it has a key), and an installed atriumd finding its
helpers in libexec.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_install.py
"""
import os
import re
import shutil
import stat
import subprocess
import time
import urllib.request

import pytest

from conftest import (BUILD_DIR, PROGRAMS, ROOT, Atriumd, free_port,
                      make_room, remove_cgroups)

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")


def version():
    with open(os.path.join(ROOT, "packaging", "debian", "changelog")) as f:
        return re.match(r"atrium \(([^)]+)\)", f.readline()).group(1)


def unit_dir():
    p = subprocess.run(["pkg-config", "--variable=systemdsystemunitdir",
                        "systemd"], capture_output=True, text=True)
    return p.stdout.strip() or "/usr/lib/systemd/system"


# The room in the browser: its page and npm's files, each with a gzip copy.
WEB_FILES = ("index.html", "app.js", "app.css", "xterm.js", "xterm.css",
             "addon-fit.js")


def installed_paths(prefix="/usr"):
    p = prefix.lstrip("/")
    return {
        p + "/sbin/atriumd": 0o755,
        p + "/bin/atrium-fs": 0o755,
        p + "/libexec/atrium/atriumd-net": 0o755,
        p + "/libexec/atrium/atriumd-http": 0o755,
        p + "/libexec/atrium/atrium-agent": 0o755,
        p + "/libexec/atrium/atrium-sandbox-init": 0o755,
        p + "/libexec/atrium/atrium-replicate": 0o755,
        p + "/share/man/man8/atriumd.8": 0o644,
        p + "/share/man/man8/atrium-agent.8": 0o644,
        p + "/share/man/man8/atrium-fs.8": 0o644,
        unit_dir().lstrip("/") + "/atriumd.service": 0o644,
        "usr/lib/sysusers.d/atrium.conf": 0o644,
        **{p + "/share/atrium/web/" + f + gz: 0o644 for f in WEB_FILES
           for gz in ("", ".gz")},
    }


def make(*args):
    return subprocess.run(["make", "-s", "-C", ROOT, "BUILD=%s" % BUILD_DIR]
                          + list(args), capture_output=True, text=True)


def files_under(root):
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(out)


def test_make_install_puts_each_file_in_its_place_and_uninstall_removes_them(
        tmp_path):
    dest = tmp_path / "dest"
    p = make("install", "DESTDIR=%s" % dest, "PREFIX=/usr")
    assert p.returncode == 0, p.stderr
    want = installed_paths()
    assert files_under(dest) == sorted(want)
    for rel, mode in want.items():
        assert stat.S_IMODE(os.stat(dest / rel).st_mode) == mode, rel
    unit = (dest / unit_dir().lstrip("/") / "atriumd.service").read_text()
    assert "ExecStart=/usr/sbin/atriumd --data /var/lib/atrium --listen :2222" in unit
    assert "@" not in unit.split("ExecStart=")[1].split()[0]
    # Nothing internal on a user's PATH.
    assert not (dest / "usr/bin/atrium-sandbox-init").exists()
    assert not (dest / "usr/bin/atrium-agent").exists()
    assert not (dest / "usr/sbin/atriumd-net").exists()
    p = make("uninstall", "DESTDIR=%s" % dest, "PREFIX=/usr")
    assert p.returncode == 0, p.stderr
    assert files_under(dest) == []


@pytest.mark.parametrize("prog", PROGRAMS)
def test_every_program_answers_version(build, prog):
    p = subprocess.run([os.path.join(build, prog), "--version"],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "%s %s\n" % (prog, version())


def test_log_level_is_checked_and_filters_lines(build, atriumd, data_dir):
    for prog in ("atriumd", "atrium-fs", "atrium-agent"):
        p = subprocess.run([os.path.join(build, prog), "--log-level", "loud"],
                           capture_output=True, text=True)
        assert p.returncode == 2, prog
        assert "%s: --log-level needs one of debug, info, warn, error" % prog \
            in p.stderr
    srv = atriumd(data_dir, "--log-level", "warn", "--model-url",
                  "http://127.0.0.1:9",
                  env={k: v for k, v in os.environ.items()
                       if not k.endswith("_API_KEY")})
    log = srv.read_log()
    assert " INFO " not in log, log
    assert " WARN banner_model: " in log


def test_binaries_are_hardened(build):
    if not shutil.which("hardening-check"):
        pytest.fail("hardening-check missing: make deps installs devscripts")
    for prog in PROGRAMS:
        p = subprocess.run(["hardening-check", "--nocfprotection",
                            os.path.join(build, prog)],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stdout
        for check in ("Position Independent Executable: yes",
                      "Stack protected: yes",
                      "Fortify Source functions: yes",
                      "Read-only relocations: yes",
                      "Immediate binding: yes"):
            assert check in p.stdout, (prog, p.stdout)


def test_start_up_lines_show_fingerprint_address_data_and_model(
        atriumd, data_dir):
    srv = atriumd(data_dir, "--model-url", "http://127.0.0.1:9",
                  env={k: v for k, v in os.environ.items()
                       if not k.endswith("_API_KEY")})
    log = srv.read_log()
    keygen = subprocess.run(["ssh-keygen", "-lf",
                             os.path.join(srv.data, "hostkey")],
                            capture_output=True, text=True, check=True)
    bits, fp = keygen.stdout.split()[:2]
    kind = keygen.stdout.split()[-1]
    assert re.search(r"INFO banner_host_key: host key %s/hostkey: %s %s %s\n"
                     % (re.escape(os.path.realpath(srv.data)), bits,
                        re.escape(fp), re.escape(kind)), log), log
    assert "listening on 127.0.0.1:%d" % srv.port in log
    assert "data %s" % os.path.realpath(srv.data) in log
    assert re.search(r"WARN banner_model: model \S+ \(anthropic\) at "
                     r"http://127.0.0.1:9; NO API key configured", log), log


def test_start_up_line_says_a_key_is_configured(atriumd, data_dir, tmp_path):
    key = tmp_path / "key"
    key.write_text("sk-test-banner\n")
    os.chmod(key, 0o600)
    srv = atriumd(data_dir, "--model-url", "http://127.0.0.1:9",
                  "--api-key-file", str(key))
    log = srv.read_log()
    assert "INFO banner_model: model" in log
    assert "; API key configured" in log
    assert "sk-test-banner" not in log


@pytest.fixture
def cgparent():
    """A cgroup parent of this test's own, for an Atriumd started by hand
    (one parent per live server: atriumd(8), --cgroup-parent)."""
    name = "atrium-install-%d-%d" % (os.getpid(), time.monotonic_ns())
    yield name
    remove_cgroups(name)


def test_installed_atriumd_starts_rooms_with_its_helpers_from_libexec(
        tmp_path, data_dir, ssh_run, cgparent):
    dest = tmp_path / "dest"
    p = make("install", "DESTDIR=%s" % dest, "PREFIX=/usr")
    assert p.returncode == 0, p.stderr
    sbin = str(dest / "usr/sbin")
    srv = Atriumd(sbin, data_dir, ["--cgroup-parent", cgparent], None)
    try:
        srv.start()
        make_room(srv, "installed")
        rc, out, err = ssh_run(srv, "installed", "echo", "from-the-sandbox")
        assert (rc, out) == (0, "from-the-sandbox\n"), err + srv.read_log()
        log = srv.read_log()
        assert "programs %s/../bin/atrium-fs and %s/../libexec/atrium/" \
            "atrium-agent" % (sbin, sbin) in log
        net = int(open(os.path.join(srv.data, "run",
                                    "atriumd-network.pid")).read())
        assert os.readlink("/proc/%d/exe" % net) == os.path.realpath(
            str(dest / "usr/libexec/atrium/atriumd-net"))
    finally:
        srv.stop()
        srv.cleanup()


def test_installed_atriumd_http_serves_the_page_from_share(tmp_path,
                                                          data_dir, cgparent):
    """Without http-web-dir, the installed atriumd-http reads the page
    from PREFIX/share/atrium/web, beside its libexec folder."""
    dest = tmp_path / "dest"
    p = make("install", "DESTDIR=%s" % dest, "PREFIX=/usr")
    assert p.returncode == 0, p.stderr
    port = free_port()
    srv = Atriumd(str(dest / "usr/sbin"), data_dir,
                  ["--http-listen", "127.0.0.1:%d" % port,
                   "--cgroup-parent", cgparent], None)
    try:
        srv.start()
        deadline = time.time() + 15
        while True:
            try:
                with urllib.request.urlopen(
                        "http://127.0.0.1:%d/r/installed" % port,
                        timeout=5) as r:
                    assert r.status == 200
                    assert r.read() == (dest / "usr/share/atrium/web/"
                                        "index.html").read_bytes()
                    break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
    finally:
        srv.stop()
        srv.cleanup()


def test_status_lists_active_rooms_with_their_numbers(build, atriumd,
                                                      data_dir, tmp_path):
    from test_e2e import Room, of_type
    srv = atriumd(data_dir)
    status = [os.path.join(build, "atriumd"), "status", srv.data]
    p = subprocess.run(status, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[0].split() == [
        "ROOM", "STATE", "CONNS", "PROCS", "MEMORY", "WORKSPACE", "AGENT"]
    assert p.stdout.count("\n") == 1, "no room is active yet"
    make_room(srv, "busy")
    a, b = Room(srv, "busy"), Room(srv, "busy", user="bob")
    try:
        a.expect(of_type("welcome"))
        b.expect(of_type("welcome"))
        p = subprocess.run(status, capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 0, p.stderr
        row = [line.split() for line in p.stdout.split("\n")
               if line.startswith("busy ")]
        assert len(row) == 1, p.stdout
        room, state, conns, procs, mem, ws, _, pid = row[0][:8]
        assert " answered " in p.stdout and "s ago" in p.stdout, p.stdout
        assert state == "ready"
        assert int(conns) == 2, p.stdout
        assert int(procs) >= 2, p.stdout          # atrium-fs, atrium-agent
        assert mem[-1] == "M" and float(mem[:-1]) > 1, p.stdout
        assert ws[-1] in "KM", p.stdout
        assert "atrium-agent" in open("/proc/%s/cmdline" %
                                      pid.rstrip(",")).read()
    finally:
        a.close()
        b.close()
    p = subprocess.run([os.path.join(build, "atriumd"), "status",
                        str(tmp_path / "none")], capture_output=True,
                       text=True)
    assert p.returncode == 1
    assert "no atriumd running on %s" % (tmp_path / "none") in p.stderr
