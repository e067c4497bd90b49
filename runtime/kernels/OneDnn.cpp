//===- OneDnn.cpp - The CPU kernels that oneDNN runs ----------------------===//

#include "runtime/kernels/OneDnn.h"

#include "absl/strings/str_cat.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace pc::runtime::cpu {
namespace {

using dnnl::memory;
using Dims = memory::dims;

Dims rowMajorStrides(const Dims &dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * dims[i];
  return s;
}

/// A oneDNN primitive with its engine, stream and argument memories, made
/// once by `make` on the first call. When oneDNN refuses the shapes (or the
/// build has no kernel for them), `ready` stays false and the caller runs
/// its loop instead.
struct Primitive {
  std::once_flag once;
  bool ready = false;
  dnnl::engine engine;
  dnnl::stream stream;
  dnnl::primitive primitive;
  /// The argument memories, in the order run() gets the pointers, and the
  /// same handles by argument id, as execute() takes them.
  std::vector<memory> args;
  std::unordered_map<int, memory> byId;

  template <typename Make> void prepare(Make make) {
    std::call_once(once, [&] {
      try {
        engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
        stream = dnnl::stream(engine);
        make(*this);
        ready = true;
      } catch (const dnnl::error &) {
        ready = false; // The loop runs instead.
      }
    });
  }

  absl::Status run(std::initializer_list<const void *> pointers) {
    try {
      // Memories are handles: setting the pointer here sets it in byId.
      size_t i = 0;
      for (const void *p : pointers)
        args[i++].set_data_handle(const_cast<void *>(p));
      primitive.execute(stream, byId);
      stream.wait();
      return absl::OkStatus();
    } catch (const dnnl::error &e) {
      return absl::InternalError(absl::StrCat("oneDNN: ", e.what()));
    }
  }

  /// The next argument run() takes a pointer for.
  void add(int arg, const memory::desc &md) {
    args.push_back(memory(md, engine, DNNL_MEMORY_NONE));
    byId.emplace(arg, args.back());
  }
};

memory::desc plainF32(const Dims &dims) {
  return memory::desc(dims, memory::data_type::f32, rowMajorStrides(dims));
}

} // namespace

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

struct MatmulPlan::Impl {
  Shape a, b, out;
  bool ta, tb;
  float alpha;
  std::optional<Shape> addend;
  Primitive p;

  /// Whether oneDNN adds the addend as a post-op; otherwise run() adds it
  /// after the product, in a second pass.
  bool postOp = false;

  /// The addend as an operand over `dims` (the output's dims as oneDNN
  /// sees them), when a post-op keeps the product's bits: an addend of the
  /// output's shape, or one row (a bias) against merged rows. oneDNN runs
  /// other broadcasts through another kernel, which sums in another order.
  std::optional<memory::desc> addendDesc(const Dims &dims, bool rows) const {
    const Shape &c = *addend;
    if (c == out)
      return plainF32(dims);
    if (rows && product(c) == out.back() &&
        (c.empty() || c.back() == out.back()))
      return plainF32({1, dims.back()});
    return std::nullopt;
  }

  /// The operand `shape` (rows, cols as stored) as a rank-`rank` oneDNN
  /// operand of logical dims (..., r, c): leading batch dims of 1 added,
  /// the last two swapped through strides when `transposed`.
  static memory::desc operand(const Shape &shape, size_t rank,
                              bool transposed) {
    Dims dims(rank - shape.size(), 1);
    dims.insert(dims.end(), shape.begin(), shape.end());
    Dims strides = rowMajorStrides(dims);
    if (transposed) {
      std::swap(dims[rank - 2], dims[rank - 1]);
      std::swap(strides[rank - 2], strides[rank - 1]);
    }
    return memory::desc(dims, memory::data_type::f32, strides);
  }

  void make(Primitive &p) {
    size_t rank = out.size();
    memory::desc da, db, dc;
    bool rows = b.size() == 2 && !ta && a.size() == rank && rank > 2;
    Dims dims;
    if (rows) {
      // A weight shared by every batch element: one GEMM over all rows.
      dims = {product(out) / out[rank - 1], out.back()};
      da = operand({dims[0], a.back()}, 2, false);
      db = operand(b, 2, tb);
    } else {
      dims.assign(out.begin(), out.end());
      da = operand(a, rank, ta);
      db = operand(b, rank, tb);
    }
    dc = plainF32(dims);
    dnnl::primitive_attr attr;
    if (alpha != 1.0f)
      attr.set_output_scales(0, {alpha});
    std::optional<memory::desc> dAdd;
    if (addend)
      dAdd = addendDesc(dims, rows);
    if (dAdd) {
      // oneDNN scales the product first, then applies post-ops in order.
      dnnl::post_ops ops;
      ops.append_binary(dnnl::algorithm::binary_add, *dAdd);
      attr.set_post_ops(ops);
    }
    postOp = dAdd.has_value();
    // In run()'s order (not inside one call: argument order is unspecified).
    p.add(DNNL_ARG_SRC, da);
    p.add(DNNL_ARG_WEIGHTS, db);
    p.add(DNNL_ARG_DST, dc);
    if (dAdd)
      p.add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, *dAdd);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(da, db, dc), attr,
                                    p.engine);
    p.primitive = dnnl::matmul(pd);
  }
};

