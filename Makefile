# Atrium: build, install, test.
#
#   make run     install missing packages, build, start atriumd on :2222
#   make check   install missing packages, build, run every test
#   make bench   measure against native baselines
#   make stress  the fs exerciser over many seeds (STRESS_SECONDS=3600)
#   make deb     build atrium_VERSION_ARCH.deb with Debian's tooling
#   make install / make uninstall   PREFIX=/usr/local DESTDIR=
#
# Binaries go to build/; sanitizer builds to build/asan/ (ASan, UBSan) and
# build/tsan/ (ThreadSanitizer, the threaded unit tests only).

PREFIX   ?= /usr/local
DESTDIR  ?=
BINDIR      ?= $(PREFIX)/bin
SBINDIR     ?= $(PREFIX)/sbin
LIBEXECDIR  ?= $(PREFIX)/libexec/atrium
MANDIR      ?= $(PREFIX)/share/man
UNITDIR     ?= $(or $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null),$(PREFIX)/lib/systemd/system)
SYSUSERSDIR ?= $(or $(shell pkg-config --variable=sysusersdir systemd 2>/dev/null),$(PREFIX)/lib/sysusers.d)
CC       ?= cc
CFLAGS   ?= -O2 -g
# One version for every program and the package: the newest entry of
# packaging/debian/changelog.
VERSION  := $(shell awk -F'[()]' 'NR == 1 { print $$2 }' packaging/debian/changelog)
PYTHON   ?= /usr/bin/python3
BUILD    ?= build
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
# The integration tests mostly wait (for ssh, a mount, the scripted
# model): more of them than cores keeps the cores busy.
TEST_JOBS ?= $(shell echo $$(( $(JOBS) + 1 )))

PKGS     := fuse3 sqlite3 libarchive libcurl json-c libssh liburing libpcre2-8 libseccomp libutf8proc vterm \
            libcmark-gfm libmicrohttpd libcrypto
# -Werror only where the compiler is known (make check, CI: WERROR=1): a
# packager's newer compiler warns about new things and must still build.
WERROR   ?=
WARN     := -std=c17 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) \
            -Wshadow -Wstrict-prototypes -Wno-unused-parameter
DEFS     := -D_GNU_SOURCE -DFUSE_USE_VERSION=314 -DATRIUM_VERSION='"$(VERSION)"'
ALL_CFLAGS = $(WARN) $(DEFS) $(CPPFLAGS) $(CFLAGS) -Icommon $(PART_CFLAGS) -MMD -MP \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# atriumd is a root network daemon: the release build is hardened whatever
# CFLAGS says (hardening-check verifies it).  The sanitizer builds are not:
# ASan and TSan bring their own checks and clash with FORTIFY.
HARDEN_CFLAGS  := -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3 -fstack-protector-strong \
                  -fstack-clash-protection -fPIE \
                  $(if $(filter x86_64 i%86,$(shell uname -m)),-fcf-protection)
HARDEN_LDFLAGS := -pie -Wl,-z,relro,-z,now
# Objects depend on the flags that shape their code (not on -Werror): a
# build with other flags (a new version, a packager's CFLAGS) rebuilds
# every object rather than linking old and new ones together.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_NOW   := $(DEFS) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(HARDEN_CFLAGS) $(HARDEN_LDFLAGS)
ifneq ($(file <$(FLAGS_STAMP)),$(FLAGS_NOW))
$(shell mkdir -p $(BUILD))
$(file >$(FLAGS_STAMP),$(FLAGS_NOW))
endif

LIBS_fs    = $(shell pkg-config --libs fuse3 sqlite3 libarchive libseccomp 2>/dev/null) -lpthread
LIBS_agent = $(shell pkg-config --libs sqlite3 libcurl json-c liburing libpcre2-8 vterm libseccomp 2>/dev/null) -lpthread
LIBS_sshd  = $(shell pkg-config --libs libssh json-c sqlite3 libseccomp libutf8proc libcrypto libcmark-gfm libcurl 2>/dev/null) -lpthread
# atriumd-http: libssh for the shared loop, libcrypto for the WebSocket
# handshake's SHA-1; libwslay has no pkg-config file.
LIBS_http  = $(shell pkg-config --libs libmicrohttpd libssh libcrypto json-c libseccomp 2>/dev/null) -lwslay
LIBS_common = $(shell pkg-config --libs json-c 2>/dev/null)
LIBS_replicate = $(shell pkg-config --libs libcurl json-c libcrypto sqlite3 2>/dev/null)
LIBS_init  = $(shell pkg-config --libs libseccomp 2>/dev/null)

