//===- PcContextTest.h - A test fixture with the pc dialects ----*- C++ -*-===//
//
// The fixture of tests that parse or build pc IR: an MLIRContext with every
// dialect of the shared registration point loaded, and the passes
// registered, as pc-opt has them.
//
//===----------------------------------------------------------------------===//

#ifndef PC_TEST_UNIT_PCCONTEXTTEST_H
#define PC_TEST_UNIT_PCCONTEXTTEST_H

#include "passes/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

namespace pc::test {

class PcContextTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { pc::registerAllPasses(); }

  PcContextTest() {
    mlir::DialectRegistry registry;
    pc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  mlir::MLIRContext context;
};

} // namespace pc::test

#endif // PC_TEST_UNIT_PCCONTEXTTEST_H
