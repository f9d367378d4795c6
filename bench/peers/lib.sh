# Helpers shared by bench/peers/*/run.sh (sourced, not executed).
#
# * peers_dir PEER   prints the directory of the shared harness of PEER. Looked up in order:
#                    $PEERS_DIR/PEER; <repo top>/../shared/peers/PEER (a clean clone has
#                    shared/ beside it); <main checkout>/../shared/peers/PEER (for a
#                    `git worktree`, whose top is elsewhere).
# * need_apt PKG CMD installs Debian package PKG with apt-get unless CMD (a file or command)
#                    already exists.
# * nspy_python HARNESS VENV   creates VENV with the shared ns.py setup.sh unless it already
#                    imports ns.py's DRRServer; prints VENV's python.
# * timed OUT CMD…   runs CMD under `/usr/bin/time -v -o OUT`.
# * time_wall OUT / time_rss_mb OUT   wall seconds and peak RSS (MB) from that file.
# * emit PEER SCHED PACKETS WALL EVENTS RSS_MB   prints the machine-readable line
#                    `peer,scheduler,packets,wall_s,packets_per_s,events_per_s,peak_rss_mb`
#                    (events_per_s empty when EVENTS is empty: the peer does not count them).

peers_dir() {
    local peer=$1 top common candidate
    if [ -n "${PEERS_DIR:-}" ]; then
        candidate="$PEERS_DIR/$peer"
    else
        top=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
        candidate="$top/../shared/peers/$peer"
        if [ ! -d "$candidate" ]; then
            common=$(git -C "$top" rev-parse --path-format=absolute --git-common-dir)
            candidate="$(dirname "$common")/../shared/peers/$peer"
        fi
    fi
    if [ ! -d "$candidate" ]; then
        echo "error: shared harness for '$peer' not found (looked for shared/peers/$peer beside" \
            "the repository; set PEERS_DIR=/path/to/shared/peers)" >&2
        return 1
    fi
    (cd "$candidate" && pwd)
}

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

nspy_python() {
    local harness=$1 venv=$2
    if ! "$venv/bin/python" -c 'import ns.scheduler.drr, simpy' 2>/dev/null; then
        echo "# creating the ns.py venv $venv" >&2
        mkdir -p "$(dirname "$venv")"
        WHEELS="$(dirname "$venv")/wheels" bash "$harness/setup.sh" "$venv" >&2
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

emit() {
    local peer=$1 sched=$2 packets=$3 wall=$4 events=$5 rss=$6
    awk -v p="$peer" -v s="$sched" -v n="$packets" -v w="$wall" -v e="$events" -v r="$rss" 'BEGIN {
        if (w <= 0) w = 0.01   # /usr/bin/time has 10 ms resolution
        eps = (e == "") ? "" : sprintf("%.0f", e / w)
        printf "%s,%s,%d,%.2f,%.0f,%s,%s\n", p, s, n, w, n / w, eps, r }'
}

# Prints the header of the machine-readable lines (scripts print it on stderr).
emit_header() {
    echo "peer,scheduler,packets,wall_s,packets_per_s,events_per_s,peak_rss_mb"
}
