"""SIGHUP and atriumd-http's settings (atriumd(8), HTTP, Settings): a
changed http-* setting restarts atriumd-http with it, after the requests
that run have finished; a changed http-listen needs a restart of atriumd.
"""
import json
import os
import signal
import socket
import time

import pytest

from conftest import free_port, make_room
from http_run import token_for
from test_http import wait_http
from test_http_ws_limits import TEXT, Ws
from test_reload import wait_log, write_conf

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")


def put(srv, tok, path, size):
    """(status, body) of a PUT of size bytes, over a raw socket."""
    with socket.create_connection(("127.0.0.1", srv.http_port),
                                  timeout=30) as s:
        try:
            s.sendall(("PUT /api/rooms/work/files/%s HTTP/1.1\r\n"
                       "Host: x\r\nAuthorization: Bearer %s\r\n"
                       "Content-Length: %d\r\nConnection: close\r\n\r\n"
                       % (path, tok, size)).encode() + b"z" * size)
        except (BrokenPipeError, ConnectionResetError):
            pass   # refused before the whole body: the answer says why
        return read_answer(s)


def read_answer(s):
    out = b""
    while True:
        try:
            got = s.recv(65536)
        except ConnectionResetError:
            break
        if not got:
            break
        out += got
    head, _, body = out.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def test_sighup_restarts_atriumd_http_with_its_new_settings(
        atriumd, data_dir, ssh_run):
    port = free_port()
    listen = "http-listen = 127.0.0.1:%d\n" % port
    write_conf(data_dir, listen)   # in the file, so a reload may change it
    srv = atriumd(data_dir)
    wait_http(port)
    srv.http_port = port
    make_room(srv, "work")
    tok = token_for(srv, "alice")
    assert put(srv, tok, "before.bin", 2 << 20)[0] == 201
    # a WebSocket open, and an upload on its way, when the settings change
    ws = Ws(srv, "work", tok)
    assert b'"welcome"' in ws.recv()[1]
    slow = socket.create_connection(("127.0.0.1", srv.http_port), timeout=30)
    slow.sendall(("PUT /api/rooms/work/files/during.bin HTTP/1.1\r\n"
                  "Host: x\r\nAuthorization: Bearer %s\r\n"
                  "Content-Length: %d\r\nConnection: close\r\n\r\n"
                  % (tok, 2 << 20)).encode() + b"d" * (1 << 20))
    # it is running once its temporary file is in the workspace
    deadline = time.monotonic() + 20
    while len(ssh_run(srv, "work", "ls -A")[1].split()) != 2:
        assert time.monotonic() < deadline, "the upload did not start"
        time.sleep(0.05)
    write_conf(data_dir, listen + "http-max-body = 1M\n")
    srv.proc.send_signal(signal.SIGHUP)
    wait_log(srv, "reload applied by restarting atriumd-http")
    wait_log(srv, "http-max-body")
    # (the WebSocket's request runs until it closes)
    wait_log(srv, "SIGHUP: restarting with new settings once the 2 "
             "running requests end")
    # the WebSocket is told to reconnect
    while True:
        op, payload = ws.recv()
        if op == TEXT and b'"end"' in payload:
            break
    assert b"restarts with new settings" in payload
    ws.close()
    # the running upload finishes under the settings it began with
    slow.sendall(b"d" * (1 << 20))
    status, body = read_answer(slow)
    slow.close()
    assert status == 201, body
    wait_log(srv, "HTTP process ended for new settings; starting it again")
    # the new process has the new limit
    status, body = put(srv, tok, "after.bin", 2 << 20)
    assert status == 413, body
    assert "too large" in json.loads(body)["error"]
    assert put(srv, tok, "small.bin", 1000)[0] == 201
    rc, out, _ = ssh_run(srv, "work", "ls")
    assert sorted(out.split()) == ["before.bin", "during.bin", "small.bin"]
    # http-listen is the monitor's socket: not changed by a reload
    write_conf(data_dir, "http-max-body = 1M\nhttp-listen = 127.0.0.1:%d\n"
               % free_port())
    srv.proc.send_signal(signal.SIGHUP)
    wait_log(srv, "needs a restart of atriumd, so not applied: http-listen")
    assert put(srv, tok, "still.bin", 1000)[0] == 201
