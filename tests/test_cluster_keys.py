"""Users, keys and tokens the same on every host of a cluster (atriumd(8),
CLUSTER, "Keys and tokens").

Three etcd members and two atriumd hosts, as in test_cluster.py (whose
fixtures these are), each host with its own DATA.  What an operator and
a user see: `atriumd cluster keys push FILE` once lets a key in on both
hosts; a second push without it shuts it out on both within a few
seconds; a file that does not parse is refused with its line number and
changes nothing; a token made over SSH on one host works over HTTP on the
other, and a revoke on either ends it on both.

Run as root after `make all`:
    /usr/bin/python3 -m pytest -q tests/test_cluster_keys.py
"""
import http.client
import os
import re
import shutil
import subprocess

import pytest

from conftest import DataDir, free_port, make_room
from test_cluster import (LEASE, b64, cgroup_prefix, etcd,  # noqa: F401
                          wait_for)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.access("/usr/bin/etcd", os.X_OK),
    reason="needs root (FUSE) and etcd-server")

TOKEN_RE = re.compile(r"^atrium_[A-Za-z0-9_-]{43}$")


@pytest.fixture
def host(cgroup_prefix, atriumd, etcd, tmp_path):  # noqa: F811
    """host(name, data, *extra) -> an atriumd node of the cluster."""
    def start(name, data, *extra):
        srv = atriumd(data, "--listen", "127.0.0.1:%d" % free_port(),
                      "--cluster", "etcd=" + etcd.urls(), "--node", name,
                      "--cluster-lease", str(LEASE),
                      "--cgroup-parent", cgroup_prefix + "-" + name, *extra)
        wait_for(lambda: etcd.get("/atrium/nodes/" + name)[0], 10,
                 "node %s registered" % name)
        return srv
    return start


def second_data(data_dir, tmp_path):
    """Another DATA with the same authorized_keys (and client keys)."""
    path = tmp_path / "data-b"
    path.mkdir(mode=0o700)
    shutil.copy(os.path.join(str(data_dir), "authorized_keys"),
                str(path / "authorized_keys"))
    return DataDir(str(path), data_dir.keys)


