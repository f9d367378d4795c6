# Helpers shared by bench/peers/*/run.sh (sourced, not executed).
#
# * need_apt PKG PROBE  installs Debian package PKG with apt-get unless PROBE (a file or
#                       command) already exists.
# * nspy_python VENV    creates VENV with ns.py 0.5.0 and SimPy unless it already imports
#                       them; prints VENV's python.
# * timed OUT CMD…      runs CMD under `/usr/bin/time -v -o OUT`.
# * time_wall OUT / time_rss_mb OUT   wall seconds and peak RSS (MB) from that file.
# * time_cpu OUT        user + system CPU seconds from that file.
# * measure_runs PEER SCHED FLOWS REPS DURATION RUN_FN TIME_FILE   for seeds 1..REPS: runs
#                       `RUN_FN SEED 0.001` (the set-up: 1 ms of traffic) and `RUN_FN SEED
#                       DURATION`, each of which prints "PACKETS [EVENTS]" and leaves the
#                       /usr/bin/time output in TIME_FILE, and emits one line per seed.
# * emit PEER SCHED FLOWS PACKETS WALL SETUP CPU SETUP_CPU EVENTS RSS_MB   prints the line
#     peer,scheduler,flows,packets,wall_s,setup_s,cpu_s,setup_cpu_s,packets_per_s,
#     packets_per_cpu_s,events_per_s,peak_rss_mb
#   where packets_per_s = PACKETS / (WALL − SETUP) and packets_per_cpu_s = PACKETS /
#   (CPU − SETUP_CPU): the set-up (start-up, building the topology, reading the trace) is
#   measured separately and left out (a rate is left empty when the run took no longer
#   than its set-up). CPU time does not count waiting for a core, so on a shared machine it
#   is the steadier figure. events_per_s (per wall second of the run) is
#   empty when EVENTS is empty (the peer does not count events).

need_apt() {
    local pkg=$1 probe=$2
    if [ -e "$probe" ] || command -v "$probe" >/dev/null 2>&1; then
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "error: '$probe' is missing; install it with: sudo apt-get install $pkg" >&2
        return 1
    fi
    echo "# installing Debian package $pkg" >&2
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$pkg" >&2; then
        apt-get update >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$pkg" >&2
    fi
}

# ns.py 0.5.0 declares Requires-Python >= 3.14 but its scheduler, packet and sink modules run
# on older CPythons with SimPy alone; there the wheel is installed without its dependency
# pins (a plain `pip install ns-py` on 3.11 silently gives the older 0.4.3).
nspy_python() {
    local venv=$1
    if ! "$venv/bin/python" -c 'import ns.scheduler.drr, simpy' 2>/dev/null; then
        echo "# creating the ns.py virtualenv $venv" >&2
        mkdir -p "$(dirname "$venv")"
        python3 -m venv "$venv" >&2
        if "$venv/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 14))'; then
            "$venv/bin/pip" install -q 'ns-py==0.5.0' >&2
        else
            local wheels
            wheels=$(mktemp -d)
            "$venv/bin/pip" install -q 'simpy>=4.1.2' >&2
            "$venv/bin/pip" download -q --no-deps --ignore-requires-python 'ns-py==0.5.0' \
                -d "$wheels" >&2
            "$venv/bin/pip" install -q --no-deps --ignore-requires-python "$wheels"/ns_py-*.whl >&2
            rm -rf "$wheels"
        fi
    fi
    echo "$venv/bin/python"
}

timed() {
    local out=$1
    shift
    /usr/bin/time -v -o "$out" "$@"
}

time_wall() {
    awk -F': ' '/Elapsed \(wall clock\)/ {
        n = split($2, a, ":"); s = 0
        for (i = 1; i <= n; i++) s = s * 60 + a[i]
        print s }' "$1"
}

time_rss_mb() {
    awk -F': ' '/Maximum resident set size/ { printf "%.1f\n", $2 / 1024 }' "$1"
}

time_cpu() {
    awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f\n", s }' "$1"
}

emit() {
    local peer=$1 sched=$2 flows=$3 packets=$4 wall=$5 setup=$6 cpu=$7 setup_cpu=$8 events=$9
    local rss=${10}
    awk -v p="$peer" -v s="$sched" -v f="$flows" -v n="$packets" -v w="$wall" -v u="$setup" \
        -v c="$cpu" -v uc="$setup_cpu" -v e="$events" -v r="$rss" 'BEGIN {
        # A run no longer than its set-up (10 ms resolution, or a set-up run slowed down by
        # other jobs) gives no rate: the field stays empty rather than absurd.
        run = w - u; run_cpu = c - uc
        pps = (run > 0) ? sprintf("%.0f", n / run) : ""
        cpps = (run_cpu > 0) ? sprintf("%.0f", n / run_cpu) : ""
        eps = (e == "" || run <= 0) ? "" : sprintf("%.0f", e / run)
        printf "%s,%s,%d,%d,%.2f,%.2f,%.2f,%.2f,%s,%s,%s,%s\n", p, s, f, n, w, u, c, uc,
            pps, cpps, eps, r }'
}

measure_runs() {
    local peer=$1 sched=$2 flows=$3 reps=$4 duration=$5 run_fn=$6 time_file=$7
    local seed setup setup_cpu out packets events
    for seed in $(seq 1 "$reps"); do
        "$run_fn" "$seed" 0.001 >/dev/null
        setup=$(time_wall "$time_file")
        setup_cpu=$(time_cpu "$time_file")
        out=$("$run_fn" "$seed" "$duration")
        read -r packets events <<<"$out"
        emit "$peer" "$sched" "$flows" "$packets" "$(time_wall "$time_file")" "$setup" \
            "$(time_cpu "$time_file")" "$setup_cpu" "${events:-}" "$(time_rss_mb "$time_file")"
    done
}

# The header of the machine-readable lines (scripts print it on stderr).
emit_header() {
    echo "peer,scheduler,flows,packets,wall_s,setup_s,cpu_s,setup_cpu_s,packets_per_s,packets_per_cpu_s,events_per_s,peak_rss_mb"
}
