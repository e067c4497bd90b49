//===- CommKernels.cpp - Collectives and transfers, registered ------------===//
//
// Binds the per-device communication ops (the boxing steps, pc.redistribute,
// pc.broadcast, pc.send/pc.recv) to the communicator, and pc.piece_offset to
// its value. Everything a step needs that follows from the IR alone (groups,
// member extents, the transfer plan, tags) is derived once, at bind time.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/KernelRegistry.h"

#include "boxing/BoxingPlanner.h"
#include "boxing/MeshCache.h"
#include "dialect/PcOps.h"
#include "runtime/comm/BoxingSteps.h"
#include "runtime/exec/PortableBinding.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "llvm/ADT/Hashing.h"

#include <cstring>

using namespace mlir;

namespace pc::runtime {
namespace {

using Shape = std::vector<int64_t>;

/// A zeroed output tensor on the kernel's device.
absl::StatusOr<std::shared_ptr<Tensor>> zeros(const KernelContext &c,
                                              StepMemory &mem,
                                              const Shape &shape,
                                              CommType type) {
  absl::StatusOr<std::shared_ptr<Tensor>> t = c.allocate(shape, type);
  if (t.ok())
    mem.zero((*t)->data(), (*t)->byteSize());
  return t;
}

/// The firing's memory operations, with the communicator queued on the
/// firing's stream.
std::unique_ptr<StepMemory> prepare(const CommMemory &memory, KernelIO &io,
                                    Communicator &comm) {
  comm.setStream(io.context.stream().nativeHandle());
  return memory.forFiring(io);
}

Shape coordsOn(BindContext &c, FlatSymbolRefAttr mesh) {
  return delinearize(c.meshes.lookup(mesh).getShape(),
                     c.meshes.positionOf(mesh, c.rank));
}

MeshView viewOf(BindContext &c, FlatSymbolRefAttr mesh) {
  MeshOp m = c.meshes.lookup(mesh);
  MeshView v{Shape(m.getShape().begin(), m.getShape().end()), {}};
  for (int64_t p = 0; p < m.getNumDevices(); ++p)
    v.ranks.push_back(m.getRank(p));
  return v;
}

std::string str(llvm::ArrayRef<int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

/// What every member of a collective must agree on (OrderCheck.h): its
/// kind and reduction, the element type, the shape the group shares (the
/// whole of a gathered or scattered piece), the dims, the mesh and axes.
std::string signatureOf(Operation *op, llvm::ArrayRef<int64_t> groupShape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName().stripDialect();
  if (auto reduce = op->getAttrOfType<ReductionAttr>("reduce"))
    os << "(" << stringifyReduction(reduce.getValue()) << ")";
  os << " "
     << cast<RankedTensorType>(op->getOperand(0).getType()).getElementType()
     << " " << str(groupShape);
  for (llvm::StringRef name : {"dim", "src_dim", "dst_dim", "root"})
    if (auto v = op->getAttrOfType<IntegerAttr>(name))
      os << " " << name << " " << v.getInt();
  os << " on " << op->getAttr("mesh") << " axes "
     << str(op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef());
  return s;
}

/// A message's piece, on which its send and receive must agree.
std::string messagePiece(Type elementType, llvm::ArrayRef<int64_t> sizes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << elementType << " " << str(sizes);
  return s;
}

/// Runs a planned group step into a zeroed output of shape `out`.
Kernel stepKernel(GroupStep step, Shape out, Communicator &c,
                  const CommMemory &memory) {
  Communicator *comm = &c;
  return Kernel([=, step = std::move(step)](KernelIO &io) -> absl::Status {
    std::unique_ptr<StepMemory> mem = prepare(memory, io, *comm);
    absl::StatusOr<std::shared_ptr<Tensor>> r =
        zeros(io.context, *mem, out, io.inputs[0]->type);
    if (!r.ok())
      return r.status();
    if (absl::Status s = runGroupStep(*comm, step, *io.inputs[0], **r, *mem);
        !s.ok())
      return s;
    io.outputs[0] = *std::move(r);
    return absl::OkStatus();
  });
}

absl::StatusOr<Kernel> bindStep(Operation *op, BindContext &c,
                                const CommMemory &memory) {
  auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
  auto axesRef = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
  TransitionKind kind;
  ReduceKind reduce = ReduceKind::Sum;
  bool fromBroadcast = true;
  int64_t dim = 0, dst = 0;
  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    kind = TransitionKind::AllReduce;
    reduce = toReduceKind(ar.getReduce());
  } else if (auto ag = dyn_cast<AllGatherOp>(op)) {
    kind = TransitionKind::AllGather;
    dim = ag.getDim();
  } else if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
    kind = TransitionKind::ReduceScatter;
    reduce = toReduceKind(rs.getReduce());
    dim = rs.getDim();
  } else if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    kind = TransitionKind::AllToAll;
    dim = a2a.getSrcDim();
    dst = a2a.getDstDim();
  } else if (auto ls = dyn_cast<LocalSliceOp>(op)) {
    kind = TransitionKind::LocalSlice;
    dim = ls.getDim();
  } else {
    auto lp = cast<LocalPartialOp>(op);
    kind = TransitionKind::LocalPartial;
    reduce = toReduceKind(lp.getReduce());
    fromBroadcast = !lp.getDim();
    dim = lp.getDim().value_or(0);
  }
  Shape axes(axesRef.begin(), axesRef.end());
  Shape out = shapeOf(op->getResult(0).getType());
  MeshView view = viewOf(c, mesh);
  // A step over mesh axes of size 1 has one member, who keeps its piece:
  // annotations may split over such axes, and the step moves nothing, so
  // it costs nothing here either (no copy, no collective).
  int64_t members = 1;
  for (int64_t a : axes)
    members *= view.shape[a];
  if (members == 1 && out == shapeOf(op->getOperand(0).getType()))
    return Kernel([](KernelIO &io) {
      io.outputs[0] = io.sharedInputs[0];
      return absl::OkStatus();
    });
  Shape coords = coordsOn(c, mesh);
  // Local steps move no data between members: nothing to match.
  if (kind != TransitionKind::LocalSlice &&
      kind != TransitionKind::LocalPartial) {
    for (int64_t p : groupMembers(view.shape, coords, axes))
      c.exchange.group.push_back(view.ranks[p]);
    Shape shared = shapeOf(op->getOperand(0).getType());
    if (kind == TransitionKind::AllGather)
      shared = out;
    else if (kind == TransitionKind::AllToAll)
      shared[dim] = out[dim];
    c.exchange.signature = signatureOf(op, shared);
  }
  // Planned now, so that a rank whose shapes are not its pieces fails
  // before anything runs.
  absl::StatusOr<GroupStep> step =
      planLocalStep(kind, reduce, fromBroadcast, axes, dim, dst, view, coords,
                    shapeOf(op->getOperand(0).getType()), out);
  if (!step.ok())
    return step.status();
  return stepKernel(*std::move(step), out, c.comm, memory);
}