MatmulPlan::MatmulPlan(Shape a, Shape b, bool transposeA, bool transposeB,
                       Shape out, float alpha, std::optional<Shape> addend)
    : impl(std::make_shared<Impl>()) {
  impl->a = std::move(a);
  impl->b = std::move(b);
  impl->out = std::move(out);
  impl->ta = transposeA;
  impl->tb = transposeB;
  impl->alpha = alpha;
  impl->addend = std::move(addend);
}

absl::Status MatmulPlan::run(const TensorView &a, const TensorView &b,
                             const TensorView &out) const {
  return run(a, b, nullptr, out);
}

absl::Status MatmulPlan::run(const TensorView &a, const TensorView &b,
                             const TensorView *addend,
                             const TensorView &out) const {
  if (absl::Status s = expectF32(a, "matmul"); !s.ok())
    return s;
  if ((addend != nullptr) != impl->addend.has_value())
    return absl::InternalError(
        "matmul: the addend does not match the plan's (made with one or "
        "without)");
  size_t rank = out.shape.size();
  int64_t k = impl->ta ? a.shape[a.shape.size() - 2] : a.shape.back();
  auto loops = [&] {
    return matmul(a, b, impl->ta, impl->tb, out, impl->alpha, addend);
  };
  if (out.numel() == 0 || k == 0 || rank > DNNL_MAX_NDIMS)
    return loops();
  impl->p.prepare([&](Primitive &p) { impl->make(p); });
  if (!impl->p.ready)
    return loops();
  if (addend && impl->postOp)
    return impl->p.run({a.data(), b.data(), out.data(), addend->data()});
  if (absl::Status s = impl->p.run({a.data(), b.data(), out.data()});
      !s.ok() || !addend)
    return s;
  return binary(Binary::Add, out, *addend, out);
}

//===----------------------------------------------------------------------===//
// Elementwise functions
//===----------------------------------------------------------------------===//

struct UnaryPlan::Impl {
  Unary op;
  int64_t numel;
  Primitive p;
};

UnaryPlan::UnaryPlan(Unary op, int64_t numel) : impl(std::make_shared<Impl>()) {
  impl->op = op;
  impl->numel = numel;
}

namespace {
/// oneDNN's algorithm (and alpha) for `op`; none for erf, which oneDNN
/// 2.6 lacks.
std::optional<std::pair<dnnl::algorithm, float>> algorithmOf(Unary op) {
  using A = dnnl::algorithm;
  switch (op) {
  case Unary::Neg:
    return std::pair(A::eltwise_linear, -1.0f);
  case Unary::Exp:
    return std::pair(A::eltwise_exp, 0.0f);
  case Unary::Log:
    return std::pair(A::eltwise_log, 0.0f);
  case Unary::Tanh:
    return std::pair(A::eltwise_tanh, 0.0f);
  case Unary::Relu:
    return std::pair(A::eltwise_relu, 0.0f);
  case Unary::Sigmoid:
    return std::pair(A::eltwise_logistic, 0.0f);
  case Unary::Gelu:
    return std::pair(A::eltwise_gelu_erf, 0.0f);
  case Unary::GeluTanh:
    return std::pair(A::eltwise_gelu_tanh, 0.0f);
  case Unary::Sqrt:
    return std::pair(A::eltwise_sqrt, 0.0f);
  case Unary::Erf:
    return std::nullopt;
  }
  return std::nullopt;
}
} // namespace

absl::Status UnaryPlan::run(const TensorView &in, const TensorView &out) const {
  if (absl::Status s = expectF32(in, "unary op"); !s.ok())
    return s;
  std::optional<std::pair<dnnl::algorithm, float>> alg = algorithmOf(impl->op);
  if (!alg || in.numel() == 0)
    return unary(impl->op, in, out);
  impl->p.prepare([&](Primitive &p) {
    memory::desc md = plainF32({impl->numel});
    p.add(DNNL_ARG_SRC, md);
    p.add(DNNL_ARG_DST, md);
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                    alg->first, md, alg->second, 0.0f),
        p.engine);
    p.primitive = dnnl::eltwise_forward(pd);
  });
  if (!impl->p.ready)
    return unary(impl->op, in, out);
  return impl->p.run({in.data(), out.data()});
}

