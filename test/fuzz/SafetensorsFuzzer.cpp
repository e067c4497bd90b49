//===- SafetensorsFuzzer.cpp - Fuzzes the .safetensors reader -------------===//
//
// Any bytes as a .safetensors file: mapping it and reading each tensor (as
// --params and --load do) is a value or an error, never a crash.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Input.h"
#include "runtime/exec/Safetensors.h"
#include "test/fuzz/FuzzFiles.h"

#include <cstdint>

using namespace pc::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static pc::fuzz::ScratchDir scratch;
  std::string path = scratch.write("input.safetensors", data, size);
  std::map<std::string, std::string> metadata;
  absl::StatusOr<std::map<std::string, Input>> mapped =
      mapSafetensors(path, &metadata);
  if (mapped.ok())
    for (auto &[name, input] : *mapped) {
      absl::StatusOr<HostTensor> t = input.whole();
      if (t.ok())
        pc::fuzz::touch(t->data(), t->byteSize());
    }
  absl::StatusOr<std::map<std::string, HostTensor>> read =
      readSafetensors(path);
  if (read.ok())
    for (auto &[name, t] : *read)
      pc::fuzz::touch(t.data(), t.byteSize());
  return 0;
}