def keys_cli(build, etcd, *args):  # noqa: F811
    p = subprocess.run([os.path.join(build, "atriumd"), "cluster", "keys",
                        *args, "--cluster", "etcd=" + etcd.urls()],
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def push(build, etcd, tmp_path, data_dir, users, name):  # noqa: F811
    """Push an authorized_keys of users' keys; its text."""
    text = "".join(data_dir.pubkey(u) + "\n" for u in users)
    path = tmp_path / name
    path.write_text("# the team\n" + text)
    rc, out, err = keys_cli(build, etcd, "push", str(path))
    assert rc == 0, err
    return "# the team\n" + text


def holds(srv, text):
    with open(os.path.join(srv.data, "authorized_keys")) as f:
        return f.read() == text


def refused(ssh_run, srv, room, user):
    """Is user's key refused by srv (before any room is looked at)?"""
    rc, _, err = ssh_run(srv, room, "true", user=user)
    return rc != 0 and "Permission denied" in err


def enters(srv, room, user):
    """Does user get into room's chat through srv (its home, or relayed
    there)?"""
    try:
        make_room(srv, room, user=user)
        return True
    except AssertionError:
        return False


def test_a_pushed_key_lets_its_user_in_on_every_host(build, etcd, host,
                                                     data_dir, tmp_path,
                                                     ssh_run):
    a = host("a", data_dir)
    b = host("b", second_data(data_dir, tmp_path))
    make_room(a, "demo")
    # eve is in neither host's own file.
    assert refused(ssh_run, a, "demo", "eve")
    assert refused(ssh_run, b, "demo", "eve")
    text = push(build, etcd, tmp_path, data_dir, ("alice", "eve"), "pushed_keys")
    # Each host writes the cluster's file over its own.
    wait_for(lambda: holds(a, text) and holds(b, text), 10,
             "both hosts to take the pushed authorized_keys")
    for srv in (a, b):
        assert enters(srv, "demo", "eve")
        st = os.stat(os.path.join(srv.data, "authorized_keys"))
        assert (st.st_mode & 0o777, st.st_uid) == (0o600, 0)
    rc, out, err = keys_cli(build, etcd, "show")
    assert rc == 0 and out == text, err
    # bob was left out of the push: out on both hosts.
    assert refused(ssh_run, a, "demo", "bob")
    assert refused(ssh_run, b, "demo", "bob")


def test_a_key_removed_by_a_push_is_refused_on_every_host(build, etcd, host,
                                                          data_dir, tmp_path,
                                                          ssh_run):
    a = host("a", data_dir)
    b = host("b", second_data(data_dir, tmp_path))
    make_room(a, "demo")
    first = push(build, etcd, tmp_path, data_dir, ("alice", "eve"), "one")
    wait_for(lambda: holds(a, first) and holds(b, first), 10,
             "the first push on both hosts")
    assert enters(b, "demo", "eve")
    second = push(build, etcd, tmp_path, data_dir, ("alice",), "two")
    wait_for(lambda: holds(a, second) and holds(b, second), 5,
             "the second push on both hosts")
    for srv in (a, b):
        assert refused(ssh_run, srv, "demo", "eve")
        assert enters(srv, "demo", "alice")


@pytest.mark.parametrize("bad,why", [
    ("nosuch-option ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA== x@y",
     "nosuch-option"),
    ("ssh-ed25519 !!notbase64!! x@y", "does not decode"),
    ("just some words", "not a public key line"),
])
def test_a_malformed_file_is_refused_with_its_line_and_changes_nothing(
        build, etcd, data_dir, tmp_path, bad, why):  # noqa: F811
    good = push(build, etcd, tmp_path, data_dir, ("alice",), "good")
    path = tmp_path / "bad"
    path.write_text(data_dir.pubkey("alice") + "\n\n" + bad + "\n")
    rc, out, err = keys_cli(build, etcd, "push", str(path))
    assert rc == 1, (out, err)
    assert "line 3" in err and why in err and "nothing pushed" in err, err
    rc, out, err = keys_cli(build, etcd, "show")
    assert rc == 0 and out == good, err


class Http:
    def __init__(self, port):
        self.port = port

    def status(self, token):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        try:
            c.request("GET", "/api/rooms",
                      headers={"Authorization": "Bearer " + token})
            r = c.getresponse()
            r.read()
            return r.status
        finally:
            c.close()


def test_a_token_made_on_one_host_works_on_the_other_until_revoked(
        etcd, host, data_dir, tmp_path, ssh_run):  # noqa: F811
    ha, hb = Http(free_port()), Http(free_port())
    a = host("a", data_dir, "--http-listen", "127.0.0.1:%d" % ha.port)
    b = host("b", second_data(data_dir, tmp_path),
             "--http-listen", "127.0.0.1:%d" % hb.port)
    rc, out, err = ssh_run(a, "anything", "atrium-token", "create")
    assert rc == 0, err
    token = out.splitlines()[0]
    assert TOKEN_RE.match(token), out
    tid = re.search(r"^id:\s+([0-9a-f]{12})$", out, re.M).group(1)
    assert ha.status(token) == 200
    # B knows it as soon as it has read etcd again.
    wait_for(lambda: hb.status(token) == 200, 10, "the token to work on B")
    rc, out, err = ssh_run(b, "anything", "atrium-token", "list")
    assert rc == 0 and tid in out, err
    # Nothing of the token but its hash is in etcd.
    raw = etcd.get("/atrium/tokens/" + tid)[0]
    assert raw and token not in raw and token[7:] not in raw
    # Revoked on B: refused there at once, and on A within a poll.
    rc, out, err = ssh_run(b, "anything", "atrium-token", "revoke", tid)
    assert rc == 0 and "revoked" in out, err
    assert hb.status(token) == 401
    wait_for(lambda: ha.status(token) == 401, 10, "the revoke to reach A")
    assert etcd.get("/atrium/tokens/" + tid) == (None, 0)


def test_a_bad_copy_written_into_etcd_is_not_used(build, etcd, host, data_dir,
                                                  tmp_path, ssh_run):  # noqa: F811
    """etcd is writable by every node: a host checks the cluster's copy
    again and keeps its own file when it does not parse."""
    a = host("a", data_dir)
    good = push(build, etcd, tmp_path, data_dir, ("alice",), "good")
    wait_for(lambda: holds(a, good), 10, "the push on A")
    bad = good + "nosuch-option " + data_dir.pubkey("eve") + "\n"
    etcd.call("/v3/kv/put", {"key": b64("/atrium/authorized_keys"),
                             "value": b64(bad)})
    wait_for(lambda: "is not used: line 3" in a.read_log(), 10,
             "A to refuse the bad copy")
    assert holds(a, good)
    make_room(a, "demo")
    assert refused(ssh_run, a, "demo", "eve")
