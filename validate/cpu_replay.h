// Replaying models/ graphs on the host CPU with real kernels (issue 15, part 2 of validate/;
// docs/replay.md §1). Every node runs in the graph's element type, f32 or bf16 (docs/replay.md, "bf16"), on
// oneDNN (Intel's deep-learning primitives library, Debian libdnnl-dev) when its operator and configuration
// have a lowering (validate/onednn_kernels.cc and onednn_composite.cc: matmul, batch_matmul, conv2d, max/avg
// pooling, softmax (causal too), fused attention, relu/sigmoid/tanh/gelu/silu, rsqrt,
// ewadd/ewsub/ewmul/scalar_mul, layernorm, rmsnorm, batchnorm, concat, transpose, reduce_sum/reduce_mean);
// every other node runs the reference executor's kernel (models/exec, in double precision, its result rounded
// to the output's f32 or bf16): correct, just slower. The replay says which node ran where and why. bf16
// values are stored as bf16 (validate/replay_buffer.h), so oneDNN's bf16 kernels (f32 accumulation inside)
// read and write them with no conversion around the timed kernel; on a CPU where oneDNN has only reference
// loops for bf16 (cpu_runs_bf16), a bf16 replay is refused.
//
// Timing (time_node, profile_on_cpu) measures one node's kernel with warm-up runs and repetitions and keeps
// the median, per distinct operator instance (models::profile_key), into the profile database that
// `strata model sim --profile` reads; time_graph times whole passes of the graph, every node reading its
// producers' outputs (what `strata validate graphs` ranks candidates by).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/cost/cost_model.h"
#include "models/exec/executor.h"
#include "models/ir/graph.h"

namespace strata::validate {

// Whether this build has oneDNN (CMake found the `dnnl` package). Without it every function below throws
// std::runtime_error with kOneDnnMissing.
bool onednn_available();
inline constexpr std::string_view kOneDnnMissing =
    "oneDNN was not found when strata was built (install libdnnl-dev and re-run CMake); the CPU replay needs "
    "it";
// "oneDNN 2.6.3 (OpenMP, 2 threads)" or why it is absent.
std::string onednn_description();
// The threads oneDNN's OpenMP runtime will use, for progress lines and result files: "OMP_NUM_THREADS=1", or
// "all 2 hardware threads (OMP_NUM_THREADS unset)".
std::string omp_threads_note();

// The device name under which CPU measurements go into a profile database: the hw catalogue's GPU entry for
// a host CPU, so that a system YAML with `gpu: host-cpu` looks them up (docs/replay.md §1).
inline constexpr std::string_view kHostCpuDevice = "host-cpu";

// Which kernel ran a node: oneDNN (CPU replay), cuBLAS/cuDNN/strata's own CUDA kernels (GPU replay,
// validate/cuda_replay.h), or the reference executor's kernel (on the host, in both replays).
enum class CpuBackend : std::uint8_t { kOneDnn, kReference, kCuda };
std::string_view cpu_backend_name(CpuBackend b);  // "onednn", "reference", "cuda"

struct NodeBackend {
  models::NodeId node = -1;
  CpuBackend backend = CpuBackend::kReference;
  // oneDNN: the implementation it chose ("jit:avx2", "gemm:jit", ...); reference: why not oneDNN.
  std::string detail;
};

struct CpuReplay {
  std::vector<std::vector<float>> values;  // every value's data, by ValueId (bf16 ones widened, exactly)
  std::vector<NodeBackend> nodes;          // one per node, graph order
  int onednn_nodes() const;
};

// Runs `g` (every float value f32 or bf16, integer-typed index values aside) node by node. Sources without a
// feed or literal data get the reference executor's pseudo-random values (options.seed,
// options.random_index_bound; models::random_values), rounded to f32 (bf16 for a bf16 value), so
// execute<double>(g, feeds, options) sees the same inputs up to that rounding. Every value is kept
// (options.keep_intermediates is not used). Throws models::GraphError for an f16 or f64 value, a feed for
// an unknown value or a mis-sized feed, and for a bf16 node with a oneDNN lowering when !cpu_runs_bf16().
CpuReplay replay_on_cpu(const models::Graph& g, const models::Feeds<double>& feeds = {},
                        const models::ExecOptions& options = {});

// Whether oneDNN runs bf16 kernels on this CPU: its bf16 matmul is a JIT kernel (AVX512_BF16, or AVX-512 on
// which oneDNN emulates it), not its reference loops (ref:any), as `strata validate host` decides too.
// Decided once per process; false while a ScopedBf16Unsupported lives.
bool cpu_runs_bf16();
// oneDNN's bf16 matmul implementation on this CPU ("brg:avx512_core_amx", "ref:any", "none"), for messages.
std::string cpu_bf16_matmul_note();
// Tests: while alive, cpu_runs_bf16() is false (the refusal path on a CPU that has bf16). Not thread-safe.
class ScopedBf16Unsupported {
 public:
  ScopedBf16Unsupported();
  ~ScopedBf16Unsupported();
  ScopedBf16Unsupported(const ScopedBf16Unsupported&) = delete;
  ScopedBf16Unsupported& operator=(const ScopedBf16Unsupported&) = delete;

