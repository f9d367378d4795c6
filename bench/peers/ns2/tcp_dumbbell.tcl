# tcp_dumbbell.tcl -- schedlab's ns-2 harness for TCP (ns-2.35, Debian package `ns2`): the
# dumbbell of bench/peers/ns2/tcp_compare.sh, written for ns-2.
#
#   flow i: source node i --access (100 Mbit/s, delay d_i, DropTail)--> router
#   router --bottleneck (RATE, 10 ms, DropTail, BUFFER packets)--> sink router --> sink i
#
# Each flow is an FTP application over Agent/TCP/Newreno with 1000-byte packets, initial window
# 2, minimum RTO 200 ms and an unlimited advertised window, into an Agent/TCPSink (one ACK per
# segment); ACKs return over the duplex links. One-way access delays d_i are given as a comma
# list of milliseconds (`delays=5,45` gives RTTs of about 32 and 112 ms).
#
# usage: ns tcp_dumbbell.tcl delays=10,10 rate=10 buffer=50 duration=60 warmup=10 seed=1
# stdout: one line per flow "FLOW i goodput_bps=.. retransmissions=.. timeouts=.."
# (goodput: bytes acknowledged between warmup and duration, per second), then
# "SUMMARY packets=.. " (data packets the sinks received).

array set opt {delays 10,10 rate 10 buffer 50 duration 60 warmup 10 seed 1}
foreach arg $argv {
    lassign [split $arg =] key value
    if {![info exists opt($key)] || $value eq ""} {
        puts stderr "tcp_dumbbell.tcl: unknown argument '$arg' (keys: [lsort [array names opt]])"
        exit 2
    }
    set opt($key) $value
}
set delays [split $opt(delays) ,]
set flows [llength $delays]

set ns [new Simulator]
$defaultRNG seed $opt(seed)
Agent/TCP set packetSize_ 1000
Agent/TCP set window_ 100000
Agent/TCP set windowInit_ 2
Agent/TCP set minrto_ 0.2
Agent/TCP set maxcwnd_ 0

set left [$ns node]
set right [$ns node]
$ns duplex-link $left $right [expr {$opt(rate) * 1e6}] 10ms DropTail
$ns queue-limit $left $right $opt(buffer)
for {set i 0} {$i < $flows} {incr i} {
    set src($i) [$ns node]
    set dst($i) [$ns node]
    set d [lindex $delays $i]
    $ns duplex-link $src($i) $left 100Mb ${d}ms DropTail
    $ns duplex-link $right $dst($i) 100Mb 1ms DropTail
    $ns queue-limit $src($i) $left 100000
    $ns queue-limit $left $src($i) 100000
    set tcp($i) [new Agent/TCP/Newreno]
    $tcp($i) set fid_ $i
    set sink($i) [new Agent/TCPSink]
    $ns attach-agent $src($i) $tcp($i)
    $ns attach-agent $dst($i) $sink($i)
    $ns connect $tcp($i) $sink($i)
    set ftp($i) [new Application/FTP]
    $ftp($i) attach-agent $tcp($i)
    $ns at 0.0 "$ftp($i) start"
}

proc snapshot {name} {
    global tcp flows acked rexmit timeouts
    for {set i 0} {$i < $flows} {incr i} {
        set acked($name,$i) [$tcp($i) set ack_]
        set rexmit($name,$i) [$tcp($i) set nrexmitpack_]
        set timeouts($name,$i) [$tcp($i) set nrexmit_]
    }
}

proc finish {} {
    global ns opt flows acked rexmit timeouts sink
    snapshot end
    set window [expr {$opt(duration) - $opt(warmup)}]
    set packets 0
    for {set i 0} {$i < $flows} {incr i} {
        # ack_ counts segments of packetSize_ bytes; goodput counts their payload as ns-2 sends
        # it (the whole 1000-byte packet; schedlab's comparison scales by 960/1000).
        set segments [expr {$acked(end,$i) - $acked(warm,$i)}]
        puts [format "FLOW %d goodput_bps=%.1f retransmissions=%d timeouts=%d" $i \
            [expr {$segments * 1000 * 8.0 / $window}] \
            [expr {$rexmit(end,$i) - $rexmit(warm,$i)}] [expr {$timeouts(end,$i) - $timeouts(warm,$i)}]]
        incr packets [$sink($i) set bytes_]
    }
    puts "SUMMARY bytes=$packets"
    exit 0
}

$ns at $opt(warmup) "snapshot warm"
$ns at $opt(duration) "finish"
$ns run
