//===- Device.cpp - The device abstraction of the runtime -----------------===//

#include "runtime/device/Device.h"

namespace pc::runtime {

Buffer &Buffer::operator=(Buffer &&other) noexcept {
  if (this != &other) {
    reset();
    owner = other.owner;
    ptr = other.ptr;
    size = other.size;
    other.owner = nullptr;
    other.ptr = nullptr;
    other.size = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (owner)
    owner->release(ptr, size);
  owner = nullptr;
  ptr = nullptr;
  size = 0;
}

} // namespace pc::runtime