/// A pc.redistribute: one all-to-all-v over the whole mesh, its pairing
/// derived here from the two layouts (BoxingSteps.h).
absl::StatusOr<Kernel> bindRedistribute(RedistributeOp op, BindContext &c,
                                        const CommMemory &memory) {
  SbpAttr from = getSbp(op.getFrom()), to = getSbp(op.getTo());
  MeshView view = viewOf(c, from.getMesh());
  Shape out = shapeOf(op.getType());
  absl::StatusOr<GroupStep> step =
      planRedistribute(view, coordsOn(c, from.getMesh()), shapeOf(op.getFrom()),
                       from.getEntries(), to.getEntries(),
                       shapeOf(op.getInput().getType()), out);
  if (!step.ok())
    return step.status();
  if (view.ranks.size() > 1) {
    c.exchange.group = view.ranks;
    std::string sig;
    llvm::raw_string_ostream os(sig);
    os << "redistribute " << op.getFrom() << " -> " << op.getTo();
    c.exchange.signature = sig;
  }
  return stepKernel(*std::move(step), out, c.comm, memory);
}

/// This rank's side of a transfer between layouts: the boxes it sends, or
/// receives, paired by the planner's transfer plan, which every rank derives
/// identically. The k-th transfer of a (from, to) pair is tag k.
struct TransferSide {
  struct Piece {
    Box box;      // in the logical tensor
    Shape offset; // relative to this rank's own box
    int64_t peer; // global rank
  };
  std::vector<Piece> pieces;
  int64_t tag = 0;
};

