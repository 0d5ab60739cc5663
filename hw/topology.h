// A hardware system seen two ways:
//  (1) a hierarchy of levels (name + count per parent, outermost first, e.g. node x 4, gpu x 16), which the
//      placement/reduction search reasons about;
//  (2) a physical graph of GPUs, NVSwitches, PCIe switches, CPUs, NICs and network switches joined by
//  directed
//      links (every duplex wire is two one-way links), with a route between any two GPUs, which the simulator
//      puts flows on.
// Both views are built from one YAML description (hw/system_loader.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/gpu_spec.h"
#include "hw/link_kind.h"
#include "hw/nccl_measured.h"

namespace strata::hw {

using VertexId = std::int32_t;
using LinkId = std::int32_t;
using Rank = std::int32_t;  // a GPU's global index, node-major: rank = node * gpus_per_node + local

enum class VertexKind { kGpu, kNvSwitch, kPcieSwitch, kCpu, kNic, kNetSwitch };

// The host CPUs' vendor. NCCL reads it for multi-node protocol limits: its LL bandwidth ceiling across nodes
// has one row for AMD hosts and one for every other CPU (src/graph/tuning.cc, llMaxBws).
enum class CpuVendor { kIntel, kAmd, kOther };
std::string_view cpu_vendor_name(CpuVendor v);
std::optional<CpuVendor> parse_cpu_vendor(std::string_view name);
inline constexpr std::string_view kCpuVendorNames = "intel, amd or other";
std::string_view vertex_kind_name(VertexKind k);

struct Vertex {
  VertexKind kind;
  std::string name;   // e.g. "n0.gpu3", "n1.nic0", "rail2", "spine"
  int node = -1;      // owning node, -1 for network switches
  int local = -1;     // index within its node and kind
  bool nvls = false;  // NVSwitch with in-switch reduction (NVLink SHARP)
};

struct Link {
  VertexId src, dst;
  std::string kind;  // link-kind catalogue name
  Transport transport;
  double bandwidth;  // effective bytes/s in this direction (line rate x efficiency x multiplicity)
  double latency;    // seconds
  int multiplicity = 1;
  // false for a non-blocking backplane ("fatpipe" in SimGrid's terms): each flow may use the full
  // bandwidth, flows do not divide it. Only used where the capacity can never bind (see the loader).
  bool shared = true;
};

struct Level {
  std::string name;
  int count;
};

class Topology {
 public:
  Topology(std::string name, GpuSpec gpu, int nodes, int gpus_per_node, std::vector<Level> levels);

  // --- building (used by the loader and tests) ---
  VertexId add_vertex(Vertex v);
  // Adds a full-duplex wire as two directed links with the same parameters; returns the forward link's id.
  LinkId add_duplex(VertexId a, VertexId b, const LinkKind& kind, double line_bandwidth, double efficiency,
                    double latency, int multiplicity, bool shared = true);
  void set_gpu_vertex(Rank r, VertexId v);
  void set_nic_of_gpu(Rank r, VertexId nic);
  // Verifies every GPU reaches every other (in time linear in the graph); throws std::runtime_error naming an
  // unreachable pair. Required before the physical view is queried.
  void finalize();

