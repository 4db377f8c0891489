#!/bin/sh
# make stress: the random-operation exerciser for STRESS_SECONDS (default
# 3600) over ever new seeds: on a real atrium-fs mount, confined as a
# room's daemon is (-o run_as), with the writeback
# cache (half the time plain, a quarter with remounts, a quarter with
# kill -9 of the daemon), then fs/'s core without FUSE under
# ThreadSanitizer for as long again as a quarter.  Stops at the first
# failure, which prints its seed; exit 0 when every read matched.
#   tests/stress.sh BUILD_DIR
set -eu
build=${1:-build}
secs=${STRESS_SECONDS:-3600}
fs=$(cd "$build" && pwd)/atrium-fs
exer=$(cd "$build" && pwd)/tests/fsexer
tsan=$(cd "$build" && pwd)/tsan/tests/test_fs_exerciser
dir=$(mktemp -d "${TMPDIR:-/tmp}/atrium-stress.XXXXXX")
# The daemon confined as a room's is (fs/daemon/mount_confine.c): its database's
# directory root's and 0710 to its gid.
run_as=3000000002:3000000002
mkdir "$dir/db"
chown root:3000000002 "$dir/db"
chmod 0710 "$dir/db"
db=$dir/db/workspace.db
mnt=$dir/mnt
cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || :
	rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$mnt"
"$fs" mkfs "$db"
"$fs" mount -o run_as=$run_as "$db" "$mnt"
# After a kill -9 the daemon's keeper may have unmounted it already.
remount="{ fusermount3 -u '$mnt' || fusermount3 -uz '$mnt' || :; } 2>/dev/null; '$fs' mount -o run_as=$run_as '$db' '$mnt' 2>/dev/null"
crash="kill -9 \"\$(head -n1 '$db-mount')\""
seed=$(date +%s)
echo "stress: ${secs}s from seed $seed in $dir"
"$exer" --seed "$seed" --ops 20000 --seconds $((secs / 2)) "$mnt"
"$exer" --seed $((seed + 1000000)) --ops 5000 --seconds $((secs / 4)) \
    --weight remount=1 --remount "$remount" "$mnt"
"$exer" --seed $((seed + 2000000)) --ops 5000 --seconds $((secs / 4)) \
    --weight crash=1 --remount "$remount" --crash "$crash" "$mnt"
end=$(($(date +%s) + secs / 4))
first=1
while [ "$(date +%s)" -lt "$end" ]; do
	TSAN_OPTIONS="halt_on_error=1 exitcode=66" EXER_FIRST=$first \
	    EXER_SEEDS=4 "$tsan" >/dev/null
	first=$((first + 4))
done
echo "stress: core under ThreadSanitizer: seeds 1 to $((first - 1)) passed"
