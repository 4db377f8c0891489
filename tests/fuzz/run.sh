#!/bin/bash
# tests/fuzz/run.sh: build the libFuzzer targets of tests/fuzz/ and run them.
#
#   tests/fuzz/run.sh [NAME...]     all targets, or fuzz_NAME only
#
# Each tests/fuzz/fuzz_NAME.c is linked with the sources it tests (listed
# below; never a program's main) into build/fuzz/fuzz_NAME with clang's
# libFuzzer, ASan and UBSan, then run for FUZZ_SECONDS (default 30; 0 replays the seed
# corpus once) on its seeds in tests/fuzz/corpus/NAME/, with the dictionary
# tests/fuzz/NAME.dict and the libFuzzer flags in tests/fuzz/NAME.options
# (one line) when they exist.  New inputs go to
# build/fuzz/corpus/NAME/, crashing ones to build/fuzz/artifacts/, logs to
# build/fuzz/logs/.  A target fails when it crashes, leaks, trips a
# sanitizer or an invariant, or times out.  FUZZ_JOBS targets run at once
# (default 1).  Needs clang and Debian's libclang-rt-14-dev.
# Prints one line per target and a closing "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 2

OUT=${FUZZ_BUILD:-build/fuzz}
SECS=${FUZZ_SECONDS:-30}
JOBS=${FUZZ_JOBS:-1}
CC=${FUZZ_CC:-clang}