TransferSide planSide(BindContext &c, TypeAttr from, TypeAttr to, bool send) {
  SbpAttr src = getSbp(from.getValue()), dst = getSbp(to.getValue());
  Shape shape = shapeOf(from.getValue());
  // As the compiler planned it (Partition): with the module's costs.
  boxing::Planner planner(costParams(c.meshes.getModule()));
  boxing::TransferPlan plan = planner.planTransfer(
      shape, elementBytes(from.getValue()), meshInfo(c.meshes.lookup(src)),
      src.getEntries(), meshInfo(c.meshes.lookup(dst)), dst.getEntries());
  std::string pair;
  llvm::raw_string_ostream os(pair);
  os << from << "->" << to;
  TransferSide side;
  side.tag = c.transfers[pair + (send ? "/send" : "/recv")]++ * 1000003 +
             static_cast<int64_t>(llvm::hash_value(pair) & 0xffff);
  SbpAttr mineSbp = send ? src : dst;
  MeshOp mineMesh = c.meshes.lookup(mineSbp),
         peerMesh = c.meshes.lookup(send ? dst : src);
  int64_t me = c.meshes.positionOf(mineSbp.getMesh(), c.rank);
  Box mine = localBox(shape, mineMesh.getShape(), mineSbp.getEntries(),
                      delinearize(mineMesh.getShape(), me));
  for (const boxing::Transfer &t : plan.transfers) {
    if ((send ? t.srcPosition : t.dstPosition) != me)
      continue;
    Shape off(t.box.offsets.size());
    for (size_t d = 0; d < off.size(); ++d)
      off[d] = t.box.offsets[d] - mine.offsets[d];
    side.pieces.push_back(
        {t.box, off, peerMesh.getRank(send ? t.dstPosition : t.srcPosition)});
  }
  return side;
}

} // namespace

void registerCpuCommKernels(KernelRegistry &r, llvm::StringRef kind) {
  registerCommKernels(
      r, kind,
      {[](const KernelIO &) { return std::make_unique<HostStepMemory>(); },
       [](void *dst, const void *src, size_t bytes) {
         std::memcpy(dst, src, bytes);
       }});
}

/// Registers a collective's or transfer's kernel, on the comm stream, for
/// every type. A device's memory kernels throw on a failed launch (as
/// Thrust's do): the firing fails with it, as a compute kernel's does
/// (through the same addGuarded), instead of the throw ending the
/// stream's thread and the process.
static void addComm(KernelRegistry &r, llvm::StringRef kind, llvm::StringRef op,
                    KernelFactory factory) {
  portable_binding::addGuarded(r, kind, op, kAllTypes, StreamKind::Comm,
                               std::move(factory));
}

