// The `parallel-sweep` experiment kind (experiments/parallel_sweep*.cc): every bad field is reported with
// file, line, column and field before anything runs; a run's plans.csv agrees with facts derived here by
// hand (parameter count and ZeRO-1 state of the data-parallel plan, tokens/s and TFLOP/s from the step
// time, memory against capacity, the exhaustive search never slower than a plan of its own space).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "experiments/experiment.h"
#include "hw/config_error.h"
#include "sim/collective.h"

namespace {

namespace fs = std::filesystem;
using strata::ConfigError;

const std::string kDir = std::string(STRATA_SOURCE_DIR) + "/configs/experiments";
const std::string kPath = kDir + "/parallel_test.yaml";  // the text stands for this file (never written)

// Line numbers below are counted in this text (line 1: `experiment:`).
const std::string kBase =
    "experiment: ptest\n"                                                       // 1
    "kind: parallel-sweep\n"                                                    // 2
    "model: transformer:layers=24,hidden=8192,heads=64,vocab=32000,seq=1024\n"  // 3
    "hw: ../hw/dgx-h100.yaml\n"                                                 // 4
    "nodes: [1, 2]\n"                                                           // 5
    "global_batch: 16\n"                                                        // 6
    "search:\n"                                                                 // 7
    "  micro_batches: [1, 2]\n"                                                 // 8
    "  zero: [0, 1]\n"                                                          // 9
    "  all_placements: false\n"                                                 // 10
    "families: [best, megatron, data-parallel]\n"                               // 11
    "strategies:\n"                                                             // 12
    "  - name: tp8-pp2\n"                                                       // 13
    "    tp: 8\n"                                                               // 14
    "    pp: 2\n"                                                               // 15
    "    recompute: selective\n"                                                // 16
    "    sequence_parallel: true\n"                                             // 17
    "    zero: 1\n"                                                             // 18
    "  - name: tp2-zero0\n"                                                     // 19
    "    tp: 2\n";                                                              // 20

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string error_of(const std::string& text) {
  try {
    strata::experiments::check_experiment_text(text, kPath);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParallelSweepParse, TheBaseFileIsValid) {
  EXPECT_EQ(error_of(kBase), "(no error)");
}

TEST(ParallelSweepParse, ErrorsNameFileLineColumnAndField) {
  const std::string at = kPath + ":";
  EXPECT_EQ(error_of(replaced(kBase, "[1, 2]", "[2, 1]")),
            at + "5:12: nodes[1]: expected node counts in increasing order (1 follows 2)");
  EXPECT_EQ(error_of(replaced(kBase, "[1, 2]", "[1, 0]")),
            at + "5:12: nodes[1]: expected an integer from 1 to 1048576, got '0'");
  EXPECT_EQ(error_of(replaced(kBase, "global_batch: 16", "global_batch: [16, 32, 64]")),
            at + "6:15: global_batch: expected one global batch per node count (2 values), or one number");
  EXPECT_EQ(error_of(replaced(kBase, "global_batch: 16", "global_batch: 0")),
            at + "6:15: global_batch: expected an integer from 1 to 1073741824, got '0'");
  EXPECT_EQ(error_of(replaced(kBase, "heads=64", "heads=63")),
            at + "3:8: model: transformer spec: key 'heads': hidden 8192 is not a multiple of heads 63");
  EXPECT_EQ(error_of(replaced(kBase, "families: [best, megatron", "families: [best, fastest")),
            at + "11:18: families[1]: unknown family 'fastest' (expected one of: best, megatron, "
                 "data-parallel; explicit strategies go under `strategies:`)");
  EXPECT_EQ(error_of(replaced(kBase, "families: [best, megatron", "families: [best, best")),
            at + "11:18: families[1]: 'best' is listed twice");
  EXPECT_EQ(error_of(replaced(kBase, "  zero: [0, 1]", "  zero: [0, 4]")),
            at + "9:13: search.zero[1]: expected an integer from 0 to 3, got '4'");
  EXPECT_EQ(error_of(replaced(kBase, "all_placements: false", "all_placements: no")),
            at + "10:19: search.all_placements: expected true or false, got 'no'");
  EXPECT_EQ(error_of(replaced(kBase, "name: tp2-zero0", "name: megatron")),
            at + "19:11: strategies[1].name: the family name 'megatron' is taken");
  EXPECT_EQ(error_of(replaced(kBase, "name: tp2-zero0", "name: tp8-pp2")),
            at + "19:11: strategies[1].name: the family name 'tp8-pp2' is taken");
  EXPECT_EQ(error_of(replaced(kBase, "recompute: selective", "recompute: some")),
            at + "16:16: strategies[0].recompute: expected none, selective or full, got 'some'");
  EXPECT_EQ(error_of(replaced(kBase, "    zero: 1\n", "    zero: 1\n    zeros: 1\n")),
            at + "19:5: strategies[0].zeros: unknown field 'zeros' (expected one of: name, tp, pp, cp, ep, "
                 "micro_batch, recompute, sequence_parallel, zero, schedule, virtual_stages, bucket_mb, "
                 "overlap_grad_reduce)");
  EXPECT_EQ(error_of(kBase + "dtype: fp32\n"), at + "21:8: dtype: expected bf16, fp16 or fp8, got 'fp32'");
  EXPECT_EQ(error_of(kBase + "seq: 0\n"), at + "21:6: seq: expected an integer from 1 to 1048576, got '0'");
  // tp 7 divides neither 8 nor 16 GPUs: a strategy that runs at no size is an error in the file.
  EXPECT_EQ(
      error_of(replaced(kBase, "tp: 8", "tp: 7")),
      at + "13:5: strategies[0]: strategy 'tp8-pp2' runs at none of the node counts (at 1 nodes: tp x pp "
           "x cp = 14 does not divide the 8 GPUs)");
  // The model YAML is taken relative to the experiment file, like hw.
  EXPECT_EQ(
      error_of(replaced(kBase, "transformer:layers=24,hidden=8192,heads=64,vocab=32000,seq=1024",
                        "../models/nope.yaml")),
      at + "3:8: model: cannot open '../models/nope.yaml' (relative paths are taken from the directory of " +
          kPath + "; resolved to '" + std::string(STRATA_SOURCE_DIR) + "/configs/models/nope.yaml')");
  EXPECT_EQ(error_of(kBase.substr(0, kBase.find("families:")) + "families: []\n"),
            at +
                "11:11: families: expected at least one family (best, megatron, data-parallel or an explicit "
                "strategy)");
}

TEST(ParallelSweepParse, ModelsByZooNameAndYaml) {
  EXPECT_EQ(error_of(replaced(kBase, "transformer:layers=24,hidden=8192,heads=64,vocab=32000,seq=1024",
                              "../models/gpt3-175b.yaml")),
            "(no error)");
  EXPECT_EQ(error_of(replaced(kBase, "transformer:layers=24,hidden=8192,heads=64,vocab=32000,seq=1024",
                              "gpt3-13b")),
            "(no error)");
  const std::string resnet = error_of(
      replaced(kBase, "transformer:layers=24,hidden=8192,heads=64,vocab=32000,seq=1024", "resnet50"));
  EXPECT_EQ(resnet.rfind(
                kPath + ":3:8: model: 'resnet50' is not a transformer: expected a decoder of the zoo (", 0),
            0u)
      << resnet;
}

// --- A run of configs/experiments/parallel_small.yaml
// --------------------------------------------------------

using CsvRow = std::map<std::string, std::string>;

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::vector<CsvRow> read_csv(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const auto header = split_csv_line(line);
  std::vector<CsvRow> rows;
  while (std::getline(in, line)) {
    const auto fields = split_csv_line(line);
    EXPECT_EQ(fields.size(), header.size()) << line;
    CsvRow row;
    for (std::size_t i = 0; i < header.size() && i < fields.size(); ++i) row[header[i]] = fields[i];
    rows.push_back(row);
  }
  return rows;
}

double num(const CsvRow& r, const std::string& key) {
  return std::stod(r.at(key));
}

class ParallelSweepRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_ = fs::temp_directory_path() / ("strata-psweep-" + std::to_string(std::random_device{}()));
    strata::experiments::RunOptions options;
    options.output_root = out_.string();
    options.plots = false;
    folder_ = strata::experiments::run_experiment(kDir + "/parallel_small.yaml", options);
    rows_ = read_csv(fs::path(folder_) / "plans.csv");
  }
  static void TearDownTestSuite() { fs::remove_all(out_); }
  static inline fs::path out_;
  static inline std::string folder_;
  static inline std::vector<CsvRow> rows_;
};

