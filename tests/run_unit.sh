#!/bin/sh
# Run each unit-test binary; print one closing line "N passed, N failed".
# A test fails when it exits non-zero, and also when a sanitizer reported
# anything (its "SUMMARY: ...Sanitizer" line) even though the exit status
# did not say so (a report in a child, a handler that exits 0).
log=$(mktemp "${TMPDIR:-/tmp}/run_unit.XXXXXX") || exit 1
rcf=$(mktemp "${TMPDIR:-/tmp}/run_unit.XXXXXX") || exit 1
trap 'rm -f "$log" "$rcf"' EXIT
passed=0 failed=0
for t in "$@"; do
	# Shown as it comes (a hung test still shows what it said), and kept.
	echo 1 >"$rcf"
	{ "$t"; echo "$?" >"$rcf"; } 2>&1 | tee "$log"
	rc=$(cat "$rcf")
	if [ "$rc" -eq 0 ] && grep -q '^SUMMARY: [A-Za-z]*Sanitizer' "$log"; then
		echo "$t: a sanitizer reported, though it exited 0" >&2
		rc=1
	fi
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
	else
		echo "FAIL: $t (exit $rc)" >&2
		failed=$((failed + 1))
	fi
done
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