void registerCommKernels(KernelRegistry &r, llvm::StringRef kind,
                         CommMemory memory) {
  for (llvm::StringRef name :
       {"pc.all_reduce", "pc.all_gather", "pc.reduce_scatter", "pc.all_to_all",
        "pc.local_slice", "pc.local_partial"})
    addComm(r, kind, name, [memory](Operation *op, BindContext &c) {
      return bindStep(op, c, memory);
    });
  addComm(r, kind, "pc.redistribute", [memory](Operation *op, BindContext &c) {
    return bindRedistribute(cast<RedistributeOp>(op), c, memory);
  });
  addComm(r, kind, "pc.broadcast",
          [memory](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
            auto b = cast<BroadcastOp>(op);
            MeshView v = viewOf(c, b.getMeshAttr());
            std::vector<int64_t> group;
            for (int64_t p : groupMembers(v.shape, coordsOn(c, b.getMeshAttr()),
                                          b.getAxes()))
              group.push_back(v.ranks[p]);
            int64_t root = b.getRoot();
            if (group.size() > 1) {
              c.exchange.group = group;
              c.exchange.signature =
                  signatureOf(op, shapeOf(b.getInput().getType()));
            }
            Communicator *comm = &c.comm;
            return Kernel([=](KernelIO &io) -> absl::Status {
              const Tensor &in = *io.inputs[0];
              std::unique_ptr<StepMemory> mem = prepare(memory, io, *comm);
              absl::StatusOr<std::shared_ptr<Tensor>> t =
                  io.context.allocate(in.shape, in.type);
              if (!t.ok())
                return t.status();
              mem->copy((*t)->data(), in.data(), in.byteSize());
              if (absl::Status s = comm->broadcast((*t)->data(), in.numel(),
                                                   in.type, root, group);
                  !s.ok())
                return s;
              io.outputs[0] = *std::move(t);
              return absl::OkStatus();
            });
          });
  addComm(r, kind, "pc.send",
          [memory](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
            auto send = cast<SendOp>(op);
            TransferSide side =
                planSide(c, send.getFromAttr(), send.getToAttr(), true);
            Type element = getElementTypeOrSelf(send.getFrom());
            for (const TransferSide::Piece &p : side.pieces)
              c.exchange.sends.push_back(
                  {p.peer, side.tag, messagePiece(element, p.box.sizes)});
            Communicator *comm = &c.comm;
            return Kernel([=](KernelIO &io) -> absl::Status {
              const Tensor &in = *io.inputs[0];
              std::unique_ptr<StepMemory> mem = prepare(memory, io, *comm);
              for (const TransferSide::Piece &p : side.pieces) {
                int64_t n = product(p.box.sizes);
                absl::StatusOr<char *> piece =
                    mem->scratch(n * sizeOf(in.type));
                if (!piece.ok())
                  return piece.status();
                mem->copyBox(in.data(), in.shape, p.offset, *piece, p.box.sizes,
                             Shape(p.box.sizes.size(), 0), p.box.sizes,
                             sizeOf(in.type));
                if (absl::Status s =
                        comm->send(*piece, n, in.type, p.peer, side.tag);
                    !s.ok())
                  return s;
              }
              return absl::OkStatus();
            });
          });
  addComm(r, kind, "pc.recv",
          [memory](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
            auto recv = cast<RecvOp>(op);
            TransferSide side =
                planSide(c, recv.getFromAttr(), recv.getToAttr(), false);
            Type element = getElementTypeOrSelf(recv.getTo());
            for (const TransferSide::Piece &p : side.pieces)
              c.exchange.recvs.push_back(
                  {p.peer, side.tag, messagePiece(element, p.box.sizes)});
            absl::StatusOr<CommType> type = commTypeOf(recv.getType());
            if (!type.ok())
              return type.status();
            Shape shape = shapeOf(recv.getType());
            Communicator *comm = &c.comm;
            return Kernel([=, type = *type](KernelIO &io) -> absl::Status {
              std::unique_ptr<StepMemory> mem = prepare(memory, io, *comm);
              absl::StatusOr<std::shared_ptr<Tensor>> out =
                  zeros(io.context, *mem, shape, type);
              if (!out.ok())
                return out.status();
              for (const TransferSide::Piece &p : side.pieces) {
                int64_t n = product(p.box.sizes);
                absl::StatusOr<char *> piece = mem->scratch(n * sizeOf(type));
                if (!piece.ok())
                  return piece.status();
                if (absl::Status s =
                        comm->recv(*piece, n, type, p.peer, side.tag);
                    !s.ok())
                  return s;
                mem->copyBox(*piece, p.box.sizes, Shape(p.box.sizes.size(), 0),
                             (*out)->data(), (*out)->shape, p.offset,
                             p.box.sizes, sizeOf(type));
              }
              io.outputs[0] = *std::move(out);
              return absl::OkStatus();
            });
          });
  r.add(kind, "pc.piece_offset", {CommType::I64}, StreamKind::Compute,
        [memory](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
          auto p = cast<PieceOffsetOp>(op);
          int64_t idx = groupIndex(c.meshes.lookup(p.getMeshAttr()).getShape(),
                                   coordsOn(c, p.getMeshAttr()), p.getAxes());
          absl::StatusOr<std::shared_ptr<Tensor>> value =
              c.tensors.allocate({}, CommType::I64);
          if (!value.ok())
            return value.status();
          int64_t offset = 0;
          for (int64_t i = 0; i < idx; ++i)
            offset += p.getSizes()[i];
          try {
            memory.fromHost((*value)->data(), &offset, sizeof offset);
          } catch (const std::exception &e) { // a device copy that failed
            return absl::InternalError(absl::StrCat("pc.piece_offset on ",
                                                    c.tensors.device().name(),
                                                    ": ", e.what()));
          }
          return Kernel([value = std::shared_ptr<const Tensor>(
                             *std::move(value))](KernelIO &io) {
            io.outputs[0] = value;
            return absl::OkStatus();
          });
        });
}

} // namespace pc::runtime
