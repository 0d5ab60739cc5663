// The results folder of an experiment run (experiments/experiment.h, ResultsDir): the destination always
// holds one complete set (issue 11, "Outputs and processes").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "experiments/experiment.h"
#include "hw/config_error.h"

namespace {

namespace fs = std::filesystem;
using strata::experiments::ResultsDir;

class ResultsDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("strata-results-test-" + std::to_string(std::random_device{}()));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::vector<std::string> entries(const fs::path& dir) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path root_;
};

TEST_F(ResultsDirTest, NothingAppearsBeforeCommitAndTheNewSetReplacesTheOld) {
  const fs::path dest = root_ / "exp";
  {
    ResultsDir out(dest);
    out.write("a.csv", "one\n");
    out.write("summary.md", "first\n");
    EXPECT_FALSE(fs::exists(dest));  // only the staging folder exists while the run writes
    EXPECT_EQ(out.commit(), dest);
  }
  EXPECT_EQ(entries(dest), (std::vector<std::string>{"a.csv", "summary.md"}));
  {
    ResultsDir out(dest);
    out.write("b.csv", "two\n");
    EXPECT_EQ(read(dest / "summary.md"), "first\n");  // the previous set until the new one is complete
    out.write("summary.md", "second\n");
    out.commit();
  }
  // The old set is gone as a whole (no a.csv beside the new summary), and no staging folder is left.
  EXPECT_EQ(entries(dest), (std::vector<std::string>{"b.csv", "summary.md"}));
  EXPECT_EQ(read(dest / "summary.md"), "second\n");
  EXPECT_EQ(entries(root_), (std::vector<std::string>{"exp"}));
}

TEST_F(ResultsDirTest, AnAbandonedRunLeavesThePreviousSetAndNoStagingFolder) {
  const fs::path dest = root_ / "exp";
  {
    ResultsDir out(dest);
    out.write("summary.md", "kept\n");
    out.commit();
  }
  {
    ResultsDir out(dest);
    out.write("summary.md", "half-written run\n");
    // no commit: the run failed
  }
  EXPECT_EQ(read(dest / "summary.md"), "kept\n");
  EXPECT_EQ(entries(root_), (std::vector<std::string>{"exp"}));
}

TEST_F(ResultsDirTest, OutputProblemsAreConfigErrors) {
  std::ofstream(root_ / "file") << "x";
  EXPECT_THROW(ResultsDir(root_ / "file" / "exp"), strata::ConfigError);  // parent is a file
  ResultsDir out(root_ / "file");  // destination is a file, not a folder
  out.write("summary.md", "x\n");
  EXPECT_THROW(out.commit(), strata::ConfigError);
}

}  // namespace
