#include "util/path.h"

#include <fstream>

#include <gtest/gtest.h>

#include "util/error.h"

namespace strata::util {
namespace {
namespace fs = std::filesystem;

TEST(Path, RelativePathsResolveAgainstTheFilesFolder) {
  EXPECT_EQ(resolve_relative_to("/a/b/exp.yaml", "../hw/x.yaml"), fs::path("/a/hw/x.yaml"));
  EXPECT_EQ(resolve_relative_to("/a/b/exp.yaml", "x.yaml"), fs::path("/a/b/x.yaml"));
  EXPECT_EQ(resolve_relative_to("/a/b/exp.yaml", "/etc/x.yaml"), fs::path("/etc/x.yaml"));
  EXPECT_EQ(resolve_relative_to("exp.yaml", "x.yaml"), fs::path("x.yaml"));  // file in the current folder
}

TEST(Path, ExecutablePathIsThisTestProgram) {
  EXPECT_EQ(executable_path().filename(), "strata_util_tests");
}

// This test program runs from the build tree, so shipped data comes from the source tree.
TEST(Path, BuildTreeProgramFindsSourceData) {
  const auto p = find_data_file("configs/hw/dgx-a100.yaml");
  EXPECT_EQ(p, fs::path(STRATA_SOURCE_DIR) / "configs/hw/dgx-a100.yaml");
}

// An installed layout <prefix>/bin/strata + <prefix>/share/strata/... (the program need not exist to be
// located from).
TEST(Path, InstalledProgramFindsShareStrata) {
  const fs::path prefix = fs::temp_directory_path() / "strata_util_path_test_prefix";
  fs::remove_all(prefix);
  fs::create_directories(prefix / "share/strata/experiments/plots");
  std::ofstream(prefix / "share/strata/experiments/plots/p.py") << "print()\n";
  EXPECT_EQ(find_data_file("experiments/plots/p.py", prefix / "bin/strata"),
            prefix / "share/strata/experiments/plots/p.py");
  try {
    find_data_file("configs/hw/none.yaml", prefix / "bin/strata");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("configs/hw/none.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find((prefix / "share/strata").string()), std::string::npos) << what;
    // Outside the build tree: the source tree is not consulted, so an incomplete install is not masked.
    EXPECT_EQ(what.find(STRATA_SOURCE_DIR), std::string::npos) << what;
  }
  fs::remove_all(prefix);
}

}  // namespace
}  // namespace strata::util
