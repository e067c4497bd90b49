//===- Safetensors.cpp - Reading .safetensors files -----------------------===//

#include "runtime/exec/Safetensors.h"

#include "absl/strings/str_cat.h"
#include "llvm/Support/JSON.h"

#include <fstream>

namespace pc::runtime {

absl::StatusOr<std::map<std::string, HostTensor>>
readSafetensors(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  unsigned char len[8];
  in.read(reinterpret_cast<char *>(len), 8);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat(path, ": truncated"));
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | len[i];
  if (headerLen > (uint64_t(1) << 30))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": header of ", headerLen, " bytes is too large"));
  std::string header(headerLen, '\0');
  in.read(header.data(), headerLen);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat(path, ": truncated header"));
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(header);
  if (!json) {
    std::string why = llvm::toString(json.takeError());
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": bad header: ", why));
  }
  const llvm::json::Object *top = json->getAsObject();
  if (!top)
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the header is not an object"));
  std::map<std::string, HostTensor> tensors;
  for (const auto &[key, value] : *top) {
    std::string name = key.str();
    if (name == "__metadata__")
      continue;
    auto bad = [&](const std::string &why) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor '", name, "': ", why));
    };
    const llvm::json::Object *t = value.getAsObject();
    if (!t)
      return bad("not an object");
    std::optional<llvm::StringRef> dtype = t->getString("dtype");
    const llvm::json::Array *shape = t->getArray("shape");
    const llvm::json::Array *offsets = t->getArray("data_offsets");
    if (!dtype || !shape || !offsets || offsets->size() != 2)
      return bad("needs dtype, shape and two data_offsets");
    HostTensor tensor;
    if (*dtype == "F32")
      tensor.type = CommType::F32;
    else if (*dtype == "F64")
      tensor.type = CommType::F64;
    else if (*dtype == "I32")
      tensor.type = CommType::I32;
    else if (*dtype == "I64")
      tensor.type = CommType::I64;
    else if (*dtype == "F16")
      tensor.type = CommType::F16;
    else if (*dtype == "BF16")
      tensor.type = CommType::BF16;
    else
      return bad(absl::StrCat("dtype ", dtype->str(),
                              " is not F32, F16, BF16, F64, I32 or I64"));
    // The element count is bounded by the file's size as it grows, so a
    // hostile shape cannot overflow it.
    int64_t elements = 1;
    for (const llvm::json::Value &d : *shape) {
      std::optional<int64_t> n = d.getAsInteger();
      if (!n || *n < 0)
        return bad("bad shape");
      tensor.shape.push_back(*n);
      if (*n != 0 && elements > static_cast<int64_t>(data.size()) / *n)
        return bad("its shape holds more elements than the file has bytes");
      elements *= *n;
    }
    std::optional<int64_t> begin = (*offsets)[0].getAsInteger();
    std::optional<int64_t> end = (*offsets)[1].getAsInteger();
    int64_t bytes = product(tensor.shape) * sizeOf(tensor.type);
    if (!begin || !end || *begin < 0 || *end < *begin ||
        *end > static_cast<int64_t>(data.size()) || *end - *begin != bytes)
      return bad(absl::StrCat("data_offsets do not hold its ", bytes,
                              " bytes in the file's ", data.size()));
    tensor.bytes.assign(data.begin() + *begin, data.begin() + *end);
    tensors.emplace(name, std::move(tensor));
  }
  return tensors;
}

} // namespace pc::runtime
