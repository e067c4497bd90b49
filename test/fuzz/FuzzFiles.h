//===- FuzzFiles.h - Fuzz inputs as files -----------------------*- C++ -*-===//
//
// pc's readers map files (they check a header against the file's real
// size), so a fuzz input is written to a file in a directory of the
// process's own, which is removed when the process exits.
//
//===----------------------------------------------------------------------===//

#ifndef PC_TEST_FUZZ_FUZZFILES_H
#define PC_TEST_FUZZ_FUZZFILES_H

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace pc::fuzz {

class ScratchDir {
public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "pc-fuzz-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      std::abort();
    dir = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;

  /// Writes `size` bytes at `data` to `name` in the directory; its path.
  std::string write(const std::string &name, const uint8_t *data,
                    size_t size) const {
    std::string path = (dir / name).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(data),
              static_cast<std::streamsize>(size));
    out.close();
    if (!out)
      std::abort(); // the scratch directory is broken, not the input
    return path;
  }
  const std::filesystem::path &path() const { return dir; }

private:
  std::filesystem::path dir;
};

/// Reads every byte of `size` bytes at `data`, so that a reader that hands
/// out a range it did not check faults here.
inline uint64_t touch(const void *data, size_t size) {
  const auto *bytes = static_cast<const volatile uint8_t *>(data);
  uint64_t sum = 0;
  for (size_t i = 0; i < size; ++i)
    sum += bytes[i];
  return sum;
}

} // namespace pc::fuzz

#endif // PC_TEST_FUZZ_FUZZFILES_H
