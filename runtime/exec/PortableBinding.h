//===- PortableBinding.h - Binding ops to the device kernels ----*- C++ -*-===//
//
// What the bindings of ops to a DeviceKernels share (PortableKernels.cpp,
// PortableMoves.cpp): the launch of a firing, its scratch, the kernels'
// indexes of shapes, and factories of one-result kernels.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_PORTABLEBINDING_H
#define PC_RUNTIME_EXEC_PORTABLEBINDING_H

#include "runtime/exec/KernelRegistry.h"
#include "runtime/kernels/portable/DeviceKernels.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLExtras.h"

#include <new>

namespace pc::runtime::portable_binding {

using portable::DeviceKernels;
using portable::Elem;
using portable::Index;
using portable::Launch;
using Shape = std::vector<int64_t>;
using Kernels = std::shared_ptr<DeviceKernels>;

static_assert(static_cast<int>(Elem::F32) == static_cast<int>(CommType::F32) &&
                  static_cast<int>(Elem::I64) ==
                      static_cast<int>(CommType::I64) &&
                  static_cast<int>(Elem::BF16) ==
                      static_cast<int>(CommType::BF16) &&
                  static_cast<int>(Elem::U8) == static_cast<int>(CommType::U8),
              "portable::Elem follows CommType");

inline Elem elemOf(CommType t) { return static_cast<Elem>(t); }

constexpr std::initializer_list<CommType> kFloats = {
    CommType::F32, CommType::F16, CommType::BF16};
constexpr std::initializer_list<CommType> kInts = {CommType::I32,
                                                   CommType::I64};

inline Launch launchOf(const KernelIO &io) {
  return {io.context.stream().nativeHandle()};
}

/// A call's scratch: U8 tensors of the kernel's device, held until the
/// kernel returns. A failed allocation is kept as the call's error.
class TensorScratch final : public portable::Scratch {
public:
  explicit TensorScratch(const KernelContext &context) : context(context) {}
  void *get(size_t bytes) override {
    absl::StatusOr<std::shared_ptr<Tensor>> t = context.allocate(
        {static_cast<int64_t>((bytes + 255) / 256 * 256)}, CommType::U8);
    if (!t.ok()) {
      if (error.ok())
        error = t.status();
      // Thrust's temporaries report failure by exception.
      throw std::bad_alloc();
    }
    held.push_back(*t);
    return (*t)->data();
  }
  absl::Status error;

private:
  const KernelContext &context;
  std::vector<std::shared_ptr<Tensor>> held;
};

/// Runs `call(scratch)`, turning a scratch allocation's failure into its
/// status.
template <typename Call>
absl::Status withScratch(const KernelIO &io, Call call) {
  TensorScratch scratch(io.context);
  try {
    return call(scratch);
  } catch (const std::bad_alloc &) {
    return scratch.error.ok()
               ? absl::ResourceExhaustedError("a kernel's scratch")
               : scratch.error;
  }
}

inline Shape stridesOf(const Shape &s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

inline absl::Status checkRank(size_t rank, mlir::Operation *op) {
  if (rank > static_cast<size_t>(portable::kMaxRank))
    return absl::UnimplementedError(absl::StrCat(
        op->getName().getStringRef().str(), ": ", rank,
        " dims; the device kernels take at most ", portable::kMaxRank));
  return absl::OkStatus();
}

/// `sizes` walked in row-major order with `strides`.
inline Index indexOf(const Shape &sizes, const Shape &strides) {
  Index ix;
  ix.rank = static_cast<int32_t>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    ix.size[d] = sizes[d];
    ix.stride[d] = strides[d];
  }
  return ix;
}

inline Index contiguous(const Shape &s) { return indexOf(s, stridesOf(s)); }

/// An operand of `shape` broadcast NumPy-style over `out` (aligned from the
/// back; size-1 dims stay).
inline Index broadcastIndex(const Shape &shape, const Shape &out) {
  Shape own = stridesOf(shape), st(out.size(), 0);
  size_t off = out.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
      st[d + off] = own[d];
  return indexOf(out, st);
}

/// A kernel with one result of `type` that `fn(io, out)` fills.
template <typename Fn> absl::StatusOr<Kernel> produce(mlir::Type type, Fn fn) {
  absl::StatusOr<CommType> elem = commTypeOf(type);
  if (!elem.ok())
    return elem.status();
  return Kernel(
      [shape = shapeOf(type), elem = *elem, fn](KernelIO &io) -> absl::Status {
        absl::StatusOr<std::shared_ptr<Tensor>> out =
            io.context.allocate(shape, elem);
        if (!out.ok())
          return out.status();
        if (absl::Status s = fn(io, **out); !s.ok())
          return s;
        io.outputs[0] = *std::move(out);
        return absl::OkStatus();
      });
}

/// A factory whose kernel needs only the op: `make(op)` returns fn(io, out).
/// Ops of more dims than the kernels' index math takes are refused here.
template <typename Make> KernelFactory plainFactory(Make make) {
  return [make](mlir::Operation *op, BindContext &) -> absl::StatusOr<Kernel> {
    for (mlir::Type t : llvm::concat<const mlir::Type>(op->getOperandTypes(),
                                                       op->getResultTypes()))
      if (absl::Status s = checkRank(shapeOf(t).size(), op); !s.ok())
        return s;
    return produce(op->getResult(0).getType(), make(op));
  };
}

template <typename Op, typename Make> KernelFactory simple(Make make) {
  return plainFactory(
      [make](mlir::Operation *op) { return make(llvm::cast<Op>(op)); });
}

/// Registers `factory` with its kernels guarded: a kernel that throws (a
/// CUDA launch, a cuBLASLt call, a Thrust algorithm) fails its firing with
/// a status naming the op, the device and the cause.
inline void addGuarded(KernelRegistry &r, llvm::StringRef kind,
                       llvm::StringRef op,
                       std::initializer_list<CommType> types, StreamKind stream,
                       KernelFactory factory) {
  r.add(kind, op, types, stream,
        [factory, name = op.str()](mlir::Operation *o,
                                   BindContext &c) -> absl::StatusOr<Kernel> {
          absl::StatusOr<Kernel> made;
          try {
            made = factory(o, c);
          } catch (const std::exception &e) {
            return absl::InternalError(absl::StrCat(
                name, " on ", c.tensors.device().name(), ": ", e.what()));
          }
          if (!made.ok())
            return made;
          return Kernel([inner = *std::move(made),
                         name](KernelIO &io) -> absl::Status {
            try {
              return inner(io);
            } catch (const std::exception &e) {
              return absl::InternalError(absl::StrCat(
                  name, " on ", io.context.device().name(), ": ", e.what()));
            }
          });
        });
}

} // namespace pc::runtime::portable_binding

#endif // PC_RUNTIME_EXEC_PORTABLEBINDING_H
