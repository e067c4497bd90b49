//===- Safetensors.cpp - Reading .safetensors files -----------------------===//

#include "runtime/exec/Safetensors.h"

#include "absl/strings/str_cat.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <tuple>
#include <unistd.h>

namespace pc::runtime {

absl::Status checkJsonNesting(llvm::StringRef text, const std::string &what,
                              int maxDepth) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"')
      inString = true;
    else if (c == '{' || c == '[') {
      if (++depth > maxDepth)
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": JSON nested deeper than ", maxDepth, " levels"));
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, Input>>
mapSafetensors(const std::string &path,
               std::map<std::string, std::string> *metadata) {
  // Mapped, not read: a tensor's pages are read when a piece needs them.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::shared_ptr<const llvm::MemoryBuffer> buffer = std::move(*file);
  llvm::StringRef bytes = buffer->getBuffer();
  if (bytes.size() < 8)
    return absl::InvalidArgumentError(absl::StrCat(path, ": truncated"));
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[i]);
  if (headerLen > (uint64_t(1) << 30))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": header of ", headerLen, " bytes is too large"));
  if (bytes.size() - 8 < headerLen)
    return absl::InvalidArgumentError(absl::StrCat(path, ": truncated header"));
  llvm::StringRef header = bytes.substr(8, headerLen);
  llvm::StringRef data = bytes.substr(8 + headerLen);
  // The parser recurses: bound the nesting before it sees the text.
  if (absl::Status s = checkJsonNesting(header, path, 8); !s.ok())
    return s;
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
  // Checksums pc recorded for its tensors (pc.xxh3.<name>, hex).
  std::map<std::string, uint64_t> checksums;
  if (const llvm::json::Object *meta = top->getObject("__metadata__"))
    for (const auto &[k, v] : *meta) {
      llvm::StringRef key = k;
      uint64_t sum = 0;
      if (std::optional<llvm::StringRef> text = v.getAsString();
          text && key.consume_front("pc.xxh3.") && !text->getAsInteger(16, sum))
        checksums[key.str()] = sum;
    }
  std::map<std::string, Input> tensors;
  // Byte ranges, to check that they tile the data: no overlap, no gap.
  std::vector<std::tuple<int64_t, int64_t, std::string>> ranges;
  for (const auto &[key, value] : *top) {
    std::string name = key.str();
    if (name == "__metadata__") {
      if (const llvm::json::Object *meta = value.getAsObject();
          meta && metadata)
        for (const auto &[k, v] : *meta)
          if (std::optional<llvm::StringRef> text = v.getAsString())
            (*metadata)[k.str()] = text->str();
      continue;
    }
    auto bad = [&](const std::string &why) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor '", name, "': ", why));
    };
    const llvm::json::Object *t = value.getAsObject();
    if (!t)
      return bad("not an object");
    std::optional<llvm::StringRef> dtype = t->getString("dtype");
    const llvm::json::Array *shapeJson = t->getArray("shape");
    const llvm::json::Array *offsets = t->getArray("data_offsets");
    if (!dtype || !shapeJson || !offsets || offsets->size() != 2)
      return bad("needs dtype, shape and two data_offsets");
    CommType type;
    if (*dtype == "F32")
      type = CommType::F32;
    else if (*dtype == "F64")
      type = CommType::F64;
    else if (*dtype == "I32")
      type = CommType::I32;
    else if (*dtype == "I64")
      type = CommType::I64;
    else if (*dtype == "F16")
      type = CommType::F16;
    else if (*dtype == "BF16")
      type = CommType::BF16;
    else if (*dtype == "U8")
      type = CommType::U8;
    else
      return bad(absl::StrCat("dtype ", dtype->str(),
                              " is not F32, F16, BF16, F64, I32, I64 or U8"));
    // The element count is bounded by the file's size as it grows, so a
    // hostile shape cannot overflow it.
    std::vector<int64_t> shape;
    int64_t elements = 1;
    for (const llvm::json::Value &d : *shapeJson) {
      std::optional<int64_t> n = d.getAsInteger();
      if (!n || *n < 0)
        return bad("bad shape");
      shape.push_back(*n);
      if (*n != 0 && elements > static_cast<int64_t>(data.size()) / *n)
        return bad("its shape holds more elements than the file has bytes");
      elements *= *n;
    }
    std::optional<int64_t> begin = (*offsets)[0].getAsInteger();
    std::optional<int64_t> end = (*offsets)[1].getAsInteger();
    int64_t size = product(shape) * sizeOf(type);
    if (!begin || !end || *begin < 0 || *end < *begin ||
        *end > static_cast<int64_t>(data.size()) || *end - *begin != size)
      return bad(absl::StrCat("data_offsets do not hold its ", size,
                              " bytes in the file's ", data.size()));
    std::vector<int64_t> zero(shape.size(), 0);
    Input::Piece piece{zero, shape, data.data() + *begin};
    if (auto sum = checksums.find(name); sum != checksums.end())
      piece.checksum = sum->second;
    piece.origin = absl::StrCat(path, ": tensor '", name, "'");
    if (!tensors
             .emplace(name,
                      Input::tiled(shape, type, {std::move(piece)}, buffer))
             .second)
      return bad("named twice");
    ranges.push_back({*begin, *end, name});
  }
  std::sort(ranges.begin(), ranges.end());
  int64_t covered = 0;
  std::string last;
  for (auto &[begin, end, name] : ranges) {
    if (begin < covered)
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensors '", last, "' and '", name,
                       "' overlap in the file's data"));
    if (begin > covered)
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", begin - covered, " bytes before tensor '",
                       name, "' belong to no tensor"));
    covered = end;
    last = name;
  }
  if (covered != static_cast<int64_t>(data.size()))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", static_cast<int64_t>(data.size()) - covered,
                     " bytes at the end belong to no tensor"));
  return tensors;
}

