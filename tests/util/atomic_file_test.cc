#include "util/atomic_file.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "util/error.h"

namespace strata::util {
namespace {
namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("strata_util_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(AtomicFile, WritesAndReplacesWholeFiles) {
  const auto p = dir_ / "out.json";
  write_file_atomically(p, std::string("first\0bytes", 11));
  EXPECT_EQ(read(p), std::string("first\0bytes", 11));
  write_file_atomically(p, "second");
  EXPECT_EQ(read(p), "second");
  EXPECT_FALSE(fs::exists(dir_ / "out.json.tmp"));
}

// Defect (issue 10): `--trace /nonexistent/dir/x.json` silently created the folders.
TEST_F(AtomicFile, MissingFolderIsAnErrorNamingThePathAndCreatesNothing) {
  const auto p = dir_ / "nonexistent" / "dir" / "x.json";
  try {
    write_file_atomically(p, "x");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "nonexistent"));
}

TEST_F(AtomicFile, DirectoryAsPathIsAnErrorAndLeavesNoTemporary) {
  const auto p = dir_ / "sub";
  fs::create_directories(p);
  EXPECT_THROW(write_file_atomically(p, "x"), InputError);
  EXPECT_TRUE(fs::is_directory(p));
  EXPECT_FALSE(fs::exists(dir_ / "sub.tmp"));
}

}  // namespace
}  // namespace strata::util
