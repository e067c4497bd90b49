//===- NpyFuzzer.cpp - Fuzzes the .npy reader -----------------------------===//
//
// Any bytes as an .npy file: reading it whole or mapping it is a value or
// an error, never a crash, and a mapped file's elements lie in the file.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Input.h"
#include "runtime/exec/Npy.h"
#include "test/fuzz/FuzzFiles.h"

#include <cstdint>

using namespace pc::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static pc::fuzz::ScratchDir scratch;
  std::string path = scratch.write("input.npy", data, size);
  absl::StatusOr<HostTensor> whole = readNpy(path);
  if (whole.ok())
    pc::fuzz::touch(whole->data(), whole->byteSize());
  absl::StatusOr<std::shared_ptr<const MappedNpy>> mapped =
      MappedNpy::open(path);
  if (mapped.ok()) {
    int64_t numel = 1;
    for (int64_t d : (*mapped)->shape())
      numel *= d;
    pc::fuzz::touch((*mapped)->data(), numel * sizeOf((*mapped)->type()));
    // Read through the input abstraction too, as a fed input is.
    Input input = Input::file(*mapped, (*mapped)->type());
    absl::StatusOr<HostTensor> t = input.whole();
    if (t.ok())
      pc::fuzz::touch(t->data(), t->byteSize());
  }
  return 0;
}
