#!/usr/bin/env python3
"""Every path of the tree that a comment or a document names must exist.

A comment that says "see sshd/net/stream.c" or a man page that points at
tests/test_chat.py is a promise to the reader; a file that moves breaks it
silently.  This script reads the comments of every *.c, *.h, *.py and *.sh
file (C's /* */ and //, Python's # and docstrings, shell's #) and the whole
text of README.md, ARCHITECTURE.md and man/*.8, picks out each word that
starts with one of the tree's top folders (agent/, cluster/, common/, fs/,
sandbox/, sshd/, tests/, man/, web/, packaging/, .ci/) or is a top-level document
(README.md, ARCHITECTURE.md, LICENSE, Makefile, *.md), and checks that it
names a file or folder of the tree (a glob such as tests/test_*.py must
match one).  A word after a '/' is not a tree path (/usr/share/..., DATA/...,
/workspace/...), so only paths relative to the tree's top are checked;
ALLOWED holds the few words that look like tree paths and are not.

A bare file name (such as room_db.c) in the same places must be
the name of some file of the tree: a file that was renamed or removed
leaves its old name in the heads of the files that called it.  So must a
name with only the last of its folders (net/stream.c, engine/db.c): some
file of the tree must end with that path.  Names of other projects' files
(SQLite's wal.c, libssh's channels.h, glibc's nptl/pthread_create.c) are
in FOREIGN, <stdio.h>-style system headers are skipped, and so are the
system's header folders in prose (sys/types.h: SYSTEM_DIRS).

Run by `make check` (target check-paths): exit 0 when every path is found,
else 1 with one line per stale path, FILE:LINE: PATH.
Usage: tests/check_paths.py [TREE]   (default: the tree this file is in)
"""
import glob
import io
import os
import re
import sys
import tokenize

TOP = ("agent", "cluster", "common", "fs", "sandbox", "sshd", "tests", "man",
       "web", "packaging", ".ci")
SOURCES = (".c", ".h", ".py", ".sh")
SKIP_DIRS = {".git", "build", "node_modules", "corpus", "__pycache__"}

# Words that look like tree paths but are not: names inside a room's
# workspace or a build, and placeholders of the documents.
ALLOWED = {
    "AGENTS.md",            # a workspace's instructions to the agent
    "SKILL.md",             # a skill's file inside a workspace
    "tests/fsexer",         # built as build/tests/fsexer
    "tests/fault_vfs.so",   # built as build/tests/fault_vfs.so
    "tests/chat_readers",   # built by make bench
    "tests/ws_readers",     # built by make bench
    "tests/tsan_canary",    # built as build/tsan/tests/tsan_canary
    "web/node_modules",     # npm installs it from web/package-lock.json
    "sandbox/exec",         # a heading of sshd/http/api_duet.c
}

# Bare file names that are not the tree's: other projects' sources named
# for their behaviour, system headers named in prose, and examples.
FOREIGN = {
    "wal.c", "os_unix.c",   # SQLite's sources
    "channels.h",           # libssh's
    "limits.h",             # the C library's
    "x.c",                  # an example name (agent/tools/pathglob.h)
    "nptl/pthread_create.c",  # glibc's
    "shared/ROADMAP.md",    # the project's plans, kept beside the tree
    "examples/container/README.md",  # Cloudflare's, quoted by a test
}

# Folders of the system's headers, named in prose without <>.
SYSTEM_DIRS = {"sys", "linux", "netinet", "arpa", "json-c", "fuse3",
               "libssh", "curl", "openssl", "asm", "bits", "security"}

BARE_RE = re.compile(r"(?<![\w/.$*<-])([A-Za-z_][\w-]*\.(?:c|h|py|sh|md))(?![\w*/])")

# A file name under one or more folders that are not a top folder of the
# tree (net/stream.c): the start of a word, as BARE_RE's.
TAIL_RE = re.compile(
    r"(?<![\w/.$*<-])((?:[\w.-]+/)+[A-Za-z_][\w-]*\.(?:c|h|py|sh|md))(?![\w*/])")

PATH_RE = re.compile(
    r"(?<![\w/.$-])"
    r"((?:(?:%s)/[\w.*+-][\w.*+/-]*)|(?:[A-Z][A-Z_]*\.md)|LICENSE|Makefile)"
    % "|".join(re.escape(t) for t in TOP))


def c_comments(text):
    """(line, text) of each C comment, /* */ and //, strings skipped."""
    out = []
    for m in re.finditer(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                         r"'(?:\\.|[^'\\\n])*'", text, re.S):
        s = m.group(0)
        if s.startswith("/"):
            out.append((text.count("\n", 0, m.start()) + 1, s))
    return out


