//===- Input.cpp - A logical input that runs slice pieces from ------------===//

#include "runtime/exec/Input.h"

#include "runtime/device/Tensor.h"

namespace pc::runtime {

Input Input::borrow(const HostTensor &t) {
  Input in;
  in.host = &t;
  in.want = t.type;
  return in;
}

Input Input::own(HostTensor t) {
  Input in;
  in.owned = std::make_shared<const HostTensor>(std::move(t));
  in.host = in.owned.get();
  in.want = in.host->type;
  return in;
}

Input Input::file(std::shared_ptr<const MappedNpy> file, CommType type) {
  Input in;
  in.npy = std::move(file);
  in.want = type;
  return in;
}

const std::vector<int64_t> &Input::shape() const {
  return host ? host->shape : npy->shape();
}

HostTensor Input::box(std::span<const int64_t> offsets,
                      std::span<const int64_t> sizes) const {
  const std::vector<int64_t> &whole = shape();
  CommType from = host ? host->type : npy->type();
  const char *src = host ? host->data() : npy->data();
  std::vector<int64_t> dims(sizes.begin(), sizes.end());
  HostTensor piece = HostTensor::zeros(dims, from);
  copyBox(src, whole, offsets, piece.data(), piece.shape,
          std::vector<int64_t>(dims.size(), 0), sizes, sizeOf(from));
  if (from == want)
    return piece;
  HostTensor converted = HostTensor::zeros(dims, want);
  convertInto(piece, converted);
  return converted;
}

} // namespace pc::runtime