absl::StatusOr<std::map<std::string, HostTensor>>
readSafetensors(const std::string &path) {
  absl::StatusOr<std::map<std::string, Input>> mapped = mapSafetensors(path);
  if (!mapped.ok())
    return mapped.status();
  std::map<std::string, HostTensor> tensors;
  for (auto &[name, input] : *mapped) {
    absl::StatusOr<HostTensor> t = input.whole();
    if (!t.ok())
      return t.status();
    tensors.emplace(name, *std::move(t));
  }
  return tensors;
}

namespace {
const char *dtypeOf(CommType t) {
  switch (t) {
  case CommType::F32:
    return "F32";
  case CommType::F64:
    return "F64";
  case CommType::I32:
    return "I32";
  case CommType::I64:
    return "I64";
  case CommType::F16:
    return "F16";
  case CommType::BF16:
    return "BF16";
  case CommType::U8:
    return "U8";
  }
  return "?";
}
} // namespace

absl::Status writeFileAtomically(const std::string &path,
                                 const std::string &bytes) {
  // A name no other writer uses (another run, another thread), created
  // exclusively (O_EXCL) in the same directory, so that the rename is
  // atomic. Only the suffix varies: the path itself is taken as it is.
  int fd = -1;
  std::string tmp;
  uint64_t seed =
      static_cast<uint64_t>(::getpid()) ^
      static_cast<uint64_t>(
          std::chrono::steady_clock::now().time_since_epoch().count());
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp =
        absl::StrCat(path, ".tmp-", absl::Hex(seed + attempt * 0x9e3779b9ull));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot create a file next to it (",
                     std::strerror(errno), ")"));
  auto failed = [&](const char *what) {
    std::string why = std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    ::unlink(tmp.c_str());
    return absl::DataLossError(absl::StrCat(path, ": ", what, " failed (", why,
                                            "); the file was not "
                                            "replaced"));
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return failed("writing");
    done += n;
  }
  // The data is on disk before the name points at it; a full disk can show
  // only at fsync or close.
  if (::fsync(fd) != 0)
    return failed("flushing");
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0)
    return failed("closing");
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return failed("renaming");
  // And the new name itself survives a crash.
  std::string dir = llvm::sys::path::parent_path(path).str();
  int dirFd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_CLOEXEC);
  if (dirFd >= 0) {
    // Some file systems cannot flush a directory (EINVAL); the rename is
    // then as durable as they make it.
    bool synced = ::fsync(dirFd) == 0 || errno == EINVAL || errno == EBADF;
    std::string why = std::strerror(errno);
    ::close(dirFd);
    if (!synced)
      return absl::DataLossError(absl::StrCat(
          path, ": written, but its directory could not be flushed (", why,
          ")"));
  }
  return absl::OkStatus();
}

absl::Status
writeSafetensors(const std::string &path,
                 const std::map<std::string, HostTensor> &tensors,
                 const std::map<std::string, std::string> &metadata) {
  llvm::json::Object header;
  // Each tensor's checksum, checked when a reader first reads its bytes.
  llvm::json::Object meta;
  for (auto &[k, v] : metadata)
    meta[k] = v;
  for (auto &[name, t] : tensors)
    meta["pc.xxh3." + name] = llvm::utohexstr(
        llvm::xxh3_64bits(llvm::StringRef(t.data(), t.byteSize())));
  if (!meta.empty())
    header["__metadata__"] = std::move(meta);
  int64_t offset = 0;
  for (auto &[name, t] : tensors) {
    llvm::json::Array shape;
    for (int64_t d : t.shape)
      shape.push_back(d);
    int64_t bytes = static_cast<int64_t>(t.bytes.size());
    header[name] = llvm::json::Object{
        {"dtype", dtypeOf(t.type)},
        {"shape", std::move(shape)},
        {"data_offsets", llvm::json::Array{offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::json::Value(std::move(header));
  // Pad the header with spaces to 8 bytes, as the format recommends.
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string file;
  file.reserve(8 + json.size() + offset);
  for (int i = 0; i < 8; ++i)
    file.push_back(
        static_cast<char>((uint64_t(json.size()) >> (8 * i)) & 0xff));
  file += json;
  for (auto &[name, t] : tensors)
    file.append(t.bytes.data(), t.bytes.size());
  return writeFileAtomically(path, file);
}

} // namespace pc::runtime
