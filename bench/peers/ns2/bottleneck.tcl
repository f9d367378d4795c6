# bottleneck.tcl -- schedlab's ns-2 harness (ns-2.35, Debian package `ns2`): the scenario of
# bench/scenarios/ns2_bottleneck.toml, written for ns-2.
#
#   flow i: source node i --access link (1 Gbit/s, 1 ms, DropTail)--> router
#   router --bottleneck (10 Mbit/s, 1 ms, Queue/DRR)--> sink node
#
# Every flow sends Poisson arrivals of 1000-byte UDP packets (Application/Traffic/Exponential
# with zero burst time: one packet per burst, exponential gaps), offered load LOAD of the
# bottleneck split evenly. Queue/DRR tells flows apart by the *source node address* only,
# hashed into buckets_ buckets without collision handling, so every flow gets its own node,
# and node addresses whose bucket is taken are skipped (left unconnected). Buffers are large
# enough that nothing is dropped.
#
# usage: ns bottleneck.tcl n=10 load=0.95 quantum=1500 duration=100 seed=1
# stdout: one line "SUMMARY n=.. duration=.. pkts_rx=.. bytes_rx=.. lost=.. skipped=.."
# (packets received by the per-flow LossMonitor agents at the sink).

array set opt {n 10 load 0.95 quantum 1500 duration 100 seed 1 size 1000}
foreach arg $argv {
    lassign [split $arg =] key value
    if {![info exists opt($key)] || $value eq ""} {
        puts stderr "bottleneck.tcl: unknown argument '$arg' (keys: [lsort [array names opt]])"
        exit 2
    }
    set opt($key) $value
}
set flows $opt(n)
set bottleneck_bps 10e6
set buckets [expr {4 * $flows + 16}]

set ns [new Simulator]
$defaultRNG seed $opt(seed)
Queue set limit_ 10000000

# Queue/DRR's bucket of a source address (drr.cc: hash of the address, modulo buckets_).
proc drr_bucket {address} {
    global buckets
    set h [expr {(($address + ($address >> 8) + ~($address >> 4)) % ((2 << 23) - 1)) + 1}]
    return [expr {$h % $buckets}]
}

set router [$ns node]
set sink [$ns node]
set skipped 0
for {set i 0} {$i < $flows} {incr i} {
    while {1} {
        set node [$ns node]
        set bucket [drr_bucket [$node id]]
        if {![info exists taken($bucket)]} break
        incr skipped
    }
    set taken($bucket) 1
    set source($i) $node
    $ns simplex-link $node $router 1Gb 1ms DropTail
}
$ns simplex-link $router $sink $bottleneck_bps 1ms DRR
set drr [[$ns link $router $sink] queue]
$drr set quantum_ $opt(quantum)
$drr set buckets_ $buckets
$drr set blimit_ 1000000000
$drr set mask_ 0

set gap_s [expr {8.0 * $opt(size) * $flows / ($opt(load) * $bottleneck_bps)}]
for {set i 0} {$i < $flows} {incr i} {
    set agent [new Agent/UDP]
    $agent set packetSize_ $opt(size)
    $agent set fid_ $i
    $ns attach-agent $source($i) $agent
    set monitor($i) [new Agent/LossMonitor]
    $ns attach-agent $sink $monitor($i)
    $ns connect $agent $monitor($i)

    set rng [new RNG]
    $rng next-substream
    set app [new Application/Traffic/Exponential]
    $app set packetSize_ $opt(size)
    $app set burst_time_ 0
    $app set idle_time_ $gap_s
    $app set rate_ 1e12
    $app use-rng $rng
    $app attach-agent $agent
    # Flows start spread over the first 10 ms so that they are not in phase.
    set start [$rng uniform 0 0.01]
    $ns at $start "$app start"
    $ns at [expr {$start + $opt(duration)}] "$app stop"
}

proc finish {} {
    global flows monitor opt skipped
    set packets 0
    set bytes 0
    set lost 0
    for {set i 0} {$i < $flows} {incr i} {
        incr packets [$monitor($i) set npkts_]
        incr bytes [$monitor($i) set bytes_]
        incr lost [$monitor($i) set nlost_]
    }
    puts "SUMMARY n=$flows duration=$opt(duration) pkts_rx=$packets bytes_rx=$bytes lost=$lost skipped=$skipped"
    exit 0
}
# One second after the sources stop, everything queued has been delivered.
$ns at [expr {$opt(duration) + 1.01}] "finish"
$ns run
