# Server CPU accounting for bench/run.sh (sourced).
#
# The postmaster and every process it has or will fork (backends, WAL
# writer, checkpointer, ...) are moved into a cgroup of their own, whose CPU
# counter then tells how much CPU the server spent on a run, whatever else
# the machine was doing.  Divided by the transactions of the run, that is
# the server's CPU per transaction: unlike tps, it does not move when other
# work shares the cores (pgbench itself runs outside the cgroup).
# cgroup v1 "cpuacct" or cgroup v2 are used, whichever is mounted and
# writable; without either (not root, say) the column stays "-".

CPU_CGROUP=""
CPU_CGROUP_FILE=""

# Move the postmaster $1 and its children into a new cgroup.
cpu_cgroup_attach() {
	local pm=$1 root dir p
	if [ -w /sys/fs/cgroup/cpuacct ] && [ -e /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then
		root=/sys/fs/cgroup/cpuacct; CPU_CGROUP_FILE=cpuacct.usage
	elif [ -w /sys/fs/cgroup ] && [ -e /sys/fs/cgroup/cgroup.controllers ]; then
		root=/sys/fs/cgroup; CPU_CGROUP_FILE=cpu.stat
	elif [ -w /sys/fs/cgroup/unified ] && [ -e /sys/fs/cgroup/unified/cgroup.controllers ]; then
		root=/sys/fs/cgroup/unified; CPU_CGROUP_FILE=cpu.stat
	else
		echo "no writable cgroup: server CPU per transaction is not measured" >&2
		return 0
	fi
	dir=$root/ordering-bench-$$
	mkdir "$dir" 2>/dev/null || { echo "cannot create $dir: server CPU is not measured" >&2; return 0; }
	for p in "$pm" $(pgrep -P "$pm"); do
		echo "$p" >"$dir/cgroup.procs" 2>/dev/null || true
	done
	CPU_CGROUP=$dir
}

# CPU spent by the cgroup so far, in microseconds (empty when not measured).
cpu_cgroup_usage_us() {
	[ -n "$CPU_CGROUP" ] || return 0
	case "$CPU_CGROUP_FILE" in
		cpuacct.usage) echo $(($(cat "$CPU_CGROUP/cpuacct.usage") / 1000)) ;;
		cpu.stat) sed -n 's/^usage_usec //p' "$CPU_CGROUP/cpu.stat" ;;
	esac
}

# Remove the cgroup once the server has stopped (its processes are gone).
cpu_cgroup_remove() {
	local i
	[ -n "$CPU_CGROUP" ] || return 0
	for i in $(seq 1 50); do
		rmdir "$CPU_CGROUP" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "could not remove $CPU_CGROUP" >&2
	return 0
}
