//===- Files.cpp - The file formats pc reads and writes -------------------===//
//
// Thin wrappers over runtime/exec's readers and writers: one implementation
// of each format, so that the API and pc-run never disagree about a file.
// What is added here is the call's name in errors, and the file's name
// where the runtime's message lacks it.
//
//===----------------------------------------------------------------------===//

#include "api/Files.h"

#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/Npy.h"
#include "runtime/exec/Safetensors.h"

#include "absl/strings/str_cat.h"

#include "llvm/ADT/StringRef.h"

#include <cblas.h>

namespace pc::api {

using runtime::HostTensor;

namespace {

/// `status` with `call` in front, and `path` when the message lacks it (a
/// checksum or conversion error names the tensor, not always the file).
absl::Status named(const char *call, const std::string &path,
                   const absl::Status &status) {
  if (status.ok())
    return status;
  std::string message(status.message());
  if (message.find(path) == std::string::npos)
    message = absl::StrCat(path, ": ", message);
  return absl::Status(status.code(), absl::StrCat(call, ": ", message));
}

/// Every tensor of `inputs`, read whole.
absl::StatusOr<std::map<std::string, HostTensor>>
readWhole(const std::map<std::string, runtime::Input> &inputs) {
  std::map<std::string, HostTensor> tensors;
  for (auto &[name, input] : inputs) {
    absl::StatusOr<HostTensor> t = input.whole();
    if (!t.ok())
      return t.status();
    tensors.emplace(name, *std::move(t));
  }
  return tensors;
}

} // namespace

absl::StatusOr<HostTensor> readNpy(const std::string &path) {
  absl::StatusOr<HostTensor> t = runtime::readNpy(path);
  if (!t.ok())
    return named("readNpy", path, t.status());
  return t;
}

absl::Status writeNpy(const std::string &path, const HostTensor &tensor) {
  return named("writeNpy", path, runtime::writeNpy(path, tensor));
}

absl::StatusOr<std::map<std::string, HostTensor>>
readSafetensors(const std::string &path) {
  absl::StatusOr<std::map<std::string, HostTensor>> tensors =
      runtime::readSafetensors(path);
  if (!tensors.ok())
    return named("readSafetensors", path, tensors.status());
  return tensors;
}

absl::Status
writeSafetensors(const std::string &path,
                 const std::map<std::string, HostTensor> &tensors) {
  return named("writeSafetensors", path,
               runtime::writeSafetensors(path, tensors));
}

absl::StatusOr<Checkpoint> readCheckpoint(const std::string &path) {
  absl::StatusOr<runtime::LoadedCheckpoint> loaded =
      runtime::readCheckpoint(path);
  if (!loaded.ok())
    return named("readCheckpoint", path, loaded.status());
  absl::StatusOr<std::map<std::string, HostTensor>> tensors =
      readWhole(loaded->tensors);
  if (!tensors.ok())
    return named("readCheckpoint", path, tensors.status());
  Checkpoint out;
  out.step = loaded->step;
  out.metadata = loaded->metadata;
  out.tensors = *std::move(tensors);
  return out;
}

absl::StatusOr<std::map<std::string, runtime::HostTensor>>
mergeLora(const std::map<std::string, runtime::HostTensor> &weights,
          double alpha) {
  using runtime::CommType;
  using runtime::HostTensor;
  auto bad = [](const std::string &what) {
    return absl::InvalidArgumentError("mergeLora: " + what);
  };
  std::map<std::string, HostTensor> out;
  for (const auto &[name, t] : weights) {
    llvm::StringRef n(name);
    if (n.ends_with(".lora_b")) {
      if (!weights.count(n.drop_back(2).str() + "_a"))
        return bad("'" + name + "' has no '" + n.drop_back(2).str() + "_a'");
      continue;
    }
    if (!n.ends_with(".lora_a")) {
      out.emplace(name, t);
      continue;
    }
    std::string base = n.drop_back(7).str();
    auto b = weights.find(base + ".lora_b");
    auto w = weights.find(base);
    if (b == weights.end() || w == weights.end())
      return bad("'" + name + "' has no '" + base +
                 (w == weights.end() ? "'" : ".lora_b'"));
    const HostTensor &a = t;
    if (a.shape.size() != 2 || b->second.shape.size() != 2 ||
        w->second.shape.size() != 2 || a.shape[1] != b->second.shape[0] ||
        w->second.shape[0] != a.shape[0] ||
        w->second.shape[1] != b->second.shape[1])
      return bad("'" + base +
                 "' and its adapters do not compose as [in, out] "
                 "= [in, r] x [r, out]");
    int64_t in = a.shape[0], r = a.shape[1], outDim = b->second.shape[1];
    HostTensor a32 = a.convert(CommType::F32);
    HostTensor b32 = b->second.convert(CommType::F32);
    HostTensor merged = w->second.convert(CommType::F32);
    // W += (alpha / r) A B, by BLAS.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, in, outDim, r,
                static_cast<float>(alpha / static_cast<double>(r)),
                a32.as<float>(), r, b32.as<float>(), outDim, 1.0f,
                merged.as<float>(), outDim);
    out[base] = merged.convert(w->second.type);
  }
  // A base written before its adapter was copied as it was; the merged
  // value replaced it above.
  return out;
}

} // namespace pc::api
