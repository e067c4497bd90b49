//===- HostMemory.cpp - What the machine can allocate ---------------------===//

#include "runtime/device/HostMemory.h"

#include "absl/strings/str_cat.h"

#include <fstream>
#include <string>
#include <unistd.h>

namespace pc::runtime {

int64_t availableHostMemory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:")
      return kib * 1024;
  // No /proc: the free pages.
  long pages = ::sysconf(_SC_AVPHYS_PAGES), size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? static_cast<int64_t>(pages) * size : INT64_MAX;
}

absl::Status checkHostMemory(int64_t bytes, absl::string_view what) {
  int64_t available = availableHostMemory();
  if (bytes >= 0 && bytes <= available)
    return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      what, " needs ",
      bytes >= 0 ? absl::StrCat(bytes, " bytes") : std::string("more bytes"),
      " of memory; the machine has ", available, " available"));
}

} // namespace pc::runtime
