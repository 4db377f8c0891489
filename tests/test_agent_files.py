"""atrium-agent's file requests (file_open, file_commit, file_abort,
file_list, file_stat, file_delete, file_mkdir) spoken directly on a room's
agent.sock, as atriumd-http speaks them: descriptors come back with their
answer lines (SCM_RIGHTS), writes go through a temporary file that only a
commit puts in place, and every path is confined to the workspace with no
symbolic link on it.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_files.py
"""
import errno
import json
import os
import socket
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_agent import (Client, fast, pytestmark,  # noqa: E402,F401
                        room, wait_until)

SANDBOX_UID = 64222


class FileClient(Client):
    """A Client that also takes the descriptors the agent passes."""

    def __init__(self, path, **kw):
        self.fds = []
        self.fd_lines = []
        super().__init__(path, kind="control", **kw)

    def _read(self, timeout):
        self.sock.settimeout(max(timeout, 0.01))
        try:
            chunk, fds, _flags, _addr = socket.recv_fds(self.sock, 65536, 4)
        except socket.timeout:
            return True
        if not chunk:
            return False
        self.buf += chunk
        self.fds.extend(fds)
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            ev = json.loads(line)
            if ev.get("fds"):
                # the fd came with the first byte of exactly this line
                ev["_fd"] = self.fds.pop(0)
            self.events.append(ev)
        return True

    def ask(self, type, **fields):
        """Send a request and return its answer or its error (by id)."""
        fields.setdefault("id", "r%d" % id(fields))
        self.send(dict(type=type, **fields))
        return self.answer(fields["id"])

    def answer(self, rid):
        """The answer or error of request rid (they come as each request's
        I/O ends, not in line order)."""
        fields = {"id": rid}
        end = time.monotonic() + 15
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("id") == fields["id"] and ev["type"] != "presence":
                    del self.events[i]
                    return ev
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError("no answer to %s; got %s" % (
                    fields, self.events[-5:]))
            if not self._read(left):
                raise AssertionError("closed waiting for %s" % fields)


@pytest.fixture
def agent(room, model):
    room.start("--model-url", model.url, *fast())
    c = FileClient(room.sock, user="alice")
    room.clients.append(c)
    return room, c


def ws(room, *parts):
    return os.path.join(room.workspace, *parts)


def names(room, *parts):
    return sorted(os.listdir(ws(room, *parts)))


def upload(c, path, data, commit=True, id="up"):
    ans = c.ask("file_open", id=id, path=path, mode="write")
    assert ans["type"] == "file_opened", ans
    fd = ans.pop("_fd")
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return c.ask("file_commit" if commit else "file_abort", id=id), ans


def test_read_open_passes_the_file_with_its_size(agent):
    room, c = agent
    with open(ws(room, "notes.txt"), "wb") as f:
        f.write(b"hello\x00world\n" * 1000)
    ans = c.ask("file_open", path="notes.txt", mode="read")
    assert ans["type"] == "file_opened", ans
    assert ans["size"] == 12000 and ans["mode"] == "read"
    assert ans["mtime"] == int(os.stat(ws(room, "notes.txt")).st_mtime)
    with os.fdopen(ans["_fd"], "rb") as f:
        assert f.read() == b"hello\x00world\n" * 1000
    # two opens at once: each fd with its own line
    c.send({"type": "file_open", "id": "a", "path": "notes.txt",
            "mode": "read"})
    c.send({"type": "file_stat", "id": "s", "path": "notes.txt"})
    c.send({"type": "file_open", "id": "b", "path": "notes.txt",
            "mode": "read"})
    got = {k: c.answer(k) for k in "asb"}
    assert "_fd" in got["a"] and "_fd" in got["b"] and "_fd" not in got["s"]
    assert got["s"]["kind"] == "file" and got["s"]["size"] == 12000
    for k in "ab":
        with os.fdopen(got[k]["_fd"], "rb") as f:
            assert f.read(5) == b"hello"


