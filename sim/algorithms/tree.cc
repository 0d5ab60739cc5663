// Double binary tree (NCCL's Tree): inside a node the group's GPUs form a chain; across nodes the node
// leaders form two binary trees in which (almost) every node is a leaf in one tree and interior in the
// other, each tree carrying half of the data. All-reduce reduces up the trees then broadcasts down,
// pipelined in chunks, so its latency grows with log2(nodes) instead of the ring's 2(n-1) steps.
#include <algorithm>

#include "sim/algorithms/algorithms.h"

namespace strata::sim::algorithms {
namespace {

// Parent of every group member (-1 for the root) for one tree. `order` lists node indices; the binary
// tree is the heap over that order (parent of position p is (p-1)/2).
std::vector<int> tree_parents(const std::vector<std::vector<hw::Rank>>& nodes, const std::vector<int>& order,
                              std::vector<hw::Rank>& members) {
  members.clear();
  std::vector<int> parent;
  std::vector<int> leader_index(nodes.size(), -1);
  for (int node : order) {
    const auto& m = nodes[static_cast<std::size_t>(node)];
    leader_index[static_cast<std::size_t>(node)] = static_cast<int>(members.size());
    for (std::size_t i = 0; i < m.size(); ++i) {
      members.push_back(m[i]);
      parent.push_back(i == 0 ? -1 : static_cast<int>(members.size()) - 2);  // chain inside the node
    }
  }
  for (std::size_t p = 1; p < order.size(); ++p) {
    const int node = order[p], up = order[(p - 1) / 2];
    parent[static_cast<std::size_t>(leader_index[static_cast<std::size_t>(node)])] =
        leader_index[static_cast<std::size_t>(up)];
  }
  return parent;
}

class Tree final : public CollectiveAlgorithm {
 public:
  std::string_view name() const override { return "tree"; }
  std::string_view description() const override {
    return "NCCL-style double binary tree across nodes, chains inside nodes, chunk-pipelined";
  }
  std::string unsupported_reason(const CollectiveSpec& spec, const hw::Topology&) const override {
    if (spec.op != CollectiveOp::kAllReduce && spec.op != CollectiveOp::kBroadcast && spec.op != CollectiveOp::kReduce)
      return "tree implements allreduce, broadcast and reduce only";
    return {};
  }

