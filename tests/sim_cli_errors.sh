#!/bin/sh
# strata sim collective: an error comes before any table output (issue 10, defect 10), and a 1e99-byte size
# is an input error naming the simulator's range (issue 11), not an internal error.
# Usage: sim_cli_errors.sh <strata binary> <source dir>
set -u
strata=$1
hw=$2/configs/hw/dgx-a100.yaml
out=$("$strata" sim collective --hw "$hw" --op alltoall --algo tree 2>/tmp/strata_cli_err.$$)
rc=$?
err=$(cat /tmp/strata_cli_err.$$)
rm -f /tmp/strata_cli_err.$$
[ "$rc" -eq 2 ] || { echo "expected exit 2, got $rc"; exit 1; }
[ -z "$out" ] || { echo "expected no table output before the error, got: $out"; exit 1; }
case "$err" in *"tree implements allreduce, broadcast and reduce only"*) ;; *) echo "unexpected error: $err"; exit 1;; esac
out=$("$strata" sim collective --hw "$hw" --sizes 1MiB:1e99B 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 2 ] || { echo "1e99B: expected exit 2, got $rc: $out"; exit 1; }
case "$out" in *"outside the simulator's range"*) ;; *) echo "1e99B: unexpected error: $out"; exit 1;; esac
echo ok