def test_a_write_is_in_place_only_once_committed(agent):
    room, c = agent
    with open(ws(room, "f.txt"), "wb") as f:
        f.write(b"old")
    os.chown(ws(room, "f.txt"), SANDBOX_UID, SANDBOX_UID)
    ans = c.ask("file_open", id="w1", path="f.txt", mode="write")
    assert ans["type"] == "file_opened" and ans["created"] is False, ans
    os.write(ans["_fd"], b"new content")
    os.close(ans["_fd"])
    # not committed: the old file, and the listing hides the temporary
    assert open(ws(room, "f.txt"), "rb").read() == b"old"
    lst = c.ask("file_list", path="")
    assert [e["name"] for e in lst["entries"]] == ["f.txt"], lst
    assert len(names(room)) == 2            # the temporary is beside it
    done = c.ask("file_commit", id="w1")
    assert done["type"] == "file_done" and done["size"] == 11, done
    assert open(ws(room, "f.txt"), "rb").read() == b"new content"
    assert names(room) == ["f.txt"]
    st = os.stat(ws(room, "f.txt"))
    assert st.st_uid == SANDBOX_UID
    # a new file in new directories: created, the sandbox uid's
    done, ans = upload(c, "a/b/c.bin", b"\x00\xff" * 5000)
    assert ans["created"] is True and done["size"] == 10000, done
    assert os.stat(ws(room, "a", "b", "c.bin")).st_uid == SANDBOX_UID
    # audited as files written, by whom
    rows = room.db().execute("SELECT user, kind, command, exit_code, wrote"
                             " FROM audit WHERE kind = 'file'").fetchall()
    assert ("alice", "file", "put f.txt", 0, 1) in rows, rows
    assert ("alice", "file", "put a/b/c.bin", 0, 1) in rows, rows


def test_an_aborted_or_cut_upload_leaves_the_old_file_and_no_stray(agent):
    room, c = agent
    with open(ws(room, "keep.txt"), "wb") as f:
        f.write(b"precious")
    os.chown(ws(room, "keep.txt"), SANDBOX_UID, SANDBOX_UID)
    done, _ = upload(c, "keep.txt", b"half", commit=False)
    assert done["type"] == "file_done" and done["op"] == "abort", done
    assert names(room) == ["keep.txt"]
    # the connection ends in the middle of an upload
    ans = c.ask("file_open", id="cut", path="keep.txt", mode="write")
    os.write(ans["_fd"], b"half of it")
    os.close(ans["_fd"])
    assert len(names(room)) == 2
    c.close()
    room.clients.remove(c)
    wait_until(lambda: names(room) == ["keep.txt"], "the stray removed")
    assert open(ws(room, "keep.txt"), "rb").read() == b"precious"
    rows = room.db().execute("SELECT exit_code, wrote FROM audit WHERE "
                             "command = 'put keep.txt'").fetchall()
    assert rows == [(1, 0), (1, 0)], rows


def test_list_stat_mkdir_delete(agent):
    room, c = agent
    assert c.ask("file_mkdir", path="d/e")["type"] == "file_done"
    upload(c, "d/e/x.txt", b"12345")
    upload(c, "d/y.txt", b"1")
    lst = c.ask("file_list", path="/d/")
    assert lst["path"] == "d"
    assert [(e["name"], e["type"]) for e in lst["entries"]] == [
        ("e", "directory"), ("y.txt", "file")], lst
    assert lst["entries"][1]["size"] == 1 and lst["truncated"] is False
    info = c.ask("file_stat", path="d/e")
    assert info["kind"] == "directory"
    err = c.ask("file_delete", path="d/e")
    assert err["type"] == "error" and err["code"] == "not_empty", err
    assert c.ask("file_delete", path="d/e/x.txt")["type"] == "file_done"
    assert c.ask("file_delete", path="d/e")["type"] == "file_done"
    assert names(room, "d") == ["y.txt"]
    err = c.ask("file_stat", path="d/e")
    assert err["code"] == "not_found", err
    err = c.ask("file_mkdir", path="d")
    assert err["code"] == "exists", err
    err = c.ask("file_list", path="d/y.txt")
    assert err["code"] == "not_directory", err
    err = c.ask("file_open", path="d", mode="read")
    assert err["code"] == "is_directory", err
    err = c.ask("file_delete", path="")
    assert err["code"] == "busy", err
    assert os.path.isdir(room.workspace)


