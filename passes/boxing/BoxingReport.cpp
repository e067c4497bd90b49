//===- BoxingReport.cpp - --pc-boxing-report ------------------------------===//

#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace pc {
#define GEN_PASS_DEF_BOXINGREPORT
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

/// "0-3, 6" for a sorted list of ranks.
std::string rankList(const std::vector<int64_t> &ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i)
      s += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return s;
}

struct Totals {
  int64_t sent = 0, received = 0, collectives = 0;
};

struct BoxingReportPass : public pc::impl::BoxingReportBase<BoxingReportPass> {
  using BoxingReportBase::BoxingReportBase;

  void runOnOperation() override {
    boxing::Planner planner(costParams(getOperation()));
    MeshCache meshes(getOperation());
    llvm::raw_ostream &os = llvm::outs();
    Totals all;
    int64_t index = 0;
    getOperation().walk([&](BoxingOp op) {
      SbpAttr src = getSbp(op.getInput().getType()), dst = getSbp(op.getType());
      RankedTensorType type = op.getType();
      int64_t elem = elementBytes(type);
      MeshOp srcMesh = meshes.lookup(src), dstMesh = meshes.lookup(dst);
      os << "boxing #" << index++ << " " << op.getLoc() << ": " << type << " "
         << src.formatEntries() << " on " << src.getMesh() << " -> "
         << dst.formatEntries() << " on " << dst.getMesh() << "\n";

      // Per global rank: bytes sent and received.
      std::map<int64_t, std::pair<int64_t, int64_t>> bytes;
      int64_t collectives = 0;
      double cost = 0;
      // Exact figures cost a walk over every group of every rank; past a few
      // thousand devices the report gives the plan and its cost only.
      constexpr int64_t kMaxReportedDevices = 4096;
      bool perRank = srcMesh.getNumDevices() <= kMaxReportedDevices &&
                     dstMesh.getNumDevices() <= kMaxReportedDevices;
      auto addPlan = [&](const boxing::Plan &plan, MeshOp mesh) {
        for (const boxing::Step &step : plan.steps)
          os << "  " << step.str() << "\n";
        collectives += plan.numCollectives();
        if (!perRank)
          return;
        for (int64_t p = 0, n = mesh.getNumDevices(); p < n; ++p) {
          boxing::RankBytes b =
              boxing::planBytes(plan, type.getShape(), elem, mesh.getShape(),
                                delinearize(mesh.getShape(), p));
          bytes[mesh.getRank(p)].first += b.sent;
          bytes[mesh.getRank(p)].second += b.received;
        }
      };
      if (src.getMesh() == dst.getMesh()) {
        const boxing::Plan &plan =
            planner.plan(type.getShape(), elem, srcMesh.getShape(),
                         src.getEntries(), dst.getEntries());
        addPlan(plan, srcMesh);
        cost = plan.cost;
      } else {
        boxing::TransferPlan t = planner.planTransfer(
            type.getShape(), elem, meshInfo(srcMesh), src.getEntries(),
            meshInfo(dstMesh), dst.getEntries());
        addPlan(t.pre, srcMesh);
        os << "  transfer " << formatNdSbp(t.sent) << " on " << src.getMesh()
           << " -> " << formatNdSbp(t.received) << " on " << dst.getMesh()
           << ": " << t.transfers.size() << " pieces\n";
        ++collectives;
        for (const boxing::Transfer &x : t.transfers) {
          if (x.local || !perRank)
            continue;
          int64_t n = product(x.box.sizes) * elem;
          bytes[srcMesh.getRank(x.srcPosition)].first += n;
          bytes[dstMesh.getRank(x.dstPosition)].second += n;
        }
        addPlan(t.post, dstMesh);
        cost = t.cost;
      }
      // Ranks with equal figures share a line, in the order of their first
      // rank.
      std::map<std::pair<int64_t, int64_t>, size_t> lineOf;
      std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<int64_t>>>
          lines;
      Totals mine;
      for (auto &[rank, sr] : bytes) {
        auto [it, inserted] = lineOf.try_emplace(sr, lines.size());
        if (inserted)
          lines.push_back({sr, {}});
        lines[it->second].second.push_back(rank);
        mine.sent += sr.first;
        mine.received += sr.second;
      }
      if (!perRank)
        os << "  (per-rank figures omitted: more than " << kMaxReportedDevices
           << " devices)\n";
      for (auto &[sr, ranks] : lines)
        os << "  ranks " << rankList(ranks) << ": sent " << sr.first
           << " B, received " << sr.second << " B\n";
      os << "  total: " << collectives << " collectives, sent " << mine.sent
         << " B, received " << mine.received << " B, planning cost "
         << llvm::format("%.0f", cost) << "\n";
      all.sent += mine.sent;
      all.received += mine.received;
      all.collectives += collectives;
    });
    os << "boxing total: " << index << " boxings, " << all.collectives
       << " collectives, sent " << all.sent << " B, received " << all.received
       << " B\n";
  }
};

} // namespace
