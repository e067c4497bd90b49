//===- CudaPluginLoader.cpp - Finds and loads libpc-cuda.so ---------------===//

#include "runtime/exec/CudaPluginLoader.h"
#include "runtime/cuda/CudaPluginAbi.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace pc::runtime {

std::vector<std::string> cudaPluginCandidates() {
  if (const char *env = std::getenv("PC_CUDA_PLUGIN"); env && *env)
    return {env};
  std::vector<std::string> out;
  std::error_code ec;
  std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    out.push_back((exe.parent_path() / ".." / PC_CUDA_PLUGIN_LIBDIR / "pc" /
                   cuda::kCudaPluginFile)
                      .lexically_normal()
                      .string());
  for (const char *path :
       {PC_CUDA_PLUGIN_BUILD_PATH, PC_CUDA_PLUGIN_INSTALL_PATH})
    if (std::find(out.begin(), out.end(), path) == out.end())
      out.push_back(path);
  return out;
}

namespace {

/// Loads the module at `path` and checks its table; the reason it does not
/// fit otherwise.
absl::StatusOr<const cuda::CudaPluginApi *> loadFrom(const std::string &path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  // Local symbols (the module exports its entry alone), and never unloaded:
  // the CUDA libraries it brings keep threads and exit handlers.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    const char *why = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": ", why ? why : "dlopen failed"));
  }
  auto entry = reinterpret_cast<cuda::CudaPluginEntry>(
      dlsym(handle, cuda::kCudaPluginSymbol));
  if (!entry)
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": has no ", cuda::kCudaPluginSymbol, " (not a pc CUDA module)"));
  const cuda::CudaPluginApi *api = entry();
  if (!api || !api->abi || std::strcmp(api->abi, PC_CUDA_PLUGIN_ABI) != 0)
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": a module of another pc build (interface ",
        api && api->abi ? std::string(api->abi).substr(0, 12) : "unknown",
        ", this program's ", std::string(PC_CUDA_PLUGIN_ABI).substr(0, 12),
        ")"));
  return api;
}

} // namespace

absl::StatusOr<const cuda::CudaPluginApi *> CudaPluginLoader::get() {
  std::lock_guard<std::mutex> lock(mu);
  if (loaded)
    return *loaded;
  std::vector<std::string> why;
  for (const std::string &path : cudaPluginCandidates()) {
    absl::StatusOr<const cuda::CudaPluginApi *> api = loadFrom(path);
    if (api.ok()) {
      loaded = api;
      return *loaded;
    }
    why.push_back(std::string(api.status().message()));
  }
  const char *env = std::getenv("PC_CUDA_PLUGIN");
  loaded = absl::FailedPreconditionError(
      absl::StrCat("the CUDA backend's module (", cuda::kCudaPluginFile,
                   ") could not be loaded; tried ", absl::StrJoin(why, "; "),
                   env && *env ? " (PC_CUDA_PLUGIN names it)"
                               : ". Set PC_CUDA_PLUGIN to its path"));
  return *loaded;
}

} // namespace pc::runtime
