// The ns-3 side of bench/netsim_bench.py: the same leaf-spine fabric, the same flows (read
// from netsim's per-flow CSV) and DCTCP, run in ns-3.37 (Debian's libns3-dev), so netsim's
// flow completion times and speed can be checked against the field's reference simulator.
//
// Build: g++ -O2 -std=c++17 netsim_ns3.cc $(pkg-config --cflags --libs ns3-core ns3-network
//        ns3-internet ns3-point-to-point ns3-applications ns3-traffic-control)
// Run:   netsim_ns3 <flows.csv> <out.csv> leaves spines hosts_per_leaf host_gbps fabric_gbps
//                   link_delay_us k_packets buffer_packets min_rto_ms
//
// Model, matched to netsim's run (see docs/netsim.md, "Checked against ns-3"):
// - point-to-point links; on every switch port a RED queue disc configured as DCTCP's
//   marking step (MinTh = MaxTh = K packets, QW = 1, ECN on, hard drop off), per the DCTCP
//   guidance ns-3's own dctcp example follows; hosts use a FIFO that never drops;
// - routing is static: a leaf reaches a remote host through spine (host % spines), the
//   ECMP-by-destination rule netsim runs with for this comparison;
// - TcpDctcp, 1460 B segments, initial window 10, an ACK per packet, no SACK, RTO floor as
//   given, classic (NewReno) recovery; one BulkSend per flow, one PacketSink per flow; FCT = last byte received minus
//   the flow's start (the connection handshake included: ns-3 has one, netsim does not).
// Prints "events <n>" and "simulated_s <t>" on stdout; writes "flow,fct_ns" rows.

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

