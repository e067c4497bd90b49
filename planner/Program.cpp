//===- Program.cpp - A device's work in one step --------------------------===//

#include "planner/Program.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace pc::planner {

const char *axisName(Axis a) {
  switch (a) {
  case Axis::Tensor:
    return "tp";
  case Axis::Data:
    return "dp";
  case Axis::Pipeline:
    return "pp";
  }
  return "?";
}

int64_t dtypeBytes(llvm::StringRef dtype) { return dtype == "f32" ? 4 : 2; }

int64_t chunkLayers(int64_t layers, int64_t stages, int64_t chunk) {
  return layers / stages + (chunk < layers % stages ? 1 : 0);
}

namespace {

SimOp kernel(const char *name, double flops, double bytes, bool matmul) {
  SimOp op;
  op.name = name;
  op.flops = flops;
  op.bytes = bytes;
  op.matmul = matmul;
  return op;
}

SimOp collective(const char *name, CollectiveKind kind, Axis axis,
                 double bytes) {
  SimOp op;
  op.name = name;
  op.collective = true;
  op.kind = kind;
  op.axis = axis;
  op.bytes = bytes;
  return op;
}

/// Shapes of one micro-batch on one tensor-parallel rank.
struct Shapes {
  double T; // tokens: micro-batch size * sequence
  double s, h, f, a, t, V;
  double e;    // bytes of an activation element
  double tokN; // tokens the norms, dropouts and residuals see
  bool sp;