// Hand count of the model's parameters (GPT layout, biases, learned positions, tied embeddings):
// per layer QKV 3h^2+3h, projection h^2+h, MLP 8h^2+5h, two LayerNorms 4h = 12h^2+13h; embeddings (V+s)h;
// final LayerNorm 2h.
constexpr double kH = 8192, kLayers = 24, kVocab = 32000, kSeq = 1024, kBatch = 16;
constexpr double kParams = kLayers * (12 * kH * kH + 13 * kH) + (kVocab + kSeq) * kH + 2 * kH;
// Megatron's model FLOPs per step (Narayanan et al. SC'21, eq. 3 without recomputation): 3 x forward, forward
// = 2 x tokens x 12 h^2 L + 4 B s^2 h L (attention) + 2 x tokens x h V (logits).
constexpr double kTokens = kBatch * kSeq;
constexpr double kModelFlops = 3 * (2 * kTokens * 12 * kH * kH * kLayers +
                                    4 * kBatch * kSeq * kSeq * kH * kLayers + 2 * kTokens * kH * kVocab);
constexpr double kH100Bf16 = 989.4e12;  // dense BF16 of an H100 SXM5 (NVIDIA H100 datasheet)

TEST_F(ParallelSweepRun, OneRowPerSizeAndFamily) {
  // The shipped algorithms only: a test-only algorithm in the registry would be picked by the tuner and
  // change every simulated step (tests/sim_algorithms_test.cc registers one; it lives in another executable).
  EXPECT_EQ(strata::sim::AlgorithmRegistry::instance().find("toy-swap"), nullptr);
  EXPECT_EQ(fs::path(folder_), out_ / "parallel_small");
  ASSERT_EQ(rows_.size(),
            2u * 5u);  // nodes [1, 2] x families best, megatron, data-parallel, tp8-pp2, tp2-zero0
  const std::vector<std::string> families = {"best", "megatron", "data-parallel", "tp8-pp2", "tp2-zero0"};
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    EXPECT_EQ(rows_[i].at("family"), families[i % 5]);
    EXPECT_EQ(rows_[i].at("nodes"), i < 5 ? "1" : "2");
    EXPECT_EQ(num(rows_[i], "gpus"), 8 * num(rows_[i], "nodes"));
  }
  EXPECT_TRUE(fs::exists(fs::path(folder_) / "summary.md"));
}

