// Sweeps on a cluster (experiments/sweep_mpi.h): how a process learns that an MPI launcher started it (the
// variables Open MPI, PMI and PMIx put in each rank's environment), and a strata built without MPI refusing a
// launch with several ranks. The sharing itself is checked end to end by tests/cli/sweep_mpi_test.py
// (mpirun -np 2 against the single-process run).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "experiments/sweep_mpi.h"
#include "hw/config_error.h"

namespace {

using namespace strata;
using namespace strata::experiments;

// Sets the launcher variables for one test and restores the previous environment after it.
class LauncherEnv {
 public:
  using Values = std::map<std::string, std::string>;
  explicit LauncherEnv(const Values& values) {
    for (const char* name : kNames) {
      const char* old = std::getenv(name);
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      unsetenv(name);
    }
    for (const auto& [name, value] : values) setenv(name.c_str(), value.c_str(), 1);
  }
  ~LauncherEnv() {
    for (const auto& [name, value] : saved_)
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
  }
  LauncherEnv(const LauncherEnv&) = delete;
  LauncherEnv& operator=(const LauncherEnv&) = delete;

 private:
  static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE",
                                           "PMI_RANK", "PMIX_RANK"};
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(MpiLaunch, NoLauncherVariablesMeansOneProcess) {
  const LauncherEnv env(LauncherEnv::Values{});
  const MpiLaunch l = mpi_launch();
  EXPECT_FALSE(l.launched);
  EXPECT_EQ(l.rank, 0);
  EXPECT_EQ(l.size, 1);
  const SweepRanks ranks;  // starts no MPI
  EXPECT_FALSE(ranks.distributed());
  EXPECT_EQ(ranks.rank(), 0);
  EXPECT_EQ(ranks.size(), 1);
}

TEST(MpiLaunch, ReadsOpenMpiThenPmiThenPmix) {
  {
    const LauncherEnv env(LauncherEnv::Values{
        {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"}, {"PMIX_RANK", "2"}});
    const MpiLaunch l = mpi_launch();
    EXPECT_TRUE(l.launched);
    EXPECT_EQ(l.rank, 2);
    EXPECT_EQ(l.size, 4);
  }
  {
    const LauncherEnv env(LauncherEnv::Values{{"PMI_SIZE", "8"}, {"PMI_RANK", "7"}});
    const MpiLaunch l = mpi_launch();
    EXPECT_TRUE(l.launched);
    EXPECT_EQ(l.rank, 7);
    EXPECT_EQ(l.size, 8);
  }
  {
    const LauncherEnv env(
        LauncherEnv::Values{{"PMIX_RANK", "3"}});  // PMIx alone does not say how many ranks there are
    const MpiLaunch l = mpi_launch();
    EXPECT_TRUE(l.launched);
    EXPECT_EQ(l.rank, 3);
    EXPECT_EQ(l.size, 0);
  }
}

TEST(MpiLaunch, WithoutMpiSeveralRanksAreRefusedByName) {
  if (built_with_mpi()) GTEST_SKIP() << "built with MPI: SweepRanks would start MPI for real";
  {
    const LauncherEnv env(LauncherEnv::Values{{"OMPI_COMM_WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_RANK", "0"}});
    const SweepRanks one;  // mpirun -np 1: a single process
    EXPECT_FALSE(one.distributed());
  }
  const LauncherEnv env(LauncherEnv::Values{{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}});
  try {
    const SweepRanks ranks;
    FAIL() << "a launch with 2 ranks was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("built without MPI"), std::string::npos) << what;
    EXPECT_NE(what.find("the 2 ranks"), std::string::npos) << what;
  }
}

}  // namespace