  double scores() const { return T / s * (a / t) * s * s; } // b (a/t) s^2
};

/// The products of a layer, as (name, FLOPs, bytes, has weights).
struct Product {
  const char *name;
  double flops, bytes;
  bool weights;
};

std::vector<Product> products(const Shapes &x) {
  double T = x.T, h = x.h, f = x.f, t = x.t, e = x.e, S = x.scores();
  return {
      {"qkv", 2 * T * h * 3 * h / t,
       (T * h + 3 * h * h / t + 3 * T * h / t) * e, true},
      {"scores", 2 * T * x.s * h / t, (2 * T * h / t + S) * e, false},
      {"attn-values", 2 * T * x.s * h / t, (S + 2 * T * h / t) * e, false},
      {"proj", 2 * T * h * h / t, (T * h / t + h * h / t + T * h) * e, true},
      {"fc1", 2 * T * h * f / t, (T * h + h * f / t + T * f / t) * e, true},
      {"fc2", 2 * T * f / t * h, (T * f / t + f * h / t + T * h) * e, true},
  };
}

/// The tensor-parallel collective that ends each half of a layer (forward)
/// or begins it (backward).
SimOp tpCollective(const Shapes &x, bool gather) {
  double bytes = x.T * x.h * x.e;
  if (!x.sp)
    return collective("tp all-reduce", CollectiveKind::AllReduce, Axis::Tensor,
                      bytes);
  return gather ? collective("sp all-gather", CollectiveKind::AllGather,
                             Axis::Tensor, bytes)
                : collective("sp reduce-scatter", CollectiveKind::ReduceScatter,
                             Axis::Tensor, bytes);
}

std::vector<SimOp> layerForward(const Shapes &x) {
  std::vector<Product> p = products(x);
  double S = x.scores(), e = x.e, nh = x.tokN * x.h;
  auto mm = [&](int i) {
    return kernel(p[i].name, p[i].flops, p[i].bytes, true);
  };
  std::vector<SimOp> ops;
  ops.push_back(kernel("layer-norm", 0, 2 * nh * e, false));
  if (x.sp)
    ops.push_back(tpCollective(x, true));
  ops.push_back(mm(0));
  ops.push_back(mm(1));
  ops.push_back(kernel("softmax", 0, 2 * S * e, false));
  ops.push_back(kernel("attn-dropout", 0, S * (2 * e + 1), false));
  ops.push_back(mm(2));
  ops.push_back(mm(3));
  if (x.t > 1)
    ops.push_back(tpCollective(x, false));
  ops.push_back(kernel("dropout-residual", 0, nh * (3 * e + 1), false));
  ops.push_back(kernel("layer-norm", 0, 2 * nh * e, false));
  if (x.sp)
    ops.push_back(tpCollective(x, true));
  ops.push_back(mm(4));
  ops.push_back(kernel("gelu", 0, 2 * x.T * x.f / x.t * e, false));
  ops.push_back(mm(5));
  if (x.t > 1)
    ops.push_back(tpCollective(x, false));
  ops.push_back(kernel("dropout-residual", 0, nh * (3 * e + 1), false));
  return ops;
}

/// The attention core: what selective recompute runs again.
std::vector<SimOp> attentionCore(const Shapes &x) {
  std::vector<Product> p = products(x);
  double S = x.scores(), e = x.e;
  return {kernel("scores", p[1].flops, p[1].bytes, true),
          kernel("softmax", 0, 2 * S * e, false),
          kernel("attn-dropout", 0, S * (2 * e + 1), false),
          kernel("attn-values", p[2].flops, p[2].bytes, true)};
}

/// Input gradients (B) and weight gradients (W) of a layer.
void layerBackward(const Shapes &x, std::vector<SimOp> &B,
                   std::vector<SimOp> &W) {
  std::vector<Product> p = products(x);
  double S = x.scores(), e = x.e, nh = x.tokN * x.h;
  static const char *const kDgrad[] = {"qkv dgrad",         "scores dgrad",
                                       "attn-values dgrad", "proj dgrad",
                                       "fc1 dgrad",         "fc2 dgrad"};
  static const char *const kWgrad[] = {"qkv wgrad",         "scores dgrad",
                                       "attn-values dgrad", "proj wgrad",
                                       "fc1 wgrad",         "fc2 wgrad"};
  auto dgrad = [&](int i) {
    B.push_back(kernel(kDgrad[i], p[i].flops, p[i].bytes, true));
    if (!p[i].weights) // both operands are activations
      B.push_back(kernel(kDgrad[i], p[i].flops, p[i].bytes, true));
    else
      W.push_back(kernel(kWgrad[i], p[i].flops, p[i].bytes, true));
  };
  // In reverse: the second half, then the first.
  B.push_back(kernel("dropout-residual bwd", 0, nh * (2 * e + 1), false));
  if (x.sp)
    B.push_back(tpCollective(x, true));
  dgrad(5);
  B.push_back(kernel("gelu bwd", 0, 3 * x.T * x.f / x.t * e, false));
  dgrad(4);
  if (x.t > 1)
    B.push_back(tpCollective(x, false));
  B.push_back(kernel("layer-norm bwd", 0, 3 * nh * e, false));
  B.push_back(kernel("dropout-residual bwd", 0, nh * (2 * e + 1), false));
  if (x.sp)
    B.push_back(tpCollective(x, true));
  dgrad(3);
  dgrad(2);
  B.push_back(kernel("attn-dropout bwd", 0, S * (2 * e + 1), false));
  B.push_back(kernel("softmax bwd", 0, 3 * S * e, false));
  dgrad(1);
  dgrad(0);
  if (x.t > 1)
    B.push_back(tpCollective(x, false));
  B.push_back(kernel("layer-norm bwd", 0, 3 * nh * e, false));
}

void scale(std::vector<SimOp> &ops, int64_t count) {
  for (SimOp &op : ops)
    op.count *= count;
}

void append(std::vector<SimOp> &to, std::vector<SimOp> ops) {
  to.insert(to.end(), ops.begin(), ops.end());
}

/// The token and position embeddings (first stage).
void embedding(const Shapes &x, ChunkProgram &c) {
  double nh = x.T * x.h, e = x.e;
  c.forward.push_back(kernel("embedding", 0, 4 * nh * e, false));
  if (x.t > 1) // vocabulary-parallel: each rank holds a slice of the rows
    c.forward.push_back(
        x.sp ? collective("sp reduce-scatter", CollectiveKind::ReduceScatter,
                          Axis::Tensor, nh * e)
             : collective("tp all-reduce", CollectiveKind::AllReduce,
                          Axis::Tensor, nh * e));
  if (x.sp)
    c.backwardInput.push_back(collective(
        "sp all-gather", CollectiveKind::AllGather, Axis::Tensor, nh * e));
  c.backwardWeight.push_back(kernel("embedding wgrad", 0, 3 * nh * e, false));
}

/// The final norm, the output head and the vocabulary-parallel
/// cross-entropy (last stage), whose logits stay f32.
void head(const Shapes &x, ChunkProgram &c) {
  double T = x.T, h = x.h, e = x.e, Vt = x.V / x.t;
  double headFlops = 2 * T * h * Vt;
  double headBytes = (T * h + h * Vt) * e + T * Vt * 4;
  c.forward.push_back(kernel("final layer-norm", 0, 2 * x.tokN * h * e, false));
  if (x.sp)
    c.forward.push_back(collective("sp all-gather", CollectiveKind::AllGather,
                                   Axis::Tensor, T * h * e));
  c.forward.push_back(kernel("head", headFlops, headBytes, true));
  c.forward.push_back(kernel("cross-entropy", 0, 3 * T * Vt * 4, false));
  if (x.t > 1)
    c.forward.push_back(collective("loss all-reduce", CollectiveKind::AllReduce,
                                   Axis::Tensor, 3 * T * 4));
  c.backwardInput.push_back(
      kernel("cross-entropy bwd", 0, 2 * T * Vt * 4, false));
  c.backwardInput.push_back(kernel("head dgrad", headFlops, headBytes, true));
  if (x.t > 1)
    c.backwardInput.push_back(
        x.sp ? collective("sp reduce-scatter", CollectiveKind::ReduceScatter,
                          Axis::Tensor, T * h * e)
             : collective("tp all-reduce", CollectiveKind::AllReduce,
                          Axis::Tensor, T * h * e));
  c.backwardInput.push_back(
      kernel("final layer-norm bwd", 0, 3 * x.tokN * h * e, false));
  c.backwardWeight.push_back(kernel("head wgrad", headFlops, headBytes, true));
}

/// ZeRO-3 gathers a chunk's weights before its forward and its backward,
/// and reduce-scatters its gradients after each backward, on the
/// communication stream: prefetching hides each layer's gather behind the
/// layer before, so only the first layer's gather (and the last layer's
/// reduce-scatter) is in the compute's path.
void zero3(const Strategy &st, double e, ChunkProgram &c) {
  if (st.zero < 3 || st.dp == 1 || c.layers == 0)
    return;
  auto split = [&](const char *name, CollectiveKind kind, double bytes,
                   std::vector<SimOp> &to) {
    SimOp first = collective(name, kind, Axis::Data, bytes / c.layers);
    to.push_back(first);
    if (c.layers > 1) {
      SimOp rest = first;
      rest.count = c.layers - 1;
      rest.overlapped = true;
      to.push_back(rest);
    }
  };
  split("zero-3 all-gather", CollectiveKind::AllGather, c.parameters * e,
        c.forward);
  split("zero-3 all-gather", CollectiveKind::AllGather, c.parameters * e,
        c.backwardInput);
  split("zero-3 reduce-scatter", CollectiveKind::ReduceScatter,
        c.parameters * 4, c.backwardWeight);
}

TailProgram tail(const Strategy &st, double params, bool tiedEmbedding,
                 double embeddingParams) {
  TailProgram tp;
  // Gradients are f32 (accumulated over micro-batches in the master
  // weights' precision), as are the weights the optimizer updates.
  double grads = params * 4;
  if (st.dp > 1 && st.zero == 0) {
    auto op = collective("dp all-reduce", CollectiveKind::AllReduce, Axis::Data,
                         grads);
    op.overlapped = true; // with the last micro-batch's backward
    tp.ops.push_back(op);
  } else if (st.dp > 1 && st.zero < 3) {
    auto op = collective("zero reduce-scatter", CollectiveKind::ReduceScatter,
                         Axis::Data, grads);
    op.overlapped = true;
    tp.ops.push_back(op);
  }
  if (tiedEmbedding)
    tp.ops.push_back(collective("tied embedding all-reduce",
                                CollectiveKind::AllReduce, Axis::Pipeline,
                                embeddingParams * 4));
  double shard = st.zero >= 1 ? params / st.dp : params;
  if (!st.offloadOptimizer) {
    // Adam reads weights, gradients and both moments and writes weights and
    // moments (f32 each).
    tp.ops.push_back(kernel("optimizer", 0, 28 * shard, false));
  }
  if (st.dp > 1 && st.zero >= 1 && st.zero < 3)
    tp.ops.push_back(collective("zero all-gather", CollectiveKind::AllGather,
                                Axis::Data, params * 4));
  return tp;
}

} // namespace