TEST_F(ParallelSweepRun, RatesFollowFromTheStepTime) {
  int ran = 0;
  for (const auto& r : rows_) {
    if (r.at("status") != "ok") continue;
    ++ran;
    const double step = num(r, "step_s"), gpus = num(r, "gpus");
    EXPECT_NEAR(num(r, "tokens_per_s"), kTokens / step, 0.05 + 1e-6 * kTokens / step);
    EXPECT_NEAR(num(r, "tflops_per_gpu"), kModelFlops / step / gpus / 1e12,
                5e-4 + 1e-6 * num(r, "tflops_per_gpu"));
    EXPECT_NEAR(num(r, "mfu"), kModelFlops / step / gpus / kH100Bf16, 1e-5);
    EXPECT_EQ(num(r, "tp") * num(r, "pp") * num(r, "dp") * num(r, "cp"), gpus);
    // The breakdown's parts (on the first stage) make up the step: the bubble is that stage's idle time.
    double parts = 0;
    for (const char* k : {"compute_s", "recompute_s", "tp_comm_s", "cp_comm_s", "ep_comm_s", "bubble_s",
                          "dp_exposed_s", "optimizer_s"})
      parts += num(r, k);
    EXPECT_NEAR(parts, step, 1e-6 * step);
  }
  EXPECT_EQ(ran, 5);  // best and megatron at both sizes, tp8-pp2 at 2 nodes
}

