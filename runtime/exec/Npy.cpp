//===- Npy.cpp - NumPy .npy files -----------------------------------------===//

#include "runtime/exec/Npy.h"

#include "runtime/exec/Safetensors.h"

#include "absl/strings/str_cat.h"
#include "dialect/PcTraits.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

namespace pc::runtime {

namespace {
const char kMagic[] = "\x93NUMPY";

/// Headers are a few dozen bytes; NumPy pads them to 64-byte multiples.
constexpr size_t kMaxHeader = 64 * 1024;
constexpr size_t kMaxDims = 64;

/// The text after `'key':` in a header dictionary, spaces skipped.
std::optional<llvm::StringRef> rawValue(llvm::StringRef header,
                                        llvm::StringRef key) {
  std::string quoted = ("'" + key + "'").str();
  size_t at = header.find(quoted);
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  llvm::StringRef rest = header.drop_front(at + quoted.size()).ltrim();
  if (!rest.consume_front(":"))
    return std::nullopt;
  return rest.ltrim();
}

/// The quoted string value of `key` (no escapes: dtype strings have none).
std::optional<llvm::StringRef> quotedValue(llvm::StringRef header,
                                           llvm::StringRef key) {
  std::optional<llvm::StringRef> v = rawValue(header, key);
  if (!v || !v->consume_front("'"))
    return std::nullopt;
  size_t end = v->find('\'');
  if (end == llvm::StringRef::npos)
    return std::nullopt;
  return v->take_front(end);
}

/// The 'shape' tuple: non-negative decimal dims, at most kMaxDims, each
/// below 10^15; a linear scan, no regex (hostile headers).
absl::StatusOr<std::vector<int64_t>> shapeOf(llvm::StringRef header) {
  std::optional<llvm::StringRef> v = rawValue(header, "shape");
  if (!v || !v->consume_front("("))
    return absl::InvalidArgumentError("no shape");
  std::vector<int64_t> dims;
  llvm::StringRef rest = *v;
  while (true) {
    rest = rest.ltrim();
    if (rest.consume_front(")"))
      return dims;
    if (rest.starts_with("-"))
      return absl::InvalidArgumentError("a negative dim in its shape");
    size_t digits = 0;
    while (digits < rest.size() && llvm::isDigit(rest[digits]))
      ++digits;
    if (digits == 0)
      return absl::InvalidArgumentError("a malformed shape");
    if (digits > 15)
      return absl::InvalidArgumentError("a dim too large in its shape");
    if (dims.size() == kMaxDims)
      return absl::InvalidArgumentError(
          absl::StrCat("more than ", kMaxDims, " dims"));
    int64_t d = 0;
    rest.take_front(digits).getAsInteger(10, d);
    dims.push_back(d);
    rest = rest.drop_front(digits).ltrim();
    if (!rest.consume_front(",") && !rest.starts_with(")"))
      return absl::InvalidArgumentError("a malformed shape");
  }
}

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
  case CommType::U8:
    return "|u1";
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

absl::StatusOr<NpyHeader> parseNpyHeader(const std::string &path,
                                         llvm::StringRef bytes) {
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
  if (headerLen > kMaxHeader)
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a header of ", headerLen, " bytes (at most ",
                     kMaxHeader, ")"));
  llvm::StringRef header = bytes.substr(start, headerLen);
  // NumPy reads the last of repeated keys, this reader the first: a header
  // that repeats one would mean different tensors to the two.
  for (llvm::StringRef key : {"'descr'", "'fortran_order'", "'shape'"})
    if (size_t first = header.find(key);
        first != llvm::StringRef::npos &&
        header.find(key, first + key.size()) != llvm::StringRef::npos)
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": its header repeats the key ", key.str()));
  std::optional<llvm::StringRef> descr = quotedValue(header, "descr");
  if (!descr || descr->size() > 8)
    return absl::InvalidArgumentError(absl::StrCat(path, ": no descr"));
  std::optional<llvm::StringRef> fortran = rawValue(header, "fortran_order");
  if (fortran && fortran->starts_with("True"))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": Fortran-ordered arrays are not supported"));
  absl::StatusOr<std::vector<int64_t>> dims = shapeOf(header);
  if (!dims.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", dims.status().message()));
  if (!fitsElementLimit(*dims))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": more elements than a tensor may have"));
  return NpyHeader{descr->str(), *std::move(dims), start + headerLen};
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
  absl::StatusOr<NpyHeader> header = parseNpyHeader(path, (*file)->getBuffer());
  if (!header.ok())
    return header.status();
  std::shared_ptr<MappedNpy> npy(new MappedNpy());
  if (absl::Status s = stamp(path, npy->size, npy->modified); !s.ok())
    return s;
  const std::string &descr = header->descr;
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
  npy->dims = header->shape;
  size_t want = product(npy->dims) * sizeOf(npy->elementType);
  size_t have = (*file)->getBufferSize() - header->dataOffset;
  if (have < want)
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", have, " bytes of data, expected ", want));
  npy->filePath = path;
  npy->elements = (*file)->getBufferStart() + header->dataOffset;
  npy->buffer = std::move(*file);
  return std::shared_ptr<const MappedNpy>(std::move(npy));
}

absl::StatusOr<HostTensor> readNpy(const std::string &path) {
  absl::StatusOr<std::shared_ptr<const MappedNpy>> npy = MappedNpy::open(path);
  if (!npy.ok())
    return npy.status();
  HostTensor t = HostTensor::zeros((*npy)->shape(), (*npy)->type());
  copyBytes(t.data(), (*npy)->data(), t.byteSize());
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