double chunkParameters(const TransformerSpec &m, const Strategy &st,
                       int64_t c) {
  const int64_t stages = st.modelStages();
  double params = double(m.layerParameters()) / st.tp *
                  double(chunkLayers(m.layers, stages, c));
  const double embedding = double(m.vocab) * m.hidden / st.tp;
  if (c == 0)
    params += embedding + double(m.seq) * m.hidden;
  if (c == stages - 1)
    params += (stages > 1 ? embedding : 0) + 2.0 * m.hidden;
  return params;
}

namespace {
ChunkProgram buildChunk(const TransformerSpec &m, const Strategy &st,
                        const Shapes &x, int64_t c) {
  const int64_t stages = st.modelStages();
  ChunkProgram chunk;
  chunk.layers = chunkLayers(m.layers, stages, c);
  chunk.first = c == 0;
  chunk.last = c == stages - 1;
  chunk.parameters = chunkParameters(m, st, c);
  if (chunk.first)
    embedding(x, chunk);
  std::vector<SimOp> fwd = layerForward(x), B, W;
  layerBackward(x, B, W);
  scale(fwd, chunk.layers);
  scale(B, chunk.layers);
  scale(W, chunk.layers);
  append(chunk.forward, fwd);
  // The backward of the head comes before that of the layers.
  if (chunk.last)
    head(x, chunk);
  append(chunk.backwardInput, B);
  append(chunk.backwardWeight, W);
  if (st.recompute == Recompute::Full)
    chunk.recompute = fwd;
  else if (st.recompute == Recompute::Selective) {
    chunk.recompute = attentionCore(x);
    scale(chunk.recompute, chunk.layers);
  }
  // Activations to the next stage and gradients back: each tensor-parallel
  // rank sends its 1/t (Megatron's scatter-gather; the receivers'
  // all-gather inside the node is left out).
  double act = x.T * x.h * x.e;
  if (!chunk.last)
    chunk.forward.push_back(collective("pp send", CollectiveKind::SendRecv,
                                       Axis::Pipeline, act / x.t));
  if (!chunk.first)
    chunk.backwardInput.push_back(collective(
        "pp send", CollectiveKind::SendRecv, Axis::Pipeline, act / x.t));
  zero3(st, x.e, chunk);
  return chunk;
}
} // namespace