# Debian packages the build, the server and the tests need.
DEB_PKGS := build-essential pkg-config libfuse3-dev fuse3 libsqlite3-dev sqlite3 libarchive-dev \
            libcurl4-openssl-dev libjson-c-dev libssh-dev libssl-dev liburing-dev libpcre2-dev \
            libseccomp-dev libutf8proc-dev libvterm-dev libmicrohttpd-dev libwslay-dev \
            libcmark-gfm-dev libcmark-gfm-extensions-dev \
            bubblewrap putty-tools python3-asyncssh \
            openssh-client openssh-server openssh-sftp-server sshfs git procps iproute2 \
            python3 python3-pytest python3-paramiko python3-websockets caddy tmux rsync strace \
            clang libclang-rt-14-dev fio \
            debhelper devscripts lintian fakeroot adduser \
            chromium chromium-driver python3-selenium
# What only the tests need beyond DEB_PKGS (make check installs them,
# make run does not): etcd for the cluster's tests (tests/test_cluster.py);
# pytest-xdist to run the tests side by side (TEST_JOBS at once).
CHECK_PKGS := etcd-server python3-pytest-xdist
# The page's build needs npm (web/package.json): Debian's nodejs and npm,
# unless an npm is already on PATH (another nodejs, such as one that
# bundles npm, conflicts with Debian's npm package).
NODE_PKGS := nodejs npm

