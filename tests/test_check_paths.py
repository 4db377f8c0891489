"""tests/check_paths.py, the check make check runs on the tree's comments
and documents: on a small tree of its own, a file head that names a file
the tree lacks (bare, under its last folders, or from the top) is what it
reports, and one whose names all exist passes."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check_paths.py")


def tree_with(tmp_path, head):
    """A tree holding sshd/net/stream.c and fs/engine/db.c, and
    sshd/net/server.c whose head comment is head."""
    for rel in ("sshd/net/stream.c", "fs/engine/db.c"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("/* %s: a file of the tree. */\n" % os.path.basename(rel))
    (tmp_path / "sshd/net/server.c").write_text(
        "/*\n * server.c: %s\n */\nint x;\n" % head)
    return tmp_path


def check(tree):
    p = subprocess.run([sys.executable, SCRIPT, str(tree)],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.splitlines()


def test_names_that_exist_pass(tmp_path):
    tree = tree_with(tmp_path, "called by stream.c, net/stream.c, "
                     "engine/db.c and sshd/net/stream.c; <sys/types.h>")
    assert check(tree) == (0, [])


def test_names_the_tree_lacks_are_reported(tmp_path):
    tree = tree_with(tmp_path, "called by room_access.c, net/gone.c,\n"
                     " * monitor/stream.c and sshd/stream.c")
    rc, lines = check(tree)
    assert rc == 1
    assert lines == ["sshd/net/server.c:2: room_access.c",
                     "sshd/net/server.c:2: net/gone.c",
                     "sshd/net/server.c:3: monitor/stream.c",
                     "sshd/net/server.c:3: sshd/stream.c"]
