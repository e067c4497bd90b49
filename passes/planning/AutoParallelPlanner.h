//===- AutoParallelPlanner.h - pc-auto-parallel's cost graph ----*- C++ -*-===//
//
// The planner behind --pc-auto-parallel: the graph's ops (by SBP
// signature) and stored values (by layout) as the nodes of a cost graph
// (planner/CostGraph.h), boxing on its edges, and each state's bytes per
// device. AutoParallel.cpp builds and solves it; AutoParallelMemory.cpp
// says how much memory a choice needs.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PASSES_PLANNING_AUTOPARALLELPLANNER_H
#define PC_PASSES_PLANNING_AUTOPARALLELPLANNER_H

#include "boxing/BoxingPlanner.h"
#include "boxing/MeshCache.h"
#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "passes/sbp/SbpCandidates.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <string>
#include <vector>

namespace pc::autoparallel {

using namespace mlir;

/// How the passes after auto-parallel will hold the step's memory
/// (pc-optimizer's, pc-offload's and pc-recompute's options): what the
/// optimizer keeps for each trained weight, and what the backward reads.
struct TrainingMemory {
  /// State tensors per weight (Adam: 2), and their bytes per weight byte.
  int64_t states = 2;
  double stateBytes = 1.0;
  /// ZeRO's stage and the mesh axis it shards over.
  int64_t zero = 0;
  std::string zeroAxis = "dp";
  /// The state lives in host memory.
  bool offload = false;
  /// pc-recompute's mode, "full" or "selective" (none: empty): the
  /// backward reads its segments' forward values made again.
  std::string recompute;
  /// The session updates in place: a weight's old pieces go once it is
  /// updated and read for the last time, not at the step's end.
  bool inPlaceUpdates = false;
};

/// One node of the cost graph.
struct Node {
  Operation *op = nullptr; // an op with signatures, or a pc.to_sbp
  Value value;             // an input or a constant
  StringAttr param;        // a parameter (every read and write of it)
  FlatSymbolRefAttr mesh;
  SmallVector<NdSbpSignature, 0> sigs; // an op's states
  SmallVector<SbpAttr> layouts;        // a stored value's states
  std::vector<double> time;
  /// Bytes per device in each state, by when they are live (empty: none):
  /// - `held` through the whole step (a stored piece: an input, a weight
  ///   and its moments);
  /// - `saved` by the forward for the backward (an op's results), until
  ///   the backward reads them;
  /// - `grad`, a trained weight's gradient, from the backward until its
  ///   update (empty: not a trained weight).
  std::vector<double> held, saved, grad;
  /// A trained weight's ZeRO shards in each state: how many devices share
  /// what the layout leaves whole (1: none).
  std::vector<double> shards;

  int64_t states() const {
    return sigs.empty() ? int64_t(layouts.size()) : int64_t(sigs.size());
  }
  static double at(const std::vector<double> &v, int64_t s) {
    return v.empty() ? 0.0 : v[size_t(s)];
  }
  /// A trained weight's new weight and state, which its update makes
  /// beside what it holds, to the end of the step (a step is a
  /// transaction: the old pieces stay until it commits, docs/memory.md),
  /// or, in place, until its old pieces' last reader.
  double fresh(int64_t s) const { return grad.empty() ? 0.0 : at(held, s); }
  /// What memory's price applies to: the node's bytes where the device
  /// holds most of them (the backward's start, or, in a transaction, the
  /// step's end).
  double priced(int64_t s, bool inPlaceUpdates) const {
    return at(held, s) + std::max(at(saved, s) + at(grad, s),
                                  inPlaceUpdates ? 0.0 : fresh(s));
  }
};

/// The bytes of one device's piece of a value of `type` in a layout.
double localBytes(Type type, ArrayRef<SbpEntry> entries,
                  ArrayRef<int64_t> meshShape);

class GraphReplay;

class Planner {
public:
  Planner(ModuleOp module, attrs::CostModel rates, TrainingMemory training)
      : module(module), meshes(module), rates(rates), training(training),
        boxing(costParams(module)) {}

  LogicalResult build();
  /// Solves under `budget` bytes per device (0: none).
  LogicalResult solve(int64_t budget, bool report, bool checkExact);
  void apply();

  int64_t numNodes = 0, numStates = 0, numEliminated = 0;

private:
  friend class GraphReplay;

  FailureOr<FlatSymbolRefAttr> meshFor(Operation *op);
  /// The mesh of the earliest pipeline stage that reads `v` (the only
  /// mesh without stages).
  FailureOr<FlatSymbolRefAttr> meshOfUses(Value v, Operation *at);
  int addStored(Type type, FlatSymbolRefAttr mesh, SbpAttr fixed, Value value,
                StringAttr param);
  LogicalResult addOp(Operation *op);
  /// The node producing `v` and the layout it gives `v` in each state.
  int producer(Value v);
  SbpAttr produced(int node, Value v, int64_t state);
  void addEdge(int from, Value v, int to,
               const std::function<SbpAttr(int64_t)> &want);
  double convert(Type type, SbpAttr src, SbpAttr dst);
  /// Whether a value in layout `have` must be copied to be read in `want`.
  bool differs(SbpAttr have, SbpAttr want);
  /// The node producing `v`, if it has one yet (-1: none).
  int producerOf(Value v);
  /// The peak bytes per device of the fullest device under `choice`
  /// (AutoParallelMemory.cpp).
  double memoryOf(const std::vector<int> &choice);
  /// A trained weight's bytes in each of its states, as the optimizer will
  /// keep it (`node`'s `held` is the weight's piece on entry).
  void addTrainedMemory(Node &node);
  /// The training graphs' backward passes (backwardOps).
  void findBackward();
  bool isBackward(Operation *op) const { return backwardOps.contains(op); }
  /// Whether the backward pass reads `v` (so that it stays in memory).
  bool savedForBackward(Value v);

  ModuleOp module;
  MeshCache meshes;
  /// The devices' rates (costModelOf: the module's, or this machine's CPU
  /// virtual devices); a collective's latency is the boxing planner's
  /// (costParams), in bytes of the link.
  attrs::CostModel rates;
  TrainingMemory training;
  boxing::Planner boxing;
  std::vector<Node> nodes;
  DenseMap<Operation *, int> opNode;
  DenseMap<Value, int> valueNode;
  DenseMap<StringAttr, int> paramNode;
  struct EdgeSpec {
    int from, to;
    Value value;
    std::function<SbpAttr(int64_t)> want;
  };
  std::vector<EdgeSpec> edgeSpecs;
  DenseSet<Operation *> backwardOps;
  /// Per pair of states of `e`'s ends, the bytes of the converted copy
  /// of its value that lives from the forward to the backward; empty if
  /// none can.
  std::vector<double> keptBytes(const EdgeSpec &e, ArrayRef<SbpAttr> wants);
  /// Edges whose converted value the forward keeps for the backward
  /// (a weight gathered once for both): its bytes per pair of states, on
  /// the consumer's devices.
  struct KeptCopy {
    int edge, from, to;
    Attribute mesh;
    std::vector<double> time, bytes;
  };
  std::vector<KeptCopy> keptCopies;
  bool missingMesh = false;
  DenseMap<std::tuple<Type, Attribute, Attribute>, double> costs;
  std::vector<int> choice;
};

} // namespace pc::autoparallel

#endif // PC_PASSES_PLANNING_AUTOPARALLELPLANNER_H