COMMON_SRC := $(wildcard common/*.c)
# The seccomp allow list of the processes that give up root: linked into
# those three programs only (libseccomp), not into libcommon.
ALLOW_SRC  := common/seccomp_allow.c
FS_SRC     := $(wildcard fs/*.c fs/*/*.c) $(ALLOW_SRC)
AGENT_SRC  := $(wildcard agent/*.c agent/*/*.c) $(ALLOW_SRC)
# atrium-fs and atrium-agent keep their concerns in subfolders (fs/engine/,
# agent/provider/, ...); their files include each other's headers by name,
# so each program's objects (and its unit tests) get all its folders.
FS_INC     := $(patsubst %/,-I%,$(sort $(wildcard fs/*/)))
AGENT_INC  := -Iagent $(patsubst %/,-I%,$(sort $(wildcard agent/*/)))
# atriumd's code is in a folder per role: monitor/ (the root process),
# net/ (the network process), chat/ (the terminal chat, in the network
# process) and shared/ (both).  Files include headers by name from their
# own role's folders and shared/ only (PART_CFLAGS, set for atriumd's
# objects and its unit tests alone, so no other program sees those names):
# a monitor file cannot reach for the network process's code, nor the
# other way round.
SSHD_DIRS  := sshd/shared sshd/monitor sshd/net sshd/chat
SSHD_INC   := $(addprefix -I,$(SSHD_DIRS))
SSHD_SRC   := $(wildcard $(addsuffix /*.c,$(SSHD_DIRS)))
# Two programs: atriumd, the monitor, from monitor/ and shared/; and
# atriumd-net, the network process it executes, from net/, chat/ and
# shared/.  Neither links the other's code.
SSHD_MAINS := sshd/monitor/monitor_main.c sshd/net/net_main.c
MONITOR_SRC = $(wildcard sshd/monitor/*.c sshd/shared/*.c) $(SECCOMP_SRC) $(CLUSTER_SRC)
# cluster/: what --cluster adds to the monitor (etcd placement and
# fencing, keys and tokens kept in step); linked in always, run only with
# --cluster.
CLUSTER_SRC := cluster/etcd.c cluster/node.c cluster/cluster_status.c \
    cluster/s3_creds.c cluster/keys_sync.c cluster/move.c \
    cluster/cluster_move.c cluster/resolve.c
# atrium-replicate (started by the monitor with --s3, one per room): the
# shipper of a room's commits to the object store, and its restore.
REPLICATE_SRC := $(wildcard cluster/replicate*.c cluster/s3*.c) cluster/etcd.c
NET_SRC     = $(wildcard sshd/net/*.c sshd/chat/*.c sshd/shared/*.c) $(ALLOW_SRC)
# A third: atriumd-http, the HTTP process (started only with
# --http-listen), from http/ and shared/.
HTTP_SRC    = $(wildcard sshd/http/*.c sshd/shared/*.c) $(ALLOW_SRC)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)

# sandbox/sandbox_init.c and its filters are their own program, not part of
# libcommon (libseccomp is linked only where it is needed).  atriumd links
# the filters too: a room transfer's helpers get them (transfer_sandbox.c).
SECCOMP_SRC   := sandbox/sandbox_seccomp.c
INIT_SRC      := sandbox/sandbox_init.c $(SECCOMP_SRC)
LIBCOMMON_SRC := $(filter-out $(INIT_SRC) $(ALLOW_SRC),$(COMMON_SRC))

obj = $(patsubst %.c,$(1)/obj/%.o,$(2))

PROGS := atriumd atriumd-net atriumd-http atrium-fs atrium-agent atrium-sandbox-init \
         atrium-replicate

# The room in the browser: the page's own files (web/) and the files of
# npm's packages it uses (web/package.json, exact versions, locked), all
# copied into $(BUILD)/web for atriumd-http to serve.  npm runs at build
# time only (npm ci, when web/node_modules lacks them): the page fetches
# nothing from anywhere but atriumd-http.
WEB_PAGE   := index.html app.js app.css
WEB_NPM    := web/node_modules/@xterm/xterm/lib/xterm.js \
              web/node_modules/@xterm/xterm/css/xterm.css \
              web/node_modules/@xterm/addon-fit/lib/addon-fit.js
# Each with its gzip copy (NAME.gz), which atriumd-http sends to a
# browser that takes gzip.
WEB_FILES  := $(foreach f,$(WEB_PAGE) $(notdir $(WEB_NPM)),$(f) $(f).gz)
WEBDIR     ?= $(PREFIX)/share/atrium/web

.PHONY: all deps run check unit unit-asan unit-tsan check-paths fuzz fuzz-replay bench stress \
        install uninstall deb clean
all: $(addprefix $(BUILD)/,$(PROGS)) $(addprefix $(BUILD)/web/,$(WEB_FILES))

# --- the web page -------------------------------------------------------------
$(BUILD)/web/%.gz: $(BUILD)/web/%
	gzip -9 -n -c $< > $@
$(BUILD)/web/%: web/%
	@mkdir -p $(@D)
	cp $< $@
$(foreach f,$(WEB_NPM),$(eval $(BUILD)/web/$(notdir $(f)): $(f) ; @mkdir -p $$(@D) && cp $$< $$@))
# npm ci installs exactly what web/package-lock.json names, scripts off.
$(WEB_NPM) &: web/package.json web/package-lock.json
	cd web && npm ci --ignore-scripts --no-audit --no-fund
	@touch $(WEB_NPM)

# --- programs --------------------------------------------------------------
define program_rules # $(1)=build dir, $(2)=extra cflags, $(3)=extra ldflags
$(1)/libcommon.a: $(call obj,$(1),$(LIBCOMMON_SRC))
	@mkdir -p $$(@D)
	$$(AR) rcs $$@ $$^
$(1)/atrium-fs: $(call obj,$(1),$(FS_SRC)) $(1)/libcommon.a
	$$(CC) $(2) $$(LDFLAGS) $(3) -o $$@ $$^ $$(LIBS_fs) $$(LIBS_common)
$(1)/atrium-agent: $(call obj,$(1),$(AGENT_SRC)) $(1)/libcommon.a
	$$(CC) $(2) $$(LDFLAGS) $(3) -o $$@ $$^ $$(LIBS_agent) $$(LIBS_common)
$(1)/atriumd: $(call obj,$(1),$(MONITOR_SRC)) $(1)/libcommon.a
	$$(CC) $(2) $$(LDFLAGS) $(3) -o $$@ $$^ $$(LIBS_sshd) $$(LIBS_common)
$(1)/atriumd-net: $(call obj,$(1),$(NET_SRC)) $(1)/libcommon.a
	$$(CC) $(2) $$(LDFLAGS) $(3) -o $$@ $$^ $$(LIBS_sshd) $$(LIBS_common)
$(1)/atriumd-http: $(call obj,$(1),$(HTTP_SRC)) $(1)/libcommon.a
	$$(CC) $(2) $$(LDFLAGS) $(3) -o $$@ $$^ $$(LIBS_http) $$(LIBS_common)
$(1)/atrium-replicate: $(call obj,$(1),$(REPLICATE_SRC)) $(1)/libcommon.a
	$$(CC) $(2) $$(LDFLAGS) $(3) -o $$@ $$^ $$(LIBS_replicate) $$(LIBS_common)
$(1)/atrium-sandbox-init: $(call obj,$(1),$(INIT_SRC))
	$$(CC) $(2) $$(LDFLAGS) $(3) -o $$@ $$^ $$(LIBS_init)
$(1)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $$(@D)
	$$(CC) $$(ALL_CFLAGS) $(2) -c -o $$@ $$<
$(call obj,$(1),$(wildcard fs/*.c fs/*/*.c tests/unit/test_fs_*.c)): \
    PART_CFLAGS := $(FS_INC)
