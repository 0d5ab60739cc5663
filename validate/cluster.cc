#include "validate/cluster.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hw/link_kind.h"
#include "hw/units.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/subprocess.h"

namespace strata::validate {
namespace fs = std::filesystem;
namespace {

using util::InputError;

util::ProcessResult run(std::vector<std::string> argv) {
  return util::run_process(argv);
}

// Runs a setup command; on failure throws InputError naming it and its message.
void must(std::vector<std::string> argv) {
  const auto r = run(argv);
  if (r.ok()) return;
  std::string why = r.started ? r.err : r.error;
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  throw InputError(fmt::format("cluster setup failed: `{}`: {}", util::shell_quote(argv), why));
}

std::vector<std::string> in_ns(const std::string& ns, std::vector<std::string> argv) {
  std::vector<std::string> out{"ip", "netns", "exec", ns};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

// Rate-limits egress of `dev` (in namespace `ns`, or the host when empty) to `rate` bytes/s; with `delay` > 0
// netem delays every packet by it first.
void shape(const std::string& ns, const std::string& dev, double rate, double delay) {
  const auto wrap = [&](std::vector<std::string> a) { return ns.empty() ? a : in_ns(ns, std::move(a)); };
  const std::string bits = fmt::format("{}bit", static_cast<long long>(rate * 8));
  // r2q 100 keeps htb's quantum (rate / r2q) near a few frames at the rates validate uses.
  must(
      wrap({"tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10", "r2q", "100"}));
  must(wrap({"tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", bits, "ceil",
             bits}));
  if (delay <= 0) {
    // A short queue (100 frames, 6 ms at 200 Mbit/s) instead of the device's 1000: with a deep queue the TCP
    // acknowledgements of one direction wait behind the other direction's data, and exchanges slow down.
    must(
        wrap({"tc", "qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "pfifo", "limit", "100"}));
    return;
  }
  const auto r =
      run(wrap({"tc", "qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "netem", "delay",
                fmt::format("{}us", static_cast<long long>(delay * 1e6)), "limit", "100"}));
  if (!r.ok())
    throw InputError(fmt::format(
        "--inter-latency needs tc's netem qdisc, which this kernel does not offer ({}). Run with "
        "--inter-latency 0: the links keep their natural latency, which `strata validate calibrate` measures",
        r.err.empty() ? r.error : r.err.substr(0, r.err.find('\n'))));
}

std::string agent_script(const ClusterSpec& spec) {
  return fmt::format(
      "#!/bin/sh\n"
      "# Open MPI launch agent of the emulated cluster '{0}' (written by strata validate cluster up).\n"
      "# Open MPI calls it as `agent.sh <host> <command>` instead of ssh: the daemon starts inside the "
      "node's\n"
      "# network namespace, in a UTS namespace whose host name is the node's, so Open MPI tells nodes "
      "apart.\n"
      "# Ranks run at the lowest priority (nice 19): ranks that poll must not delay the kernel's network\n"
      "# processing (veth, bridge, TCP), which runs on the same cores.\n"
      "host=\"$1\"; shift\n"
      "case \"$host\" in\n"
      "  {0}-n[0-9]*) ;;\n"
      "  *) echo \"agent.sh: $host is not a node of cluster {0}\" >&2; exit 1 ;;\n"
      "esac\n"
      "exec ip netns exec \"$host\" nice -n 19 unshare --uts /bin/sh -c \"hostname $host && $*\"\n",
      spec.name);
}

nlohmann::json spec_json(const ClusterSpec& s) {
  return {{"name", s.name},
          {"nodes", s.nodes},
          {"ranks_per_node", s.ranks_per_node},
          {"nics_per_node", s.nics_per_node},
          {"inter_bandwidth_bytes_per_s", s.inter_bandwidth},
          {"inter_latency_s", s.inter_latency},
          {"subnet", s.subnet}};
}

std::vector<std::string> namespaces_with_prefix(const std::string& name) {
  std::vector<std::string> out;
  const auto r = run({"ip", "netns", "list"});
  std::istringstream lines(r.out);
  std::string line;
  const std::string prefix = name + "-n";
  while (std::getline(lines, line)) {
    const std::string ns = line.substr(0, line.find(' '));
    if (ns.rfind(prefix, 0) == 0) out.push_back(ns);
  }
  return out;
}

}  // namespace

std::string format_rate(double bytes_per_second) {
  return fmt::format("{:.4g} Mbit/s ({:.4g} MB/s)", bytes_per_second * 8 / 1e6, bytes_per_second / 1e6);
}

fs::path default_state_dir(const std::string& name) {
  return fs::path("/run/strata") / name;
}

void check_spec(const ClusterSpec& spec) {
  if (!std::regex_match(spec.name, std::regex("[a-z][a-z0-9]{0,7}")))
    throw InputError(
        fmt::format("--name '{}': expected a lower-case letter then up to 7 letters or digits "
                    "(it prefixes interface names, which Linux limits to 15 characters)",
                    spec.name));
  if (spec.nodes < 1 || spec.nodes > 16)
    throw InputError(fmt::format("--nodes {}: expected 1..16 (every node's ranks share this machine's cores)",
                                 spec.nodes));
  if (spec.ranks_per_node < 1 || spec.ranks_per_node > 8)
    throw InputError(fmt::format("--ranks-per-node {}: expected 1..8", spec.ranks_per_node));
  if (spec.nics_per_node < 1 || spec.nics_per_node > spec.ranks_per_node)
    throw InputError(fmt::format("--nic-per-node {}: expected 1..{} (at most one port per rank)",
                                 spec.nics_per_node, spec.ranks_per_node));
  if (spec.inter_bandwidth < 125e3 || spec.inter_bandwidth > 1.25e9)
    throw InputError(fmt::format("--inter-bandwidth {}: expected 1 Mbit/s .. 10 Gbit/s",
                                 format_rate(spec.inter_bandwidth)));
  if (spec.inter_latency < 0 || spec.inter_latency > 0.1)
    throw InputError(fmt::format("--inter-latency {} s: expected 0 .. 100 ms", spec.inter_latency));
  if (!std::regex_match(spec.subnet, std::regex("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})")))
    throw InputError(
        fmt::format("--subnet '{}': expected the first three octets of a /24, e.g. 10.213.0", spec.subnet));
}

void check_can_emulate() {
  if (geteuid() != 0)
    throw InputError(
        "an emulated cluster needs root: it creates network namespaces (ip netns) and shapes links (tc). Run "
        "strata validate as root (or with sudo)");
  for (const char* tool : {"ip", "tc", "unshare"}) {
    const auto r = run({tool, "-V"});
    if (!r.started)
      throw InputError(fmt::format("`{}` was not found: install iproute2 and util-linux", tool));
  }
  const std::string probe = fmt::format("strata-probe{}", getpid() % 100000);
  const auto r = run({"ip", "netns", "add", probe});
  if (!r.ok())
    throw InputError(fmt::format("network namespaces are not available here (`ip netns add` failed: {})",
                                 r.err.substr(0, r.err.find('\n'))));
  run({"ip", "netns", "del", probe});
}

LinkFigures configured_inter(const ClusterSpec& spec) {
  const hw::LinkKind* k = hw::find_link_kind("tcp-veth");
  LinkFigures f;
  f.bandwidth = spec.inter_bandwidth * k->efficiency;
  f.latency = spec.inter_latency > 0 ? spec.inter_latency : k->latency;
  f.source = "configured";
  return f;
}

LinkFigures configured_intra() {
  const hw::LinkKind* k = hw::find_link_kind("shm");
  return LinkFigures{k->bandwidth * k->efficiency, k->latency, "configured"};
}

std::string cluster_system_yaml(const ClusterSpec& spec, const LinkFigures& intra, const LinkFigures& inter,
                                const std::string& note) {
  std::string y;
  std::istringstream lines(note);
  std::string line;
  while (std::getline(lines, line)) y += "# " + line + "\n";
  y += fmt::format("name: {}\n", spec.name);
  y += fmt::format(
      "description: emulated cluster, {} nodes x {} MPI ranks, ports shaped to {} (strata validate)\n",
      spec.nodes, spec.ranks_per_node, format_rate(spec.inter_bandwidth));
  y += "gpu: host-cpu\n";
  y += fmt::format("nodes: {}\n", spec.nodes);
  y += "node:\n";
  y += fmt::format("  gpus: {}\n", spec.ranks_per_node);
  if (spec.ranks_per_node > 1)
    y += fmt::format(
        "  fabric:  # ranks of a node: Open MPI's shared-memory transport (vader), {}\n"
        "    wiring: fully-connected\n"
        "    link: {{kind: shm, bandwidth: {:.6g} MB/s, efficiency: 1, latency: {:.3f} us}}\n",
        intra.source, intra.bandwidth / 1e6, intra.latency * 1e6);
  else
    y += "  fabric: {wiring: none}\n";
  // A rank's path to its node's port runs through host memory: as fast as shared memory, latency counted in
  // the port's. (Not faster: routes inside a node take the cheapest path, and a faster rank-CPU-rank path
  // would replace the shared-memory wire.)
  y += fmt::format(
      "  host:\n"
      "    cpus: 1\n"
      "    pcie: {{kind: pcie4, bandwidth: {:.6g} MB/s, efficiency: 1, latency: 0 us}}\n",
      intra.bandwidth / 1e6);
  // A nics link's latency is NIC to NIC through the switch (hw splits it over the two ports): the whole
  // one-way latency between ranks of two nodes.
  y += fmt::format(
      "  nics:  # the node's veth ports, shaped by tc; {}\n"
      "    count: {}\n"
      "    link: {{kind: tcp-veth, bandwidth: {:.6g} MB/s, efficiency: 1, latency: {:.3f} us}}\n",
      inter.source, spec.nics_per_node, inter.bandwidth / 1e6, inter.latency * 1e6);
  y += "network: {wiring: fat-tree}  # one Linux bridge\n";
  return y;
}

void cluster_up(const ClusterSpec& spec) {
  check_spec(spec);
  check_can_emulate();
  cluster_down(spec.name, spec.dir);
  // Another cluster (or anything else) on the same /24 would take the daemons' connections: refuse.
  std::istringstream addresses(run({"ip", "-o", "-4", "addr", "show"}).out);
  for (std::string line; std::getline(addresses, line);)
    if (line.find(" inet " + spec.subnet + ".") != std::string::npos)
      throw InputError(
          fmt::format("--subnet {}: {}.0/24 is already in use here ({}); take that cluster down "
                      "(strata validate cluster down --name ...) or choose another --subnet",
                      spec.subnet, spec.subnet, line.substr(0, line.find(" inet "))));
  try {
    fs::create_directories(spec.dir);
    const std::string br = spec.bridge();
    must({"ip", "link", "add", br, "type", "bridge"});
    must({"ip", "addr", "add", spec.subnet + ".254/24", "dev", br});
    must({"ip", "link", "set", br, "up"});
    for (int i = 0; i < spec.nodes; ++i) {
      const std::string ns = spec.node_name(i);
      must({"ip", "netns", "add", ns});
      must({"ip", "-n", ns, "link", "set", "lo", "up"});
      for (int k = 0; k < spec.nics_per_node; ++k) {
        const std::string port = spec.port(i, k), dev = fmt::format("eth{}", k), ip = spec.address(i, k);
        must({"ip", "link", "add", port, "type", "veth", "peer", "name", dev, "netns", ns});
        must({"ip", "link", "set", port, "master", br});
        must({"ip", "link", "set", port, "up"});
        must({"ip", "-n", ns, "addr", "add", ip + "/24", "dev", dev});
        must({"ip", "-n", ns, "link", "set", dev, "up"});
        if (spec.nics_per_node > 1) {
          // Several ports on one subnet: without a rule Linux sends everything through the first of them.
          const std::string table = std::to_string(100 + k);
          must({"ip", "-n", ns, "rule", "add", "from", ip, "table", table});
          must(
              {"ip", "-n", ns, "route", "add", spec.subnet + ".0/24", "dev", dev, "src", ip, "table", table});
        }
        shape(ns, dev, spec.inter_bandwidth, spec.inter_latency);  // out of the node
        shape("", port, spec.inter_bandwidth, 0);                  // into the node
      }
    }
    util::write_file_atomically(spec.agent(), agent_script(spec));
    fs::permissions(spec.agent(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
    util::write_file_atomically(spec.state_file(), spec_json(spec).dump(1) + "\n");
    util::write_file_atomically(
        spec.system_file(),
        cluster_system_yaml(
            spec, configured_intra(), configured_inter(spec),
            "Emulated cluster written by `strata validate cluster up`: configured link figures.\n"
            "`strata validate calibrate` replaces them with measured ones."));
  } catch (...) {
    cluster_down(spec.name, spec.dir);
    throw;
  }
}

std::vector<std::string> cluster_down(const std::string& name, const fs::path& dir) {
  std::vector<std::string> removed;
  for (const auto& ns : namespaces_with_prefix(name)) {
    // Daemons and ranks of an interrupted run would keep the namespace's ports busy.
    const auto pids = run({"ip", "netns", "pids", ns});
    std::istringstream in(pids.out);
    for (long pid = 0; in >> pid;)
      if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGKILL);
    if (run({"ip", "netns", "del", ns}).ok()) removed.push_back("namespace " + ns);
  }
  // Host ends of ports whose namespace is already gone disappear with it; any other <name>-v* is removed
  // here.
  std::istringstream links(run({"ip", "-o", "link", "show"}).out);
  for (std::string line; std::getline(links, line);) {
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string dev = line.substr(colon + 2, line.find_first_of(":@", colon + 2) - colon - 2);
    if (dev.rfind(name + "-v", 0) == 0 && run({"ip", "link", "del", dev}).ok())
      removed.push_back("port " + dev);
  }
  if (run({"ip", "link", "del", name + "-br"}).ok()) removed.push_back("bridge " + name + "-br");
  std::error_code ec;
  if (!dir.empty() && fs::exists(dir / "cluster.json", ec)) {
    fs::remove_all(dir, ec);
    removed.push_back("state folder " + dir.string());
  }
  return removed;
}

ClusterSpec load_cluster(const fs::path& system_file_or_dir) {
  std::error_code ec;
  const fs::path dir =
      fs::is_directory(system_file_or_dir, ec) ? system_file_or_dir : system_file_or_dir.parent_path();
  const fs::path state = dir / "cluster.json";
  std::ifstream in(state);
  if (!in)
    throw InputError(
        fmt::format("--cluster {}: no emulated cluster there (expected {} written by `strata "
                    "validate cluster up`)",
                    system_file_or_dir.string(), state.string()));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
    ClusterSpec s;
    s.name = j.at("name").get<std::string>();
    s.nodes = j.at("nodes").get<int>();
    s.ranks_per_node = j.at("ranks_per_node").get<int>();
    s.nics_per_node = j.value("nics_per_node", 1);
    s.inter_bandwidth = j.at("inter_bandwidth_bytes_per_s").get<double>();
    s.inter_latency = j.at("inter_latency_s").get<double>();
    s.subnet = j.at("subnet").get<std::string>();
    s.dir = dir;
    check_spec(s);
    const auto present = namespaces_with_prefix(s.name);
    for (int i = 0; i < s.nodes; ++i)
      if (std::find(present.begin(), present.end(), s.node_name(i)) == present.end())
        throw InputError(
            fmt::format("--cluster {}: namespace {} is missing; run `strata validate cluster up` again",
                        system_file_or_dir.string(), s.node_name(i)));
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not a cluster state file ({})", state.string(), e.what()));
  }
}

}  // namespace strata::validate