 private:
  bool previous_;
};
struct TimingOptions {
  int warmup = 3;   // untimed runs first (caches, oneDNN's JIT, page faults)
  int repeat = 20;  // timed runs; the median is kept
  std::uint64_t seed = 0;
};

struct NodeTiming {
  double median_seconds = 0;
  double min_seconds = 0, max_seconds = 0;
  NodeBackend backend;
};

// What both replays share (the CPU one here, the GPU one in validate/cuda_replay.cc): the check that every
// float value is f32 (the GPU replay) or f32 or bf16 (the CPU replay; models::GraphError otherwise), and a
// source's data as the reference executor materializes it (feed, literal data, or pseudo-random values keyed
// by name and seed), rounded to f32.
enum class ReplayTypes : std::uint8_t { kF32, kF32AndBf16 };
void check_replay_types(const models::Graph& g, ReplayTypes types);
std::vector<float> replay_source_values(const models::Graph& g, models::ValueId id,
                                        const models::Feeds<double>& feeds,
                                        const models::ExecOptions& options);

// One node of `g` timed on its own on pseudo-random inputs (keyed by value name and seed).
NodeTiming time_node(const models::Graph& g, models::NodeId node, const TimingOptions& options = {});

// The whole graph timed as one inference pass, the way a framework runs it: every node prepared and bound
// once (oneDNN primitives created, weights packed) on shared value buffers, so each node reads what its
// producers wrote; a first untimed pass in graph order runs every node, views included; then `warmup` untimed
// and `repeat` timed passes run the kernels in graph order, each pass timed as a whole. Views
// (models::is_view, models::split_is_view) are not run again: the cost model charges them nothing, and their
// outputs, written in the first pass, do not change because the inputs do not. Reference-kernel nodes convert
// their inputs to double and their outputs back to f32 or bf16 inside the pass; oneDNN nodes read and write
// the values' own f32 or bf16 buffers. Sources get pseudo-random values as
// time_node's.
struct GraphTiming {
  double median_seconds = 0;
  double min_seconds = 0, max_seconds = 0;
  int kernels = 0;                         // nodes run in each timed pass
  int view_nodes = 0;                      // run in the first pass only
  bool cuda_graph = false;                 // GPU: the passes replayed a CUDA graph of every kernel
  std::vector<NodeBackend> nodes;          // one per node, graph order
  std::vector<std::vector<float>> values;  // every value after the last pass, by ValueId (bf16 widened)
};
GraphTiming time_graph(const models::Graph& g, const TimingOptions& options = {});

struct ProfiledOp {
  std::string key;           // models::profile_key(g, node, device)
  models::NodeId node = -1;  // the first node with this key
  int instances = 0;         // nodes of the graph with this key
  NodeTiming timing;         // with several rounds, the round with the smallest median (least_disturbed)
  double round_spread = 0;   // slowest round's median / fastest's - 1 (0 with one round)
};

struct CpuProfile {
  models::ProfileDb db;
  std::vector<ProfiledOp> ops;  // graph order of first appearance
  int view_nodes = 0;           // nodes without a kernel (views), not timed: the cost model charges 0
  int rounds = 1;               // profiles combined by least_disturbed
};

// Times every distinct operator instance of `g` (views skipped) with `time` under `device`: the profile of
// either replay (profile_on_cpu, validate/cuda_replay.h's profile_on_cuda).
CpuProfile profile_graph(const models::Graph& g, std::string_view device,
                         const std::function<NodeTiming(const models::Graph&, models::NodeId)>& time);

// Times every distinct operator instance of `g` (views skipped) under `device`.
CpuProfile profile_on_cpu(const models::Graph& g, const TimingOptions& options = {},
                          std::string_view device = kHostCpuDevice);

// Several rounds of one graph's profile on one device combined (docs/replay.md §1, "Rounds"): per distinct
// operator instance the round with the smallest median is kept, and the spread of the rounds' medians is
// recorded. Another process on a shared machine only ever slows a kernel down, and it does so for seconds
// to minutes at a time: the median of one round's repetitions guards against single slow runs, the smallest
// of the rounds' medians against a slow period, provided the rounds lie apart in time (callers time every
// instance of every graph in one round before the next). Throws std::invalid_argument for no rounds or for
// rounds whose instances differ.
CpuProfile least_disturbed(std::span<const CpuProfile> rounds);

}  // namespace strata::validate