$(call obj,$(1),$(wildcard agent/*.c agent/*/*.c tests/unit/test_agent_*.c)): \
    PART_CFLAGS := $(AGENT_INC)
$(call obj,$(1),$(wildcard sshd/shared/*.c)): PART_CFLAGS := -Isshd/shared
$(call obj,$(1),$(wildcard sshd/monitor/*.c)): \
    PART_CFLAGS := -Isshd/shared -Isshd/monitor -Icluster -Isandbox
$(call obj,$(1),$(wildcard cluster/*.c tests/unit/test_cluster_*.c)): PART_CFLAGS := -Icluster
$(call obj,$(1),$(wildcard sshd/net/*.c sshd/chat/*.c)): \
    PART_CFLAGS := -Isshd/shared -Isshd/net -Isshd/chat
$(call obj,$(1),$(wildcard sshd/http/*.c tests/unit/test_http_*.c)): \
    PART_CFLAGS := -Isshd/shared -Isshd/http
$(call obj,$(1),$(wildcard tests/unit/test_sshd_*.c)): PART_CFLAGS := $(SSHD_INC) -Icluster
endef

SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
$(eval $(call program_rules,$(BUILD),$(HARDEN_CFLAGS),$(HARDEN_LDFLAGS)))
$(eval $(call program_rules,$(BUILD)/asan,$(SAN)))
# ThreadSanitizer for the code that runs threads (fs/: the committer, the
# reclaimer, the checkpoints).  -O1 after CFLAGS' -O2: TSan's stacks stay
# readable and its runs fast enough for make check.
TSAN := -fsanitize=thread -fno-omit-frame-pointer -O1 -g
$(eval $(call program_rules,$(BUILD)/tsan,$(TSAN)))

# --- unit tests --------------------------------------------------------------
# tests/unit/test_PART_NAME.c links with PART's objects (less main.c) and
# libcommon; PART is common, fs, agent or sshd.
part_of = $(word 2,$(subst _, ,$(basename $(notdir $(1)))))
COMMON_PART :=
FS_PART      = $(filter-out fs/fs_main.c,$(FS_SRC))
AGENT_PART   = $(filter-out agent/agent_main.c,$(AGENT_SRC))
SSHD_PART    = $(filter-out $(SSHD_MAINS),$(SSHD_SRC)) $(SECCOMP_SRC) $(ALLOW_SRC) $(CLUSTER_SRC)
HTTP_PART    = $(filter-out sshd/http/http_main.c,$(HTTP_SRC))
CLUSTER_PART = $(sort $(CLUSTER_SRC) $(filter-out cluster/replicate_main.c,$(REPLICATE_SRC)))

define unit_rules # $(1)=build dir, $(2)=extra cflags, $(3)=test source
$(1)/tests/$(basename $(notdir $(3))): $(call obj,$(1),$(3)) \
    $(call obj,$(1),$($(shell echo $(call part_of,$(3)) | tr a-z A-Z)_PART)) $(1)/libcommon.a
	@mkdir -p $$(@D)
	$$(CC) $(2) -o $$@ $$^ $$(LIBS_ALL)
endef
$(foreach t,$(UNIT_SRC),$(eval $(call unit_rules,$(BUILD),,$(t))))
$(foreach t,$(UNIT_SRC),$(eval $(call unit_rules,$(BUILD)/asan,$(SAN),$(t))))
# Only the tests of the code with threads go under TSan: atrium-fs, the
# key-exchange pool, and room.db's checkpointer (the agent otherwise runs
# coroutines on one thread, atriumd forks).
UNIT_TSAN_SRC := $(wildcard tests/unit/test_fs_*.c tests/unit/test_sshd_kex*.c) \
                 tests/unit/test_agent_wal_checkpointer.c
$(foreach t,$(UNIT_TSAN_SRC),$(eval $(call unit_rules,$(BUILD)/tsan,$(TSAN),$(t))))
# tsan_canary has a race on purpose: unit-tsan first proves a report fails.
$(BUILD)/tsan/tests/tsan_canary: $(BUILD)/tsan/obj/tests/unit/tsan_canary.o
	@mkdir -p $(@D)
	$(CC) $(TSAN) -o $@ $^ -lpthread
LIBS_ALL = $(LIBS_fs) $(LIBS_agent) $(LIBS_sshd) $(LIBS_http) $(LIBS_replicate) $(LIBS_common)

UNIT_BINS      := $(foreach t,$(UNIT_SRC),$(BUILD)/tests/$(basename $(notdir $(t))))
UNIT_ASAN_BINS := $(foreach t,$(UNIT_SRC),$(BUILD)/asan/tests/$(basename $(notdir $(t))))
UNIT_TSAN_BINS := $(foreach t,$(UNIT_TSAN_SRC),$(BUILD)/tsan/tests/$(basename $(notdir $(t))))

# The sandbox test runs atrium-sandbox-init from beside its own build.
unit: $(UNIT_BINS) $(BUILD)/atrium-sandbox-init
	@tests/run_unit.sh $(UNIT_BINS)
unit-asan: $(UNIT_ASAN_BINS) $(BUILD)/asan/atrium-sandbox-init
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    tests/run_unit.sh $(UNIT_ASAN_BINS)
# Any TSan report fails: halt_on_error stops the test with exitcode, and
# run_unit.sh also fails a test whose output holds a sanitizer's SUMMARY.
# No suppressions: libsqlite3 is not instrumented, so TSan sees none of its
# memory accesses, only its pthread calls, and it reports nothing there.
# (A called_from_lib:libsqlite3.so suppression would make TSan ignore the
# mutex locks SQLite takes but not all of their unlocks, which reached it
# through the test VFS shim: it caused the only false report seen.)
TSAN_OPTIONS_CHECK := halt_on_error=1 exitcode=66 second_deadlock_stack=1
# The canary is asked up to three times (once it went unreported on a
# loaded machine, with its output unseen); the last output is shown when
# none reported.
unit-tsan: $(UNIT_TSAN_BINS) $(BUILD)/tsan/tests/tsan_canary
	@for try in 1 2 3; do \
	    TSAN_OPTIONS="$(TSAN_OPTIONS_CHECK)" tests/run_unit.sh \
	        $(BUILD)/tsan/tests/tsan_canary >$(BUILD)/tsan/canary.out 2>&1 || exit 0; \
	done; cat $(BUILD)/tsan/canary.out >&2; \
	echo "unit-tsan: the canary's race went unreported" >&2; exit 1
	@TSAN_OPTIONS="$(TSAN_OPTIONS_CHECK)" tests/run_unit.sh $(UNIT_TSAN_BINS)

# The fault-injecting SQLite VFS, preloaded into a real atrium-agent by
# tests/test_agent_journal.py to fail room.db's commits one at a time, and
# into atrium-fs by tests/test_fs_snapshot.py to pause it at a commit.
$(BUILD)/tests/fault_vfs.so: tests/fault_vfs.c tests/unit/shim_vfs.h
	@mkdir -p $(@D)
	$(CC) $(WARN) -Wno-unused-function $(DEFS) $(CFLAGS) -fPIC -shared \
	    -Itests -o $@ $< $(shell pkg-config --libs sqlite3 2>/dev/null) -lpthread

# The random-operation exerciser on a real mount (tests/exer/): a test
# tool, not part of Atrium; its engine is also test_fs_exerciser's.
$(BUILD)/tests/fsexer: tests/exer/fsexer.c tests/exer/exer.c tests/exer/exer.h
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(CFLAGS) -o $@ tests/exer/fsexer.c tests/exer/exer.c

# make bench's reading chat members (tests/bench.py): a test tool; its
# loop, shared with ws_readers, is tests/bench/bench_readers.c.
BENCH_READERS := tests/bench/bench_readers.c tests/bench/bench_readers.h
$(BUILD)/tests/chat_readers: tests/bench/chat_readers.c $(BENCH_READERS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(CFLAGS) -o $@ $(filter %.c,$^) -lssh

# What drawing a streamed answer costs per member and delta, with and
# without the cache the members share (tests/bench/md_stream.c).
$(BUILD)/tests/md_stream: $(call obj,$(BUILD),tests/bench/md_stream.c $(SSHD_PART)) \
    $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LIBS_ALL)

# make bench's WebSocket clients (tests/bench.py, the http part).
$(BUILD)/tests/ws_readers: tests/bench/ws_readers.c $(BENCH_READERS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(CFLAGS) -o $@ $(filter %.c,$^)

# --- packages ----------------------------------------------------------------
# Installs only what is missing; needs root (or sudo) the first time.
deps:
	@missing=$$(for p in $(DEB_PKGS) $(DEPS_EXTRA); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; \
	    done; command -v npm >/dev/null 2>&1 || echo $(NODE_PKGS)); \
	if [ -n "$$missing" ]; then \
	    echo "installing:" $$missing; \
	    sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	    $$sudo apt-get update -q && \
	    DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@[ -f web/node_modules/.package-lock.json ] || \
	    (cd web && npm ci --ignore-scripts --no-audit --no-fund)

# --- run, check, bench -------------------------------------------------------
run: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	$(BUILD)/atriumd --data ./data --listen :2222

check: DEPS_EXTRA = $(CHECK_PKGS)
check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) WERROR=1 all $(UNIT_BINS) $(UNIT_ASAN_BINS) \
	    $(BUILD)/tests/fault_vfs.so $(BUILD)/tests/fsexer \
	    $(BUILD)/asan/atrium-sandbox-init $(UNIT_TSAN_BINS) \
	    $(BUILD)/tsan/tests/tsan_canary
	@$(MAKE) --no-print-directory check-paths
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory unit-asan
	@$(MAKE) --no-print-directory unit-tsan
	@$(MAKE) --no-print-directory fuzz-replay
	$(PYTHON) -m pytest -q -p no:cacheprovider -n $(TEST_JOBS) tests/

# Every path a comment, README.md, ARCHITECTURE.md or a man page names
# exists in the tree (tests/check_paths.py).
check-paths:
	@$(PYTHON) tests/check_paths.py

# libFuzzer targets of tests/fuzz/ (clang): FUZZ_SECONDS each (default 30),
# FUZZ_JOBS at once.  make check replays their seed corpora only.
fuzz: deps
	@tests/fuzz/run.sh
fuzz-replay:
	@FUZZ_SECONDS=0 tests/fuzz/run.sh

bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/tests/chat_readers \
	    $(BUILD)/tests/ws_readers
	$(PYTHON) tests/bench.py

# STRESS_SECONDS (default 3600) of the fs exerciser, new seeds each run.
stress: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/tests/fsexer \
	    $(BUILD)/tsan/tests/test_fs_exerciser
	tests/stress.sh $(BUILD)

# --- install -----------------------------------------------------------------
# atriumd is the daemon (sbin), atrium-fs a tool people run (bin); the
# network process, the agent and the sandbox's init are started only by
# atriumd and the agent, so they stay off PATH in libexec (atriumd finds
# them from its own place).
INSTALLED = $(DESTDIR)$(SBINDIR)/atriumd $(DESTDIR)$(BINDIR)/atrium-fs \
    $(DESTDIR)$(LIBEXECDIR)/atriumd-net $(DESTDIR)$(LIBEXECDIR)/atriumd-http \
    $(DESTDIR)$(LIBEXECDIR)/atrium-agent \
    $(DESTDIR)$(LIBEXECDIR)/atrium-sandbox-init $(DESTDIR)$(LIBEXECDIR)/atrium-replicate \
    $(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(wildcard man/*.8))) \
    $(DESTDIR)$(UNITDIR)/atriumd.service $(DESTDIR)$(SYSUSERSDIR)/atrium.conf \
    $(addprefix $(DESTDIR)$(WEBDIR)/,$(WEB_FILES))

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(LIBEXECDIR) \
	    $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR)
	install -m 755 $(BUILD)/atriumd $(DESTDIR)$(SBINDIR)/
	install -m 755 $(BUILD)/atrium-fs $(DESTDIR)$(BINDIR)/
	install -m 755 $(BUILD)/atriumd-net $(BUILD)/atriumd-http $(BUILD)/atrium-agent \
	    $(BUILD)/atrium-sandbox-init $(BUILD)/atrium-replicate $(DESTDIR)$(LIBEXECDIR)/
	install -m 644 man/*.8 $(DESTDIR)$(MANDIR)/man8/
	sed 's|@SBINDIR@|$(SBINDIR)|g' packaging/atriumd.service \
	    > $(DESTDIR)$(UNITDIR)/atriumd.service
	chmod 644 $(DESTDIR)$(UNITDIR)/atriumd.service
	install -m 644 packaging/atrium.sysusers $(DESTDIR)$(SYSUSERSDIR)/atrium.conf
	install -d $(DESTDIR)$(WEBDIR)
	install -m 644 $(addprefix $(BUILD)/web/,$(WEB_FILES)) $(DESTDIR)$(WEBDIR)/

uninstall:
	rm -f $(INSTALLED)
	-rmdir $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(WEBDIR) 2>/dev/null

# --- Debian package ------------------------------------------------------------
# dpkg-buildpackage in a copy of the tracked sources with packaging/debian/
# as its debian/; the .deb lands in $(BUILD)/deb/.  DEB_BUILD_OPTIONS=nocheck
# skips make check inside the package build.  The package's own make runs
# without this one's MAKEFLAGS and command-line variables (make puts them
# in the environment): a BUILD=DIR given here must not become the build
# (and make clean) directory of the copy inside DIR.
DEB_ARCH = $(shell dpkg --print-architecture)
DEB_SRC  = $(BUILD)/deb/atrium-$(VERSION)
deb: deps
	rm -rf $(BUILD)/deb && mkdir -p $(DEB_SRC)
	git ls-files -z | xargs -0 cp --parents -t $(DEB_SRC)
	cp --parents -t $(DEB_SRC) $(WEB_NPM) web/node_modules/.package-lock.json
	cp -r packaging/debian $(DEB_SRC)/debian
	cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD \
	    -u PREFIX -u DESTDIR -u BINDIR -u SBINDIR -u LIBEXECDIR \
	    DEB_BUILD_OPTIONS="$(DEB_BUILD_OPTIONS)" \
	    dpkg-buildpackage -b -us -uc -j$(JOBS)
	lintian --fail-on error,warning $(BUILD)/deb/atrium_$(VERSION)_$(DEB_ARCH).deb
	@echo "built $(BUILD)/deb/atrium_$(VERSION)_$(DEB_ARCH).deb"

clean:
	rm -rf $(BUILD)

# (not those of the package's own build under $(BUILD)/deb)
-include $(shell find $(BUILD) -path $(BUILD)/deb -prune -o -name '*.d' -type f -print 2>/dev/null)
