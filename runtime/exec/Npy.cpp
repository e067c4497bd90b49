//===- Npy.cpp - NumPy .npy files -----------------------------------------===//

#include "runtime/exec/Npy.h"

#include "absl/strings/str_cat.h"

#include <cstdio>
#include <fstream>
#include <regex>

namespace pc::runtime {

namespace {
const char kMagic[] = "\x93NUMPY";

const char *descrOf(CommType t) {
  switch (t) {
  case CommType::F32:
    return "<f4";
  case CommType::F64:
    return "<f8";
  case CommType::I32:
    return "<i4";
  case CommType::I64:
    return "<i8";
  case CommType::F16:
    return "<f2";
  case CommType::BF16:
    break; // Written as f32 (writeNpy).
  }
  return "?";
}
} // namespace

absl::StatusOr<HostTensor> readNpy(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  char magic[6];
  unsigned char version[2];
  in.read(magic, 6);
  in.read(reinterpret_cast<char *>(version), 2);
  if (!in || std::string(magic, 6) != std::string(kMagic, 6))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a .npy file (bad magic)"));
  uint32_t headerLen = 0;
  if (version[0] == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char *>(b), 2);
    headerLen = b[0] | (b[1] << 8);
  } else if (version[0] == 2 || version[0] == 3) {
    unsigned char b[4];
    in.read(reinterpret_cast<char *>(b), 4);
    headerLen = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unsupported .npy version ", int(version[0])));
  }
  std::string header(headerLen, '\0');
  in.read(header.data(), headerLen);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat(path, ": truncated header"));
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")))
    return absl::InvalidArgumentError(absl::StrCat(path, ": no descr"));
  std::string descr = m[1];
  HostTensor t;
  if (descr == "<f4")
    t.type = CommType::F32;
  else if (descr == "<f8")
    t.type = CommType::F64;
  else if (descr == "<i4")
    t.type = CommType::I32;
  else if (descr == "<i8")
    t.type = CommType::I64;
  else if (descr == "<f2")
    t.type = CommType::F16;
  else
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": dtype '", descr, "' is not f16, f32, f64, i32 or i64"));
  if (std::regex_search(header, m, std::regex("'fortran_order':\\s*True")))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": Fortran-ordered arrays are not supported"));
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    return absl::InvalidArgumentError(absl::StrCat(path, ": no shape"));
  std::string dims = m[1];
  std::regex number("[0-9]+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number);
       it != std::sregex_iterator(); ++it)
    t.shape.push_back(std::stoll(it->str()));
  int64_t bytes = product(t.shape) * sizeOf(t.type);
  t.bytes.resize(bytes);
  in.read(t.bytes.data(), bytes);
  if (in.gcount() != bytes)
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": has ", in.gcount(), " bytes of data, expected ", bytes));
  return t;
}

absl::Status writeNpy(const std::string &path, const HostTensor &tensor) {
  // NumPy has no bf16: such tensors are written as the f32 values they
  // widen to exactly.
  HostTensor widened;
  if (tensor.type == CommType::BF16)
    widened = tensor.convert(CommType::F32);
  const HostTensor &t = tensor.type == CommType::BF16 ? widened : tensor;
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i)
    shape += std::to_string(t.shape[i]) + (t.shape.size() == 1      ? ","
                                           : i + 1 < t.shape.size() ? ", "
                                                                    : "");
  shape += ")";
  std::string header =
      absl::StrCat("{'descr': '", descrOf(t.type),
                   "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad so that the data starts at a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return absl::PermissionDeniedError(absl::StrCat(tmp, ": cannot write"));
    out.write(kMagic, 6);
    out.put(1);
    out.put(0);
    out.put(static_cast<char>(header.size() & 0xff));
    out.put(static_cast<char>(header.size() >> 8));
    out.write(header.data(), header.size());
    out.write(t.bytes.data(), t.bytes.size());
    if (!out)
      return absl::DataLossError(absl::StrCat(tmp, ": write failed"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return absl::DataLossError(absl::StrCat(path, ": rename failed"));
  return absl::OkStatus();
}

} // namespace pc::runtime
