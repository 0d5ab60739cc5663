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

// SIGKILL cannot be handled: a killed run's staging folder stays, and the next run of the same experiment
// removes it, because no process holds its lock (tests/cli/cli_test.py RunInterrupted kills real runs).
TEST_F(ResultsDirTest, AStagingFolderNoRunHoldsIsRemovedByTheNextRun) {
  const fs::path dest = root_ / "exp";
  fs::create_directories(root_ / ".exp.partial-0badf00d" / "sub");
  std::ofstream(root_ / ".exp.partial-0badf00d" / "sub" / "a.csv") << "x";
  fs::create_directories(root_ / ".exp.partial-12345678.old");  // a previous set a killed commit left
  fs::create_directories(root_ / ".other.partial-0badf00d");    // another experiment's: not this run's
  {
    ResultsDir out(dest);
    EXPECT_EQ(entries(root_).size(), 2u);  // the other experiment's folder and this run's staging folder
    out.write("summary.md", "x\n");
    out.commit();
  }
  EXPECT_EQ(entries(root_), (std::vector<std::string>{".other.partial-0badf00d", "exp"}));
}

TEST_F(ResultsDirTest, AStagingFolderALiveRunHoldsIsKept) {
  const fs::path dest = root_ / "exp";
  ResultsDir first(dest);  // a run still going on
  first.write("summary.md", "first\n");
  {
    ResultsDir second(dest);  // a second run of the same experiment starts and finishes meanwhile
    second.write("summary.md", "second\n");
    second.commit();
  }
  EXPECT_TRUE(fs::exists(first.staged("summary.md")));
  EXPECT_EQ(read(dest / "summary.md"), "second\n");
  first.commit();
  EXPECT_EQ(read(dest / "summary.md"), "first\n");
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
