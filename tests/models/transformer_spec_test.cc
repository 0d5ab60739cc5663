// TransformerSpec: parameter counts against hand formulas and published model sizes, the `transformer:` text
// and model YAML readers (values and every error kind), and graphs built from specs.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "hw/config_error.h"
#include "models/exec/executor.h"
#include "models/zoo/model_ref.h"
#include "models/zoo/transformer_spec.h"
#include "models/zoo/zoo.h"

namespace strata::models::zoo {
namespace {

std::string config(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/configs/models/" + name + ".yaml";
}

TEST(TransformerSpec, DefaultFfnFollowsLlamaRule) {
  EXPECT_EQ(default_ffn(12288, MlpActivation::kGelu), 49152);
  // 2/3 * 4h rounded up to 256: LLaMA 7B, 13B and 65B's published MLP sizes (Touvron et al. 2023).
  EXPECT_EQ(default_ffn(4096, MlpActivation::kSwiglu), 11008);
  EXPECT_EQ(default_ffn(5120, MlpActivation::kSwiglu), 13824);
  EXPECT_EQ(default_ffn(8192, MlpActivation::kSwiglu), 22016);
}

TEST(TransformerSpec, Gpt3LayerParamsAre12hSquaredPlus13h) {
  const auto s = parse_transformer_spec("transformer:layers=96,hidden=12288,heads=96,vocab=50257,seq=2048");
  EXPECT_EQ(s.kv_heads, 96);
  EXPECT_EQ(s.ffn, 4 * 12288);
  const double h = 12288;
  const auto p = transformer_params(s);
  EXPECT_DOUBLE_EQ(p.per_layer, 12 * h * h + 13 * h);
  EXPECT_DOUBLE_EQ(p.embedding, (50257 + 2048) * h);
  EXPECT_DOUBLE_EQ(p.head, 2 * h);  // final LayerNorm; the projection is the tied embedding
  EXPECT_DOUBLE_EQ(p.total, 96 * (12 * h * h + 13 * h) + (50257 + 2048) * h + 2 * h);
  EXPECT_DOUBLE_EQ(p.active, p.total);
}

// The zoo's decoders: the graph's parameter count equals the formula.
TEST(TransformerSpec, ZooGraphsMatchTheFormula) {
  int decoders = 0;
  for (const auto& e : zoo_models()) {
    if (!e.transformer) continue;
    ++decoders;
    ZooOptions o;
    o.seq_len = 16;
    const auto g = e.build(o);
    EXPECT_DOUBLE_EQ(g.param_count(), transformer_params(*e.transformer).total) << e.name;
  }
  EXPECT_EQ(decoders, 14);
}

TEST(TransformerSpec, PublishedModelSizes) {
  // Mixtral 8x7B: 46.7 B parameters, 12.9 B active (Jiang et al. 2024, §2).
  const auto mixtral = transformer_params(load_transformer_spec(config("mixtral-8x7b")));
  EXPECT_NEAR(mixtral.total / 1e9, 46.7, 0.05);
  EXPECT_NEAR(mixtral.active / 1e9, 12.9, 0.05);
  // Llama 2 70B: 68.98 B (the released checkpoint's count; "70B" in the paper).
  EXPECT_NEAR(transformer_params(load_transformer_spec(config("llama2-70b"))).total / 1e9, 68.98, 0.01);
  // Megatron-LM's 1T configuration: 1008 B (Narayanan et al. SC'21, Table 1).
  EXPECT_NEAR(transformer_params(load_transformer_spec(config("megatron-1t"))).total / 1e9, 1008, 1);
  // GPT-3 175B (with Megatron's 51200-token padded vocabulary): 175 B to the paper's precision.
  EXPECT_NEAR(transformer_params(load_transformer_spec(config("gpt3-175b"))).total / 1e9, 175, 0.5);
}

TEST(TransformerSpec, YamlConfigsMatchTheZoo) {
  for (const char* name : {"llama2-70b", "mixtral-8x7b"}) {
    SCOPED_TRACE(name);
    const auto yaml = load_transformer_spec(config(name));
    const auto* e = find_model(name);
    ASSERT_NE(e, nullptr);
    ASSERT_TRUE(e->transformer.has_value());
    EXPECT_EQ(yaml.name, name);
    EXPECT_EQ(format_transformer_spec(yaml), format_transformer_spec(*e->transformer));
  }
}

TEST(TransformerSpec, TextRoundTripsAndKeys) {
  const auto s = parse_transformer_spec(
      "transformer:layers=2,hidden=256,heads=8,kv_heads=2,vocab=1000,seq=128,experts=4,top_k=2,act=swiglu,"
      "norm=rmsnorm,attention=naive,positions=rope,bias=0,tied_embeddings=0");
  EXPECT_EQ(s.kv_heads, 2);
  EXPECT_EQ(s.ffn, 768);  // 2/3 * 1024 = 682.7 -> 768
  EXPECT_EQ(s.experts, 4);
  EXPECT_EQ(s.top_k, 2);
  EXPECT_EQ(s.act, MlpActivation::kSwiglu);
  EXPECT_EQ(s.norm, NormKind::kRmsNorm);
  EXPECT_EQ(s.attention, AttentionImpl::kNaive);
  EXPECT_EQ(s.positions, Positions::kRope);
  EXPECT_FALSE(s.bias);
  EXPECT_FALSE(s.tied_embeddings);
  EXPECT_EQ(format_transformer_spec(parse_transformer_spec(format_transformer_spec(s))),
            format_transformer_spec(s));
  // MoE by hand: attention 2 h^2 + 2 h kv (kv = 2 heads of 32), norms 2 h, router 4 h, experts 4 x 3 h f.
  const double h = 256, kv = 64, f = 768;
  const auto p = transformer_params(s);
  EXPECT_DOUBLE_EQ(p.per_layer, 2 * h * h + 2 * h * kv + 2 * h + 4 * h + 4 * 3 * h * f);
  EXPECT_DOUBLE_EQ(p.per_layer_active, 2 * h * h + 2 * h * kv + 2 * h + 4 * h + 2 * 3 * h * f);
  EXPECT_DOUBLE_EQ(p.embedding, 1000 * h);  // rotary: no position table
  EXPECT_DOUBLE_EQ(p.head, h + 1000 * h);   // RMSNorm weight + untied head
}

void expect_error(const std::string& text, const std::string& fragment) {
  try {
    parse_transformer_spec(text);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << text << " -> " << e.what();
  }
}

TEST(TransformerSpec, TextErrorsNameTheKey) {
  const std::string base = "transformer:layers=2,hidden=256,heads=4,vocab=100,seq=16";
  expect_error(base + ",depth=3", "unknown key 'depth'");
  expect_error("transformer:layers=2,hidden=256,heads=4,vocab=100", "missing required key 'seq'");
  expect_error(base + ",ffn=12x", "key 'ffn': expected an integer from 1 to 16777216, got '12x'");
  expect_error("transformer:layers=0,hidden=256,heads=4,vocab=100,seq=16",
               "key 'layers': expected an integer");
  expect_error("transformer:layers=2,hidden=250,heads=4,vocab=100,seq=16",
               "key 'heads': hidden 250 is not a multiple");
  expect_error(base + ",kv_heads=3", "key 'kv_heads': kv_heads 3 must divide heads 4");
  expect_error(base + ",experts=4,top_k=5", "key 'top_k': top_k 5 exceeds the 4 experts");
  expect_error(base + ",top_k=2", "key 'top_k'");
  expect_error(base + ",heads=8", "key 'heads' given twice");
  expect_error(base + ",act=relu", "key 'act': expected gelu or swiglu, got 'relu'");
  expect_error(base + ",bias=yes", "key 'bias': expected 0 or 1");
  expect_error("transformer:layers=2,hidden=24,heads=8,vocab=100,seq=16,positions=rope",
               "even head dimension");
}

void expect_yaml_error(const std::string& text, const std::string& fragment) {
  try {
    parse_transformer_yaml(text, "m.yaml");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(TransformerSpec, YamlErrorsNameFileLineField) {
  const std::string base = "layers: 2\nhidden: 256\nheads: 4\nvocab: 100\nseq: 16\n";
  expect_yaml_error(base + "depth: 3\n", "m.yaml:6:1: depth: unknown field 'depth'");
  expect_yaml_error(base + "ffn: big\n",
                    "m.yaml:6:6: ffn: expected an integer from 1 to 16777216, got 'big'");
  expect_yaml_error("layers: 2\nhidden: 256\nheads: 4\nvocab: 100\n", "missing required field 'seq'");
  expect_yaml_error(base + "kv_heads: 3\n", "m.yaml:6:11: kv_heads: kv_heads 3 must divide heads 4");
  expect_yaml_error(base + "heads: 8\n", "m.yaml");  // duplicate key
  const auto s = parse_transformer_yaml(base + "name: tiny\n", "m.yaml");
  EXPECT_EQ(s.name, "tiny");
  EXPECT_THROW(load_transformer_spec(config("no-such-model")), ConfigError);
}

// A spec builds a graph of the formula's size with either attention; fused and unfused compute the same
// function.
TEST(TransformerSpec, GraphsFromSpecs) {
  for (const char* text :
       {"transformer:layers=2,hidden=64,heads=4,kv_heads=2,vocab=50,seq=8,act=swiglu,norm=rmsnorm,"
        "positions=rope,bias=0,tied_embeddings=0",
        "transformer:layers=1,hidden=32,heads=2,vocab=20,seq=6,experts=4,top_k=2"}) {
    SCOPED_TRACE(text);
    auto s = parse_transformer_spec(text);
    const auto flash = build_transformer(s, {});
    s.attention = AttentionImpl::kNaive;
    const auto naive = build_transformer(s, {});
    EXPECT_DOUBLE_EQ(flash.param_count(), transformer_params(s).total);
    EXPECT_DOUBLE_EQ(naive.param_count(), transformer_params(s).total);
    EXPECT_EQ(fingerprint(flash), fingerprint(naive));
  }
}

TEST(ModelRef, ResolvesEveryForm) {
  const auto zoo_gpt = resolve_model_ref("gpt3-175b");
  EXPECT_EQ(zoo_gpt.kind, ModelRefKind::kZoo);
  ASSERT_TRUE(zoo_gpt.transformer.has_value());
  EXPECT_EQ(zoo_gpt.transformer->hidden, 12288);
  EXPECT_FALSE(resolve_model_ref("bert-base").transformer.has_value());  // an encoder, not a TransformerSpec
  const auto text = resolve_model_ref("transformer:layers=1,hidden=32,heads=2,vocab=10,seq=4");
  EXPECT_EQ(text.kind, ModelRefKind::kTransformer);
  EXPECT_EQ(text.transformer->layers, 1);
  const auto yaml = resolve_model_ref(config("llama2-70b"));
  EXPECT_EQ(yaml.kind, ModelRefKind::kYaml);
  EXPECT_EQ(yaml.transformer->kv_heads, 8);
  EXPECT_EQ(resolve_model_ref("model.onnx").kind, ModelRefKind::kOnnx);
  EXPECT_THROW(resolve_model_ref("nomodel"), std::invalid_argument);
  // batch and sequence apply to transformer references; --dim to ONNX files only.
  ModelRefOptions shape;
  shape.batch = 3;
  shape.seq = 2;
  const auto g = build_model_ref(text, shape);
  EXPECT_EQ(g.type(g.outputs()[0]).shape, (Shape{6, 10}));
  ModelRefOptions dims;
  dims.onnx_dims["batch"] = 2;
  EXPECT_THROW(build_model_ref(text, dims), std::invalid_argument);
}

}  // namespace
}  // namespace strata::models::zoo
