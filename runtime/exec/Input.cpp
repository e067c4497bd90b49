//===- Input.cpp - A logical tensor read by pieces ------------------------===//

#include "runtime/exec/Input.h"

#include "runtime/device/Tensor.h"

#include "absl/strings/str_cat.h"

#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>

namespace pc::runtime {

struct Input::Verified {
  std::mutex mu;
  std::vector<signed char> state; // 0 unchecked, 1 good, -1 corrupt
};

absl::Status Input::verify(size_t i) const {
  const Piece &p = pieces[i];
  if (!p.checksum)
    return absl::OkStatus();
  std::lock_guard<std::mutex> lock(verified->mu);
  signed char &state = verified->state[i];
  if (state == 0) {
    size_t bytes = product(p.shape) * sizeOf(stored);
    state = llvm::xxh3_64bits(llvm::StringRef(p.data, bytes)) == *p.checksum
                ? 1
                : -1;
  }
  if (state < 0)
    return absl::DataLossError(
        absl::StrCat(p.origin, ": its bytes do not match their checksum "
                               "(the file is corrupt)"));
  return absl::OkStatus();
}

Input Input::borrow(const HostTensor &t) {
  return tiled(t.shape, t.type,
               {{std::vector<int64_t>(t.shape.size(), 0), t.shape, t.data()}},
               nullptr);
}

Input Input::own(HostTensor t) {
  auto held = std::make_shared<const HostTensor>(std::move(t));
  Input in = borrow(*held);
  in.keepAlive = std::move(held);
  return in;
}

Input Input::file(std::shared_ptr<const MappedNpy> file, CommType type) {
  const std::vector<int64_t> &shape = file->shape();
  Input in = tiled(
      shape, file->type(),
      {{std::vector<int64_t>(shape.size(), 0), shape, file->data()}}, file);
  in.want = type;
  return in;
}

Input Input::tiled(std::vector<int64_t> shape, CommType type,
                   std::vector<Piece> pieces,
                   std::shared_ptr<const void> keepAlive) {
  Input in;
  in.dims = std::move(shape);
  in.stored = in.want = type;
  in.pieces = std::move(pieces);
  in.keepAlive = std::move(keepAlive);
  in.verified = std::make_shared<Verified>();
  in.verified->state.assign(in.pieces.size(), 0);
  return in;
}

int64_t Input::bytesOf(IdFormat format) {
  switch (format) {
  case IdFormat::U8:
    return 1;
  case IdFormat::U16:
    return 2;
  case IdFormat::U32:
  case IdFormat::I32:
    return 4;
  case IdFormat::I64:
    return 8;
  }
  return 1;
}

Input Input::ids(std::vector<int64_t> shape, CommType type, IdFormat format,
                 int64_t limit, std::vector<Piece> pieces,
                 std::shared_ptr<const void> keepAlive) {
  Input in =
      tiled(std::move(shape), type, std::move(pieces), std::move(keepAlive));
  in.idFormat = format;
  in.idLimit = limit;
  return in;
}

namespace {
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;)
    strides[d - 1] = strides[d] * dims[d];
  return strides;
}

/// Element `i` of an array of T (little endian, as the files are; an
/// unaligned read through memcpy).
template <typename T> int64_t load(const char *data, int64_t i) {
  T v;
  std::memcpy(&v, data + sizeof(T) * i, sizeof(T));
  return static_cast<int64_t>(v);
}

/// Element `i` of ids stored as `format`, widened.
int64_t idAt(const char *data, int64_t i, Input::IdFormat format) {
  using F = Input::IdFormat;
  switch (format) {
  case F::U8:
    return load<uint8_t>(data, i);
  case F::U16:
    return load<uint16_t>(data, i);
  case F::U32:
    return load<uint32_t>(data, i);
  case F::I32:
    return load<int32_t>(data, i);
  case F::I64:
    return load<int64_t>(data, i);
  }
  return 0;
}
} // namespace

std::string Input::sources(std::span<const int64_t> offsets,
                           std::span<const int64_t> sizes) const {
  if (!idFormat)
    return "";
  std::string out;
  for (const Piece &p : pieces) {
    bool overlaps = true;
    for (size_t d = 0; d < sizes.size() && overlaps; ++d)
      overlaps = std::max(offsets[d], p.offsets[d]) <
                 std::min(offsets[d] + sizes[d], p.offsets[d] + p.shape[d]);
    if (overlaps)
      absl::StrAppend(&out, out.empty() ? "" : " ", p.origin, "@", p.position);
  }
  return out;
}

