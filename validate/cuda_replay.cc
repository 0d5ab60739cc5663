#include "validate/cuda_replay.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "models/cost/cost_model.h"
#include "validate/plan.h"

#if STRATA_HAVE_CUDA
#include "validate/cuda_lowering.h"
#endif

namespace strata::validate {

using models::Graph;
using models::Node;
using models::NodeId;
using models::ValueId;

void require_cuda() {
  if (auto why = cuda_unavailable_reason(); !why.empty()) throw std::runtime_error(why);
}

#if STRATA_HAVE_CUDA

bool cuda_built() {
  return true;
}

std::string cublas_load_error() {
  return cuda::cublas_load_error();
}

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // the runtime keeps the error; clear it
    return fmt::format("no CUDA device (cudaGetDeviceCount: {})", cudaGetErrorString(e));
  }
  if (count == 0) return "no CUDA device (cudaGetDeviceCount found 0 devices)";
  return {};
}

std::string cuda_device_name() {
  require_cuda();
  cudaDeviceProp p{};
  cuda::check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  return p.name;
}

std::string cuda_description() {
  require_cuda();
  cudaDeviceProp p{};
  cuda::check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  int runtime = 0, blas = 0;
  cuda::check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  cuda::check(cuda::cublas().get_version(cuda::cublas().handle, &blas), "cublasGetVersion");
  return fmt::format("{} (sm_{}{}, {:.1f} GiB), CUDA runtime {}, cuBLAS {}, cuDNN {}", p.name, p.major,
                     p.minor, static_cast<double>(p.totalGlobalMem) / (1 << 30), runtime, blas,
                     cudnnGetVersion());
}