TEST_F(ParallelSweepRun, OutOfMemoryPlansAreReportedNotRanked) {
  for (const auto& r : rows_) {
    const std::string& status = r.at("status");
    if (status.starts_with("not applicable")) continue;
    const double peak = num(r, "peak_memory_bytes"), capacity = num(r, "capacity_bytes");
    EXPECT_EQ(capacity, 80e9);  // H100 SXM5 80 GB
    EXPECT_EQ(r.at("fits"), peak <= capacity ? "true" : "false");
    EXPECT_EQ(status, peak <= capacity ? "ok" : "out of memory");
    if (status == "out of memory") {
      EXPECT_EQ(r.at("step_s"), "") << "an out-of-memory plan is not simulated";
    }
  }
  // Pure data parallelism with ZeRO at most 1 (the search space of the file) keeps 2 B of weights and 2 B of
  // gradients per parameter on every GPU and 12 B of Adam state per parameter over dp GPUs (Rajbhandari et
  // al. SC'20): 4 x 19.6e9 = 78.4 GB of model state alone cannot fit in 80 GB with any activations.
  for (const auto& r : rows_) {
    if (r.at("family") != "data-parallel") continue;
    EXPECT_EQ(r.at("status"), "out of memory");
    EXPECT_EQ(num(r, "dp"), num(r, "gpus"));
    EXPECT_DOUBLE_EQ(num(r, "weights_bytes"), 2 * kParams);
    EXPECT_DOUBLE_EQ(num(r, "gradients_bytes"), 2 * kParams);
    EXPECT_NEAR(num(r, "optimizer_bytes"), 12 * kParams / num(r, "dp"), 1);
  }
  // tp2 without ZeRO: 16 B per parameter over 2 GPUs (the embedding and head are split the same way).
  for (const auto& r : rows_)
    if (r.at("family") == "tp2-zero0") {
      EXPECT_EQ(r.at("status"), "out of memory");
      EXPECT_GE(num(r, "weights_bytes") + num(r, "gradients_bytes") + num(r, "optimizer_bytes"),
                16 * kParams / 2 * 0.99);
    }
}

TEST_F(ParallelSweepRun, NotApplicableSaysWhy) {
  EXPECT_EQ(rows_[3].at("family"), "tp8-pp2");
  EXPECT_EQ(rows_[3].at("status"), "not applicable: tp x pp x cp = 16 does not divide the 8 GPUs");
  EXPECT_EQ(rows_[3].at("step_s"), "");
  EXPECT_EQ(rows_[8].at("status"), "ok");  // the same strategy on 16 GPUs (dp 1)
  EXPECT_EQ(num(rows_[8], "dp"), 1);
}

TEST_F(ParallelSweepRun, TheSearchIsNeverSlowerThanAPlanOfItsSpace) {
  // megatron (tp8 sp selective ZeRO-1 mb1) and tp8-pp2 lie inside the file's search space (micro-batches 1-2,
  // ZeRO 0-1, every recomputation), so the exhaustive search's best step is at most theirs.
  for (const std::string nodes : {"1", "2"}) {
    double best = 0;
    for (const auto& r : rows_)
      if (r.at("nodes") == nodes && r.at("family") == "best") best = num(r, "step_s");
    ASSERT_GT(best, 0);
    for (const auto& r : rows_)
      if (r.at("nodes") == nodes && r.at("status") == "ok") {
        EXPECT_LE(best, num(r, "step_s")) << r.at("family");
      }
  }
  std::ifstream in(fs::path(folder_) / "summary.md");
  std::stringstream s;
  s << in.rdbuf();
  const std::string winners = s.str().substr(s.str().find("## Fastest family at each size"));
  EXPECT_NE(winners.find("| 1 | 8 | best |"), std::string::npos) << winners;
  EXPECT_NE(winners.find("| 2 | 16 | best |"), std::string::npos) << winners;
}

}  // namespace