DeviceProgram buildProgram(const TransformerSpec &m, const Strategy &st) {
  Shapes x;
  x.T = double(st.microBatchSize) * m.seq;
  x.s = m.seq;
  x.h = m.hidden;
  x.f = m.ffnWidth();
  x.a = m.heads;
  x.t = st.tp;
  x.V = m.vocab;
  x.e = dtypeBytes(st.dtype);
  x.sp = st.sequenceParallel && st.tp > 1;
  x.tokN = x.sp ? x.T / x.t : x.T;

  DeviceProgram prog;
  const int64_t stages = st.modelStages();
  // Middle stages of equal layer counts have equal programs: build each
  // once.
  std::map<std::tuple<int64_t, bool, bool>, size_t> built;
  for (int64_t c = 0; c < stages; ++c) {
    auto key = std::make_tuple(chunkLayers(m.layers, stages, c), c == 0,
                               c == stages - 1);
    auto it = built.find(key);
    if (it != built.end()) {
      prog.chunks.push_back(prog.chunks[it->second]);
      continue;
    }
    built[key] = prog.chunks.size();
    prog.chunks.push_back(buildChunk(m, st, x, c));
  }
  const double embeddingParams = double(m.vocab) * m.hidden / st.tp;
  for (int64_t d = 0; d < st.pp; ++d) {
    double params = 0;
    for (int64_t c = d; c < stages; c += st.pp)
      params += prog.chunks[c].parameters;
    bool tied = st.pp > 1 && (d == 0 || d == st.pp - 1);
    prog.tails.push_back(tail(st, params, tied, embeddingParams));
  }
  return prog;
}

} // namespace pc::planner
