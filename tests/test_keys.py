"""authorized_keys options through the real OpenSSH client: what a user of a
key with from=, expiry-time=, restrict, no-pty, command=, environment= or an
unknown option sees, and what the operator reads in atriumd's log.

Each test writes DATA/authorized_keys with options before atriumd starts
(the conftest data_dir lists alice and bob without options).

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_keys.py
"""
import os
import pty
import select
import shutil
import subprocess
import time

import pytest

from conftest import SSH_OPTS, free_port, ssh_command

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")


def write_keys(data_dir, **opts):
    """authorized_keys with alice's and bob's keys, each after its options
    (opts: user -> options field, "" for none)."""
    lines = []
    for user in ("alice", "bob"):
        o = opts.get(user, "")
        lines.append((o + " " if o else "") + data_dir.pubkey(user))
    path = os.path.join(str(data_dir), "authorized_keys")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def fingerprint(data_dir, user):
    out = subprocess.run(["ssh-keygen", "-lf", data_dir.keys[user] + ".pub"],
                         capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def refused(rc, err):
    return rc == 255 and "Permission denied (publickey)" in err


def on_terminal(argv, until, send=None, timeout=20):
    """Run argv with a terminal as stdin, stdout and stderr (as a person at
    a terminal runs ssh); what it wrote, once until was seen or it ended.
    send: (text seen, bytes to type then)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                         start_new_session=True)
    os.close(slave)
    seen, end = b"", time.time() + timeout
    try:
        while time.time() < end and until not in seen:
            if send and send[0] in seen:
                os.write(master, send[1])
                send = None
            if not select.select([master], [], [], 0.2)[0]:
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:     # EIO: the client has gone
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        os.close(master)
    return seen


def wait_log(srv, text, timeout=5):
    """The log once it holds text (a refusal is logged as the client leaves)."""
    end = time.time() + timeout
    while time.time() < end and text not in srv.read_log():
        time.sleep(0.05)
    return srv.read_log()


# ---------------------------------------------------------------- from= --

def test_from_matching_network_lets_in(atriumd, data_dir, ssh_run):
    write_keys(data_dir, alice='from="127.0.0.0/8"')
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "echo in")
    assert (rc, out) == (0, "in\n"), err


def test_from_other_network_is_refused_and_logged(atriumd, data_dir, ssh_run):
    write_keys(data_dir, alice='from="10.0.0.0/8"')
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "echo in")
    assert refused(rc, err) and out == ""
    fp = fingerprint(data_dir, "alice")
    log = wait_log(srv, "does not match")
    assert ('key %s refused (from 127.0.0.1): from="10.0.0.0/8" does not '
            'match its address 127.0.0.1' % fp) in log, log
    # bob, without options, is still let in.
    rc, out, err = ssh_run(srv, "demo", "echo in", user="bob")
    assert (rc, out) == (0, "in\n"), err


def test_from_negated_pattern(atriumd, data_dir, ssh_run):
    write_keys(data_dir, alice='from="!127.0.0.1,*"',
               bob='from="!10.0.0.0/8,127.0.0.*"')
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "echo in")
    assert refused(rc, err)
    assert 'from="!127.0.0.1,*" does not match' in wait_log(srv, "!127")
    rc, out, err = ssh_run(srv, "demo", "echo in", user="bob")
    assert (rc, out) == (0, "in\n"), err


def test_from_host_name_never_matches_and_is_logged(atriumd, data_dir,
                                                    ssh_run):
    write_keys(data_dir, alice='from="localhost"',
               bob='from="localhost,127.0.0.1"')
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "echo in")
    assert refused(rc, err)
    rc, out, err = ssh_run(srv, "demo", "echo in", user="bob")
    assert (rc, out) == (0, "in\n"), err
    log = srv.read_log()
    for user in ("alice", "bob"):
        line = "key %s: from=" % fingerprint(data_dir, user)
        assert line in log, log
    # Once per key per load, not per connection.
    assert log.count("'localhost' is a host name, which never matches") == 2


class NetnsClient:
    """An IPv4 client in a network namespace of the test's own, joined to
    this one by a veth pair: the client is client_ip, atriumd is reached at
    server_ip.  Nothing leaves that link and loopback."""

    def __init__(self, name, host_if, server_ip, client_ip):
        self.name, self.host_if = name, host_if
        self.server_ip, self.client_ip = server_ip, client_ip

    def ssh(self, srv, user, *cmd):
        argv = (["ip", "netns", "exec", self.name, "ssh", "-p", str(srv.port),
                 "-i", srv.keys[user]] + SSH_OPTS
                + ["demo@" + self.server_ip] + list(cmd))
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr


def _ip(*args):
    return subprocess.run(["ip"] + list(args), capture_output=True, text=True)


@pytest.fixture
def netns_client():
    """A NetnsClient at 10.0.0.x (a /30 of its own, by pid, so that two
    runs at once do not collide); skipped where `ip netns` is not
    permitted.  The namespace (and with it both ends of the veth) is
    deleted at teardown."""
    if not shutil.which("ip"):
        pytest.skip("no ip(8): install iproute2")
    tag = os.getpid() % 10000
    name, host_if, ns_if = "atrium-t%d" % tag, "atrh%d" % tag, "atrn%d" % tag
    base = 4 * (1 + os.getpid() % 60)
    server_ip, client_ip = "10.0.0.%d" % (base + 1), "10.0.0.%d" % (base + 2)
    r = _ip("netns", "add", name)
    if r.returncode != 0:
        pytest.skip("ip netns add is not permitted here: " + r.stderr.strip())
    try:
        for args in (("link", "add", host_if, "type", "veth", "peer", "name",
                      ns_if, "netns", name),
                     ("addr", "add", server_ip + "/30", "dev", host_if),
                     ("link", "set", host_if, "up"),
                     ("-n", name, "addr", "add", client_ip + "/30", "dev",
                      ns_if),
                     ("-n", name, "link", "set", ns_if, "up"),
                     ("-n", name, "link", "set", "lo", "up")):
            r = _ip(*args)
            if r.returncode != 0:
                pytest.skip("cannot make the test's veth link (ip %s): %s"
                            % (" ".join(args), r.stderr.strip()))
        yield NetnsClient(name, host_if, server_ip, client_ip)
    finally:
        _ip("netns", "del", name)       # takes the veth pair with it
        _ip("link", "del", host_if)     # in case it stayed behind


def test_from_sees_ipv4_clients_of_a_dual_stack_listener(atriumd, data_dir,
                                                         netns_client):
    # On [::]:PORT an IPv4 client arrives as ::ffff:10.0.0.x; its key's
    # from= wildcards must see 10.0.0.x: a negation refuses it (it used to
    # let it in), a positive pattern admits it (it used to refuse it).
    c = netns_client
    write_keys(data_dir, alice='from="*,!10.0.0.*"', bob='from="10.0.0.*"')
    srv = atriumd(data_dir, "--listen", "[::]:%d" % free_port())
    rc, out, err = c.ssh(srv, "alice", "echo in")
    assert refused(rc, err) and out == "", (rc, out, err)
    log = wait_log(srv, "does not match")
    assert ('key %s refused (from %s): from="*,!10.0.0.*" does not match its '
            'address %s' % (fingerprint(data_dir, "alice"), c.client_ip,
                            c.client_ip)) in log, log
    rc, out, err = c.ssh(srv, "bob", "echo $SSH_CONNECTION")
    assert rc == 0, err
    assert out.split() == [c.client_ip, out.split()[1], c.server_ip,
                           str(srv.port)], out
    # alice's key is refused for its address, not for itself.
    rc, out, err = _ssh_local(srv, "alice", "echo in")
    assert (rc, out) == (0, "in\n"), err
    assert "::ffff:" not in srv.read_log()


def _ssh_local(srv, user, *cmd):
    p = subprocess.run(ssh_command(srv, "demo", *cmd, user=user),
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


# --------------------------------------------------------- expiry-time= --

def test_expired_key_is_refused_future_one_lets_in(atriumd, data_dir, ssh_run):
    write_keys(data_dir, alice='expiry-time="20000101"',
               bob='expiry-time="29991231235959Z"')
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "echo in")
    assert refused(rc, err)
    log = wait_log(srv, "expired at 2000-01-01 00:00:00")
    assert "key %s refused" % fingerprint(data_dir, "alice") in log, log
    rc, out, err = ssh_run(srv, "demo", "echo in", user="bob")
    assert (rc, out) == (0, "in\n"), err


# ------------------------------------------------------ no-pty, restrict --

def test_no_pty_and_restrict_get_no_terminal(atriumd, data_dir, ssh_run):
    # OpenSSH's client (8.x and later) ends the session itself when a
    # terminal it forced with -t or -tt is refused, as it does with sshd.
    write_keys(data_dir, alice="no-pty", bob="restrict")
    srv = atriumd(data_dir)
    for user in ("alice", "bob"):
        rc, out, err = ssh_run(srv, "demo", "tty", user=user, opts=["-tt"])
        assert (rc, out) == (255, ""), err
        assert "PTY allocation request failed" in err
    assert "pty refused (the key has restrict or no-pty)" in srv.read_log()


def test_no_pty_command_runs_without_a_terminal(atriumd, data_dir):
    # From a terminal, without -t, the client asks for one and goes on
    # when it is refused: the (forced) command then has none.
    write_keys(data_dir, alice='restrict,command="tty; echo done"',
               bob='command="tty; echo done"')
    srv = atriumd(data_dir)
    seen = on_terminal(ssh_command(srv, "demo", user="alice"), b"done")
    assert b"PTY allocation request failed" in seen, seen
    assert b"not a tty" in seen and b"done" in seen, seen
    seen = on_terminal(ssh_command(srv, "demo", user="bob"), b"done")
    assert b"/dev/console" in seen and b"not a tty" not in seen, seen


def test_restrict_then_pty_gets_a_terminal(atriumd, data_dir, ssh_run):
    write_keys(data_dir, alice="restrict,pty")
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "tty", opts=["-tt"])
    assert (rc, out.strip()) == (0, "/dev/console"), err


def test_no_pty_chat_runs_in_plain_lines(atriumd, data_dir):
    write_keys(data_dir, alice="no-pty")
    srv = atriumd(data_dir)
    seen = on_terminal(ssh_command(srv, "lobby", user="alice"),
                       b"alice: hello there",
                       send=(b"you are alice", b"hello there\n"))
    assert b"alice: hello there" in seen, seen
    assert b"\x1b" not in seen, seen


# ------------------------------------------------------------- command= --

FORCED = r'command="echo forced:${SSH_ORIGINAL_COMMAND-none} \"q\""'


def test_forced_command_replaces_exec(atriumd, data_dir, ssh_run):
    write_keys(data_dir, alice=FORCED)
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "echo", "asked")
    assert (rc, out) == (0, "forced:echo asked q\n"), err
    assert "exec replaced by the key's forced command" in srv.read_log()


def test_forced_command_replaces_the_chat(atriumd, data_dir, ssh_run):
    write_keys(data_dir, alice=FORCED)
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", input="", opts=["-T"])
    assert (rc, out) == (0, "forced:none q\n"), err
    assert "shell replaced by the key's forced command" in srv.read_log()


def test_forced_command_overrides_sftp(atriumd, data_dir, ssh_run, tmp_path):
    write_keys(data_dir,
               alice='command="echo $SSH_ORIGINAL_COMMAND > asked.txt"')
    srv = atriumd(data_dir)
    p = subprocess.run(["sftp", "-P", str(srv.port), "-i",
                        data_dir.keys["alice"]] + SSH_OPTS +
                       ["-b", "-", "demo@127.0.0.1"], input="ls\n",
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    rc, out, err = ssh_run(srv, "demo", "cat asked.txt", user="bob")
    assert (rc, out) == (0, "sftp\n"), err
    assert "subsystem sftp replaced by the key's forced command" in \
        srv.read_log()


def test_forced_command_gets_only_locale_variables(atriumd, data_dir,
                                                   ssh_run):
    write_keys(data_dir,
               alice='command="echo ${FOO-unset} ${BASH_ENV-unset} ${LANG}"')
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "x", opts=[
        "-o", "SetEnv=FOO=bar BASH_ENV=/workspace/evil LANG=C.UTF-8"])
    assert (rc, out) == (0, "unset unset C.UTF-8\n"), err


# ---------------------------------------------------------- environment= --

def test_environment_is_ignored_and_logged(atriumd, data_dir, ssh_run):
    write_keys(data_dir, alice='environment="FOO=bar"')
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "echo ${FOO-unset}")
    assert (rc, out) == (0, "unset\n"), err
    assert ("key %s: option environment= ignored"
            % fingerprint(data_dir, "alice")) in srv.read_log()


# ------------------------------------------------- options refusing keys --

def test_unknown_option_refuses_the_key(atriumd, data_dir, ssh_run):
    path = write_keys(data_dir, alice="no-pty,frobnicate",
                      bob='cert-authority')
    srv = atriumd(data_dir)
    for user in ("alice", "bob"):
        rc, out, err = ssh_run(srv, "demo", "echo in", user=user)
        assert refused(rc, err)
    log = srv.read_log()
    assert "%s:1: unknown option 'frobnicate'" % path in log, log
    assert "%s:2: cert-authority refuses the key" % path in log, log


def test_options_apply_when_the_file_changes(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "demo", "tty", opts=["-tt"])
    assert (rc, out.strip()) == (0, "/dev/console"), err
    time.sleep(0.01)
    write_keys(data_dir, alice="no-pty")
    rc, out, err = ssh_run(srv, "demo", "tty", opts=["-tt"])
    assert (rc, out) == (255, "") and "PTY allocation request failed" in err


# -------------------------------------------------------------- seeding --

def test_first_start_skips_keys_with_options(atriumd, data_dir, tmp_path,
                                             ssh_run):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    with open(home / ".ssh" / "authorized_keys", "w") as f:
        f.write('from="10.0.0.0/8" %s\n%s\n' % (data_dir.pubkey("alice"),
                                                data_dir.pubkey("bob")))
    data = tmp_path / "fresh"
    srv = atriumd(str(data), env=dict(os.environ, HOME=str(home)))
    srv.keys = data_dir.keys
    rc, out, err = ssh_run(srv, "demo", "echo in", user="bob")
    assert (rc, out) == (0, "in\n"), err
    rc, out, err = ssh_run(srv, "demo", "echo in", user="alice")
    assert refused(rc, err)
    srv.stop()
    said = srv.read_stdout()
    assert "users: bob" in said
    assert "skipped 1 key line(s) of %s/.ssh that carry options" % home in said
    with open(data / "authorized_keys") as f:
        assert "from=" not in f.read()
