"""GET /metrics: the workspace's requests by kind and their latency
(atriumd(8), HTTP, metrics).

Files made, read and removed through `ssh ROOM@host` are served by the
room's atrium-fs, which counts each request; the monitor reads the counts
(at most a couple of seconds late) and GET /metrics shows them as
atrium_workspace_ops_total and the histogram atrium_workspace_op_seconds.
"""
import http.client
import os
import re
import time

import pytest

from conftest import make_room

from http_run import http_server

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

SERIES = re.compile(r'^(atrium_workspace_[a-z_]+)\{([^}]*)\} (\S+)$', re.M)


def workspace_series(srv):
    """{(name, labels): value} of the atrium_workspace_ series."""
    c = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=20)
    try:
        c.request("GET", "/metrics")
        resp = c.getresponse()
        assert resp.status == 200
        text = resp.read().decode()
    finally:
        c.close()
    return {(m.group(1), m.group(2)): float(m.group(3))
            for m in SERIES.finditer(text)}


def ops(series, op):
    return series.get(("atrium_workspace_ops_total", 'op="%s"' % op), 0)


def wait_for(pred, what, timeout=30):
    deadline = time.time() + timeout
    while not pred():
        assert time.time() < deadline, what
        time.sleep(0.1)


def check_histogram(series, op):
    """Buckets cumulative, in le order, ending in +Inf equal to the count,
    which is the op's total."""
    buckets = [(k[1], v) for k, v in series.items()
               if k[0] == "atrium_workspace_op_seconds_bucket"
               and k[1].startswith('op="%s",' % op)]
    les = [re.search(r'le="([^"]+)"', labels).group(1)
           for labels, _ in buckets]
    assert les[-1] == "+Inf", les
    assert [float(x) for x in les[:-1]] == sorted(float(x)
                                                  for x in les[:-1])
    values = [v for _, v in buckets]
    assert values == sorted(values), buckets
    count = series[("atrium_workspace_op_seconds_count", 'op="%s"' % op)]
    assert values[-1] == count == ops(series, op)
    assert series[("atrium_workspace_op_seconds_sum", 'op="%s"' % op)] > 0


def test_metrics_count_workspace_requests_by_kind(atriumd, data_dir,
                                                  ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "demo")
    before = workspace_series(srv)
    rc, out, err = ssh_run(srv, "demo",
                           "touch a b c; echo hi > d; cat d; "
                           "mkdir e; rm a b c d; rmdir e")
    assert rc == 0 and out == "hi\n", err

    def grown():
        now = workspace_series(srv)
        return all(ops(now, op) >= ops(before, op) + n
                   for op, n in (("create", 5), ("remove", 5),
                                 ("lookup", 1)))
    wait_for(grown, "the workspace's requests were not counted")
    now = workspace_series(srv)
    for op in ("create", "remove", "lookup", "getattr"):
        check_histogram(now, op)
    # every kind is shown, counted or not
    for op in ("read", "write", "rename", "fsync", "readdir", "xattr"):
        assert ("atrium_workspace_ops_total", 'op="%s"' % op) in now
