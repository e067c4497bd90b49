//===- SessionTestUtil.h - Helpers for tests of api::Session ----*- C++ -*-===//
//
// What several API tests need: a model's source text, and a session's
// parameters read back through a checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef PC_TEST_UNIT_SESSIONTESTUTIL_H
#define PC_TEST_UNIT_SESSIONTESTUTIL_H

#include "api/Program.h"
#include "runtime/exec/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace pc::test {

inline std::string readSource(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Every tensor of the session's parameters, read back from a checkpoint
/// saved under the test's temporary directory as `name`.
inline std::map<std::string, runtime::HostTensor>
parametersOf(api::Session &s, const std::string &name) {
  std::string path = ::testing::TempDir() + "/" + name;
  EXPECT_TRUE(s.save(path).ok());
  absl::StatusOr<std::map<std::string, runtime::HostTensor>> t =
      runtime::readSafetensors(path);
  std::remove(path.c_str());
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : std::map<std::string, runtime::HostTensor>{};
}

} // namespace pc::test

#endif // PC_TEST_UNIT_SESSIONTESTUTIL_H
