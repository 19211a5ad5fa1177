#!/usr/bin/env bash
#
# The table of bench/run.sh from its raw runs: per workload and variant the
# median tps over the rounds, its ratio to the median of the workload's
# baseline ("ratio", the figure the targets use), the median of the
# per-round ratios to the baseline run of the same round ("paired", less
# sensitive to load that drifts between rounds), the failed transactions, the
# median server CPU per transaction in microseconds (bench/cgroup.sh; "-"
# when not measured) and its ratio: the baseline's CPU per transaction over
# the variant's, which, like "ratio", is above 1 when the variant is cheaper.
# Other load on the machine moves tps a lot and server CPU per transaction
# little.
# The baseline of a workload is named by a "# baseline WORKLOAD VARIANT" line.
# A run with a seventh column (events per transaction, bench/batch.sh)
# counts events instead: its tps and server CPU are per event, so variants
# that consume one event per transaction and those that consume a batch
# compare directly.
#
#   bash bench/table.sh RAW.txt
set -euo pipefail
raw=$1
awk '
	function median(list,    n, a, i, j, t) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	/^# baseline / { base[$3] = $4; next }
	/^#/ { next }
	{
		round = $1; w = $2; v = $3
		# raw files without baseline lines ran the baseline first
		if (!(w in wseen)) { wseen[w] = 1; worder[++nw] = w; if (!(w in base)) base[w] = v }
		if (!((w, v) in vseen)) { vseen[w, v] = 1; vorder[w, ++nv[w]] = v }
		e = (NF >= 7 && $7 > 0) ? $7 : 1
		tps[w, v, round] = $4 * e; all[w, v] = all[w, v] " " $4 * e; failed[w, v] += $5
		if (NF >= 6 && $6 != "-") cpu[w, v] = cpu[w, v] " " $6 / e
		rounds[round] = 1
	}
	END {
		printf "%-16s %-20s %12s %8s %8s %8s %8s %9s\n", "workload", "variant", "median_tps", "ratio", "paired", "failed", "cpu_us", "cpu_ratio"
		for (i = 1; i <= nw; i++) {
			w = worder[i]; b = median(all[w, base[w]])
			bc = ((w, base[w]) in cpu) ? median(cpu[w, base[w]]) : 0
			# the baseline first, then the others as they first ran
			for (j = 0; j <= nv[w]; j++) {
				v = j == 0 ? base[w] : vorder[w, j]
				if (j > 0 && v == base[w])
					continue
				pr = ""
				for (r in rounds)
					if (((w, v, r) in tps) && tps[w, base[w], r] > 0)
						pr = pr " " tps[w, v, r] / tps[w, base[w], r]
				m = median(all[w, v])
				c = ((w, v) in cpu) ? median(cpu[w, v]) : 0
				printf "%-16s %-20s %12.0f %7.2fx %7.2fx %8d %8s %9s\n", w, v, m, (b > 0 ? m / b : 0), median(pr), failed[w, v],
					(c > 0 ? sprintf("%.1f", c) : "-"), (c > 0 && bc > 0 ? sprintf("%.2fx", bc / c) : "-")
			}
		}
	}' "$raw"
