// The registered experiment kinds. Adding a kind: write experiments/<kind>.cc defining its parse -> run ->
// report steps and a function returning make_kind(...) (see experiment.h), then add one line below.
#include "experiments/experiment.h"

namespace strata::experiments {

ExperimentKind collective_sweep_kind();       // collective_sweep_kind.cc
ExperimentKind p2_reproduction_kind();        // p2_reproduction.cc
ExperimentKind subst_optimizers_kind();       // subst_optimizers.cc
ExperimentKind parallel_sweep_kind();         // parallel_sweep.cc
ExperimentKind emulated_validation_kind();    // emulated_validation.cc
ExperimentKind cpu_validation_kind();         // cpu_validation.cc
ExperimentKind gpu_validation_kind();         // cpu_validation.cc (the same grid on the GPU)
ExperimentKind model_sim_kind();              // model_sim.cc
ExperimentKind llm_reproduction_kind();       // llm_reproduction.cc
ExperimentKind subst_generation_kind();       // subst_generation.cc
ExperimentKind flexflow_reproduction_kind();  // flexflow_reproduction.cc
ExperimentKind nccl_tests_comparison_kind();  // nccl_tests_kind.cc

const std::vector<ExperimentKind>& experiment_kinds() {
  static const std::vector<ExperimentKind> kinds{
      collective_sweep_kind(),      p2_reproduction_kind(),
      subst_optimizers_kind(),      parallel_sweep_kind(),
      emulated_validation_kind(),   cpu_validation_kind(),
      gpu_validation_kind(),        model_sim_kind(),
      llm_reproduction_kind(),      subst_generation_kind(),
      flexflow_reproduction_kind(), nccl_tests_comparison_kind(),
  };
  return kinds;
}

}  // namespace strata::experiments
