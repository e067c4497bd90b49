//===- Device.cpp - The device abstraction of the runtime -----------------===//

#include "runtime/device/Device.h"

#include <string>

#ifdef __linux__
#include <pthread.h>
#endif

namespace pc::runtime {

void nameThisThread(std::string_view name) {
#ifdef __linux__
  // Longer names are refused, not cut.
  std::string shortName(name.substr(0, 15));
  pthread_setname_np(pthread_self(), shortName.c_str());
#else
  (void)name;
#endif
}

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
