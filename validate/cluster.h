// An emulated hierarchical cluster on one Linux machine: one network namespace per node, each with a veth
// port to a common bridge (the network switch), shaped by tc (htb rate, netem delay where the kernel has
// netem). MPI ranks of one node share its namespace and talk over shared memory; nodes talk over TCP on the
// shaped ports. Open MPI starts its daemons inside the namespaces through a launch agent script (`ip netns
// exec` + a UTS namespace with the node's host name, so that Open MPI sees distinct hosts).
//
// Everything the cluster creates carries its name as prefix (namespaces <name>-n<i>, bridge <name>-br, host
// ports <name>-v<i>), so `down`, or the next `up`, removes what a crashed run left behind. Its files live in
// a state folder: cluster.json (this spec), agent.sh, and the system file <name>.yaml the simulator reads.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "validate/link_fit.h"

namespace strata::validate {

struct ClusterSpec {
  std::string name = "strata";  // [a-z][a-z0-9]{0,7}: a prefix of interface names (15 characters at most)
  int nodes = 2;
  int ranks_per_node = 1;
  // Ports (NICs) per node, all on the one bridge. Rank l of a node uses port floor(l K / R) only, as hw pairs
  // device l with NIC floor(l K / R): each port's traffic leaves through it (policy routing by source
  // address) and Open MPI is told to use that port alone (no striping of one message over ports).
  int nics_per_node = 1;
  double inter_bandwidth = 125e6;   // bytes/s, the shaped line rate of each node's port, per direction
  double inter_latency = 0;         // seconds added one way by netem on each node's egress; 0 = none
  std::filesystem::path dir;        // state folder
  std::string subnet = "10.213.0";  // /24 of the nodes' ports: node i is <subnet>.<i+1>, the bridge .254

  int ranks() const { return nodes * ranks_per_node; }
  std::string node_name(int i) const { return name + "-n" + std::to_string(i); }
  std::string bridge() const { return name + "-br"; }
  std::string port(int node, int nic) const {
    return name + "-v" + std::to_string(node) + "k" + std::to_string(nic);
  }
  std::string address(int node, int nic) const {
    return subnet + "." + std::to_string(1 + node * nics_per_node + nic);
  }
  // The port MPI rank r uses.
  int nic_of_rank(int r) const { return (r % ranks_per_node) * nics_per_node / ranks_per_node; }
  std::filesystem::path state_file() const { return dir / "cluster.json"; }
  std::filesystem::path agent() const { return dir / "agent.sh"; }
  std::filesystem::path system_file() const { return dir / (name + ".yaml"); }
};

// A rate as network people write it and as nccl-tests does: "200 Mbit/s (25 MB/s)".
std::string format_rate(double bytes_per_second);

// The default state folder of a cluster: /run/strata/<name>.
std::filesystem::path default_state_dir(const std::string& name);

// Checks the spec's ranges and name; throws InputError naming the option.
void check_spec(const ClusterSpec& spec);

// Throws InputError with what to do when this process cannot create namespaces (not root, no `ip`/`tc`, or
// `ip netns add` refused).
void check_can_emulate();

// Removes anything a previous cluster of this name left, then creates the namespaces, ports, bridge, shaping
// and agent, and writes cluster.json and the system file with the configured link figures (calibrate
// replaces them with measured ones). On failure removes what it created and throws InputError with the
// failing command and its message.
void cluster_up(const ClusterSpec& spec);

// Stops processes left in the namespaces and removes namespaces, ports, bridge and the state folder.
// Returns what it removed (for the user), empty when there was nothing.
std::vector<std::string> cluster_down(const std::string& name, const std::filesystem::path& dir);

// Reads a cluster's spec from its system file (`--cluster <dir>/<name>.yaml`) or state folder; checks that
// its namespaces exist. Throws InputError otherwise.
ClusterSpec load_cluster(const std::filesystem::path& system_file_or_dir);

// The system file of the cluster. `intra`/`inter`: the link figures to write (configured or measured);
// `note` is written as comment lines at the top.
std::string cluster_system_yaml(const ClusterSpec& spec, const LinkFigures& intra, const LinkFigures& inter,
                                const std::string& note);

// The configured figures: the shaped rate x the TCP payload share of a frame (hw link kind tcp-veth) and the
// netem delay (or tcp-veth's nominal latency when there is none); shared memory as hw's shm link kind.
LinkFigures configured_inter(const ClusterSpec& spec);
LinkFigures configured_intra();

}  // namespace strata::validate
