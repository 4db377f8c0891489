#!/bin/sh
# Run each unit-test binary; print one closing line "N passed, N failed".
passed=0 failed=0
for t in "$@"; do
	if "$t"; then
		passed=$((passed + 1))
	else
		echo "FAIL: $t" >&2
		failed=$((failed + 1))
	fi
done
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