  TaskId build(BuildContext& ctx) const override {
    const TaskId start = begin_collective(ctx);
    const int n = ctx.group_size();
    if (n == 1) return join(ctx, std::array{Dep{start}});
    auto nodes = ctx.members_by_node();
    const auto op = ctx.spec.op;
    // The root of broadcast/reduce leads its node, and its node is the tree root.
    int root_node = 0;
    if (op != CollectiveOp::kAllReduce) {
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        auto it = std::find(nodes[i].begin(), nodes[i].end(), ctx.spec.group[0]);
        if (it != nodes[i].end()) {
          std::rotate(nodes[i].begin(), it, nodes[i].end());
          root_node = static_cast<int>(i);
        }
      }
    }
    std::vector<int> order(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) order[i] = static_cast<int>((i + static_cast<std::size_t>(root_node)) % nodes.size());
    const int trees = op == CollectiveOp::kAllReduce ? 2 : 1;
    const double per_tree = ctx.spec.bytes / trees;
    const int chunks = ctx.spec.pipeline_chunks > 0 ? ctx.spec.pipeline_chunks
                                                    : std::clamp(static_cast<int>(per_tree / (256 * 1024.0)), 1, 64);
    const double chunk = per_tree / chunks;
    const auto up_label = ctx.label("up"), down_label = ctx.label("down");
    std::vector<Dep> finals;
    for (int t = 0; t < trees; ++t) {
      std::vector<int> tree_order = order;
      if (t == 1) {
        // Second tree: the mirror order, so leaves of one tree are interior nodes of the other; inside
        // nodes the chain runs the other way.
        std::reverse(tree_order.begin(), tree_order.end());
        for (auto& m : nodes) std::reverse(m.begin(), m.end());
      }
      std::vector<hw::Rank> members;
      const auto parent = tree_parents(nodes, tree_order, members);
      const std::size_t m = members.size();
      std::vector<std::vector<int>> children(m);
      for (std::size_t i = 0; i < m; ++i)
        if (parent[i] >= 0) children[static_cast<std::size_t>(parent[i])].push_back(static_cast<int>(i));
      const auto root = static_cast<std::size_t>(std::find(parent.begin(), parent.end(), -1) - parent.begin());
      std::vector<double> up_lat(m, 0);
      for (std::size_t i = 0; i < m; ++i)
        if (parent[i] >= 0) up_lat[i] = ctx.step_latency(members[i], members[static_cast<std::size_t>(parent[i])]);
      std::vector<TaskId> up_prev(m, -1), up_cur(m, -1);
      std::vector<std::vector<TaskId>> down_prev(m), down_cur(m);
      const bool do_up = op != CollectiveOp::kBroadcast, do_down = op != CollectiveOp::kReduce;
      for (int k = 0; k < chunks; ++k) {
        // Reduce up in post-order (children before parents).
        if (do_up) {
          std::vector<int> post;
          post.reserve(m);
          std::vector<std::pair<int, std::size_t>> stack{{static_cast<int>(root), 0}};
          while (!stack.empty()) {
            auto& [v, next] = stack.back();
            if (next < children[static_cast<std::size_t>(v)].size()) {
              const int c = children[static_cast<std::size_t>(v)][next++];
              stack.push_back({c, 0});
            } else {
              post.push_back(v);
              stack.pop_back();
            }
          }
          for (int v : post) {
            const auto vi = static_cast<std::size_t>(v);
            if (parent[vi] < 0) continue;
            std::vector<Dep> deps;
            for (int c : children[vi]) deps.push_back({up_cur[static_cast<std::size_t>(c)], DepKind::kDone});
            if (children[vi].empty()) deps.push_back({start});
            if (up_prev[vi] >= 0) deps.push_back({up_prev[vi], DepKind::kSent});
            up_cur[vi] = ctx.graph.add_transfer(members[vi], members[static_cast<std::size_t>(parent[vi])],
                                                ctx.wire(chunk), up_lat[vi], up_label, deps, t);
          }
        }
        if (do_down) {
          // Broadcast down in pre-order (parents before children).
          std::vector<int> pre{static_cast<int>(root)};
          for (std::size_t q = 0; q < pre.size(); ++q)
            for (int c : children[static_cast<std::size_t>(pre[q])]) pre.push_back(c);
          for (int v : pre) {
            const auto vi = static_cast<std::size_t>(v);
            down_cur[vi].assign(children[vi].size(), -1);
            for (std::size_t ci = 0; ci < children[vi].size(); ++ci) {
              const auto c = static_cast<std::size_t>(children[vi][ci]);
              std::vector<Dep> deps;
              if (parent[vi] < 0) {
                // The root forwards chunk k once every child's reduced chunk k has arrived.
                if (do_up)
                  for (int cc : children[vi]) deps.push_back({up_cur[static_cast<std::size_t>(cc)], DepKind::kDone});
                if (deps.empty()) deps.push_back({start});
              } else {
                const auto p = static_cast<std::size_t>(parent[vi]);
                const auto idx = static_cast<std::size_t>(std::find(children[p].begin(), children[p].end(), v) - children[p].begin());
                deps.push_back({down_cur[p][idx], DepKind::kDone});
              }
              if (!down_prev[vi].empty()) deps.push_back({down_prev[vi][ci], DepKind::kSent});
              down_cur[vi][ci] = ctx.graph.add_transfer(members[vi], members[c], ctx.wire(chunk),
                                                        ctx.step_latency(members[vi], members[c]), down_label, deps, t);
            }
          }
        }
        if (k == chunks - 1) {
          if (do_down) {
            for (std::size_t v = 0; v < m; ++v)
              for (TaskId d : down_cur[v]) finals.push_back({d});
          } else {
            for (int c : children[root]) finals.push_back({up_cur[static_cast<std::size_t>(c)]});
          }
        }
        std::swap(up_prev, up_cur);
        std::swap(down_prev, down_cur);
      }
    }
    return join(ctx, finals);
  }
};

}  // namespace

std::unique_ptr<CollectiveAlgorithm> make_tree() { return std::make_unique<Tree>(); }

}  // namespace strata::sim::algorithms
