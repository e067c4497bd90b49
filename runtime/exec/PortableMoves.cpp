//===- PortableMoves.cpp - Data movement, matmul, optimizers on a device --===//
//
// The rest of the portable binding (PortableKernels.cpp): ops that move
// bytes (copies, views that need a gather, casts, constants, pc.select),
// the matrix product, and the fused optimizer steps.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/PortableBinding.h"
#include "runtime/exec/PortableKernels.h"

#include "dialect/PcOps.h"
#include "runtime/device/HostTensor.h"
#include "runtime/exec/OpConstants.h"
#include "runtime/kernels/Quant8.h"

#include <cstring>

using namespace mlir;

namespace pc::runtime {
namespace {

using namespace portable_binding;

/// Host bytes copied once into a new device tensor of their shape and type.
absl::StatusOr<std::shared_ptr<const Tensor>>
upload(BindContext &c, DeviceKernels &k, const HostTensor &host) {
  absl::StatusOr<std::shared_ptr<Tensor>> made =
      c.tensors.allocate(host.shape, host.type);
  if (!made.ok())
    return made.status();
  k.fromHost((*made)->data(), host.data(), host.byteSize());
  return std::shared_ptr<const Tensor>(*std::move(made));
}

void addGathers(KernelRegistry &r, llvm::StringRef kind, const Kernels &k) {
  addGuarded(
      r, kind, "pc.transpose", kAllTypes, StreamKind::Compute,
      simple<TransposeOp>([k](TransposeOp t) {
        Shape in = shapeOf(t.getInput().getType()), out = shapeOf(t.getType());
        Shape si = stridesOf(in), st;
        for (int64_t p : t.getPerm())
          st.push_back(si[p]);
        Index src = indexOf(out, st), dst = contiguous(out);
        return [=](KernelIO &io, Tensor &o) {
          k->copyIndexed(launchOf(io), sizeOf(o.type), io.inputs[0]->data(), 0,
                         src, o.data(), 0, dst, o.numel());
          return absl::OkStatus();
        };
      }));
  addGuarded(r, kind, "pc.broadcast_to", kAllTypes, StreamKind::Compute,
             simple<BroadcastToOp>([k](BroadcastToOp b) {
               Shape out = shapeOf(b.getType());
               Index src = broadcastIndex(shapeOf(b.getInput().getType()), out),
                     dst = contiguous(out);
               return [=](KernelIO &io, Tensor &o) {
                 k->copyIndexed(launchOf(io), sizeOf(o.type),
                                io.inputs[0]->data(), 0, src, o.data(), 0, dst,
                                o.numel());
                 return absl::OkStatus();
               };
             }));
  addGuarded(
      r, kind, "pc.slice", kAllTypes, StreamKind::Compute,
      simple<SliceOp>([k](SliceOp s) {
        Shape in = shapeOf(s.getInput().getType()), out = shapeOf(s.getType());
        Shape si = stridesOf(in);
        int64_t base = 0;
        for (size_t d = 0; d < in.size(); ++d)
          base += s.getStart()[d] * si[d];
        Index src = indexOf(out, si), dst = contiguous(out);
        return [=](KernelIO &io, Tensor &o) {
          k->copyIndexed(launchOf(io), sizeOf(o.type), io.inputs[0]->data(),
                         base, src, o.data(), 0, dst, o.numel());
          return absl::OkStatus();
        };
      }));
  addGuarded(r, kind, "pc.concat", kAllTypes, StreamKind::Compute,
             simple<ConcatOp>([k](ConcatOp c) {
               Shape out = shapeOf(c.getType());
               Shape so = stridesOf(out);
               int64_t axis = axisIn(c.getAxis(), out.size());
               struct Part {
                 int64_t base, n;
                 Index src, dst;
               };
               std::vector<Part> parts;
               int64_t at = 0;
               for (Value v : c.getInputs()) {
                 Shape ps = shapeOf(v.getType());
                 parts.push_back({at * so[axis], product(ps), contiguous(ps),
                                  indexOf(ps, so)});
                 at += ps[axis];
               }
               return [=](KernelIO &io, Tensor &o) {
                 for (size_t i = 0; i < parts.size(); ++i)
                   k->copyIndexed(launchOf(io), sizeOf(o.type),
                                  io.inputs[i]->data(), 0, parts[i].src,
                                  o.data(), parts[i].base, parts[i].dst,
                                  parts[i].n);
                 return absl::OkStatus();
               };
             }));
  addGuarded(r, kind, "pc.cast", kAllTypes, StreamKind::Compute,
             simple<CastOp>([k](CastOp) {
               return [=](KernelIO &io, Tensor &o) {
                 k->convert(launchOf(io), elemOf(io.inputs[0]->type),
                            io.inputs[0]->data(), elemOf(o.type), o.data(),
                            o.numel());
                 return absl::OkStatus();
               };
             }));
}

void addMoves(KernelRegistry &r, llvm::StringRef kind, const Kernels &k) {
  // A copy into the memory of the actor's side (the host pool for an op
  // marked pc.host, else the device), on the copy stream.
  for (std::initializer_list<CommType> types : {kAllTypes, {CommType::U8}})
    addGuarded(r, kind, "pc.copy", types, StreamKind::Copy,
               plainFactory([k](Operation *) {
                 return [=](KernelIO &io, Tensor &o) {
                   k->copy(launchOf(io), o.data(), io.inputs[0]->data(),
                           o.byteSize());
                   return absl::OkStatus();
                 };
               }));
  // One of two inputs passed on whole. The condition is read back to the
  // host: which tensor is the result is the host's choice.
  for (std::initializer_list<CommType> types : {kAllTypes, {CommType::U8}})
    addGuarded(
        r, kind, "pc.select", types, StreamKind::Compute,
        [k](Operation *, BindContext &) -> absl::StatusOr<Kernel> {
          return Kernel([k](KernelIO &io) {
            const Tensor &cond = *io.inputs[0];
            alignas(8) char bytes[8] = {};
            k->toHost(launchOf(io), bytes, cond.data(), sizeOf(cond.type));
            bool pick = TensorView(std::span<const int64_t>(), cond.type, bytes)
                            .get(0) != 0;
            io.outputs[0] = io.sharedInputs[pick ? 1 : 2];
            return absl::OkStatus();
          });
        });
  addGuarded(r, kind, "pc.constant", kAllTypes, StreamKind::Compute,
             [k](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
               auto dense =
                   dyn_cast<DenseElementsAttr>(cast<ConstantOp>(op).getValue());
               if (!dense)
                 return absl::InvalidArgumentError("the value is not dense");
               absl::StatusOr<CommType> type =
                   commTypeOf(op->getResult(0).getType());
               if (!type.ok())
                 return type.status();
               // Made once on the host, copied to the device once; every firing
               // shares it.
               HostTensor host = HostTensor::zeros(
                   shapeOf(op->getResult(0).getType()), *type);
               fillConstant(dense, TensorView(host));
               absl::StatusOr<std::shared_ptr<const Tensor>> value =
                   upload(c, *k, host);
               if (!value.ok())
                 return value.status();
               return Kernel([value = *std::move(value)](KernelIO &io) {
                 io.outputs[0] = value;
                 return absl::OkStatus();
               });
             });
}

/// The product's shapes from the op's types.
portable::MatmulShape matmulShape(MatmulOp m) {
  Shape a = shapeOf(m.getLhs().getType()), b = shapeOf(m.getRhs().getType()),
        out = shapeOf(m.getType());
  portable::MatmulShape s;
  size_t ra = a.size(), rr = out.size();
  s.m = out[rr - 2];
  s.n = out[rr - 1];
  s.k = m.getTransposeLhs() ? a[ra - 2] : a[ra - 1];
  s.transposeA = m.getTransposeLhs();
  s.transposeB = m.getTransposeRhs();
  Shape batch(out.begin(), out.end() - 2);
  s.batchA = broadcastIndex(Shape(a.begin(), a.end() - 2), batch);
  s.batchB = broadcastIndex(Shape(b.begin(), b.end() - 2), batch);
  s.batches = product(batch);
  s.alpha = static_cast<float>(m.getScale());
  return s;
}

void addMatmul(KernelRegistry &r, llvm::StringRef kind, const Kernels &k) {
  addGuarded(
      r, kind, "pc.matmul", kFloats, StreamKind::Compute,
      simple<MatmulOp>([k](MatmulOp m) {
        portable::MatmulShape shape = matmulShape(m);
        Shape out = shapeOf(m.getType());
        std::optional<Index> addend;
        if (Value c = m.getAddend())
          addend = broadcastIndex(shapeOf(c.getType()), out);
        return [=](KernelIO &io, Tensor &o) -> absl::Status {
          Launch l = launchOf(io);
          Elem t = elemOf(o.type);
          return withScratch(io, [&](portable::Scratch &s) -> absl::Status {
            if (!addend) {
              k->matmul(l, t, io.inputs[0]->data(), io.inputs[1]->data(), t,
                        o.data(), shape, s);
              return absl::OkStatus();
            }
            // The scaled product, then the sum, in f32, rounded once (the
            // CPU backend's order).
            int64_t n = o.numel();
            Index whole = contiguous(out);
            const Tensor &c = *io.inputs[2];
            if (t == Elem::F32) {
              k->matmul(l, t, io.inputs[0]->data(), io.inputs[1]->data(), t,
                        o.data(), shape, s);
              k->binary(l, portable::BinaryOp::Add, t, o.data(), whole,
                        c.data(), *addend, o.data(), n);
              return absl::OkStatus();
            }
            void *wide = s.get(n * sizeof(float));
            void *wideC = s.get(c.numel() * sizeof(float));
            k->matmul(l, t, io.inputs[0]->data(), io.inputs[1]->data(),
                      Elem::F32, wide, shape, s);
            k->convert(l, elemOf(c.type), c.data(), Elem::F32, wideC,
                       c.numel());
            k->binary(l, portable::BinaryOp::Add, Elem::F32, wide, whole, wideC,
                      *addend, wide, n);
            k->convert(l, Elem::F32, wide, t, o.data(), n);
            return absl::OkStatus();
          });
        };
      }));
}

void addOptimizers(KernelRegistry &r, llvm::StringRef kind, const Kernels &k) {
  addGuarded(
      r, kind, "pc.adam_update", {CommType::F32}, StreamKind::Compute,
      [k](Operation *op, BindContext &) -> absl::StatusOr<Kernel> {
        auto a = cast<AdamUpdateOp>(op);
        portable::AdamConstants constants = adamConstants(a);
        Shape shape = shapeOf(a.getWeight().getType());
        return Kernel([k, constants, shape](KernelIO &io) -> absl::Status {
          std::shared_ptr<Tensor> out[3];
          for (auto &t : out) {
            absl::StatusOr<std::shared_ptr<Tensor>> made =
                io.context.allocate(shape, CommType::F32);
            if (!made.ok())
              return made.status();
            t = *std::move(made);
          }
          auto in = [&](int i) { return io.inputs[i]->as<float>(); };
          k->adam(launchOf(io), in(0), in(1), in(2), in(3), in(4), in(5), in(6),
                  constants, out[0]->as<float>(), out[1]->as<float>(),
                  out[2]->as<float>(), product(shape));
          for (int i = 0; i < 3; ++i)
            io.outputs[i] = std::move(out[i]);
          return absl::OkStatus();
        });
      });
  addGuarded(r, kind, "pc.adam8_update", {CommType::F32}, StreamKind::Compute,
             [k](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
               auto a = cast<Adam8UpdateOp>(op);
               portable::AdamConstants constants = adamConstants(a);
               // The codes' values, on the device once: the signed map, then
               // the unsigned one.
               HostTensor host = HostTensor::zeros({2, 256}, CommType::F32);
               std::memcpy(host.data(), cpu::quantMap(true).data(), 256 * 4);
               std::memcpy(host.data() + 256 * 4, cpu::quantMap(false).data(),
                           256 * 4);
               absl::StatusOr<std::shared_ptr<const Tensor>> maps =
                   upload(c, *k, host);
               if (!maps.ok())
                 return maps.status();
               std::vector<std::pair<Shape, CommType>> outs;
               for (Value v : a.getResults()) {
                 absl::StatusOr<CommType> type = commTypeOf(v.getType());
                 if (!type.ok())
                   return type.status();
                 outs.push_back({shapeOf(v.getType()), *type});
               }
               Shape w = shapeOf(a.getWeight().getType());
               int64_t row = w.empty() ? 1 : w.back();
               return Kernel([k, constants, outs, maps = *maps, row,
                              n = product(w)](KernelIO &io) -> absl::Status {
                 std::shared_ptr<Tensor> out[5];
                 for (int i = 0; i < 5; ++i) {
                   absl::StatusOr<std::shared_ptr<Tensor>> made =
                       io.context.allocate(outs[i].first, outs[i].second);
                   if (!made.ok())
                     return made.status();
                   out[i] = *std::move(made);
                 }
                 auto in = [&](int i) { return io.inputs[i]; };
                 const float *map = maps->as<float>();
                 k->adam8(launchOf(io), in(0)->as<float>(), in(1)->as<float>(),
                          in(2)->as<uint8_t>(), in(3)->as<float>(),
                          in(4)->as<uint8_t>(), in(5)->as<float>(),
                          in(6)->as<float>(), in(7)->as<float>(),
                          in(8)->as<float>(), constants, map, map + 256, n, row,
                          cpu::kQuantBlock, out[0]->as<float>(),
                          out[1]->as<uint8_t>(), out[2]->as<float>(),
                          out[3]->as<uint8_t>(), out[4]->as<float>());
                 for (int i = 0; i < 5; ++i)
                   io.outputs[i] = std::move(out[i]);
                 return absl::OkStatus();
               });
             });
}

} // namespace

void registerPortableMoves(KernelRegistry &r, llvm::StringRef kind,
                           const std::shared_ptr<DeviceKernels> &k) {
  addGathers(r, kind, k);
  addMoves(r, kind, k);
  addMatmul(r, kind, k);
  addOptimizers(r, kind, k);
}

} // namespace pc::runtime
