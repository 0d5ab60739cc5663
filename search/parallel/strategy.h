// An LLM training strategy: how a transformer is split over a cluster (tensor, sequence, context, pipeline,
// data and expert parallelism), how its pipeline is scheduled, what is recomputed, how optimizer state is
// sharded (ZeRO) and how gradients are reduced. Terms and formulas follow Megatron-LM (Shoeybi et al. 2019,
// arXiv 1909.08053; Narayanan et al. SC'21, arXiv 2104.04473; Korthikanti et al. 2022, arXiv 2205.05198) and
// ZeRO (Rajbhandari et al. SC'20, arXiv 1910.02054). docs/parallel.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hw/gpu_spec.h"

namespace strata::search::parallel {

// GPipe: all forwards, then all backwards. 1F1B (PipeDream-Flush): p-1 warm-up forwards, then one forward /
// one backward. Interleaved 1F1B: v model chunks per GPU (virtual stages), m a multiple of p.
enum class PipelineSchedule : std::uint8_t { kGpipe, kOneFOneB, kInterleaved };
std::string_view schedule_name(PipelineSchedule s);
std::optional<PipelineSchedule> parse_schedule(std::string_view name);

// none: keep every activation; selective: re-run the attention core (QK^T, softmax, AV) in the backward pass;
// full: keep only each layer's input and re-run its whole forward pass.
enum class Recompute : std::uint8_t { kNone, kSelective, kFull };
std::string_view recompute_name(Recompute r);
std::optional<Recompute> parse_recompute(std::string_view name);

struct LlmStrategy {
  int tp = 1;                      // tensor-parallel size (Megatron column/row splits)
  int pp = 1;                      // pipeline stages
  int dp = 1;                      // data-parallel size
  int cp = 1;                      // context-parallel size (sequence split across ranks, ring attention)
  int ep = 1;                      // expert-parallel size for MoE layers; carved out of dp (ep divides dp)
  bool sequence_parallel = false;  // Korthikanti et al.: norms/dropout on s/t, all-reduce -> RS + AG
  int micro_batch = 1;             // sequences per micro-batch
  std::int64_t global_batch = 1;   // sequences per optimizer step
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int virtual_stages = 1;  // model chunks per GPU (interleaved schedule only)
  Recompute recompute = Recompute::kNone;
  int zero = 0;  // 0: plain DP; 1: optimizer state sharded; 2: + gradients; 3: + parameters (FSDP)
  hw::DType dtype = hw::DType::kBf16;
  // Gradient reduction in buckets of this many bytes, each launched as soon as its layers' backward is done
  // on the last micro-batch (PyTorch DDP's default bucket is 25 MB), overlapping the backward pass.
  double bucket_bytes = 0;  // 0: Megatron-core's default, max(40M, 1M x dp) parameters (llm_step.h)
  bool overlap_grad_reduce = true;

  int gpus() const { return tp * pp * dp * cp; }
  // Micro-batches per pipeline per step (gradient accumulation steps): global / (dp x micro_batch).
  std::int64_t micro_batches() const { return global_batch / (static_cast<std::int64_t>(dp) * micro_batch); }
  // "tp8 pp8 dp16 cp1 ep1 sp mb1 gb1536 1f1b v1 recompute=none zero1"
  std::string describe() const;
};

}  // namespace strata::search::parallel
