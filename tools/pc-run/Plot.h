//===- Plot.h - Loss curves as an SVG chart ---------------------*- C++ -*-===//
//
// pc-run --plot: the training loss per step and the validation loss at each
// evaluation, against the step, in one SVG a browser shows. Drawn from a
// training run's report (its `steps` and `validation` arrays), during the
// run or afterwards (--plot-report).
//
//===----------------------------------------------------------------------===//

#ifndef PC_TOOLS_PC_RUN_PLOT_H
#define PC_TOOLS_PC_RUN_PLOT_H

#include "absl/status/status.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace pc::tools {

/// The chart of `steps` ({step, loss, ...} objects) and `validation`
/// ({step, loss}), titled `title`.
std::string lossCurvesSvg(const llvm::json::Array &steps,
                          const llvm::json::Array &validation,
                          const std::string &title);

/// Writes the chart of the report at `reportPath` to `svgPath` (atomically).
/// Errors name the file: unreadable, not JSON, or without a training curve.
absl::Status plotReport(const std::string &reportPath,
                        const std::string &svgPath);

} // namespace pc::tools

#endif // PC_TOOLS_PC_RUN_PLOT_H
