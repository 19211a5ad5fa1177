#!/usr/bin/env bash
#
# The demo suite of test/run.sh: the end-to-end demo in a small
# configuration, over the in-process transport (billing with apply_if_newer)
# and over a private RabbitMQ (billing with the newer_only trigger; demo/run.sh starts and
# stops its own server and broker); fails if a verification fails.  A third
# run uses consumers without the extension and must fail the same checks,
# so they are shown not to be vacuous; the runs with it must have set poison
# events aside as dead letters and reconciled their consumers with the
# producer at the end.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

rc=0
out=$(mktemp -d /tmp/ordering-demo-out.XXXXXX)
small=(--subscriptions 300 --events 4000 --rate 1000 --quiet --out "$out")
echo "demo: in-process transport"
bash "$here/demo/run.sh" "${small[@]}" >"$out/inprocess.log" 2>&1 || rc=1
grep -E "PASS|FAIL|RESULT|ended wrong|    round [0-9]" "$out/inprocess.log" || true
echo "demo: RabbitMQ, billing through the newer_only trigger"
bash "$here/demo/run.sh" --broker "${small[@]}" --state-consumer newer_only \
	>"$out/broker.log" 2>&1 || rc=1
grep -E "PASS|FAIL|RESULT|ended wrong|    round [0-9]" "$out/broker.log" || true
echo "demo: without the extension (the verification must fail)"
if bash "$here/demo/run.sh" "${small[@]}" --without-extension --loss 0.05 \
	--duplicate 0.1 --rate 0 >"$out/without.log" 2>&1; then
	echo "the demo passed its checks without the extension" >&2
	rc=1
elif ! grep -q "RESULT: FAILED" "$out/without.log" ||
	! grep -q "FAIL  every seat delta applied exactly once" "$out/without.log" ||
	! grep -q "FAIL  poison events set aside" "$out/without.log"; then
	echo "the demo without the extension did not fail its checks" >&2
	rc=1
fi
for log in inprocess broker; do
	if ! grep -Eq "^  injected [1-9][0-9]*; [1-9][0-9]* dead letters" "$out/$log.log"; then
		echo "the $log run set no poison event aside" >&2
		rc=1
	fi
	if ! grep -Eq "^    round 1: [1-9][0-9]* buckets compared" "$out/$log.log"; then
		echo "the $log run did not reconcile its consumers with the producer" >&2
		rc=1
	fi
done
grep -E "PASS|FAIL|RESULT" "$out/without.log" || true
if [ "$rc" -ne 0 ]; then
	echo "demo suite FAILED; logs in $out" >&2
	tail -n 40 "$out"/*.log >&2
	exit 1
fi
rm -rf "$out"
