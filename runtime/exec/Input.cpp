//===- Input.cpp - A logical tensor read by pieces ------------------------===//

#include "runtime/exec/Input.h"

#include "runtime/device/Tensor.h"

#include "absl/strings/str_cat.h"

#include "llvm/Support/xxhash.h"

#include <algorithm>
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

absl::StatusOr<HostTensor> Input::box(std::span<const int64_t> offsets,
                                      std::span<const int64_t> sizes) const {
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
