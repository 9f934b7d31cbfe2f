# A cgroup of the test run's own, so that the leftover check sees only the
# sandboxes this run started. sandcap makes each sandbox's cgroup under
# its supervisor's own (docs/cgroups.md); a shell moved into a fresh child
# of its cgroup therefore has every sandbox it starts, however deep, below
# that child, and sandcap runs elsewhere on the host never there. Sourced
# by tests/run-all.
#
# testrun_cgroup_enter        moves this shell in ("$TESTRUN_CGROUP_WHY" if not)
# testrun_cgroup_leave        moves it back; prints what was left behind
#                             (sandbox cgroups, processes) and removes the rest

TESTRUN_CGROUP_NAME=sandcap.tests-$$ # not "sandcap-": sandcap sweeps those
TESTRUN_CGROUPS=()                   # "ORIGINAL-DIR TEST-DIR" per hierarchy
TESTRUN_CGROUP_WHY=

# The directory of the hierarchy with these v1 controllers (or "" for v2)
# in which this process sits, from /proc/self/mountinfo and /proc/self/cgroup.
_testrun_own_dir() { # _testrun_own_dir CONTROLLERS PATH
	local ctrls=$1 path=$2 line f fstype opts mnt root c
	while IFS= read -r line; do
		f=(${line%% - *})
		read -r fstype _ opts <<<"${line#* - }"
		root=${f[3]} mnt=${f[4]}
		if [ -z "$ctrls" ]; then
			[ "$fstype" = cgroup2 ] && [ "$mnt" = /sys/fs/cgroup ] || continue
		else
			[ "$fstype" = cgroup ] || continue
			for c in ${ctrls//,/ }; do [[ ,$opts, == *",$c,"* ]] || continue 2; done
		fi
		[ "$root" = / ] && echo "$mnt$path" && return 0
		[[ $path == "$root"* ]] && echo "$mnt${path#"$root"}" && return 0
	done </proc/self/mountinfo
	return 1
}

testrun_cgroup_enter() {
	local id ctrls path own dir lines
	# Read whole before moving: the file changes under a reader as we move.
	lines=$(cat /proc/self/cgroup)
	while IFS=: read -r id ctrls path; do
		if [ "$id" = 0 ]; then
			own=$(_testrun_own_dir "" "$path") || continue # hybrid: v2 unused
			own=${own%/}
			dir=$own/$TESTRUN_CGROUP_NAME
			# v2 lets only leaves hold processes: the shell sits in a
			# leaf "supervisor", where sandcap expects one (docs/cgroups.md).
			mkdir -p "$dir/supervisor" &&
				echo $$ >"$dir/supervisor/cgroup.procs" || {
				TESTRUN_CGROUP_WHY="cannot move into $dir/supervisor"
				rmdir "$dir/supervisor" "$dir" 2>/dev/null
				return 1
			}
		else
			[[ ,$ctrls, =~ ,(memory|cpu|cpuacct|pids), ]] || continue
			own=$(_testrun_own_dir "$ctrls" "$path") || continue
			own=${own%/}
			dir=$own/$TESTRUN_CGROUP_NAME
			mkdir -p "$dir" && echo $$ >"$dir/cgroup.procs" || {
				TESTRUN_CGROUP_WHY="cannot move into $dir"
				rmdir "$dir" 2>/dev/null
				return 1
			}
		fi
		TESTRUN_CGROUPS+=("$own $dir")
	done <<<"$lines"
	[ ${#TESTRUN_CGROUPS[@]} -gt 0 ] || {
		TESTRUN_CGROUP_WHY="no cgroup hierarchy with memory, cpu or pids here"
		return 1
	}
}

testrun_cgroup_leave() {
	local pair dir found left=0 procs try
	for pair in "${TESTRUN_CGROUPS[@]}"; do
		echo $$ >"${pair%% *}/cgroup.procs" 2>/dev/null
	done
	for pair in "${TESTRUN_CGROUPS[@]}"; do
		dir=${pair#* }
		found=$(find "$dir" -mindepth 1 -type d -name 'sandcap-*' 2>/dev/null)
		# A process killed at a test's end may take a moment to go.
		for try in 1 2 3 4 5; do
			procs=$(cat "$dir/cgroup.procs" "$dir"/supervisor/cgroup.procs 2>/dev/null)
			[ -n "$procs" ] || break
			sleep 1
		done
		[ -z "$found" ] || echo "sandbox cgroups left: $found"
		if [ -n "$procs" ]; then
			echo "processes left in $dir:"
			ps -o pid=,args= -p "$(echo $procs | tr ' ' ,)" | sed 's/^/  /'
		fi
		if [ -n "$found$procs" ]; then
			left=1
		else
			rmdir "$dir/supervisor" "$dir" 2>/dev/null
		fi
	done
	return $left
}
