"""Helpers of the HTTP command and seed tests (test_http_exec.py,
test_http_seeds.py): an atriumd serving HTTP on a free loopback port, and
a bearer token of a user's key made as a user makes one, with
`ssh HOST atrium-token create`."""
from conftest import _ssh_run, free_port
from test_http import wait_http
from test_tokens import TOKEN_RE


def http_server(atriumd, data, *extra, env=None):
    """atriumd with --http-listen on a free port (srv.http_port), once
    atriumd-http answers."""
    port = free_port()
    srv = atriumd(data, "--http-listen", "127.0.0.1:%d" % port, *extra,
                  env=env)
    wait_http(port)
    srv.http_port = port
    return srv


def token_for(srv, user, read_only=False):
    """A new token of user's key (read-only when asked)."""
    args = ["atrium-token", "create"] + (["--read-only"] if read_only else [])
    rc, out, err = _ssh_run(srv, "anything", *args, user=user)
    assert rc == 0, err
    tok = out.splitlines()[0]
    assert TOKEN_RE.match(tok), out
    return tok
