//===- RunWire.h - What a run's processes send each other -------*- C++ -*-===//
//
// Under MPI each process runs its own ranks and sends process 0 what they
// brought back (results, communication counts, peaks, trace events), and
// process 0 sends the assembled results back to every process. These are
// the encodings, over runtime/comm/Wire.h.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_RUNWIRE_H
#define PC_RUNTIME_EXEC_RUNWIRE_H

#include "runtime/comm/Wire.h"
#include "runtime/exec/CpuExecutor.h"

namespace pc::runtime {

void writeTensor(WireWriter &w, const HostTensor &t);
HostTensor readTensor(WireReader &r);

/// What an endpoint did between two readings of its counters.
CommStats since(const CommStats &now, const CommStats &before);

/// What one hosted rank brings back from a run.
struct RankResult {
  std::vector<std::vector<HostTensor>> results; // per kept iteration
  CommStats stats;
  int64_t peak = 0, tensorPeak = 0;
  std::vector<OpEvent> events;
  std::vector<double> iterationDoneUs;
};
void writeRankResult(WireWriter &w, int64_t rank, const RankResult &r);
/// After the rank (which the caller read).
RankResult readRankResult(WireReader &r);

/// Results of several iterations.
void writeResults(WireWriter &w,
                  const std::vector<std::vector<HostTensor>> &all);
std::vector<std::vector<HostTensor>> readResults(WireReader &r);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_RUNWIRE_H
