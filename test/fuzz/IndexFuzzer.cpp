//===- IndexFuzzer.cpp - Fuzzes the sharded checkpoint index --------------===//
//
// Any bytes as the index.json of a sharded checkpoint whose shard files
// are real (a two-rank save, test/fuzz/shards): loading it and reading
// every tensor, whole and by its pieces' boxes, is a value or an error,
// never a crash.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/Input.h"
#include "test/fuzz/FuzzFiles.h"

#include <cstdint>
#include <filesystem>

using namespace pc::runtime;

namespace {

const pc::fuzz::ScratchDir &checkpointDir() {
  static pc::fuzz::ScratchDir dir;
  static bool copied = [] {
    for (const auto &shard : std::filesystem::directory_iterator(
             std::filesystem::path(PC_SOURCE_DIR) / "test/fuzz/shards"))
      std::filesystem::copy_file(shard.path(),
                                 dir.path() / shard.path().filename());
    return true;
  }();
  (void)copied;
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const pc::fuzz::ScratchDir &dir = checkpointDir();
  dir.write("index.json", data, size);
  absl::StatusOr<LoadedCheckpoint> loaded = readCheckpoint(dir.path().string());
  if (!loaded.ok())
    return 0;
  for (auto &[name, input] : loaded->tensors) {
    absl::StatusOr<HostTensor> t = input.whole();
    if (t.ok())
      pc::fuzz::touch(t->data(), t->byteSize());
    for (const Input::Piece &p : input.parts()) {
      absl::StatusOr<HostTensor> box = input.box(p.offsets, p.shape);
      if (box.ok())
        pc::fuzz::touch(box->data(), box->byteSize());
    }
  }
  return 0;
}