def test_hostile_paths_are_refused_and_nothing_is_written(agent):
    room, c = agent
    os.symlink("/etc/passwd", ws(room, "pw"))
    os.mkdir(ws(room, "real"))
    os.chmod(ws(room, "real"), 0o777)
    os.symlink("real", ws(room, "linkdir"))
    os.symlink(ws(room, "real"), ws(room, "absdir"))
    before = names(room)
    for path, code in [("../x", "bad_path"), ("a/../../x", "bad_path"),
                       ("./x", "bad_path"), ("a\x00b", "bad_path"),
                       ("x" * 300, "bad_path"), ("a/" * 2100, "bad_path"),
                       ("pw", "symlink"), ("linkdir/x", "symlink"),
                       ("absdir/x", "symlink")]:
        for req in ({"type": "file_open", "mode": "write"},
                    {"type": "file_open", "mode": "read"},
                    {"type": "file_delete"}, {"type": "file_mkdir"}):
            kind = req.pop("type")
            err = c.ask(kind, path=path, **req)
            assert err["type"] == "error", (path, kind, err)
            if path == "pw" and kind == "file_mkdir":
                assert err["code"] == "exists", err
            else:
                assert err["code"] == code, (path, kind, err)
    assert names(room) == before
    assert names(room, "real") == []
    assert os.readlink(ws(room, "pw")) == "/etc/passwd"
    err = c.ask("file_list", path="linkdir")
    assert err["code"] == "symlink", err
    # what the sandbox uid may not write stays as it is
    with open(ws(room, "roots.txt"), "wb") as f:
        f.write(b"root's")
    err = c.ask("file_open", path="roots.txt", mode="write")
    assert err["code"] == "denied", err
    assert open(ws(room, "roots.txt"), "rb").read() == b"root's"
    # an upload may not be named as a temporary one
    err = c.ask("file_open", path=".atrium-tmp-1", mode="write")
    assert err["code"] == "bad_path", err


def test_a_full_workspace_says_so_and_keeps_nothing(room, model):
    with room.on_atrium_fs("quota=8M"):
        room.start("--model-url", model.url, *fast())
        c = FileClient(room.sock, user="alice")
        room.clients.append(c)
        ans = c.ask("file_open", id="big", path="big.bin", mode="write")
        fd = ans["_fd"]
        with pytest.raises(OSError) as e:
            for _ in range(64):
                os.write(fd, b"\x01" * (1 << 20))
            os.fsync(fd)
        assert e.value.errno in (errno.ENOSPC, errno.EDQUOT)
        os.close(fd)
        done = c.ask("file_abort", id="big")
        assert done["type"] == "file_done", done
        assert names(room) == []
        # the room still takes what fits
        done, _ = upload(c, "small.txt", b"fits")
        assert done["type"] == "file_done", done
        assert names(room) == ["small.txt"]


def test_unknown_upload_and_bad_requests(agent):
    room, c = agent
    err = c.ask("file_commit", id="nope")
    assert err["code"] == "not_found", err
    err = c.ask("file_open", path="x", mode="append")
    assert "read or write" in err["message"], err
    c.send({"type": "file_stat", "path": "x"})
    ev = c.wait("error")
    assert "id" in ev["message"], ev


def test_a_read_only_connection_reads_but_writes_nothing(agent):
    room, c = agent
    with open(ws(room, "r.txt"), "wb") as f:
        f.write(b"readable")
    ro = FileClient(room.sock, user="alice", read_only=True)
    room.clients.append(ro)
    ans = ro.ask("file_open", path="r.txt", mode="read")
    with os.fdopen(ans["_fd"], "rb") as f:
        assert f.read() == b"readable"
    assert ro.ask("file_list", path="")["type"] == "file_listing"
    err = ro.ask("file_open", path="new.txt", mode="write")
    assert err["code"] == "read_only", err
    for kind in ("file_delete", "file_mkdir"):
        err = ro.ask(kind, path="r.txt")
        assert err["type"] == "error" and "read-only" in err["message"], err
    assert names(room) == ["r.txt"]
