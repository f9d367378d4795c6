# tcp_dumbbell.tcl -- schedlab's ns-2 harness for TCP (ns-2.35, Debian package `ns2`): the
# dumbbell of bench/peers/ns2/tcp_compare.sh, written for ns-2.
#
#   flow i: source node i --access (100 Mbit/s, delay d_i, DropTail)--> router
#   router --bottleneck (RATE, 10 ms, DropTail, BUFFER packets)--> sink router --> sink i
#
# Each flow is an FTP application over Agent/TCP/Newreno into an Agent/TCPSink
# (`variant=newreno`) or over Agent/TCP/Sack1 into an Agent/TCPSink/Sack1 (`variant=sack`), with
# 1000-byte packets, initial window 2, minimum RTO 200 ms, an unlimited advertised window (one
# ACK per segment) and no limited transmit (singledup_ 0); ACKs return over the duplex links.
# The bottleneck's queue-limit counts the packet being transmitted (DropTail admits at most
# buffer − 1 waiting packets). One-way access delays d_i are given as a comma
# list of milliseconds (`delays=5,45` gives RTTs of about 32 and 112 ms).
#
# Flow i's application starts at the i-th of the comma list `starts` (seconds; missing: 0).
# Packets on the wire are packetSize_ + 40 header bytes (ns-2's useHeaders_): 1040 bytes; an
# ACK is 40 bytes; each connection opens with a 40-byte SYN (syn_ true).
#
# usage: ns tcp_dumbbell.tcl delays=10,10 rate=10 buffer=50 duration=60 warmup=10 seed=1 \
#            variant=newreno starts=0,0.25
# stdout: one line per flow "FLOW i goodput_bps=.. retransmissions=.. timeouts=.."
# (goodput: payload bytes acknowledged between warmup and duration, per second), then
# "SUMMARY packets=.. " (data packets the sinks received).

array set opt {delays 10,10 rate 10 buffer 50 duration 60 warmup 10 seed 1 variant newreno starts 0}
foreach arg $argv {
    lassign [split $arg =] key value
    if {![info exists opt($key)] || $value eq ""} {
        puts stderr "tcp_dumbbell.tcl: unknown argument '$arg' (keys: [lsort [array names opt]])"
        exit 2
    }
    set opt($key) $value
}
switch -- $opt(variant) {
    newreno { set agent Agent/TCP/Newreno; set sink_agent Agent/TCPSink }
    sack { set agent Agent/TCP/Sack1; set sink_agent Agent/TCPSink/Sack1 }
    default {
        puts stderr "tcp_dumbbell.tcl: variant=$opt(variant): must be newreno or sack"
        exit 2
    }
}
set delays [split $opt(delays) ,]
set starts [split $opt(starts) ,]
set flows [llength $delays]

set ns [new Simulator]
$defaultRNG seed $opt(seed)
Agent/TCP set packetSize_ 1000
Agent/TCP set window_ 100000
Agent/TCP set windowInit_ 2
Agent/TCP set minrto_ 0.2
Agent/TCP set maxcwnd_ 0
# No limited transmit (RFC 3042; ns-2's default singledup_ 1 sends a new segment on each of the
# first two duplicate ACKs): schedlab's TCP does not implement it.
Agent/TCP set singledup_ 0

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
    set tcp($i) [new $agent]
    $tcp($i) set fid_ $i
    set sink($i) [new $sink_agent]
    $ns attach-agent $src($i) $tcp($i)
    $ns attach-agent $dst($i) $sink($i)
    $ns connect $tcp($i) $sink($i)
    set ftp($i) [new Application/FTP]
    $ftp($i) attach-agent $tcp($i)
    set start [lindex $starts $i]
    if {$start eq ""} {
        set start 0.0
    }
    $ns at $start "$ftp($i) start"
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
        # ack_ counts segments of packetSize_ (1000) payload bytes.
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
