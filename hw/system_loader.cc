#include "hw/system_loader.h"

#include <array>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "hw/limits.h"
#include "hw/system_loader_tree.h"
#include "hw/yaml_reader.h"

namespace strata::hw {
namespace {

// A link as written in YAML: a catalogue name, or a mapping {kind, bandwidth, efficiency, latency} whose
// optional fields override the catalogue entry (e.g. P2's "NIC at 60% of 100 Gb/s").
struct LinkChoice {
  const LinkKind* kind = nullptr;
  double bandwidth = 0, efficiency = 0, latency = 0;
};

std::string catalog_names() {
  std::string s;
  for (const auto& l : link_catalog()) s += fmt::format("{}{}", s.empty() ? "" : ", ", l.name);
  return s;
}

LinkChoice read_link(const YamlReader& r) {
  LinkChoice c;
  // Never assign one YamlReader to another: YAML::Node's operator= writes through to the referenced node.
  if (r.is_map()) r.expect_map({"kind", "bandwidth", "efficiency", "latency"});
  const YamlReader kind_node = r.is_map() ? r.at("kind") : r;
  const std::string name = kind_node.as_string();
  c.kind = find_link_kind(name);
  if (!c.kind)
    throw kind_node.error(fmt::format("unknown link kind '{}' (expected one of: {})", name, catalog_names()));
  c.bandwidth = c.kind->bandwidth;
  c.efficiency = c.kind->efficiency;
  c.latency = c.kind->latency;
  if (r.is_map()) {
    if (auto b = r.maybe("bandwidth")) c.bandwidth = b->as_bandwidth();
    if (auto e = r.maybe("efficiency")) {
      c.efficiency = e->as_double();
      if (c.efficiency <= 0 || c.efficiency > 1) throw e->error("expected an efficiency in (0, 1]");
    }
    if (auto l = r.maybe("latency")) c.latency = l->as_duration();
  }
  return c;
}

// `cache:` one level {capacity, bandwidth} or a list of them, smallest first (hw::GpuSpec::caches).
std::vector<CacheLevel> read_caches(const YamlReader& c) {
  std::vector<CacheLevel> levels;
  const std::size_t n = c.is_sequence() ? c.size() : 1;
  if (c.is_sequence() && n == 0) throw c.error("expected at least one cache level {capacity, bandwidth}");
  for (std::size_t i = 0; i < n; ++i) {
    const YamlReader level = c.is_sequence() ? c.at(i) : c;
    level.expect_map({"capacity", "bandwidth"});
    CacheLevel l{level.at("capacity").as_bytes(), level.at("bandwidth").as_bandwidth()};
    if (l.capacity <= 0) throw level.at("capacity").error("expected a cache capacity above 0 B");
    if (l.bandwidth <= 0) throw level.at("bandwidth").error("expected a cache bandwidth above 0 B/s");
    if (!levels.empty() && l.capacity <= levels.back().capacity)
      throw level.at("capacity")
          .error("expected cache levels smallest first: each capacity above the one before");
    if (!levels.empty() && l.bandwidth > levels.back().bandwidth)
      throw level.at("bandwidth").error("expected a larger cache level to be no faster than the one before");
    levels.push_back(l);
  }
  return levels;
}

GpuSpec read_gpu(const YamlReader& r) {
  if (r.is_map())
    r.expect_map({"model", "hbm_bandwidth", "hbm_capacity", "launch_overhead", "peak", "cache", "gemm_tile"});
  const YamlReader model_node = r.is_map() ? r.at("model") : r;
  const std::string name = model_node.as_string();
  const GpuSpec* base = find_gpu(name);
  if (!base) {
    std::string list;
    for (const auto& g : gpu_catalog()) list += fmt::format("{}{}", list.empty() ? "" : ", ", g.name);
    throw model_node.error(fmt::format("unknown GPU model '{}' (expected one of: {})", name, list));
  }
  GpuSpec g = *base;
  if (!r.is_map()) return g;
  if (auto v = r.maybe("hbm_bandwidth")) g.hbm_bandwidth = v->as_bandwidth();
  if (auto v = r.maybe("hbm_capacity")) g.hbm_capacity = v->as_bytes();
  if (auto v = r.maybe("launch_overhead")) {
    g.launch_overhead = v->as_duration();
    if (g.launch_overhead > limits::kMaxLatency)
      throw v->error("a kernel launch overhead above 1 s is not a GPU");
  }
  if (auto c = r.maybe("cache")) g.caches = read_caches(*c);
  if (auto t = r.maybe("gemm_tile")) {
    // Output channels x reduction depth; 1 means no padding in that dimension. 1024 bounds both well above
    // any GPU CTA tile or CPU vector.
    t->expect_map({"n", "k"});
    if (auto n = t->maybe("n")) g.gemm_tile.n = n->as_int32_in(1, 1024);
    if (auto k = t->maybe("k")) g.gemm_tile.k = k->as_int32_in(1, 1024);
  }
  if (auto p = r.maybe("peak")) {
    p->expect_map({"fp64", "fp32", "tf32", "fp16", "bf16", "fp8"});
    if (auto v = p->maybe("fp64")) g.peak_fp64 = v->as_flops();
    if (auto v = p->maybe("fp32")) g.peak_fp32 = v->as_flops();
    if (auto v = p->maybe("tf32")) g.peak_tf32 = v->as_flops();
    if (auto v = p->maybe("fp16")) g.peak_fp16 = v->as_flops();
    if (auto v = p->maybe("bf16")) g.peak_bf16 = v->as_flops();
    if (auto v = p->maybe("fp8")) g.peak_fp8 = v->as_flops();
  }
  return g;
}

// DGX-1 (V100) hybrid cube-mesh: NVLink multiplicity per GPU pair, as reported by `nvidia-smi topo -m`
// on DGX-1V (NVIDIA DGX-1 System Architecture whitepaper WP-08437-001). Every GPU totals 6 links.
// clang-format off
constexpr std::array<std::array<int, 3>, 16> kHybridCubeMesh{{
    {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {1, 2, 2}, {1, 3, 1}, {2, 3, 2},  // quad 0-3
    {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2},  // quad 4-7
    {0, 4, 2}, {1, 5, 2}, {2, 6, 1}, {3, 7, 1},                       // cube verticals
}};
// clang-format on

struct NodeSpec {
  int gpus = 0;
  std::vector<Level> levels;  // the node's own levels (below the cluster level)
  std::string wiring;         // switch | ring | fully-connected | hybrid-cube-mesh | none
  std::optional<LinkChoice> fabric_link;
  int links_per_gpu = 0, links_per_pair = 1;
  int switch_generation = 0;
  int cpus = 1, pcie_switches = 0;
  CpuVendor cpu_vendor = CpuVendor::kOther;
  NcclMeasuredTables nccl;  // node.fabric.nccl_* and node.nics.nccl_*
  LinkChoice pcie, cpu_link;
  int nics = 0;
  std::optional<LinkChoice> nic_link;
};

struct NetworkSpec {
  std::string wiring;  // fat-tree | rail-optimized
  double oversubscription = 1.0;
};

// Latencies of links are hop latencies: anything beyond a second is a unit mistake, not a network.
LinkChoice read_hop_link(const YamlReader& r) {
  LinkChoice c = read_link(r);
  if (c.latency > limits::kMaxLatency)
    throw r.error(fmt::format("link latency {} s is above the 1 s limit for one hop", c.latency));
  return c;
}

std::vector<Level> read_levels(const YamlReader& node, int gpus) {
  auto lv = node.maybe("levels");
  if (!lv) return {{"gpu", gpus}};
  lv->expect_sequence();
  std::vector<Level> levels;
  long long product = 1;
  for (std::size_t i = 0; i < lv->size(); ++i) {
    const YamlReader l = lv->at(i);
    l.expect_map({"name", "count"});
    const int count = l.at("count").as_int32_in(1, limits::kMaxGpusPerNode);
    product *= count;
    if (product > limits::kMaxGpusPerNode)
      throw l.error(fmt::format("level counts multiply to more than node.gpus ({})", gpus));
    levels.push_back({l.at("name").as_string(), count});
  }
  if (product != gpus)
    throw lv->error(fmt::format("level counts multiply to {} but node.gpus is {}", product, gpus));
  return levels;
}

// A measured table: [{<size_key>: 32KiB, time: 4.5us}, ...], sizes increasing (hw/nccl_measured.h); `what`
// names one point's time in messages ("handoff", "step").
SizeTimes read_size_times(const YamlReader& list, std::string_view size_key, std::string_view what) {
  list.expect_sequence();
  if (list.size() == 0) throw list.error(fmt::format("expected at least one {{{}, time}} point", size_key));
  if (list.size() > 64) throw list.error(fmt::format("expected at most 64 points, got {}", list.size()));
  std::vector<SizeTime> points;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YamlReader p = list.at(i);
    const std::string_view keys[] = {size_key, "time"};
    p.expect_map(keys);
    const YamlReader size = p.at(size_key), time = p.at("time");
    SizeTime t{size.as_bytes(), time.as_duration()};
    if (t.bytes > 1024.0 * 1024 * 1024)
      throw size.error(fmt::format("expected a {} of at most 1 GiB", size_key));
    if (!(t.seconds > 0) || t.seconds > 1)
      throw time.error(fmt::format("expected a time per {} above 0 s and at most 1 s", what));
    if (!points.empty() && !(t.bytes > points.back().bytes))
      throw size.error(fmt::format("expected {} sizes that increase from point to point", size_key));
    points.push_back(t);
  }
  return SizeTimes(std::move(points));
}

// node.fabric.nccl_ring: {channels: 24, handoffs: [{slice: 32KiB, time: 4.5us}, ...]}, as `strata validate
// ring-slices` writes it; the other tables alike, by their keys (hw/nccl_measured.cc); node.fabric.nccl_nvls
// without channels: {steps: [{chunk: 16KiB, time: 9us}, ...]}.
NcclMeasured read_nccl_table(const YamlReader& table, const NcclTableInfo& info) {
  NcclMeasured m;
  if (info.channels) {
    const std::string_view keys[] = {"channels", info.list_key};
    table.expect_map(keys);
    m.channels = table.at("channels").as_int32_in(1, 64);
  } else {
    const std::string_view keys[] = {info.list_key};
    table.expect_map(keys);
  }
  m.times = read_size_times(table.at(info.list_key), info.size_key, info.unit);
  return m;
}

// The measured tables of node.<section> (`section` is that map), and the keys it may hold besides them.
void read_nccl_tables(const YamlReader& section, std::string_view name,
                      std::initializer_list<std::string_view> other_keys, NcclMeasuredTables& out) {
  std::vector<std::string_view> keys(other_keys);
  for (const auto& t : nccl_tables())
    if (t.section == name) keys.push_back(t.key);
  section.expect_map(keys);
  for (const auto& t : nccl_tables())
    if (t.section == name)
      if (auto table = section.maybe(t.key)) out.set(t.id, read_nccl_table(*table, t));
}

void read_fabric(const YamlReader& fabric, NodeSpec& ns) {
  read_nccl_tables(fabric, "fabric", {"wiring", "link", "links_per_gpu", "links_per_pair", "switch"},
                   ns.nccl);
  const YamlReader wiring_node = fabric.at("wiring");
  ns.wiring = wiring_node.as_string();
  if (ns.wiring != "none") ns.fabric_link = read_hop_link(fabric.at("link"));
  if (ns.wiring == "switch") {
    ns.links_per_gpu = fabric.at("links_per_gpu").as_int32_in(1, limits::kMaxPartsPerNode);
    const YamlReader sw = fabric.at("switch");
    const std::string s = sw.as_string();
    if (s.size() != 9 || s.rfind("nvswitch", 0) != 0 || s[8] < '1' || s[8] > '4')
      throw sw.error(fmt::format("expected nvswitch1, nvswitch2, nvswitch3 or nvswitch4, got '{}'", s));
    ns.switch_generation = s[8] - '0';
  } else if (ns.wiring == "ring" || ns.wiring == "fully-connected") {
    if (auto p = fabric.maybe("links_per_pair"))
      ns.links_per_pair = p->as_int32_in(1, limits::kMaxPartsPerNode);
    // A fully connected node has gpus^2/2 wires: bound it like the other per-node structures.
    if (ns.wiring == "fully-connected" && ns.gpus > 128)
      throw wiring_node.error(
          fmt::format("fully-connected wiring supports at most 128 GPUs per node "
                      "(node.gpus is {}); use a switch for larger nodes",
                      ns.gpus));
  } else if (ns.wiring == "hybrid-cube-mesh") {
    if (ns.gpus != 8)
      throw wiring_node.error(
          fmt::format("hybrid-cube-mesh needs exactly 8 GPUs per node, node.gpus is {}", ns.gpus));
  } else if (ns.wiring != "none") {
    throw wiring_node.error(fmt::format(
        "unknown wiring '{}' (expected one of: switch, ring, fully-connected, hybrid-cube-mesh, none)",
        ns.wiring));
  }
}

NodeSpec read_node(const YamlReader& node) {
  node.expect_map({"gpus", "levels", "fabric", "host", "nics"});
  NodeSpec ns;
  ns.gpus = node.at("gpus").as_int32_in(1, limits::kMaxGpusPerNode);
  ns.levels = read_levels(node, ns.gpus);
  read_fabric(node.at("fabric"), ns);

  const YamlReader host = node.at("host");
  host.expect_map({"cpus", "cpu_vendor", "pcie_switches", "pcie", "cpu_link"});
  ns.cpus = host.at("cpus").as_int32_in(1, limits::kMaxPartsPerNode);
  if (auto v = host.maybe("cpu_vendor")) {
    const std::string name = v->as_string();
    const auto vendor = parse_cpu_vendor(name);
    if (!vendor) throw v->error(fmt::format("unknown CPU vendor '{}' (expected {})", name, kCpuVendorNames));
    ns.cpu_vendor = *vendor;
  }
  if (auto p = host.maybe("pcie_switches")) ns.pcie_switches = p->as_int32_in(0, limits::kMaxPartsPerNode);
  ns.pcie = read_hop_link(host.at("pcie"));
  if (ns.cpus > 1) ns.cpu_link = read_hop_link(host.at("cpu_link"));

  if (auto nics = node.maybe("nics")) {
    read_nccl_tables(*nics, "nics", {"count", "link"}, ns.nccl);
    ns.nics = nics->at("count").as_int32_in(1, limits::kMaxPartsPerNode);
    ns.nic_link = read_hop_link(nics->at("link"));
  }
  return ns;
}

std::optional<NetworkSpec> read_network(const YamlReader& root) {
  std::optional<YamlReader> network = root.maybe("network");
  if (!network) return std::nullopt;
  NetworkSpec net;
  network->expect_map({"wiring", "oversubscription"});
  const YamlReader w = network->at("wiring");
  net.wiring = w.as_string();
  if (net.wiring != "fat-tree" && net.wiring != "rail-optimized")
    throw w.error(
        fmt::format("unknown network wiring '{}' (expected fat-tree or rail-optimized)", net.wiring));
  if (auto o = network->maybe("oversubscription")) {
    net.oversubscription = o->as_double();
    if (net.oversubscription < 1 || net.oversubscription > 1e6)
      throw o->error("expected an oversubscription ratio from 1 to 1e6");
    if (net.wiring != "rail-optimized")
      throw o->error("oversubscription applies to rail-optimized leaf-spine uplinks only");
  }
  return net;
}

int read_node_count(const YamlReader& root, const LoadOptions& options, int gpus_per_node) {
  int nodes = root.has("nodes") ? root.at("nodes").as_int32_in(1, limits::kMaxNodes) : 1;
  if (options.nodes) {
    if (*options.nodes < 1 || *options.nodes > limits::kMaxNodes)
      throw ConfigError(fmt::format("--nodes: expected an integer from 1 to {}, got {}", limits::kMaxNodes,
                                    *options.nodes));
    nodes = *options.nodes;
  }
  if (static_cast<long long>(nodes) * gpus_per_node > limits::kMaxGpus)
    throw root.error(fmt::format("{} nodes x {} GPUs = {} GPUs is above strata's limit of {} GPUs per system",
                                 nodes, gpus_per_node, static_cast<long long>(nodes) * gpus_per_node,
                                 limits::kMaxGpus));
  return nodes;
}

// Scale-up fabric of one node.
void add_fabric(Topology& topo, const NodeSpec& ns, int n, std::span<const VertexId> gpus) {
  const auto duplex = [&](VertexId a, VertexId b, double latency, int multiplicity) {
    topo.add_duplex(a, b, *ns.fabric_link->kind, ns.fabric_link->bandwidth, ns.fabric_link->efficiency,
                    latency, multiplicity);
  };
  if (ns.wiring == "switch") {
    const VertexId sw = topo.add_vertex(
        {VertexKind::kNvSwitch, fmt::format("n{}.nvswitch", n), n, 0, ns.switch_generation >= 3});
    for (VertexId g : gpus) duplex(g, sw, ns.fabric_link->latency / 2, ns.links_per_gpu);
  } else if (ns.wiring == "ring") {
    for (int g = 0; g < ns.gpus && ns.gpus > 1; ++g) {
      if (ns.gpus == 2 && g == 1) break;  // two GPUs: one pair, not a doubled one
      duplex(gpus[g], gpus[(g + 1) % ns.gpus], ns.fabric_link->latency, ns.links_per_pair);
    }
  } else if (ns.wiring == "fully-connected") {
    for (int a = 0; a < ns.gpus; ++a)
      for (int b = a + 1; b < ns.gpus; ++b)
        duplex(gpus[a], gpus[b], ns.fabric_link->latency, ns.links_per_pair);
  } else if (ns.wiring == "hybrid-cube-mesh") {
    for (const auto& [a, b, m] : kHybridCubeMesh) duplex(gpus[a], gpus[b], ns.fabric_link->latency, m);
  }
}

// One node: GPUs, fabric, host (CPUs fully connected through the CPU interconnect, PCIe switches spread
// evenly over CPUs, GPUs and NICs spread evenly over PCIe switches or hung off the CPUs when there are none).
// Returns the node's NICs.
std::vector<VertexId> add_node(Topology& topo, const NodeSpec& ns, int n) {
  const auto vname = [n](std::string_view what, int i) { return fmt::format("n{}.{}{}", n, what, i); };
  std::vector<VertexId> gpus;
  for (int g = 0; g < ns.gpus; ++g) {
    gpus.push_back(topo.add_vertex({VertexKind::kGpu, vname("gpu", g), n, g}));
    topo.set_gpu_vertex(n * ns.gpus + g, gpus.back());
  }
  add_fabric(topo, ns, n, gpus);
  std::vector<VertexId> cpus;
  for (int c = 0; c < ns.cpus; ++c)
    cpus.push_back(topo.add_vertex({VertexKind::kCpu, vname("cpu", c), n, c}));
  for (int a = 0; a < ns.cpus; ++a)
    for (int b = a + 1; b < ns.cpus; ++b)
      topo.add_duplex(cpus[a], cpus[b], *ns.cpu_link.kind, ns.cpu_link.bandwidth, ns.cpu_link.efficiency,
                      ns.cpu_link.latency, 1);
  const auto pcie = [&](VertexId a, VertexId b) {
    topo.add_duplex(a, b, *ns.pcie.kind, ns.pcie.bandwidth, ns.pcie.efficiency, ns.pcie.latency, 1);
  };
  std::vector<VertexId> attach = cpus;  // where GPUs and NICs plug in
  if (ns.pcie_switches > 0) {
    attach.clear();
    for (int s = 0; s < ns.pcie_switches; ++s) {
      const VertexId sw = topo.add_vertex({VertexKind::kPcieSwitch, vname("pcisw", s), n, s});
      pcie(sw, cpus[static_cast<std::size_t>(s * ns.cpus / ns.pcie_switches)]);
      attach.push_back(sw);
    }
  }
  const auto slots = static_cast<long long>(attach.size());
  for (int g = 0; g < ns.gpus; ++g) pcie(gpus[g], attach[static_cast<std::size_t>(g * slots / ns.gpus)]);
  std::vector<VertexId> nics;
  for (int i = 0; i < ns.nics; ++i) {
    nics.push_back(topo.add_vertex({VertexKind::kNic, vname("nic", i), n, i}));
    pcie(nics.back(), attach[static_cast<std::size_t>(i * slots / ns.nics)]);
  }
  // Each GPU uses the NIC of its own share of the node (GPU g of G -> NIC floor(g * N / G)), as NCCL pairs
  // GPUs with their closest NIC.
  for (int g = 0; g < ns.gpus && ns.nics > 0; ++g)
    topo.set_nic_of_gpu(n * ns.gpus + g,
                        nics[static_cast<std::size_t>(static_cast<long long>(g) * ns.nics / ns.gpus)]);
  return nics;
}

void add_network(Topology& topo, const NetworkSpec& net, const LinkChoice& nl, int nodes,
                 std::span<const std::vector<VertexId>> nics_of_node, int nics_per_node) {
  if (net.wiring == "fat-tree") {
    // A non-blocking fat tree is, at flow level, one crossbar: only the NIC ports limit bandwidth.
    const VertexId core = topo.add_vertex({VertexKind::kNetSwitch, "fabric", -1, 0});
    for (const auto& nics : nics_of_node)
      for (VertexId nic : nics)
        topo.add_duplex(nic, core, *nl.kind, nl.bandwidth, nl.efficiency, nl.latency / 2, 1);
    return;
  }
  // Rail-optimized: NIC i of every node on leaf (rail) switch i; rails joined by a spine whose uplinks carry
  // all of a rail's NIC bandwidth divided by the oversubscription ratio.
  const VertexId spine = topo.add_vertex({VertexKind::kNetSwitch, "spine", -1, 0});
  for (int r = 0; r < nics_per_node; ++r) {
    const VertexId leaf = topo.add_vertex({VertexKind::kNetSwitch, fmt::format("rail{}", r), -1, r + 1});
    for (const auto& nics : nics_of_node)
      topo.add_duplex(nics[static_cast<std::size_t>(r)], leaf, *nl.kind, nl.bandwidth, nl.efficiency,
                      nl.latency / 2, 1);
    // Without oversubscription the uplink carries at most what the rail's NICs can inject, so it never
    // divides bandwidth: a non-shared link keeps it out of the fair-sharing system (and keeps the flows of
    // different rails from being coupled into one large system).
    topo.add_duplex(leaf, spine, *nl.kind, nl.bandwidth * nodes / net.oversubscription, nl.efficiency,
                    nl.latency / 2, 1, net.oversubscription > 1.0);
  }
}

Topology build(const YamlReader& root, const LoadOptions& options) {
  root.expect_map({"name", "description", "gpu", "nodes", "node", "network"});
  const std::string name = root.at("name").as_string();
  GpuSpec gpu = read_gpu(root.at("gpu"));
  const YamlReader node = root.at("node");
  NodeSpec ns = read_node(node);
  const int nodes = read_node_count(root, options, ns.gpus);
  const std::optional<NetworkSpec> network = read_network(root);
  if (nodes > 1 && !network)
    throw root.error(fmt::format("{} nodes need a 'network' section describing how nodes are wired", nodes));
  if (nodes > 1 && ns.nics == 0)
    throw node.error(fmt::format(
        "{} nodes need NICs: node.nics is missing, so GPUs on different nodes cannot reach each other",
        nodes));

  // Hierarchy view: the cluster level, then the node's own levels.
  std::vector<Level> levels{{"node", nodes}};
  levels.insert(levels.end(), ns.levels.begin(), ns.levels.end());
  Topology topo(name, gpu, nodes, ns.gpus, std::move(levels));
  topo.set_node_switched(ns.wiring == "switch");
  topo.set_cpu_vendor(ns.cpu_vendor);
  topo.set_nccl_tables(ns.nccl);
  std::vector<std::vector<VertexId>> nics_of_node;
  nics_of_node.reserve(static_cast<std::size_t>(nodes));
  for (int n = 0; n < nodes; ++n) nics_of_node.push_back(add_node(topo, ns, n));
  if (network && ns.nics > 0) add_network(topo, *network, *ns.nic_link, nodes, nics_of_node, ns.nics);

  try {
    topo.finalize();
  } catch (const std::runtime_error& e) {
    throw root.error(
        fmt::format("unreachable GPUs: {}; check node.fabric, node.host and node.nics", e.what()));
  }
  return topo;
}

}  // namespace

namespace {
// yaml-cpp reports some shapes only when a value is converted; name the file and position for those too.
Topology build_checked(const YamlReader& root, const LoadOptions& options) {
  try {
    return build(root, options);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}:{}: unexpected YAML structure: {}", root.file(), e.mark.line + 1,
                                  e.mark.column + 1, e.msg));
  }
}
}  // namespace

Topology load_system(const std::string& path, const LoadOptions& options) {
  return build_checked(YamlReader::from_file(path), options);
}

Topology load_system_from_string(std::string_view yaml, const std::string& name, const LoadOptions& options) {
  return build_checked(YamlReader::from_string(yaml, name), options);
}

Topology load_system(const YamlReader& root, const LoadOptions& options) {
  return build_checked(root, options);
}

}  // namespace strata::hw
