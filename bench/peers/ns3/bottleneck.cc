// bottleneck.cc -- schedlab's ns-3 harness (ns-3.37, Debian package libns3-dev): the scenario
// of bench/peers/ns2/bottleneck.tcl written for ns-3.
//
//   flow i: source node i --point-to-point access link (1 Gbit/s, 1 ms)--> router
//   router --point-to-point bottleneck (10 Mbit/s, 1 ms)--> sink
//
// Every flow is a UDP socket sending Poisson arrivals of packets of 1000 bytes on the wire
// (PPP 2 + IPv4 20 + UDP 8 + payload 970), offered load LOAD of the bottleneck split evenly.
// ns-3 has no DRR queue disc; the nearest is FqCoDelQueueDisc, whose scheduler is a byte
// deficit round robin (with DRR++'s new-flow list); CoDel is switched off by a target and an
// interval far above any sojourn time. The bottleneck device queue holds one packet, so all
// queueing happens in the queue disc. Buffers are large enough that nothing is dropped.
//
// usage: bottleneck --n=10 --load=0.95 --quantum=1500 --duration=100 --seed=1
// stdout: "SUMMARY n=.. duration=.. pkts_rx=.. qdisc_drops=.. events=.."

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>

using namespace ns3;

namespace
{

const uint32_t kWireBytes = 1000;
const uint32_t kHeaderBytes = 2 + 20 + 8; // PPP, IPv4, UDP
const uint16_t kFirstPort = 9000;

uint64_t g_received = 0;

/// A UDP sender with exponentially distributed gaps: Poisson arrivals.
class PoissonSender : public Application
{
  public:
    void Configure(Address destination, double meanGapSeconds, int64_t stream)
    {
        m_destination = destination;
        m_gap = CreateObject<ExponentialRandomVariable>();
        m_gap->SetAttribute("Mean", DoubleValue(meanGapSeconds));
        m_gap->SetStream(stream);
    }

  private:
    void StartApplication() override
    {
        m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_socket->Bind();
        m_socket->Connect(m_destination);
        SendOne();
    }

    void StopApplication() override
    {
        Simulator::Cancel(m_next);
        m_socket->Close();
    }

    void SendOne()
    {
        m_socket->Send(Create<Packet>(kWireBytes - kHeaderBytes));
        m_next = Simulator::Schedule(Seconds(m_gap->GetValue()), &PoissonSender::SendOne, this);
    }

    Address m_destination;
    Ptr<ExponentialRandomVariable> m_gap;
    Ptr<Socket> m_socket;
    EventId m_next;
};

void
Receive(Ptr<Socket> socket)
{
    while (socket->Recv())
    {
        g_received++;
    }
}

} // namespace

int
main(int argc, char* argv[])
{
    uint32_t flows = 10;
    double load = 0.95;
    uint32_t quantum = 1500;
    double duration = 100;
    uint32_t seed = 1;
    CommandLine cmd;
    cmd.AddValue("n", "number of flows", flows);
    cmd.AddValue("load", "offered load / bottleneck rate", load);
    cmd.AddValue("quantum", "DRR quantum, bytes", quantum);
    cmd.AddValue("duration", "seconds of traffic", duration);
    cmd.AddValue("seed", "random seed (run number)", seed);
    cmd.Parse(argc, argv);
    if (flows == 0 || flows > 60000 || load <= 0 || duration <= 0 || quantum == 0)
    {
        std::fprintf(stderr, "bottleneck: n must be 1..60000, load, duration, quantum > 0\n");
        return 2;
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    NodeContainer sources;
    sources.Create(flows);
    Ptr<Node> router = CreateObject<Node>();
    Ptr<Node> sink = CreateObject<Node>();
    InternetStackHelper internet;
    internet.Install(sources);
    internet.Install(router);
    internet.Install(sink);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("1Gbps"));
    access.SetChannelAttribute("Delay", StringValue("1ms"));
    access.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("100000p"));
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue("10Mbps"));
    bottleneck.SetChannelAttribute("Delay", StringValue("1ms"));
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));

    Ipv4AddressHelper addresses;
    addresses.SetBase("10.0.0.0", "255.255.255.252");
    TrafficControlHelper none;
    for (uint32_t i = 0; i < flows; i++)
    {
        NetDeviceContainer link = access.Install(sources.Get(i), router);
        addresses.Assign(link);
        addresses.NewNetwork();
        none.Uninstall(link);
    }
    NetDeviceContainer bottleneckLink = bottleneck.Install(router, sink);
    addresses.SetBase("172.31.0.0", "255.255.255.252");
    Ipv4InterfaceContainer bottleneckAddresses = addresses.Assign(bottleneckLink);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    none.Uninstall(bottleneckLink);
    TrafficControlHelper drr;
    drr.SetRootQueueDisc("ns3::FqCoDelQueueDisc",
                         "MaxSize", StringValue("10000000p"),
                         "Flows", UintegerValue(std::max<uint32_t>(1024, 4 * flows)),
                         "Target", StringValue("10000s"),
                         "Interval", StringValue("100000s"));
    QueueDiscContainer discs = drr.Install(bottleneckLink.Get(0));
    DynamicCast<FqCoDelQueueDisc>(discs.Get(0))->SetQuantum(quantum);

    Ipv4Address sinkAddress = bottleneckAddresses.GetAddress(1);
    double meanGap = 8.0 * kWireBytes * flows / (load * 10e6);
    Ptr<UniformRandomVariable> start = CreateObject<UniformRandomVariable>();
    start->SetStream(1);
    for (uint32_t i = 0; i < flows; i++)
    {
        uint16_t port = kFirstPort + i;
        Ptr<Socket> receiver = Socket::CreateSocket(sink, UdpSocketFactory::GetTypeId());
        receiver->Bind(InetSocketAddress(Ipv4Address::GetAny(), port));
        receiver->SetRecvCallback(MakeCallback(&Receive));

        Ptr<PoissonSender> sender = CreateObject<PoissonSender>();
        sender->Configure(InetSocketAddress(sinkAddress, port), meanGap, 2 + i);
        sources.Get(i)->AddApplication(sender);
        // Flows start spread over the first 10 ms so that they are not in phase.
        double at = start->GetValue(0, 0.01);
        sender->SetStartTime(Seconds(at));
        sender->SetStopTime(Seconds(at + duration));
    }

    Simulator::Stop(Seconds(duration + 1.01));
    Simulator::Run();
    QueueDisc::Stats stats = discs.Get(0)->GetStats();
    std::printf("SUMMARY n=%u duration=%g pkts_rx=%llu qdisc_drops=%u events=%llu\n",
                flows, duration, (unsigned long long)g_received, stats.nTotalDroppedPackets,
                (unsigned long long)Simulator::GetEventCount());
    Simulator::Destroy();
    return 0;
}