//===----------------------------------------------------------------------===//
// The gradient of GELU
//===----------------------------------------------------------------------===//

struct GeluGradPlan::Impl {
  int64_t numel;
  bool approximate;
  Primitive p;
};

GeluGradPlan::GeluGradPlan(int64_t numel, bool approximate)
    : impl(std::make_shared<Impl>()), tanh(Unary::Tanh, numel) {
  impl->numel = numel;
  impl->approximate = approximate;
}

absl::Status GeluGradPlan::run(const TensorView &dy, const TensorView &x,
                               const TensorView &out) const {
  if (absl::Status s = expectF32(x, "gelu grad"); !s.ok())
    return s;
  if (x.numel() > 0) {
    // oneDNN's backward GELU: one vectorized pass reading x and dy.
    impl->p.prepare([&](Primitive &p) {
      memory::desc md = plainF32({impl->numel});
      dnnl::algorithm alg = impl->approximate
                                ? dnnl::algorithm::eltwise_gelu_tanh
                                : dnnl::algorithm::eltwise_gelu_erf;
      dnnl::eltwise_forward::primitive_desc hint(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg,
                                      md, 0.0f, 0.0f),
          p.engine);
      dnnl::eltwise_backward::primitive_desc pd(
          dnnl::eltwise_backward::desc(alg, md, md, 0.0f, 0.0f), p.engine,
          hint);
      p.add(DNNL_ARG_DIFF_DST, md);
      p.add(DNNL_ARG_SRC, md);
      p.add(DNNL_ARG_DIFF_SRC, md);
      p.primitive = dnnl::eltwise_backward(pd);
    });
    if (impl->p.ready)
      return impl->p.run({dy.data(), x.data(), out.data()});
  }
  return loops(dy, x, out);
}

absl::Status GeluGradPlan::loops(const TensorView &dy, const TensorView &x,
                                 const TensorView &out) const {
  const float *g = dy.as<float>(), *v = x.as<float>();
  float *r = out.as<float>();
  int64_t n = x.numel();
  if (!impl->approximate) {
    // Φ(x) + x φ(x).
    const float invSqrt2 = 1.0f / std::sqrt(2.0f);
    const float invSqrt2Pi = 1.0f / std::sqrt(2.0f * static_cast<float>(M_PI));
    for (int64_t i = 0; i < n; ++i)
      r[i] = g[i] * (0.5f * (1.0f + std::erf(v[i] * invSqrt2)) +
                     v[i] * std::exp(-0.5f * v[i] * v[i]) * invSqrt2Pi);
    return absl::OkStatus();
  }
  // t = tanh(k (x + c x³)), computed in `out`; then
  // dy · (0.5 (1 + t) + 0.5 x (1 − t²) k (1 + 3 c x²)).
  const float k = std::sqrt(2.0f / static_cast<float>(M_PI)), c = 0.044715f;
  for (int64_t i = 0; i < n; ++i)
    r[i] = k * (v[i] + c * v[i] * v[i] * v[i]);
  if (absl::Status s = tanh.run(out, out); !s.ok())
    return s;
  for (int64_t i = 0; i < n; ++i) {
    float t = r[i];
    r[i] = g[i] * (0.5f * (1.0f + t) + 0.5f * v[i] * (1.0f - t * t) * k *
                                           (1.0f + 3.0f * c * v[i] * v[i]));
  }
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

struct SoftmaxPlan::Impl {
  Shape shape;
  int64_t axis;
  bool log, causal;
  Primitive p;
  /// A causal softmax's chunk: `chunk` matrices at a time are masked into
  /// `scratch` (sized to stay in L2), which the primitive normalizes into
  /// the output.
  int64_t chunk = 0;
  std::vector<float> scratch;
};

SoftmaxPlan::SoftmaxPlan(Shape shape, int64_t axis, bool log, bool causal)
    : impl(std::make_shared<Impl>()) {
  impl->shape = std::move(shape);
  impl->axis = axis;
  impl->log = log;
  impl->causal = causal;
}

absl::Status SoftmaxPlan::run(const TensorView &in,
                              const TensorView &out) const {
  if (absl::Status s = expectF32(in, "softmax"); !s.ok())
    return s;
  if (impl->causal)
    return runCausal(in, out);
  if (in.numel() == 0 || in.shape.size() > DNNL_MAX_NDIMS)
    return softmax(in, impl->axis, impl->log, out);
  impl->p.prepare([&](Primitive &p) {
    memory::desc md = plainF32(Dims(impl->shape.begin(), impl->shape.end()));
    p.add(DNNL_ARG_SRC, md);
    p.add(DNNL_ARG_DST, md);
    dnnl::softmax_v2_forward::primitive_desc pd(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                       impl->log
                                           ? dnnl::algorithm::softmax_log
                                           : dnnl::algorithm::softmax_accurate,
                                       md, md, static_cast<int>(impl->axis)),
        p.engine);
    p.primitive = dnnl::softmax_v2_forward(pd);
  });
  if (!impl->p.ready)
    return softmax(in, impl->axis, impl->log, out);
  return impl->p.run({in.data(), out.data()});
}

