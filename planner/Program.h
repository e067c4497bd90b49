//===- Program.h - A device's work in one step, as the simulator sees it -*- C++
//-*-===//
//
// The per-device program of a strategy: for each model stage (chunk) the
// kernels and collectives of its forward (F), its input-gradient backward
// (B), its weight-gradient backward (W) and its recompute, for one
// micro-batch on one tensor-parallel rank; and the step's tail (the
// data-parallel gradient reduction, the optimizer, the pipeline's tied
// embeddings). The simulator times these over the cost model and runs the
// pipeline schedule over the actions.
//
// The ops are those of Megatron-LM's GPT layer (the model of the paper the
// planner is validated against): layer norm, QKV, attention scores, scaled
// masked softmax, attention dropout, attention over values, projection,
// dropout and residual, layer norm, MLP up, GeLU, MLP down, dropout and
// residual; column- then row-parallel products over tensor-parallel ranks,
// an all-reduce (or, with sequence parallelism, an all-gather and a
// reduce-scatter) around each half.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PLANNER_PROGRAM_H
#define PC_PLANNER_PROGRAM_H

#include "planner/CostModel.h"
#include "planner/Strategy.h"

#include <string>
#include <vector>

namespace pc::planner {

/// The mesh axis a collective runs over.
enum class Axis : uint8_t { Tensor, Data, Pipeline };
const char *axisName(Axis a);

struct SimOp {
  /// A static string: programs are built for every candidate of a search.
  const char *name = "";
  bool collective = false;
  // A kernel: its FLOPs and HBM bytes.
  double flops = 0, bytes = 0;
  bool matmul = false;
  // A collective: its kind, axis and bytes (the whole tensor).
  CollectiveKind kind = CollectiveKind::AllReduce;
  Axis axis = Axis::Tensor;
  /// How many times it runs (one per layer of the chunk, say).
  int64_t count = 1;
  /// Runs on the communication stream alongside compute (hidden up to
  /// the compute it overlaps) rather than in the compute's path.
  bool overlapped = false;
};

/// One model stage's actions for one micro-batch.
struct ChunkProgram {
  int64_t layers = 0;
  bool first = false, last = false;
  std::vector<SimOp> forward, backwardInput, backwardWeight, recompute;
  /// Weights held by each tensor-parallel rank of this chunk.
  double parameters = 0;
};

/// The end of a step on one device stage.
struct TailProgram {
  std::vector<SimOp> ops;
};

struct DeviceProgram {
  /// Model stage c runs on device stage c % pp.
  std::vector<ChunkProgram> chunks;
  /// Per device stage.
  std::vector<TailProgram> tails;
};

/// The per-device programs of `strategy` for `model`.
DeviceProgram buildProgram(const TransformerSpec &model,
                           const Strategy &strategy);

/// Weights each tensor-parallel rank holds of model stage `chunk`: its
/// layers, the embeddings on the first, the final norm (and, when the
/// pipeline has more than one stage, a copy of the tied embedding) on the
/// last.
double chunkParameters(const TransformerSpec &model, const Strategy &strategy,
                       int64_t chunk);

/// Layers of model stage `chunk` of `stages` (the earlier stages take the
/// remainder, since the last one also holds the head and the loss).
int64_t chunkLayers(int64_t layers, int64_t stages, int64_t chunk);

/// Bytes of an element of `dtype` ("bf16", "f16": 2, "f32": 4).
int64_t dtypeBytes(llvm::StringRef dtype);

} // namespace pc::planner

#endif // PC_PLANNER_PROGRAM_H
