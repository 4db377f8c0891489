"""Helpers of the HTTP command and seed tests: an atriumd serving HTTP on a
free loopback port, and a bearer token of a user's key."""
import re
import subprocess

from conftest import free_port, ssh_command


def http_server(atriumd, data, *extra, env=None):
    """atriumd with --http-listen on a free port (srv.http_port)."""
    port = free_port()
    srv = atriumd(data, "--http-listen", "127.0.0.1:%d" % port, *extra,
                  env=env)
    srv.http_port = port
    return srv


def token_for(srv, user, read_only=False):
    """A token of user's key (DEV)."""
    fp = subprocess.run(["ssh-keygen", "-lf", srv.keys[user] + ".pub"],
                        capture_output=True, text=True,
                        check=True).stdout.split()[1]
    return "dev:%s:%s%s" % (user, fp, ":ro" if read_only else "")
