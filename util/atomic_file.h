// Output files are written whole or not at all: a reader (a plot script, a second strata run) never sees a
// half-written file, and an interrupted run leaves the previous version in place.
#pragma once

#include <filesystem>
#include <string_view>

namespace strata::util {

// Writes `text` to `path` through a temporary file in the same folder ("<path>.tmp") renamed over `path`
// (rename within one file system is atomic on POSIX). The folder must exist: a missing folder or a `path`
// that is a directory throws InputError naming the path, and no temporary file is left behind. Other I/O
// failures (disk full) throw std::runtime_error, also without leaving the temporary file.
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

// The checks write_file_atomically makes before writing, for commands that should refuse a bad output path
// before doing their work: throws InputError when the folder of `path` does not exist or `path` is a
// directory.
void check_output_path(const std::filesystem::path& path);

}  // namespace strata::util