absl::StatusOr<HostTensor> Input::idBox(std::span<const int64_t> offsets,
                                        std::span<const int64_t> sizes) const {
  // Per piece: its overlap with the box, converted id by id. Pieces are
  // rows of a batch, so the overlap is a run of ids (rank 1 or 2 boxes).
  size_t rank = sizes.size();
  std::vector<int64_t> dimsOut(sizes.begin(), sizes.end());
  HostTensor out = HostTensor::zeros(dimsOut, want);
  std::vector<int64_t> outStrides = rowMajorStrides(dimsOut);
  // An id must also fit the type it is read as.
  int64_t limit = want == CommType::I32
                      ? std::min<int64_t>(idLimit, int64_t(1) << 31)
                      : idLimit;
  for (const Piece &p : pieces) {
    std::vector<int64_t> lo(rank), extent(rank);
    bool empty = false;
    for (size_t d = 0; d < rank && !empty; ++d) {
      lo[d] = std::max(offsets[d], p.offsets[d]);
      int64_t hi = std::min(offsets[d] + sizes[d], p.offsets[d] + p.shape[d]);
      extent[d] = hi - lo[d];
      empty = extent[d] <= 0;
    }
    if (empty)
      continue;
    std::vector<int64_t> pieceStrides = rowMajorStrides(p.shape);
    int64_t count = product(extent);
    std::vector<int64_t> at(rank, 0); // within the overlap
    for (int64_t k = 0; k < count; ++k) {
      int64_t src = 0, dst = 0;
      for (size_t d = 0; d < rank; ++d) {
        src += (lo[d] + at[d] - p.offsets[d]) * pieceStrides[d];
        dst += (lo[d] + at[d] - offsets[d]) * outStrides[d];
      }
      int64_t id = idAt(p.data, src, *idFormat);
      if (id < 0 || id >= limit)
        return absl::OutOfRangeError(absl::StrCat(
            p.origin, ": token ", id, " at position ", p.position + src,
            id < 0 ? " is negative"
                   : absl::StrCat(" is not below the model's vocabulary of ",
                                  limit)));
      if (want == CommType::I32)
        out.as<int32_t>()[dst] = static_cast<int32_t>(id);
      else
        out.as<int64_t>()[dst] = id;
      for (size_t d = rank; d-- > 0;)
        if (++at[d] < extent[d])
          break;
        else
          at[d] = 0;
    }
  }
  return out;
}

absl::StatusOr<HostTensor> Input::box(std::span<const int64_t> offsets,
                                      std::span<const int64_t> sizes) const {
  if (idFormat)
    return idBox(offsets, sizes);
  size_t rank = sizes.size();
  std::vector<int64_t> dimsOut(sizes.begin(), sizes.end());
  HostTensor out = HostTensor::zeros(dimsOut, stored);
  // Each piece's overlap with the box, copied from the piece's memory: the
  // rest of every piece stays unread.
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece &p = pieces[i];
    std::vector<int64_t> from(rank), to(rank), extent(rank);
    bool empty = false;
    for (size_t d = 0; d < rank && !empty; ++d) {
      int64_t lo = std::max(offsets[d], p.offsets[d]);
      int64_t hi = std::min(offsets[d] + sizes[d], p.offsets[d] + p.shape[d]);
      empty = hi <= lo;
      from[d] = lo - p.offsets[d];
      to[d] = lo - offsets[d];
      extent[d] = hi - lo;
    }
    if (empty)
      continue;
    if (absl::Status s = verify(i); !s.ok())
      return s;
    copyBox(p.data, p.shape, from, out.data(), out.shape, to, extent,
            sizeOf(stored));
  }
  if (stored == want)
    return out;
  if (stored == CommType::I64 && want == CommType::I32)
    for (int64_t i = 0, n = out.numel(); i < n; ++i) {
      int64_t v = out.as<int64_t>()[i];
      if (v < std::numeric_limits<int32_t>::min() ||
          v > std::numeric_limits<int32_t>::max())
        return absl::OutOfRangeError(
            absl::StrCat("the value ", v, " does not fit the input's i32"));
    }
  HostTensor converted = HostTensor::zeros(dimsOut, want);
  convertInto(out, converted);
  return converted;
}

absl::StatusOr<HostTensor> Input::whole() const {
  return box(std::vector<int64_t>(dims.size(), 0), dims);
}

} // namespace pc::runtime