# The workspace core and the whole-room archive (fs/, less fs/fs_main.c and
# the mount's confinement and keeper, which need libseccomp and root),
# what reads a room's history (room_import.c, import_transcript.c and
# room_db.c), and the constructors every stored event passes through
# (stored_event.c).
FS_CORE=$(ls fs/engine/*.c fs/offline/*.c fs/daemon/*.c |
    grep -Ev '^fs/daemon/(mount|mount_confine|mount_keeper)\.c$' |
    tr '\n' ' ')
STORED="agent/stored_event.c common/event_types.c common/jsonl.c common/utf8.c common/buf.c"
ROOM_DB="agent/room_import.c agent/import_transcript.c agent/room_db.c agent/wal_checkpointer.c common/sqlite_int.c common/walbuf.c common/walrec.c common/fence.c common/vfs_shim.c $STORED"

# atriumd-http's parsers are reached through its own files (less
# sshd/http/http_main.c), linked whole as its unit tests link them, with
# libcommon's sources.
HTTP_ALL=$(ls sshd/http/*.c sshd/shared/*.c common/*.c |
    grep -Ev '^(sshd/http/http_main)\.c$' |
    tr '\n' ' ')
# The monitor's files (less sshd/monitor/monitor_main.c), for what it reads of
# HTTP requests, with the cluster's (cluster/, which it links).
# (The cluster's are all of cluster/ but atrium-replicate's own, as the
# Makefile's CLUSTER_SRC.)
MONITOR_ALL=$(ls sshd/monitor/*.c sshd/shared/*.c common/*.c sandbox/sandbox_seccomp.c \
    cluster/*.c |
    grep -Ev '^(sshd/monitor/monitor_main|cluster/replicate_[a-z]+|cluster/s3)\.c$' |
    tr '\n' ' ')
# A list less the files a target includes (for their static parsers):
# without "LIST" FILE...
without() {
	local out=" $1 " f
	shift
	for f in "$@"; do out=${out// $f / }; done
	echo "$out"
}
http_less() { without "$HTTP_ALL" "$@"; }

# The sources each target needs besides its own file.
declare -A SRC=(
	[jsonl]="common/jsonl.c common/buf.c"
	[names]="common/names.c"
	[config]="common/config.c common/prices.c common/util.c"
	[sse]="agent/provider/sse.c common/buf.c"
	[provider]="agent/provider/provider.c agent/provider/provider_anthropic.c agent/provider/provider_openai.c agent/provider/sse.c common/buf.c common/utf8.c"
	[provider_error]="agent/provider/provider.c agent/provider/provider_anthropic.c agent/provider/provider_openai.c agent/provider/sse.c common/buf.c common/utf8.c"
	[authkeys]="sshd/shared/authkeys.c sshd/shared/authkeys_opts.c sshd/shared/addr_match.c sshd/shared/pattern.c common/names.c common/util.c common/log.c common/utf8.c common/buf.c"
	[authkeys_file]="sshd/shared/authkeys.c sshd/shared/authkeys_opts.c sshd/shared/addr_match.c sshd/shared/pattern.c common/names.c common/util.c common/log.c common/utf8.c common/buf.c"
	[tui_keys]="sshd/chat/tui_keys.c"
	[tui_editor]="sshd/chat/tui_editor.c sshd/chat/tui_keys.c sshd/chat/tui_width.c"
	[tui_width]="sshd/chat/tui_width.c"
	[tui_text]="sshd/chat/tui_draw.c sshd/chat/tui_view.c sshd/chat/tui_markdown.c sshd/chat/tui_wrap.c sshd/chat/tui_width.c sshd/chat/tui_model.c sshd/chat/tui_time.c sshd/chat/tui_editor.c sshd/chat/tui_keys.c common/utf8.c common/buf.c"
	[term_view]="sshd/chat/term_view.c sshd/chat/tui_width.c common/utf8.c common/buf.c common/jsonl.c"
	[pathglob]="agent/tools/pathglob.c"
	[utf8]="common/utf8.c common/buf.c"
	[token_args]="sshd/shared/token_args.c common/names.c common/utf8.c common/buf.c common/jsonl.c"
	[stored_event]="$STORED common/names.c"
	[skills]="agent/skills.c common/jsonl.c common/utf8.c common/buf.c"
	[mcp]="agent/mcp/mcp_proto.c agent/mcp/mcp_config.c agent/text.c common/jsonl.c common/utf8.c common/buf.c"
	[http_range]="$HTTP_ALL"
	[http_wire]="sshd/http/http_wire.c common/util.c"
	[http_auth]="$HTTP_ALL"
	[token_text]="$(without "$MONITOR_ALL" sshd/monitor/tokens.c)"
	[http_routes]="$(http_less sshd/http/api_util.c)"
	[http_bodies]="$(http_less sshd/http/api_cloudflare.c sshd/http/api_duet.c sshd/http/api_rhema.c sshd/http/api_rhema_ws.c sshd/http/http_ws.c)"
	[etcd]="cluster/etcd.c common/log.c common/utf8.c common/buf.c"
	[move]="cluster/move.c cluster/node.c cluster/resolve.c cluster/etcd.c common/names.c common/log.c common/utf8.c common/buf.c"
	[room_archive]="$FS_CORE $ROOM_DB common/log.c common/utf8.c common/buf.c common/names.c common/util.c common/access.c common/fsctl_client.c common/config.c common/prices.c common/mountinfo.c common/room_ids.c"
)

CFLAGS="-std=c17 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
	-Wno-unused-parameter -D_GNU_SOURCE -DFUSE_USE_VERSION=314 -g -O1
	-fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
	-fno-sanitize-recover=all -Icommon -Iagent -Iagent/provider -Iagent/tools -Iagent/mcp -Iagent/term
	-Ifs/engine -Ifs/daemon -Ifs/offline -Isandbox -Isshd/shared -Isshd/monitor
	-Isshd/net -Isshd/chat -Icluster -Itests/fuzz
	$(pkg-config --cflags json-c libssh libutf8proc fuse3 sqlite3 libarchive libcmark-gfm libmicrohttpd libcurl)"
LIBS="$(pkg-config --libs json-c libssh libutf8proc fuse3 sqlite3 libarchive libcmark-gfm libmicrohttpd libcrypto libseccomp libcurl)
	-lwslay -lpthread"

if [ $# -gt 0 ]; then
	names=("$@")
else
	names=()
	for f in tests/fuzz/fuzz_*.c; do
		n=${f#tests/fuzz/fuzz_}
		names+=("${n%.c}")
	done
fi

mkdir -p "$OUT/logs" "$OUT/artifacts"
if ! command -v "$CC" >/dev/null; then
	echo "fuzz: $CC not found; install clang and libclang-rt-14-dev" >&2
	exit 2
fi

# Build one target; 0 or the compiler's status.
build() {
	local n=$1
	if [ -z "${SRC[$n]+x}" ]; then
		echo "fuzz_$n: no source list in tests/fuzz/run.sh" \
		    >"$OUT/logs/$n.log"
		return 1
	fi
	# Each file once: the lists are built from shared pieces (STORED,
	# ROOM_DB), and a file named twice is linked twice.
	local srcs inc=
	srcs=$(printf '%s\n' ${SRC[$n]} | sort -u)
	# atriumd-http's and the monitor's own headers, for the targets
	# that read their files.
	case $n in
	http_*) inc="-Isshd/http -Isshd/shared" ;;
	token_text) inc="-Isshd/monitor -Isshd/shared" ;;
	esac
	# shellcheck disable=SC2086
	$CC $inc $CFLAGS -o "$OUT/fuzz_$n" "tests/fuzz/fuzz_$n.c" $srcs \
	    $LIBS >"$OUT/logs/$n.build" 2>&1
}

# Build and run one target; its status goes to logs/NAME.rc.
one() {
	local n=$1 rc
	local limit="-max_total_time=$SECS"
	[ "$SECS" = 0 ] && limit="-runs=0"
	if ! build "$n"; then
		cat "$OUT/logs/$n.build" >"$OUT/logs/$n.log" 2>/dev/null
		echo build >"$OUT/logs/$n.rc"
		return
	fi
	mkdir -p "$OUT/corpus/$n" "tests/fuzz/corpus/$n"
	local dict= opts=
	[ -f "tests/fuzz/$n.dict" ] && dict="-dict=tests/fuzz/$n.dict"
	[ -f "tests/fuzz/$n.options" ] && opts=$(head -n 1 "tests/fuzz/$n.options")
	# shellcheck disable=SC2086
	"$OUT/fuzz_$n" "$limit" $dict $opts -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$n-" \
	    "$OUT/corpus/$n" "tests/fuzz/corpus/$n" >"$OUT/logs/$n.log" 2>&1
	rc=$?
	echo "$rc" >"$OUT/logs/$n.rc"
}

running=0
for n in "${names[@]}"; do
	rm -f "$OUT/logs/$n.rc"
	one "$n" &
	running=$((running + 1))
	if [ "$running" -ge "$JOBS" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait

passed=0 failed=0
for n in "${names[@]}"; do
	rc=$(cat "$OUT/logs/$n.rc" 2>/dev/null || echo missing)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' \
	    "$OUT/logs/$n.log" | tail -n 1)
	if [ "$rc" = 0 ]; then
		passed=$((passed + 1))
		echo "fuzz_$n: ok, ${execs:-0} runs"
	else
		failed=$((failed + 1))
		echo "fuzz_$n: FAILED (${rc}); see $OUT/logs/$n.log" \
		    "and $OUT/artifacts/"
		grep -m 3 -E 'ERROR|runtime error|invariant broken|error:|no source' \
		    "$OUT/logs/$n.log" | sed 's/^/    /'
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