namespace {

struct Flow {
  uint32_t src, dst;
  uint64_t bytes;
  double start_ns;
  uint64_t received = 0;
  double fct_ns = -1;
};

std::vector<Flow> g_flows;
uint32_t g_done = 0;

void OnRx(uint32_t i, Ptr<const Packet> p, const Address &) {
  Flow &f = g_flows[i];
  f.received += p->GetSize();
  if (f.fct_ns < 0 && f.received >= f.bytes) {
    f.fct_ns = Simulator::Now().GetNanoSeconds() - f.start_ns;
    if (++g_done == g_flows.size()) Simulator::Stop();
  }
}

std::vector<Flow> ReadFlows(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::vector<Flow> flows;
  std::getline(in, line);  // header: src,dst,bytes,class,start_ns,...
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string cell;
    std::vector<std::string> cells;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (cells.size() < 5) continue;
    Flow f;
    f.src = std::stoul(cells[0]);
    f.dst = std::stoul(cells[1]);
    f.bytes = std::stoull(cells[2]);
    f.start_ns = std::stod(cells[4]);
    flows.push_back(f);
  }
  return flows;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 12) {
    std::cerr << "usage: netsim_ns3 flows.csv out.csv leaves spines hosts_per_leaf host_gbps "
                 "fabric_gbps link_delay_us k_packets buffer_packets min_rto_ms\n";
    return 2;
  }
  g_flows = ReadFlows(argv[1]);
  const std::string out_path = argv[2];
  const uint32_t leaves = std::stoul(argv[3]), spines = std::stoul(argv[4]),
                 per_leaf = std::stoul(argv[5]);
  const double host_gbps = std::stod(argv[6]), fabric_gbps = std::stod(argv[7]);
  const double delay_us = std::stod(argv[8]);
  const uint32_t k = std::stoul(argv[9]), buffer = std::stoul(argv[10]);
  const double min_rto_ms = std::stod(argv[11]);
  const uint32_t hosts_n = leaves * per_leaf;

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpDctcp::GetTypeId()));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1460));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 24));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 24));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(false));
  // NewReno's fast recovery (RFC 6582), as netsim runs it, not ns-3's default PRR.
  Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", TypeIdValue(TcpClassicRecovery::GetTypeId()));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(min_rto_ms)));
  // A lost SYN is retried after ConnTimeout (3 s by default): the same floor as the RTO.
  Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(MilliSeconds(min_rto_ms)));
  Config::SetDefault("ns3::RedQueueDisc::UseEcn", BooleanValue(true));
  Config::SetDefault("ns3::RedQueueDisc::UseHardDrop", BooleanValue(false));
  Config::SetDefault("ns3::RedQueueDisc::MeanPktSize", UintegerValue(1500));
  Config::SetDefault("ns3::RedQueueDisc::QW", DoubleValue(1.0));
  Config::SetDefault("ns3::RedQueueDisc::MinTh", DoubleValue(k));
  Config::SetDefault("ns3::RedQueueDisc::MaxTh", DoubleValue(k));
  Config::SetDefault("ns3::RedQueueDisc::MaxSize",
                     QueueSizeValue(QueueSize(std::to_string(buffer) + "p")));

  NodeContainer hosts, leaf, spine;
  hosts.Create(hosts_n);
  leaf.Create(leaves);
  spine.Create(spines);
  InternetStackHelper stack;
  Ipv4StaticRoutingHelper static_routing;
  stack.SetRoutingHelper(static_routing);
  stack.Install(hosts);
  stack.Install(leaf);
  stack.Install(spine);

  PointToPointHelper host_link, fabric_link;
  host_link.SetDeviceAttribute("DataRate", StringValue(std::to_string(host_gbps) + "Gbps"));
  host_link.SetChannelAttribute("Delay", TimeValue(NanoSeconds(delay_us * 1000)));
  host_link.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
  fabric_link.SetDeviceAttribute("DataRate", StringValue(std::to_string(fabric_gbps) + "Gbps"));
  fabric_link.SetChannelAttribute("Delay", TimeValue(NanoSeconds(delay_us * 1000)));
  fabric_link.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));

  TrafficControlHelper red, fifo;
  red.SetRootQueueDisc("ns3::RedQueueDisc", "LinkBandwidth",
                       StringValue(std::to_string(host_gbps) + "Gbps"), "LinkDelay",
                       TimeValue(NanoSeconds(delay_us * 1000)));
  fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("100000p"));

  Ipv4AddressHelper address;
  std::vector<Ipv4Address> host_addr(hosts_n);
  std::vector<uint32_t> leaf_if_of_host(hosts_n);
  // leaf_up_if[l][s]: leaf l's interface to spine s; spine_if[s][l]: spine s's to leaf l.
  std::vector<std::vector<uint32_t>> leaf_up_if(leaves, std::vector<uint32_t>(spines));
  std::vector<std::vector<uint32_t>> spine_if(spines, std::vector<uint32_t>(leaves));
  uint32_t subnet = 0;
  auto next_base = [&]() {
    std::ostringstream s;
    s << "10." << (subnet >> 14) << "." << ((subnet >> 6) & 0xff) << "." << ((subnet & 0x3f) << 2);
    ++subnet;
    return s.str();
  };
  for (uint32_t h = 0; h < hosts_n; ++h) {
    uint32_t l = h / per_leaf;
    NetDeviceContainer d = host_link.Install(hosts.Get(h), leaf.Get(l));
    fifo.Install(d.Get(0));
    red.Install(d.Get(1));
    address.SetBase(next_base().c_str(), "255.255.255.252");
    Ipv4InterfaceContainer ifs = address.Assign(d);
    host_addr[h] = ifs.GetAddress(0);
    leaf_if_of_host[h] = ifs.Get(1).second;
    static_routing.GetStaticRouting(hosts.Get(h)->GetObject<Ipv4>())
        ->SetDefaultRoute(ifs.GetAddress(1), ifs.Get(0).second);
  }
  for (uint32_t l = 0; l < leaves; ++l) {
    for (uint32_t s = 0; s < spines; ++s) {
      NetDeviceContainer d = fabric_link.Install(leaf.Get(l), spine.Get(s));
      red.Install(d);
      address.SetBase(next_base().c_str(), "255.255.255.252");
      Ipv4InterfaceContainer ifs = address.Assign(d);
      leaf_up_if[l][s] = ifs.Get(0).second;
      spine_if[s][l] = ifs.Get(1).second;
    }
  }
  for (uint32_t h = 0; h < hosts_n; ++h) {
    uint32_t hl = h / per_leaf;
    for (uint32_t l = 0; l < leaves; ++l) {
      auto r = static_routing.GetStaticRouting(leaf.Get(l)->GetObject<Ipv4>());
      r->AddHostRouteTo(host_addr[h], l == hl ? leaf_if_of_host[h] : leaf_up_if[l][h % spines]);
    }
    for (uint32_t s = 0; s < spines; ++s) {
      static_routing.GetStaticRouting(spine.Get(s)->GetObject<Ipv4>())
          ->AddHostRouteTo(host_addr[h], spine_if[s][hl]);
    }
  }

  for (uint32_t i = 0; i < g_flows.size(); ++i) {
    const Flow &f = g_flows[i];
    uint16_t port = 10000 + (i % 55000);
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sa = sink.Install(hosts.Get(f.dst));
    sa.Start(Seconds(0));
    sa.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnRx, i));
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(host_addr[f.dst], port));
    bulk.SetAttribute("MaxBytes", UintegerValue(f.bytes));
    bulk.SetAttribute("SendSize", UintegerValue(1460));
    ApplicationContainer ba = bulk.Install(hosts.Get(f.src));
    ba.Start(NanoSeconds(static_cast<int64_t>(f.start_ns)));
  }

  Simulator::Stop(Seconds(20));
  Simulator::Run();
  std::cout << "events " << Simulator::GetEventCount() << "\n";
  std::cout << "simulated_s " << Simulator::Now().GetSeconds() << "\n";
  Simulator::Destroy();
  std::ofstream out(out_path);
  out << "flow,fct_ns\n";
  for (uint32_t i = 0; i < g_flows.size(); ++i) out << i << "," << g_flows[i].fct_ns << "\n";
  return 0;
}