namespace {

// The reference executor's kernel on the host, between copies from and to the device.
class HostReferenceNode final : public cuda::CudaNode {
 public:
  HostReferenceNode(const Graph& g, const Node& n) : g_(g), n_(n) {}
  void bind(std::span<const float* const> in, std::span<float* const> out) override {
    in_dev_.assign(in.begin(), in.end());
    out_dev_.assign(out.begin(), out.end());
    in_d_.resize(n_.inputs.size());
    out_d_.resize(n_.outputs.size());
    ins_.clear();
    outs_.clear();
    for (std::size_t i = 0; i < n_.inputs.size(); ++i) {
      const auto& type = g_.type(n_.inputs[i]);
      in_d_[i].assign(static_cast<std::size_t>(type.numel()), 0.0);
      ins_.push_back({in_d_[i].data(), &type.shape, type.numel()});
    }
    for (std::size_t i = 0; i < n_.outputs.size(); ++i) {
      const auto& type = g_.type(n_.outputs[i]);
      out_d_[i].assign(static_cast<std::size_t>(type.numel()), 0.0);
      outs_.push_back({out_d_[i].data(), &type.shape, type.numel()});
    }
  }
  void run() override {
    const auto stream = cuda::context().stream;
    std::vector<float> f;
    for (std::size_t i = 0; i < in_dev_.size(); ++i) {
      f.resize(in_d_[i].size());
      cuda::check(
          cudaMemcpyAsync(f.data(), in_dev_[i], f.size() * sizeof(float), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpy to the host");
      cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      std::copy(f.begin(), f.end(), in_d_[i].begin());
    }
    n_.op->kernel.real(models::KernelCall<double>{ins_, outs_, n_.attrs});
    for (std::size_t i = 0; i < out_dev_.size(); ++i) {
      f.assign(out_d_[i].begin(), out_d_[i].end());
      cuda::check(
          cudaMemcpyAsync(out_dev_[i], f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice, stream),
          "cudaMemcpy to the device");
      cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
  }
  std::string implementation() const override { return "reference kernel on the host"; }

 private:
  const Graph& g_;
  const Node& n_;
  std::vector<const float*> in_dev_;
  std::vector<float*> out_dev_;
  std::vector<std::vector<double>> in_d_, out_d_;
  std::vector<models::In<double>> ins_;
  std::vector<models::Out<double>> outs_;
};

// A node ready to run on device buffers: its lowering, or the host reference kernel, with what ran it.
struct Prepared {
  std::unique_ptr<cuda::CudaNode> kernel;
  NodeBackend backend;
};
Prepared prepare(const Graph& g, const Node& n) {
  auto lowered = cuda::lower_to_cuda(g, n);
  Prepared p;
  p.backend.node = static_cast<NodeId>(&n - g.nodes().data());
  if (lowered.kernel) {
    p.kernel = std::move(lowered.kernel);
    p.backend.backend = CpuBackend::kCuda;
    p.backend.detail = p.kernel->implementation();
  } else {
    p.kernel = std::make_unique<HostReferenceNode>(g, n);
    p.backend.backend = CpuBackend::kReference;
    p.backend.detail = std::move(lowered.why_not) + " (reference kernel on the host, timed with the copies)";
  }
  return p;
}

// Values of `g` in device memory: every value, sources uploaded (replay_source_values) and the rest zero; or,
// with `only`, that node's inputs uploaded as sources (as time_node does) and its outputs zero, every other
// value left unallocated.
std::vector<cuda::DeviceBuffer> device_values(const Graph& g, const models::Feeds<double>& feeds,
                                              const models::ExecOptions& options,
                                              const Node* only = nullptr) {
  const auto stream = cuda::context().stream;
  const auto has = [](const std::vector<ValueId>& ids, std::size_t i) {
    return std::find(ids.begin(), ids.end(), static_cast<ValueId>(i)) != ids.end();
  };
  std::vector<cuda::DeviceBuffer> values;
  for (std::size_t i = 0; i < g.values().size(); ++i) {
    const auto& v = g.values()[i];
    if (only && !has(only->inputs, i) && !has(only->outputs, i)) {
      values.emplace_back();
      continue;
    }
    values.emplace_back(static_cast<std::size_t>(v.type.numel()));
    if (only ? has(only->inputs, i) : v.producer < 0) {
      const auto host = replay_source_values(g, static_cast<ValueId>(i), feeds, options);
      cuda::check(cudaMemcpyAsync(values.back().data(), host.data(), host.size() * sizeof(float),
                                  cudaMemcpyHostToDevice, stream),
                  "cudaMemcpy of a source");
      cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");  // `host` is freed next
    } else {
      cuda::check(cudaMemsetAsync(values.back().data(), 0, values.back().size() * sizeof(float), stream),
                  "cudaMemset");
    }
  }
  cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return values;
}

struct Buffers {
  std::vector<const float*> in;
  std::vector<float*> out;
};
Buffers buffers(const Node& n, const std::vector<cuda::DeviceBuffer>& values) {
  Buffers b;
  for (auto v : n.inputs) b.in.push_back(values[static_cast<std::size_t>(v)].data());
  for (auto v : n.outputs) b.out.push_back(values[static_cast<std::size_t>(v)].data());
  return b;
}

void check_timing(const TimingOptions& options, std::string_view what) {
  if (options.warmup < 0 || options.repeat < 1)
    throw std::invalid_argument(fmt::format("{}: warm-up {} must be >= 0 and repetitions {} >= 1", what,
                                            options.warmup, options.repeat));
}

// What `run` enqueues on `stream`, captured once as a CUDA graph, or nothing where the calls cannot be
// captured (a library call that allocates or synchronizes; the host fallbacks, which copy synchronously):
// capture mode refuses such calls with an error instead of running them, and the caller times direct
// launches instead.
class CapturedRun {
 public:
  template <class F>
  CapturedRun(cudaStream_t stream, F&& run) {
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    bool ran = true;
    try {
      run();
    } catch (const std::exception&) {
      ran = false;  // a refused call inside `run` (its check throws); end the capture and give up
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (ran && ended == cudaSuccess && graph && cudaGraphInstantiate(&exec_, graph, 0) != cudaSuccess)
      exec_ = nullptr;
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // capture errors are not sticky; clear them for the direct launches
  }
  CapturedRun(const CapturedRun&) = delete;
  CapturedRun& operator=(const CapturedRun&) = delete;
  ~CapturedRun() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  bool captured() const { return exec_ != nullptr; }
  void launch(cudaStream_t stream) const { cuda::check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch"); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// STRATA_CUDA_DIRECT_TIMING=1 times direct launches everywhere (to compare the two, or where a driver
// mishandles capture).
bool direct_timing_only() {
  static const bool direct = [] {
    const char* v = std::getenv("STRATA_CUDA_DIRECT_TIMING");
    return v && *v && std::string_view(v) != "0";
  }();
  return direct;
}

// `repeat` runs of `once` (which enqueues on the stream), each between two CUDA events recorded on the
// stream; the median, min and max of those times (spread_of, as the CPU profiler).
template <class F>
Spread time_between_events(int repeat, F&& once) {
  const auto stream = cuda::context().stream;
  struct Event {
    cudaEvent_t e{};
    Event() { cuda::check(cudaEventCreate(&e), "cudaEventCreate"); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() { cudaEventDestroy(e); }
  } start, stop;
  std::vector<double> seconds;
  for (int i = 0; i < repeat; ++i) {
    cuda::check(cudaEventRecord(start.e, stream), "cudaEventRecord");
    once();
    cuda::check(cudaEventRecord(stop.e, stream), "cudaEventRecord");
    cuda::check(cudaEventSynchronize(stop.e), "cudaEventSynchronize");
    float ms = 0;
    cuda::check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
    seconds.push_back(static_cast<double>(ms) * 1e-3);
  }
  return spread_of(std::move(seconds));
}

struct EventTiming {
  Spread spread;
  bool graph = false;  // timed as replays of CUDA graphs only
};

struct TimedKernel {
  cuda::CudaNode* kernel;
  bool on_gpu;  // false: the host's reference kernel between copies
};

// The kernels of a pass in order, each run of consecutive kernels on the GPU captured as one CUDA graph
// after `warmup` direct passes; kernels on the host's reference kernel (synchronous copies, which cannot be
// captured) run directly between the graphs. A pass launches the graphs and runs those kernels, so the
// events bracket the GPU's execution of the kernels without the host's time to issue them, except around
// the host's kernels. cuDNN 9's legacy calls spend tens of microseconds on the host per call (measured on an
// H200: a squeezenet 1x1 convolution at 33-56 us issued directly), which would otherwise be timed as GPU
// work whenever the GPU waits for them.
EventTiming time_kernels(const TimingOptions& options, std::span<const TimedKernel> kernels) {
  const auto stream = cuda::context().stream;
  const auto run_all = [](std::span<const TimedKernel> ks) {
    for (const auto& k : ks) k.kernel->run();
  };
  for (int i = 0; i < options.warmup; ++i) run_all(kernels);
  cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  struct Segment {
    std::span<const TimedKernel> kernels;
    std::unique_ptr<CapturedRun> graph;  // null: run directly
  };
  std::vector<Segment> segments;
  bool all_captured = !kernels.empty();
  for (std::size_t i = 0; i < kernels.size();) {
    std::size_t j = i + 1;
    while (j < kernels.size() && kernels[j].on_gpu == kernels[i].on_gpu) ++j;
    Segment seg{kernels.subspan(i, j - i), nullptr};
    if (kernels[i].on_gpu && !direct_timing_only()) {
      seg.graph = std::make_unique<CapturedRun>(stream, [&] { run_all(seg.kernels); });
      if (!seg.graph->captured()) seg.graph.reset();
    }
    all_captured = all_captured && seg.graph;
    segments.push_back(std::move(seg));
    i = j;
  }
  const auto once = [&] {
    for (const auto& seg : segments)
      if (seg.graph)
        seg.graph->launch(stream);
      else
        run_all(seg.kernels);
  };
  once();  // a graph's first launch uploads it
  cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return {time_between_events(options.repeat, once), all_captured};
}

std::string timing_note(bool graph) {
  return graph ? "; timed as a CUDA graph" : "; timed by direct launches";
}

std::vector<float> download(const cuda::DeviceBuffer& b) {
  std::vector<float> host(b.size());
  cuda::check(cudaMemcpy(host.data(), b.data(), host.size() * sizeof(float), cudaMemcpyDeviceToHost),
              "cudaMemcpy of a result");
  return host;
}

}  // namespace

CpuReplay replay_on_cuda(const Graph& g, const models::Feeds<double>& feeds,
                         const models::ExecOptions& options) {
  require_cuda();
  check_replay_types(g, ReplayTypes::kF32);
  for (const auto& [id, values] : feeds)
    if (id < 0 || static_cast<std::size_t>(id) >= g.values().size())
      throw models::GraphError(fmt::format("feed for unknown value id {}", id));
  auto values = device_values(g, feeds, options);
  CpuReplay r;
  for (const auto& n : g.nodes()) {
    auto p = prepare(g, n);
    const auto b = buffers(n, values);
    p.kernel->bind(b.in, b.out);
    p.kernel->run();
    r.nodes.push_back(std::move(p.backend));
  }
  cuda::check(cudaStreamSynchronize(cuda::context().stream), "cudaStreamSynchronize");
  for (const auto& v : values) r.values.push_back(download(v));
  return r;
}

NodeTiming time_node_cuda(const Graph& g, NodeId id, const TimingOptions& options) {
  require_cuda();
  if (id < 0 || static_cast<std::size_t>(id) >= g.nodes().size())
    throw std::out_of_range(fmt::format("time_node_cuda: graph '{}' has no node {}", g.name(), id));
  check_timing(options, "time_node_cuda");
  check_replay_types(g, ReplayTypes::kF32);
  const Node& n = g.node(id);
  models::ExecOptions exec;
  exec.seed = options.seed;
  auto values = device_values(g, {}, exec, &n);
  auto p = prepare(g, n);
  const auto b = buffers(n, values);
  p.kernel->bind(b.in, b.out);
  const TimedKernel kernel{p.kernel.get(), p.backend.backend == CpuBackend::kCuda};
  const auto timed = time_kernels(options, {&kernel, 1});
  const Spread& s = timed.spread;
  NodeTiming t;
  t.median_seconds = s.median;
  t.min_seconds = s.min;
  t.max_seconds = s.max;
  t.backend = std::move(p.backend);
  t.backend.detail += timing_note(timed.graph);
  return t;
}

GraphTiming time_graph_cuda(const Graph& g, const TimingOptions& options) {
  require_cuda();
  check_timing(options, "time_graph_cuda");
  check_replay_types(g, ReplayTypes::kF32);
  models::ExecOptions exec;
  exec.seed = options.seed;
  auto values = device_values(g, {}, exec);
  GraphTiming t;
  std::vector<std::unique_ptr<cuda::CudaNode>> kernels;  // owned; timed in this order
  std::vector<TimedKernel> timed_kernels;
  for (const auto& n : g.nodes()) {  // first pass: every node, views included
    auto p = prepare(g, n);
    const auto b = buffers(n, values);
    p.kernel->bind(b.in, b.out);
    p.kernel->run();
    const bool gpu = p.backend.backend == CpuBackend::kCuda;
    t.nodes.push_back(std::move(p.backend));
    if (models::is_view(n) || models::split_is_view(g, n)) {
      ++t.view_nodes;
    } else {
      timed_kernels.push_back({p.kernel.get(), gpu});
      kernels.push_back(std::move(p.kernel));
    }
  }
  t.kernels = static_cast<int>(kernels.size());
  const auto timed = time_kernels(options, timed_kernels);
  const Spread& s = timed.spread;
  t.cuda_graph = timed.graph;
  t.median_seconds = s.median;
  t.min_seconds = s.min;
  t.max_seconds = s.max;
  cuda::check(cudaStreamSynchronize(cuda::context().stream), "cudaStreamSynchronize");
  for (const auto& v : values) t.values.push_back(download(v));
  return t;
}

#else  // built without the GPU backend

namespace {
[[noreturn]] void not_built() {
  throw std::runtime_error(std::string(kCudaNotBuilt));
}
}  // namespace

bool cuda_built() {
  return false;
}
std::string cuda_unavailable_reason() {
  return std::string(kCudaNotBuilt);
}
std::string cublas_load_error() {
  return std::string(kCudaNotBuilt);
}
std::string cuda_description() {
  not_built();
}
std::string cuda_device_name() {
  not_built();
}
CpuReplay replay_on_cuda(const Graph&, const models::Feeds<double>&, const models::ExecOptions&) {
  not_built();
}
NodeTiming time_node_cuda(const Graph&, NodeId, const TimingOptions&) {
  not_built();
}
GraphTiming time_graph_cuda(const Graph&, const TimingOptions&) {
  not_built();
}

#endif

CpuProfile profile_on_cuda(const Graph& g, const TimingOptions& options, std::string_view device) {
  require_cuda();
  const std::string name = device.empty() ? cuda_device_name() : std::string(device);
  return profile_graph(g, name,
                       [&](const Graph& graph, NodeId id) { return time_node_cuda(graph, id, options); });
}

}  // namespace strata::validate