def py_comments(text):
    """(line, text) of each Python comment and triple-quoted string."""
    out = []
    try:
        toks = tokenize.generate_tokens(io.StringIO(text).readline)
        for tok in toks:
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string))
            elif tok.type == tokenize.STRING and re.match(
                    r"^[rbuRBU]*('''|\"\"\")", tok.string):
                out.append((tok.start[0], tok.string))
    except (tokenize.TokenError, SyntaxError):
        return sh_comments(text)
    return out


def sh_comments(text):
    """(line, text) of each shell comment: from a # at a word's start."""
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        m = re.search(r"(?:^|\s)(#.*)$", line)
        if m:
            out.append((n, m.group(1)))
    return out


def roff_text(text):
    """A man page's text without the escapes that would split a path."""
    text = re.sub(r"\\f(?:\[[^\]]*\]|\(..|.)", "", text)
    return text.replace("\\-", "-").replace("\\&", "").replace("\\.", ".")


def whole(text):
    return [(1, text)]


def exists(tree, word):
    """Whether word names something in the tree (a glob: one match)."""
    if any(c in word for c in "*?["):
        return bool(glob.glob(os.path.join(tree, word)))
    return os.path.exists(os.path.join(tree, word))


def candidates(chunk):
    """(offset, word) of each tree-path-looking word of chunk."""
    for m in PATH_RE.finditer(chunk):
        word = m.group(1).rstrip(".,:;)'\"`")
        if "..." in word or re.search(r"[A-Z]{2,}", word.partition("/")[2]):
            continue        # an elision or a placeholder (tests/NAME.py)
        yield m.start(1), word


def tail_missing(word, tails):
    """Whether word, a path under folders that are not the tree's top
    ones, is no tree file's tail (tails: every tail of every file's path),
    leaving out other projects' names and placeholders (RUN/x/AGENTS.md)."""
    head = word.partition("/")[0]
    if head in TOP or head in SYSTEM_DIRS or word in FOREIGN:
        return False
    if ".." in word or re.search(r"(^|/)[A-Z][A-Z_]+/", word):
        return False
    return word not in tails


def stale_in(tree, rel, pieces, names, tails):
    """FILE:LINE: PATH for each path or file name in pieces that the tree
    lacks (names: the base names of the tree's files; tails: every tail
    of their paths, as tail_paths makes)."""
    out = []
    for line, chunk in pieces:
        found = [(off, w) for off, w in candidates(chunk)
                 if w not in ALLOWED and not exists(tree, w)]
        found += [(m.start(1), m.group(1)) for m in BARE_RE.finditer(chunk)
                  if m.group(1) not in names and m.group(1) not in FOREIGN
                  and m.group(1) not in ALLOWED]
        found += [(m.start(1), m.group(1)) for m in TAIL_RE.finditer(chunk)
                  if tail_missing(m.group(1), tails)]
        for off, word in sorted(found):
            out.append("%s:%d: %s" % (rel, line + chunk.count("\n", 0, off),
                                      word))
    return out


def reader_of(rel):
    """How to find the comments of the file at rel, or None to skip it."""
    if rel in ("README.md", "ARCHITECTURE.md"):
        return whole
    if rel.startswith("man/") and rel.endswith(".8"):
        return lambda t: whole(roff_text(t))
    if rel.endswith((".c", ".h")):
        return c_comments
    if rel.endswith(".py"):
        return py_comments
    if rel.endswith(".sh"):
        return sh_comments
    return None


def files(tree):
    for top, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(top, name), tree)
            if reader_of(rel):
                yield rel


def base_names(tree):
    """The base name of every file of the tree (build output aside)."""
    out = set()
    for top, dirs, names in os.walk(tree):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        out.update(names)
    return out


def tail_paths(tree):
    """Every tail of every file's path under a folder: sshd/net/stream.c
    gives net/stream.c and itself (the bare name is base_names's)."""
    out = set()
    for top, dirs, names in os.walk(tree):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for name in names:
            parts = os.path.relpath(os.path.join(top, name), tree).split(os.sep)
            for i in range(len(parts) - 1):
                out.add("/".join(parts[i:]))
    return out


def main(argv):
    tree = argv[1] if len(argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    stale = []
    names = base_names(tree)
    tails = tail_paths(tree)
    for rel in files(tree):
        with open(os.path.join(tree, rel), encoding="utf-8",
                  errors="replace") as f:
            text = f.read()
        stale += stale_in(tree, rel, reader_of(rel)(text), names,
                          tails)
    for s in stale:
        print(s)
    if stale:
        print("check_paths: %d path(s) named in comments or documents are "
              "not in the tree" % len(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
