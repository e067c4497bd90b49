//===- Npy.cpp - NumPy .npy files -----------------------------------------===//

#include "runtime/exec/Npy.h"

#include "runtime/exec/Safetensors.h"

#include "absl/strings/str_cat.h"
#include "dialect/PcTraits.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <chrono>
#include <cstdio>
#include <cstring>
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

MappedNpy::~MappedNpy() = default;

namespace {
/// The file's size and modification time (ns), or an error.
absl::Status stamp(const std::string &path, uint64_t &size, int64_t &modified) {
  llvm::sys::fs::file_status st;
  if (std::error_code ec = llvm::sys::fs::status(path, st))
    return absl::NotFoundError(absl::StrCat(path, ": ", ec.message()));
  size = st.getSize();
  modified = std::chrono::duration_cast<std::chrono::nanoseconds>(
                 st.getLastModificationTime().time_since_epoch())
                 .count();
  return absl::OkStatus();
}
} // namespace

absl::Status MappedNpy::unchanged() const {
  uint64_t nowSize = 0;
  int64_t nowModified = 0;
  if (absl::Status s = stamp(filePath, nowSize, nowModified); !s.ok())
    return absl::FailedPreconditionError(
        absl::StrCat(s.message(), " (it was fed as an input)"));
  if (nowSize != size || nowModified != modified)
    return absl::FailedPreconditionError(absl::StrCat(
        filePath, ": changed since it was fed as an input; feed it again"));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const MappedNpy>>
MappedNpy::open(const std::string &path) {
  // Mapped (not read) when large: only the touched pages are read.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open (", file.getError().message(), ")"));
  llvm::StringRef bytes = (*file)->getBuffer();
  auto u8 = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  if (bytes.size() < 10 || bytes.substr(0, 6) != llvm::StringRef(kMagic, 6))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a .npy file (bad magic)"));
  size_t headerLen = 0, start = 0;
  if (u8(6) == 1) {
    headerLen = u8(8) | (u8(9) << 8);
    start = 10;
  } else if (u8(6) == 2 || u8(6) == 3) {
    if (bytes.size() < 12)
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": truncated header"));
    headerLen = u8(8) | (u8(9) << 8) | (u8(10) << 16) |
                (static_cast<size_t>(u8(11)) << 24);
    start = 12;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unsupported .npy version ", int(u8(6))));
  }
  if (bytes.size() < start + headerLen)
    return absl::InvalidArgumentError(absl::StrCat(path, ": truncated header"));
  std::string header = bytes.substr(start, headerLen).str();
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")))
    return absl::InvalidArgumentError(absl::StrCat(path, ": no descr"));
  std::string descr = m[1];
  std::shared_ptr<MappedNpy> npy(new MappedNpy());
  if (absl::Status s = stamp(path, npy->size, npy->modified); !s.ok())
    return s;
  if (descr == "<f4")
    npy->elementType = CommType::F32;
  else if (descr == "<f8")
    npy->elementType = CommType::F64;
  else if (descr == "<i4")
    npy->elementType = CommType::I32;
  else if (descr == "<i8")
    npy->elementType = CommType::I64;
  else if (descr == "<f2")
    npy->elementType = CommType::F16;
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
       it != std::sregex_iterator(); ++it) {
    if (it->str().size() > 15)
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": a dim too large"));
    npy->dims.push_back(std::stoll(it->str()));
  }
  if (!fitsElementLimit(npy->dims))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": more elements than a tensor may have"));
  size_t want = product(npy->dims) * sizeOf(npy->elementType);
  size_t have = bytes.size() - start - headerLen;
  if (have < want)
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", have, " bytes of data, expected ", want));
  npy->filePath = path;
  npy->elements = bytes.data() + start + headerLen;
  npy->buffer = std::move(*file);
  return std::shared_ptr<const MappedNpy>(std::move(npy));
}

absl::StatusOr<HostTensor> readNpy(const std::string &path) {
  absl::StatusOr<std::shared_ptr<const MappedNpy>> npy = MappedNpy::open(path);
  if (!npy.ok())
    return npy.status();
  HostTensor t = HostTensor::zeros((*npy)->shape(), (*npy)->type());
  std::memcpy(t.data(), (*npy)->data(), t.byteSize());
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
  std::string bytes(kMagic, 6);
  bytes.push_back(1);
  bytes.push_back(0);
  bytes.push_back(static_cast<char>(header.size() & 0xff));
  bytes.push_back(static_cast<char>(header.size() >> 8));
  bytes += header;
  bytes.append(t.data(), t.byteSize());
  // Written, flushed, closed and renamed, each checked: a full disk is an
  // error naming the file, and leaves neither a partial file nor a
  // temporary one.
  return writeFileAtomically(path, bytes);
}

} // namespace pc::runtime