  // --- hierarchy view ---
  const std::string& name() const { return name_; }
  const GpuSpec& gpu() const { return gpu_; }
  std::span<const Level> levels() const { return levels_; }
  int nodes() const { return nodes_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int num_gpus() const { return nodes_ * gpus_per_node_; }
  // Every rank, 0 .. num_gpus() - 1: the group a collective over the whole system uses.
  std::vector<Rank> all_ranks() const;
  int node_of(Rank r) const { return r / gpus_per_node_; }
  int local_rank(Rank r) const { return r % gpus_per_node_; }
  // Coordinates of a rank in the hierarchy, outermost level first (mixed radix, innermost fastest).
  std::vector<int> coordinates(Rank r) const;

  // --- physical view ---
  std::span<const Vertex> vertices() const { return vertices_; }
  std::span<const Link> links() const { return links_; }
  const Link& link(LinkId l) const { return links_[static_cast<std::size_t>(l)]; }
  VertexId gpu_vertex(Rank r) const { return gpu_vertex_[static_cast<std::size_t>(r)]; }
  std::optional<VertexId> nic_of(Rank r) const;
  int nics_per_node() const;
  // True when every node's GPUs share an NVSwitch that can reduce in the switch (NVLS).
  bool nvls_capable() const;
  // True when the GPU has an NVLink link (to a peer GPU or an NVSwitch).
  bool has_nvlink(Rank r) const;
  // Direct GPU-to-GPU link (no switch in between), if any.
  std::optional<LinkId> direct_link(Rank a, Rank b) const;
  // True when all GPUs of a node reach each other through one switch (any pair at the same cost).
  bool node_is_switched() const { return node_switched_; }
  void set_node_switched(bool v) { node_switched_ = v; }
  // The vendor of the nodes' host CPUs (node.host.cpu_vendor; kOther when the file does not say).
  CpuVendor cpu_vendor() const { return cpu_vendor_; }
  void set_cpu_vendor(CpuVendor v) { cpu_vendor_ = v; }
  // NCCL's kernels and network proxy as measured (hw/nccl_measured.h): one table per NcclTableId, empty where
  // the system file gives none (every preset).
  const NcclMeasured& nccl_table(NcclTableId id) const { return nccl_tables_[id]; }
  const NcclMeasuredTables& nccl_tables() const { return nccl_tables_; }
  void set_nccl_tables(NcclMeasuredTables t) { nccl_tables_ = std::move(t); }

  // The links a transfer from GPU a to GPU b crosses, in order. Intra-node traffic takes the cheapest path
  // that does not pass through another GPU or a NIC; inter-node traffic leaves through a's NIC and enters
  // through b's NIC (rail affinity, as NCCL does). Deterministic; thread-safe.
  std::span<const LinkId> route(Rank a, Rank b) const;
  // Transport class of the slowest kind of hop on the route (net > pcie/host > nvlink).
  Transport route_transport(Rank a, Rank b) const;
  double route_latency(Rank a, Rank b) const;
  // The same over links already looked up (a route(a, b)).
  Transport route_transport(std::span<const LinkId> links) const;
  double route_latency(std::span<const LinkId> links) const;
  double route_bandwidth(Rank a, Rank b) const;  // the smallest link bandwidth along the route

 private:
  struct RouteCache;
  struct SwitchTree;
  std::vector<LinkId> compute_route(Rank a, Rank b) const;
  std::vector<LinkId> shortest_path(VertexId from, VertexId to, bool network_only,
                                    bool nvlink_only = false) const;
  // The route shortest_path(nic_a, nic_b, true) finds, built from a cached shortest-path tree over the
  // network switches (see topology.cc for why the two agree).
  std::vector<LinkId> network_path(VertexId nic_a, VertexId nic_b) const;
  std::shared_ptr<const SwitchTree> switch_tree(VertexId root, double root_dist) const;
  void index_network();

  std::string name_;
  GpuSpec gpu_;
  int nodes_, gpus_per_node_;
  std::vector<Level> levels_;
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<std::vector<LinkId>> out_links_;
  std::vector<VertexId> gpu_vertex_;
  std::vector<VertexId> nic_of_gpu_;
  bool node_switched_ = false;
  CpuVendor cpu_vendor_ = CpuVendor::kOther;
  NcclMeasuredTables nccl_tables_;
  bool finalized_ = false;
  int nics_per_node_ = 0;
  bool nvls_capable_ = false;
  // Network index built by finalize(): when every NIC is a leaf of the network (at most one network link
  // out, to a switch, and at most one in, from a switch), network routes use cached per-switch trees.
  bool nics_are_network_leaves_ = false;
  std::vector<int> switch_index_;  // per vertex: index among network switches, -1 for other vertices
  int num_switches_ = 0;
  std::vector<LinkId> nic_uplink_, nic_downlink_;  // per vertex: a NIC's network link out / in, or -1
  std::shared_ptr<RouteCache> cache_;
};

}  // namespace strata::hw
