#!/usr/bin/env bash
#
# Mutation tests of the model-based tester (test/model): each patch of
# test/mutations/ puts back a bug that was found by hand.  For each one, a
# copy of the tree gets the patch, is built into a sandbox of its own, and
# the tester runs on it within its CI budget; the command fails unless the
# tester fails on every mutation.
#
#   bash test/mutate.sh                      every mutation, 3 minutes each
#   bash test/mutate.sh --minutes 5 --seed 7 b-on-conflict-keeps-number
#
# A patch names files by their path at the time it was written; files
# move, so each path is rewritten to wherever a file of that base name
# lives under src/ now, and the patch is applied with patch -p1.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

minutes=3
seed=
only=()
while [ $# -gt 0 ]; do
	case "$1" in
		--minutes) minutes=$2; shift 2 ;;
		--seed) seed=$2; shift 2 ;;
		*) only+=("$1"); shift ;;
	esac
done
seed=${seed:-$(( (RANDOM << 15 | RANDOM) + 1 ))}

ensure_packages $(pg_packages) make gcc libc6-dev patch python3-hypothesis python3-psycopg

# The patch with each "--- a/PATH" and "+++ b/PATH" pointing to the file of
# that base name under $2/src (exactly one must exist).
rewrite_paths() {
	local patch=$1 tree=$2 line path base found
	while IFS= read -r line; do
		case "$line" in
			'--- a/'* | '+++ b/'*)
				path=${line:6}
				path=${path%%$'\t'*}
				base=$(basename "$path")
				found=$(cd "$tree" && find src -name "$base" -type f)
				if [ "$(printf '%s\n' "$found" | grep -c .)" -ne 1 ]; then
					echo "$(basename "$patch"): no single file named $base under src/ ($found)" >&2
					return 1
				fi
				printf '%s%s\n' "${line:0:6}" "$found"
				;;
			*) printf '%s\n' "$line" ;;
		esac
	done <"$patch"
}

echo "mutations: the tester runs $minutes minutes on each, seed $seed"
declare -A result=()
names=()
for patch in "$here"/test/mutations/*.patch; do
	name=$(basename "$patch" .patch)
	if [ ${#only[@]} -gt 0 ] && ! printf '%s\n' "${only[@]}" | grep -qx "$name"; then
		continue
	fi
	names+=("$name")
	tree=$(mktemp -d /tmp/ordering-mutant.XXXXXX)
	tar -C "$here" --exclude=.git --exclude='tmp_check*' --exclude=results \
		--exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . | tar -C "$tree" -xf -
	if ! rewrite_paths "$patch" "$tree" | (cd "$tree" && patch -p1 -s); then
		result[$name]="patch does not apply"
		rm -rf "$tree"
		continue
	fi
	unset ORDERING_SANDBOX_BASE
	sandbox_create "$tree"
	rm -rf "$tree"
	if ! sandbox_build >"$SANDBOX/build.log" 2>&1; then
		cat "$SANDBOX/build.log"
		result[$name]="does not build"
		sandbox_destroy
		continue
	fi
	mkdir -p "$SANDBOX/model"
	chown postgres: "$SANDBOX/model" 2>/dev/null || true
	log=$SANDBOX/model.log
	if as_postgres /usr/bin/python3 "$SANDBOX/src/test/model/main.py" --bindir "$SANDBOX_BIN" \
		--workdir "$SANDBOX/model" --minutes "$minutes" --seed "$seed" >"$log" 2>&1; then
		result[$name]="NOT FOUND in $minutes minutes"
		echo "$(date +%T) $name: not found (log: $log)"
		continue
	fi
	found=$(sed -n 's/^FAILED: found after \([0-9]*s\), shrunk in \([0-9]*s\).*/found after \1 (shrunk in \2)/p' "$log")
	# the shrunk example's length: its statements and operations, not the
	# notes that a waiting statement finished
	length=$(grep '^--@ ' "$SANDBOX/model/failing.sql" 2>/dev/null |
		grep -vc 'the waiting statement finished' || true)
	result[$name]=${found:+$found, $length steps}
	result[$name]=${result[$name]:-failed: $(tail -n 1 "$log")}
	echo "$(date +%T) $name: ${result[$name]}"
	grep -m1 -- '-- FAILED:' "$SANDBOX/model/failing.sql" 2>/dev/null || true
	sandbox_destroy
done

echo
printf '%-36s %s\n' mutation "result (seed $seed)"
missed=0
for name in "${names[@]}"; do
	printf '%-36s %s\n' "$name" "${result[$name]}"
	case "${result[$name]}" in found*) ;; *) missed=$((missed + 1)) ;; esac
done
if [ "$missed" -gt 0 ]; then
	echo "the tester missed $missed of ${#names[@]} mutations"
	exit 1
fi
echo "the tester found every mutation"
