// The reference executor: runs any graph on the CPU in double precision or in the prime field (ModP).
// One indirect call per node into the operator's kernel template; the element loops are inlined code.
// Used for numerics (tests, ONNX conformance, gradient checks) and for fingerprints: two graphs whose
// fingerprints agree compute the same function with high probability (TASO §2.1; over a prime field the
// chance that distinct polynomial programs agree on a random point is <= degree / p).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "models/ir/graph.h"
#include "models/ir/modp.h"
#include "models/ir/numeric.h"

namespace strata::models {

template <class T>
using Feeds = std::map<ValueId, std::vector<T>>;

struct ExecOptions {
  // Sources with neither a feed nor literal data (inputs, params, optimizer state) get pseudo-random values
  // derived from (seed, value name): doubles uniform in [-1, 1], residues uniform in [0, p). Integer-typed
  // values (indices) get values in [0, random_index_bound). false: such a source is an error.
  bool randomize_missing = true;
  std::uint64_t seed = 0;
  std::int64_t random_index_bound = 2;
  // Sources (feeds, literal data, random values) are materialized when a node first reads them. false: a
  // value's data is also released after the last node that reads it (graph outputs are kept), so memory is
  // the live set at each node instead of every value (for a model, instead of all its weights at once); the
  // returned vector then holds data for the graph outputs only.
  bool keep_intermediates = true;
};

// What a run held: the largest total size, in bytes (sizeof(T) per element), of value data alive at once.
// A node's inputs and outputs are alive together while it runs; a value dies after its last reader.
struct ExecStats {
  std::int64_t peak_live_bytes = 0;
};

// Returns the data of every value (indexed by ValueId), nodes run in graph order. Throws GraphError for
// missing or mis-sized feeds (before any node runs) and std::out_of_range for bad indices.
template <class T>
std::vector<std::vector<T>> execute(const Graph& g, const Feeds<T>& feeds = {},
                                    const ExecOptions& options = {});
// The same, also reporting what the run held.
template <class T>
std::vector<std::vector<T>> execute(const Graph& g, const Feeds<T>& feeds, const ExecOptions& options,
                                    ExecStats& stats);

extern template std::vector<std::vector<double>> execute(const Graph&, const Feeds<double>&,
                                                         const ExecOptions&);
extern template std::vector<std::vector<ModP>> execute(const Graph&, const Feeds<ModP>&, const ExecOptions&);
extern template std::vector<std::vector<double>> execute(const Graph&, const Feeds<double>&,
                                                         const ExecOptions&, ExecStats&);
extern template std::vector<std::vector<ModP>> execute(const Graph&, const Feeds<ModP>&, const ExecOptions&,
                                                       ExecStats&);

// Deterministic pseudo-random tensor contents for a named value.
template <class T>
std::vector<T> random_values(std::int64_t n, std::uint64_t seed, std::string_view name, bool integer = false,
                             std::int64_t index_bound = 2);

// Fingerprint of the function a graph computes: the graph's outputs evaluated in the prime field on random
// sources keyed by name (so two graphs over the same input names see the same inputs), hashed with their
// shapes; independent of output order.
std::uint64_t fingerprint(const Graph& g, std::uint64_t seed = 0);

}  // namespace strata::models
