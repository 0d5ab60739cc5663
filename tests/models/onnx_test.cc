// ONNX import/export: round trips of zoo models and of every operator, error messages for unsupported
// operators, and the ONNX backend node-test conformance run over Debian's libonnx-testdata.
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "models/exec/executor.h"
#include "models/onnx/onnx.h"
#include "models/train/training.h"
#include "models/zoo/zoo.h"

namespace strata::models {
namespace {

namespace fs = std::filesystem;

std::map<std::string, int> op_histogram(const Graph& g) {
  std::map<std::string, int> h;
  for (const auto& n : g.nodes()) ++h[std::string(n.op->name)];
  return h;
}

TEST(Onnx, ZooModelsRoundTrip) {
  for (const char* name : {"resnet50", "squeezenet", "nasrnn"}) {
    SCOPED_TRACE(name);
    const auto g = zoo::build_model(name);
    const auto back = import_onnx_bytes(export_onnx_bytes(g), name);
    EXPECT_EQ(op_histogram(back), op_histogram(g));
    EXPECT_EQ(back.param_count(), g.param_count());
    EXPECT_DOUBLE_EQ(back.total_flops(), g.total_flops());
    ASSERT_EQ(back.outputs().size(), g.outputs().size());
    EXPECT_EQ(back.type(back.outputs()[0]), g.type(g.outputs()[0]));
  }
  // Transformers use matmul transposes (exported as Transpose + MatMul) and causal softmax (ai.strata).
  const auto gpt = zoo::build_model("gpt3-125m", {.seq_len = 16});
  const auto back = import_onnx_bytes(export_onnx_bytes(gpt), "gpt");
  EXPECT_EQ(op_histogram(back), op_histogram(gpt));
  EXPECT_EQ(back.param_count(), gpt.param_count());
  EXPECT_DOUBLE_EQ(back.total_flops(), gpt.total_flops());
}

// A mixed-precision training step (f16 parameters, f32 master copies and Adam moments) round-trips: the
// five-input adam_update goes through the ai.strata domain and the optimizer state stays optimizer state.
TEST(Onnx, MixedPrecisionTrainingStepRoundTrips) {
  Graph f("linear");
  const auto x = f.add_input("x", {{4, 8}, DType::kF16});
  const auto w = f.add_param("w", {{8, 8}, DType::kF16});
  f.mark_output(f.add("matmul", {x, w}));
  const auto tg = derive_training_graph(f);
  const auto back = import_onnx_bytes(export_onnx_bytes(tg.graph), "train");
  EXPECT_EQ(op_histogram(back), op_histogram(tg.graph));
  auto state_sources = [](const Graph& g) {
    int n = 0;
    for (auto v : g.values_of(ValueKind::kOptState)) n += g.value(v).producer < 0;
    return n;
  };
  EXPECT_EQ(state_sources(tg.graph), 3);  // m, v, master
  EXPECT_EQ(state_sources(back), 3);
  const auto master = back.find_value("w.master");
  ASSERT_NE(master, kNoValue);
  EXPECT_EQ(back.type(master), (TensorType{{8, 8}, DType::kF32}));
  EXPECT_EQ(back.value(master).kind, ValueKind::kOptState);
}

// Every operator of a small graph survives export + import with identical values (same random inputs).
TEST(Onnx, RoundTripPreservesTheFunction) {
  Graph g("mixed");
  const auto x = g.add_input("x", {{2, 4, 5, 5}});
  std::vector<double> wdata(144);
  for (std::size_t i = 0; i < wdata.size(); ++i)
    wdata[i] = static_cast<double>(static_cast<int>(i * 37 % 17) - 8) / 8;  // exact in f32
  const auto w = g.add_param("w", {{4, 4, 3, 3}}, std::make_shared<const std::vector<double>>(wdata));
  const Ints same{1, 1, 1, 1};
  auto y = g.add("conv2d", {x, w}, {{"pads", same}, {"activation", std::string("relu")}});
  y = g.add("ewadd", {y, g.add("avgpool2d", {x}, {{"kernel", Ints{3, 3}}, {"pads", same}})});
  g.mark_output(g.add("maxpool2d", {y},
                      {{"kernel", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}}));
  y = g.add("enlarge", {g.add("gelu", {w})}, {{"kernel", Ints{5, 5}}});
  const auto flat = g.add("reshape", {x}, {{"shape", Ints{10, 20}}});
  const auto m = g.add("matmul", {flat, g.add_param("m", {{20, 20}})}, {{"trans_b", std::int64_t{1}}});
  const auto parts = g.add_node("split", {m}, {{"axis", std::int64_t{1}}, {"sizes", Ints{5, 15}}});
  const auto s = g.add("softmax", {g.add("layernorm", {parts[1], g.add_param("gamma", {{15}})})},
                       {{"causal", std::int64_t{0}}});
  const auto r = g.add("rmsnorm", {g.add("silu", {parts[0]}), g.add_param("rg", {{5}})});
  g.mark_output(y);
  g.mark_output(g.add("reduce_mean", {s}, {{"axes", Ints{1}}}));
  g.mark_output(g.add("transpose", {r}, {{"perm", Ints{1, 0}}, {"shuffle", std::int64_t{0}}}));
  const auto back = import_onnx_bytes(export_onnx_bytes(g), "mixed");
  EXPECT_EQ(op_histogram(back), op_histogram(g));
  EXPECT_EQ(fingerprint(back), fingerprint(g));
  const auto a = execute<double>(g), b = execute<double>(back);
  for (std::size_t k = 0; k < g.outputs().size(); ++k) {
    const auto& va = a[static_cast<std::size_t>(g.outputs()[k])];
    const auto& vb = b[static_cast<std::size_t>(back.outputs()[k])];
    ASSERT_EQ(va.size(), vb.size());
    for (std::size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], 1e-5);  // weights stored as float32
  }
}

// Debian's libonnx-testdata (installed by .ci/install-deps). Its absence is a failure, not a skip: a skipped
// conformance run would hide a missing install step behind a green suite.
const fs::path kNodeTests = "/usr/share/libonnx-testdata/data/node";

TEST(Onnx, ErrorsNameTheOperatorNodeAndWhatIsSupported) {
  const fs::path& node_dir = kNodeTests;
  ASSERT_TRUE(fs::exists(node_dir)) << "libonnx-testdata is not installed (apt-get install libonnx-testdata)";
  try {
    import_onnx((node_dir / "test_abs" / "model.onnx").string());
    FAIL() << "Abs accepted";
  } catch (const OnnxUnsupported& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("(Abs)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("operator Abs is not supported (supported: Add,"), std::string::npos) << msg;
  }
  try {
    import_onnx((node_dir / "test_maxpool_2d_dilations" / "model.onnx").string());
    FAIL() << "dilated max pooling accepted";
  } catch (const OnnxUnsupported& e) {
    EXPECT_NE(std::string(e.what()).find("dilations must be 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(import_onnx_bytes("not a model", "garbage.onnx"), OnnxError);
  EXPECT_THROW(import_onnx("/nonexistent.onnx"), OnnxError);
}

// ONNX backend node tests: for every test whose operator strata supports, run the reference executor on the
// shipped inputs and compare with the shipped outputs (numpy's tolerance: rtol 1e-3, here atol 1e-5).
TEST(OnnxConformance, BackendNodeTests) {
  const fs::path& node_dir = kNodeTests;
  ASSERT_TRUE(fs::exists(node_dir)) << "libonnx-testdata is not installed (apt-get install libonnx-testdata)";
  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(node_dir)) tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());
  int total = 0, supported = 0, passed = 0;
  std::vector<std::string> failures;
  std::map<std::string, int> unsupported_reasons;
  for (const auto& dir : tests) {
    ++total;
    const auto name = dir.filename().string();
    Graph g;
    try {
      g = import_onnx((dir / "model.onnx").string());
    } catch (const OnnxUnsupported&) {
      continue;
    } catch (const std::exception& e) {
      failures.push_back(name + ": import: " + e.what());
      ++supported;
      continue;
    }
    ++supported;
    bool ok = true;
    try {
      for (const auto& set : fs::directory_iterator(dir)) {
        if (!set.is_directory()) continue;
        Feeds<double> feeds;
        const auto ins = g.values_of(ValueKind::kInput);
        for (std::size_t i = 0; i < ins.size(); ++i) {
          const auto t = read_onnx_tensor((set.path() / fmt::format("input_{}.pb", i)).string());
          feeds[ins[i]] = t.data;
        }
        ExecOptions opt;
        opt.randomize_missing = false;
        const auto values = execute<double>(g, feeds, opt);
        for (std::size_t k = 0; k < g.outputs().size(); ++k) {
          const auto want = read_onnx_tensor((set.path() / fmt::format("output_{}.pb", k)).string());
          const auto& got = values[static_cast<std::size_t>(g.outputs()[k])];
          if (want.type.shape != g.type(g.outputs()[k]).shape || got.size() != want.data.size()) {
            failures.push_back(fmt::format("{}: output {} shape {} vs expected {}", name, k,
                                           shape_str(g.type(g.outputs()[k]).shape),
                                           shape_str(want.type.shape)));
            ok = false;
            continue;
          }
          for (std::size_t i = 0; i < got.size(); ++i)
            if (!(std::fabs(got[i] - want.data[i]) <= 1e-5 + 1e-3 * std::fabs(want.data[i]))) {
              failures.push_back(fmt::format("{}: output {} element {}: {} vs expected {}", name, k, i,
                                             got[i], want.data[i]));
              ok = false;
              break;
            }
        }
      }
    } catch (const std::exception& e) {
      failures.push_back(name + ": run: " + e.what());
      ok = false;
    }
    passed += ok;
  }
  std::cout << fmt::format("[ONNX conformance] {} node tests, {} supported by strata, {} pass, {} fail\n",
                           total, supported, passed, supported - passed);
  for (const auto& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(passed, supported);
  EXPECT_GE(supported, 100);  // coverage must not silently shrink
}

}  // namespace
}  // namespace strata::models