absl::Status SoftmaxPlan::runCausal(const TensorView &in,
                                    const TensorView &out) const {
  size_t rank = in.shape.size();
  int64_t q = in.shape[rank - 2], k = in.shape[rank - 1];
  int64_t matrix = q * k, matrices = matrix ? in.numel() / matrix : 0;
  if (matrices == 0)
    return absl::OkStatus();
  int64_t packed = causalPackedSize(q, k);
  impl->p.prepare([&](Primitive &p) {
    // The most matrices that divide the count and whose packed rows fit
    // 256 KiB, so that they stay in cache between the three steps.
    int64_t fit = std::max<int64_t>(1, (256 << 10) / (packed * 4));
    impl->chunk = 1;
    for (int64_t c = std::min(fit, matrices); c > 1; --c)
      if (matrices % c == 0) {
        impl->chunk = c;
        break;
      }
    impl->scratch.resize(impl->chunk * packed);
    memory::desc md = plainF32({impl->chunk * packed});
    p.add(DNNL_ARG_SRC, md);
    p.add(DNNL_ARG_DST, md);
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::eltwise_exp, md, 0.0f,
                                    0.0f),
        p.engine);
    p.primitive = dnnl::eltwise_forward(pd);
  });
  if (impl->scratch.empty())
    impl->scratch.resize(matrices * packed); // oneDNN refused: one chunk
  int64_t chunk = impl->p.ready ? impl->chunk : matrices;
  const float *x = in.as<float>();
  float *y = out.as<float>(), *buffer = impl->scratch.data();
  for (int64_t at = 0; at < matrices; at += chunk) {
    causalCenter(x + at * matrix, chunk, q, k, buffer);
    if (impl->p.ready) {
      if (absl::Status s = impl->p.run({buffer, buffer}); !s.ok())
        return s;
    } else {
      for (int64_t i = 0; i < chunk * packed; ++i)
        buffer[i] = std::exp(buffer[i]);
    }
    causalNormalize(buffer, chunk, q, k, y + at * matrix);
  }
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

struct TransposePlan::Impl {
  Shape in;
  std::vector<int64_t> perm;
  int64_t bytes;
  Primitive p;
};

TransposePlan::TransposePlan(Shape in, std::vector<int64_t> perm,
                             int64_t elementBytes)
    : impl(std::make_shared<Impl>()) {
  impl->in = std::move(in);
  impl->perm = std::move(perm);
  impl->bytes = elementBytes;
}

absl::Status TransposePlan::run(const TensorView &in,
                                const TensorView &out) const {
  size_t rank = impl->in.size();
  if (in.numel() == 0 || rank + 1 > DNNL_MAX_NDIMS || rank < 2)
    return transpose(in, impl->perm, out);
  impl->p.prepare([&](Primitive &p) {
    // Only bytes move: 4-byte elements as s32, others as that many u8
    // (8 as two s32) in an innermost dim, so no value is ever converted.
    memory::data_type type =
        impl->bytes % 4 == 0 ? memory::data_type::s32 : memory::data_type::u8;
    int64_t inner = impl->bytes % 4 == 0 ? impl->bytes / 4 : impl->bytes;
    Dims inDims(impl->in.begin(), impl->in.end());
    inDims.push_back(inner);
    Dims inStrides = rowMajorStrides(inDims);
    Dims dims, strides;
    for (int64_t d : impl->perm) {
      dims.push_back(inDims[d]);
      strides.push_back(inStrides[d]);
    }
    dims.push_back(inner);
    strides.push_back(1);
    memory::desc src(dims, type, strides);
    memory::desc dst(dims, type, rowMajorStrides(dims));
    p.add(DNNL_ARG_FROM, src);
    p.add(DNNL_ARG_TO, dst);
    p.primitive = dnnl::reorder(
        dnnl::reorder::primitive_desc(p.engine, src, p.engine, dst));
  });
  if (!impl->p.ready)
    return transpose(in, impl->perm, out);
  return impl->p.run({in.data(), out.data()});
}

} // namespace pc::runtime::cpu
