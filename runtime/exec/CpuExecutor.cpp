//===- CpuExecutor.cpp - Per-device programs on CPU virtual devices -------===//

#include "runtime/exec/CpuExecutor.h"

#include "boxing/MeshCache.h"
#include "dialect/OpProfile.h"
#include "dialect/ParamInit.h"
#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "runtime/actor/ActorRuntime.h"
#include "runtime/comm/Launcher.h"
#include "runtime/comm/Wire.h"
#include "runtime/device/HostMemory.h"
#include "runtime/exec/EmulatedCompute.h"
#include "runtime/exec/RankProgram.h"
#include "runtime/exec/RunWire.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

using namespace mlir;

namespace pc::runtime {
namespace {

using Shape = std::vector<int64_t>;

constexpr int64_t kMaxIterations = int64_t(1) << 24;
constexpr int32_t kMaxRegisters = 1024;

/// `logical`'s piece at `coords` in `sbp`: its box (read from the input's
/// memory or file, nothing else of it), zeros on all but the first member
/// of sum partials.
absl::StatusOr<HostTensor> pieceOf(const Input &logical, SbpAttr sbp,
                                   ArrayRef<int64_t> meshShape,
                                   ArrayRef<int64_t> coords) {
  Box box = localBox(logical.shape(), meshShape, sbp.getEntries(), coords);
  absl::StatusOr<HostTensor> read = logical.box(box.offsets, box.sizes);
  if (!read.ok())
    return read.status();
  HostTensor t = *std::move(read);
  for (auto [axis, e] : llvm::enumerate(sbp.getEntries()))
    if (e.isPartial() && e.reduce == ReduceKind::Sum && coords[axis] != 0)
      std::fill(t.bytes.begin(), t.bytes.end(), 0);
  return t;
}

/// Appends to `out` where the box of token ids that `coords` reads of
/// `value` (input #`index`, in run iteration `iteration`) comes from:
/// "input #0 iteration 2 rows [4, 8): ids.bin@96 ids.bin@0 ...". Nothing for
/// inputs that are not token ids.
void describeRead(std::string &out, const Input &value, SbpAttr sbp,
                  ArrayRef<int64_t> meshShape, ArrayRef<int64_t> coords,
                  int64_t index, size_t iteration) {
  Box box = localBox(value.shape(), meshShape, sbp.getEntries(), coords);
  std::string from = value.sources(box.offsets, box.sizes);
  if (from.empty() || box.offsets.empty())
    return;
  absl::StrAppend(&out, out.empty() ? "" : "; ", "input #", index,
                  " iteration ", iteration, " rows [", box.offsets[0], ", ",
                  box.offsets[0] + box.sizes[0], "): ", from);
}

/// The logical tensor of `logical`'s layout from every mesh position's
/// piece: partial sums reduced, splits placed.
absl::StatusOr<HostTensor>
assemble(MeshCache &meshes, Type logical,
         const std::map<int64_t, HostTensor> &byRank) {
  SbpAttr sbp = getSbp(logical);
  MeshOp mesh = meshes.lookup(sbp);
  ArrayRef<int64_t> meshShape = mesh.getShape();
  int64_t n = mesh.getNumDevices();
  std::vector<HostTensor> at(n);
  for (int64_t p = 0; p < n; ++p) {
    auto it = byRank.find(mesh.getRank(p));
    if (it == byRank.end())
      return absl::InternalError(
          absl::StrCat("no piece of a result from rank ", mesh.getRank(p)));
    at[p] = it->second;
  }
  at = reducePartials(
      std::move(at), meshShape, sbp.getEntries(),
      [](const std::vector<HostTensor> &members, ReduceKind kind) {
        HostTensor acc = members[0];
        for (size_t m = 1; m < members.size(); ++m)
          for (int64_t i = 0; i < acc.numel(); ++i) {
            double x = acc.get(i), y = members[m].get(i);
            acc.set(i, kind == ReduceKind::Max   ? std::max(x, y)
                       : kind == ReduceKind::Min ? std::min(x, y)
                                                 : x + y);
          }
        if (kind == ReduceKind::Avg)
          for (int64_t i = 0; i < acc.numel(); ++i)
            acc.set(i, acc.get(i) / members.size());
        return acc;
      });
  absl::StatusOr<CommType> type = commTypeOf(logical);
  if (!type.ok())
    return type.status();
  HostTensor whole = HostTensor::zeros(shapeOf(logical), *type);
  for (int64_t p = 0; p < n; ++p) {
    Box box = localBox(whole.shape, meshShape, sbp.getEntries(),
                       delinearize(meshShape, p));
    if (at[p].shape != box.sizes || at[p].type != *type)
      return absl::InternalError("a result's pieces do not fit its layout");
    copyBox(at[p].bytes.data(), at[p].shape, Shape(box.sizes.size(), 0),
            whole.bytes.data(), whole.shape, box.offsets, box.sizes,
            sizeOf(*type));
  }
  return whole;
}

} // namespace

/// One graph's programs on this process's ranks, bound once: what a run
/// needs besides its arguments.
struct CpuSession::BoundGraph {
  struct Rank {
    int64_t rank = 0;
    func::FuncOp function;
    RankDevice *device = nullptr;
    std::unique_ptr<Communicator> comm;
    std::unique_ptr<MeshCache> meshes;
    std::unique_ptr<BindContext> context;
    // After the context, which its kernels use: it goes first.
    std::unique_ptr<RankProgram> program;
    /// Compute, communication, input (RankProgram::StreamIndex), then the
    /// one that copies per-iteration inputs in, beside the kernels.
    std::vector<std::unique_ptr<Stream>> streams;
  };
  int32_t registers = 0;
  uint64_t generation = 0;
  std::map<int64_t, std::unique_ptr<Rank>> ranks;
};

CpuSession::CpuSession(ModuleOp module, uint64_t seed, World *world)
    : module(module), seed(seed), backends(availableBackends()),
      ownWorld(world ? nullptr : makeInProcessWorld()),
      world(world ? *world : *ownWorld) {}

CpuSession::~CpuSession() {
  // The tensors first, then their devices.
  bound.clear();
  pending.clear();
  params.clear();
}

absl::StatusOr<std::shared_ptr<const Tensor>>
CpuSession::RankDevice::upload(const HostTensor &t) {
  absl::StatusOr<std::shared_ptr<Tensor>> d =
      tensors->allocate(t.shape, t.type);
  if (!d.ok())
    return d.status();
  device->copyAsync((*d)->data(), t.data(), t.byteSize(), *transfer);
  if (absl::Status s = synchronizeTransfer(); !s.ok())
    return s;
  return std::shared_ptr<const Tensor>(*std::move(d));
}

absl::StatusOr<std::shared_ptr<const Tensor>>
CpuSession::RankDevice::uploadToHost(const HostTensor &t) {
  if (!hostTensors)
    return upload(t);
  absl::StatusOr<std::shared_ptr<Tensor>> h =
      hostTensors->allocate(t.shape, t.type);
  if (!h.ok())
    return h.status();
  std::memcpy((*h)->data(), t.data(), t.byteSize());
  return std::shared_ptr<const Tensor>(*std::move(h));
}

absl::StatusOr<HostTensor> CpuSession::RankDevice::download(const Tensor &t) {
  HostTensor h = HostTensor::zeros(t.shape, t.type);
  device->copyAsync(h.data(), t.data(), t.byteSize(), *transfer);
  if (absl::Status s = synchronizeTransfer(); !s.ok())
    return s;
  return h;
}

absl::Status CpuSession::RankDevice::synchronizeTransfer() {
  absl::Status s = transfer->synchronize();
  if (s.ok())
    return s;
  // A failed copy poisons its stream for good; the next copies get a new
  // one, so that one failure does not fail the rest of the session.
  absl::StatusOr<std::unique_ptr<Stream>> fresh =
      device->createStream("transfer");
  if (fresh.ok())
    transfer = *std::move(fresh);
  return s;
}

absl::StatusOr<const Backend *> CpuSession::backendOf(int64_t rank) {
  // The kind of the meshes that hold the rank chooses the backend.
  std::optional<DeviceKind> kind;
  for (auto mesh : module.getOps<MeshOp>())
    for (int64_t p = 0; p < mesh.getNumDevices(); ++p) {
      if (mesh.getRank(p) != rank)
        continue;
      if (kind && *kind != mesh.getDevice())
        return absl::InvalidArgumentError(absl::StrCat(
            "rank ", rank, " is a ", stringifyDeviceKind(*kind).str(),
            " device in one mesh and a ",
            stringifyDeviceKind(mesh.getDevice()).str(), " device in @",
            mesh.getSymName().str()));
      kind = mesh.getDevice();
    }
  std::string name =
      !deviceKind.empty()
          ? deviceKind
          : stringifyDeviceKind(kind.value_or(DeviceKind::cpu)).str();
  const Backend *backend = nullptr;
  for (const Backend &b : backends)
    if (b.kind == name)
      backend = &b;
  if (!backend)
    return absl::UnimplementedError(
        absl::StrCat("rank ", rank, " runs on a ", name,
                     " device, and this build has no ", name, " backend"));
  return backend;
}

absl::Status CpuSession::registerBackendsOf(std::span<const int64_t> ranks) {
  for (int64_t rank : ranks) {
    absl::StatusOr<const Backend *> backend = backendOf(rank);
    if (!backend.ok())
      return backend.status();
    if (registeredKinds.contains((*backend)->kind))
      continue;
    if (absl::Status s = (*backend)->registerKernels(kernels); !s.ok())
      return absl::Status(s.code(), absl::StrCat("rank ", rank, " runs on a ",
                                                 (*backend)->kind,
                                                 " device: ", s.message()));
    registeredKinds.insert((*backend)->kind);
  }
  return absl::OkStatus();
}

absl::StatusOr<CpuSession::RankDevice *> CpuSession::deviceOf(int64_t rank) {
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = devices.find(rank); it != devices.end())
    return &it->second;
  absl::StatusOr<const Backend *> backend = backendOf(rank);
  if (!backend.ok())
    return backend.status();
  RankDevice d;
  d.backend = *backend;
  absl::StatusOr<std::unique_ptr<Device>> device =
      (*backend)->makeDevice(rank, deviceOptions);
  if (!device.ok())
    return device.status();
  d.device = *std::move(device);
  absl::StatusOr<std::unique_ptr<Stream>> transfer =
      d.device->createStream("transfer");
  if (!transfer.ok())
    return transfer.status();
  d.transfer = *std::move(transfer);
  d.tensors = std::make_unique<TensorAllocator>(*d.device);
  // Host memory, for what CPU offload keeps there: a pool of its own,
  // outside the device's capacity.
  for (const Backend &b : backends)
    if (b.kind == "cpu") {
      absl::StatusOr<std::unique_ptr<Device>> host =
          b.makeDevice(rank, DeviceOptions{1, 0});
      if (!host.ok())
        return host.status();
      d.host = *std::move(host);
      d.hostTensors = std::make_unique<TensorAllocator>(*d.host);
    }
  return &devices.emplace(rank, std::move(d)).first->second;
}

/// "'a', 'b'", at most four names, then how many there are in all.
static std::string quotedNames(const std::vector<std::string> &names) {
  size_t shown = std::min<size_t>(names.size(), 4);
  return absl::StrCat(
      "'", absl::StrJoin(names.begin(), names.begin() + shown, "', '"), "'",
      shown < names.size() ? absl::StrCat(" (", names.size(), " in all)") : "");
}

absl::StatusOr<std::vector<std::string>>
CpuSession::load(std::map<std::string, HostTensor> values, LoadKind kind) {
  std::map<std::string, Input> inputs;
  for (auto &[name, t] : values)
    inputs.emplace(name, Input::own(std::move(t)));
  return load(std::move(inputs), kind);
}

absl::StatusOr<std::vector<std::string>>
CpuSession::load(std::map<std::string, Input> values, LoadKind kind) {
  std::set<std::string> names;
  for (auto p : module.getOps<ParamOp>())
    names.insert(p.getSymName().str());
  std::vector<std::string> unmatched;
  for (const auto &[name, value] : values)
    if (!names.count(name))
      unmatched.push_back(name);
  if (kind == LoadKind::Weights && !unmatched.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        unmatched.size() == 1 ? "tensor " : "tensors ", quotedNames(unmatched),
        unmatched.size() == 1 ? " matches" : " match",
        " no parameter of the program"));
  }
  std::vector<std::string> missing;
  for (auto p : module.getOps<ParamOp>()) {
    std::string name = p.getSymName().str();
    auto it = values.find(name);
    if (it == values.end()) {
      if (kind == LoadKind::Checkpoint || !attrs::isOptimizerState(p))
        missing.push_back(name);
      continue;
    }
    Shape shape = shapeOf(p.getType());
    absl::StatusOr<CommType> type = commTypeOf(p.getType());
    if (!type.ok())
      return type.status();
    if (it->second.shape() != shape || it->second.type() != *type)
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", name, "' does not match @", name, ": it is ",
          nameOf(it->second.type()), " of shape ",
          absl::StrJoin(it->second.shape(), "x"), ", the parameter ",
          nameOf(*type), " of shape ", absl::StrJoin(shape, "x")));
  }
  if (!missing.empty()) {
    return absl::NotFoundError(absl::StrCat("no tensor for parameter",
                                            missing.size() == 1 ? " " : "s ",
                                            quotedNames(missing)));
  }
  std::lock_guard<std::mutex> lock(mu);
  loaded = std::move(values);
  params.clear();
  lost = absl::OkStatus(); // every piece starts again from what was loaded
  return unmatched;
}

absl::Status CpuSession::usable() const {
  if (lost.ok())
    return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "a run failed after updating some parameters in place (in-place "
      "updates keep no copy to roll back to); load a checkpoint to go on. "
      "The run failed with: ",
      lost.message()));
}

bool CpuSession::storesParams(
    const std::map<int64_t, func::FuncOp> &programOf) {
  for (auto [rank, f] : programOf)
    if (f.walk([](SetParamOp) {
           return WalkResult::interrupt();
         }).wasInterrupted())
      return true;
  return false;
}

absl::StatusOr<std::shared_ptr<const Tensor>>
CpuSession::param(int64_t rank, llvm::StringRef name, Type local) {
  absl::StatusOr<RankDevice *> device = deviceOf(rank);
  if (!device.ok())
    return device.status();
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(rank, name.str());
  auto it = params.find(key);
  if (it != params.end())
    return it->second;
  absl::StatusOr<CommType> type = commTypeOf(local);
  if (!type.ok())
    return type.status();
  auto p = module.lookupSymbol<ParamOp>(name);
  if (!p)
    return absl::NotFoundError(absl::StrCat("no parameter @", name.str()));
  // A loaded parameter's piece is read from the file alone (the rest of the
  // tensor stays unread); a generated one is drawn whole, then sliced.
  std::optional<Input> generated;
  const Input *whole = nullptr;
  if (auto l = loaded.find(name.str()); l != loaded.end()) {
    whole = &l->second;
  } else {
    // Drawn in double, then stored: both must fit.
    int64_t elements = product(shapeOf(p.getType()));
    if (absl::Status s = checkHostMemory(
            elements * (8 + sizeOf(*type)),
            absl::StrCat("initializing parameter '", name.str(), "'"));
        !s.ok())
      return s;
    std::vector<double> values = initialValues(p, seed);
    HostTensor t = HostTensor::zeros(shapeOf(p.getType()), *type);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, values[i]);
    whole = &generated.emplace(Input::own(std::move(t)));
  }
  SbpAttr sbp = getSbp(p.getType());
  absl::StatusOr<HostTensor> piece;
  if (sbp && !getSbp(local)) {
    MeshCache meshes(module);
    MeshOp mesh = meshes.lookup(sbp);
    piece = pieceOf(
        *whole, sbp, mesh.getShape(),
        delinearize(mesh.getShape(), meshes.positionOf(sbp.getMesh(), rank)));
  } else {
    piece = whole->whole();
  }
  if (!piece.ok())
    return absl::Status(piece.status().code(),
                        absl::StrCat("parameter '", name.str(),
                                     "': ", piece.status().message()));
  // The verifier holds per-device programs to this; kernels trust it.
  if (piece->shape != shapeOf(local) || piece->type != *type)
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " reads parameter '", name.str(),
                     "' as another shape or type than its piece"));
  absl::StatusOr<std::shared_ptr<const Tensor>> onDevice =
      attrs::isHost(p) ? (*device)->uploadToHost(*piece)
                       : (*device)->upload(*piece);
  if (!onDevice.ok())
    return onDevice.status();
  return params.emplace(key, *std::move(onDevice)).first->second;
}

absl::StatusOr<std::map<std::pair<int64_t, std::string>, HostTensor>>
CpuSession::pieces() {
  if (absl::Status s = usable(); !s.ok())
    return s;
  Pieces held;
  {
    std::lock_guard<std::mutex> lock(mu);
    held = params;
  }
  std::map<std::pair<int64_t, std::string>, HostTensor> out;
  for (auto &[key, piece] : held) {
    absl::StatusOr<RankDevice *> device = deviceOf(key.first);
    if (!device.ok())
      return device.status();
    absl::StatusOr<HostTensor> host = (*device)->download(*piece);
    if (!host.ok())
      return host.status();
    out.emplace(key, *std::move(host));
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>>
CpuSession::rowsRead(llvm::StringRef graph, int64_t index) {
  MeshCache meshes(module);
  std::vector<std::pair<int64_t, int64_t>> rows;
  bool found = false;
  for (auto f : module.getOps<func::FuncOp>()) {
    StringAttr g = attrs::getGraph(f);
    if (!g || g.getValue() != graph)
      continue;
    found = true;
    for (int64_t rank : attrs::getRanks(f)) {
      if (!world.hosts(rank))
        continue;
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        if (attrs::getArgIndex(f, i) != index)
          continue;
        Type logical = attrs::getArgLogicalType(f, i);
        std::vector<int64_t> shape = shapeOf(logical);
        if (shape.empty())
          continue;
        SbpAttr sbp = getSbp(logical);
        MeshOp mesh = meshes.lookup(sbp);
        Box box = localBox(shape, mesh.getShape(), sbp.getEntries(),
                           delinearize(mesh.getShape(),
                                       meshes.positionOf(sbp.getMesh(), rank)));
        rows.emplace_back(box.offsets[0], box.offsets[0] + box.sizes[0]);
      }
    }
  }
  if (!found)
    return absl::NotFoundError(
        absl::StrCat("no per-device programs of @", graph.str()));
  llvm::sort(rows);
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (auto [begin, end] : rows)
    if (!merged.empty() && begin <= merged.back().second)
      merged.back().second = std::max(merged.back().second, end);
    else
      merged.emplace_back(begin, end);
  return merged;
}

absl::StatusOr<std::map<std::string, HostTensor>> CpuSession::snapshot() {
  MeshCache meshes(module);
  std::map<std::string, HostTensor> out;
  // Every process's pieces, on process 0.
  absl::StatusOr<std::map<std::pair<int64_t, std::string>, HostTensor>> held =
      pieces();
  if (absl::Status s = world.agree(held.status()); !s.ok())
    return s;
  std::map<std::pair<int64_t, std::string>, HostTensor> all = *std::move(held);
  if (world.processCount() > 1) {
    WireWriter w;
    w.i64(static_cast<int64_t>(all.size()));
    for (auto &[key, piece] : all) {
      w.i64(key.first);
      w.bytes(key.second);
      writeTensor(w, piece);
    }
    absl::StatusOr<std::vector<std::string>> parts = world.gather(w.take());
    if (!parts.ok())
      return parts.status();
    if (world.process() != 0)
      return out;
    all.clear();
    for (const std::string &part : *parts) {
      WireReader r(part);
      for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
        int64_t rank = r.i64();
        std::string name(r.bytes());
        all[{rank, name}] = readTensor(r);
      }
      if (!r.ok())
        return absl::InternalError("a process sent garbled parameters");
    }
  }
  for (auto p : module.getOps<ParamOp>()) {
    std::string name = p.getSymName().str();
    absl::StatusOr<CommType> type = commTypeOf(p.getType());
    if (!type.ok())
      return type.status();
    SbpAttr sbp = getSbp(p.getType());
    HostTensor whole = HostTensor::zeros(shapeOf(p.getType()), *type);
    bool fromPieces = false;
    if (sbp) {
      // Every mesh position's piece, where all exist (a parameter the
      // programs never read has none).
      MeshOp mesh = meshes.lookup(sbp);
      std::vector<const HostTensor *> pieces;
      for (int64_t q = 0; q < mesh.getNumDevices(); ++q) {
        auto it = all.find({mesh.getRank(q), name});
        pieces.push_back(it == all.end() ? nullptr : &it->second);
      }
      fromPieces = llvm::all_of(pieces, [](auto &t) { return t != nullptr; });
      for (int64_t q = 0; fromPieces && q < mesh.getNumDevices(); ++q) {
        Box box = localBox(whole.shape, mesh.getShape(), sbp.getEntries(),
                           delinearize(mesh.getShape(), q));
        if (pieces[q]->shape != box.sizes || pieces[q]->type != *type)
          return absl::InternalError(absl::StrCat(
              "the pieces of parameter '", name, "' do not fit its layout"));
        copyBox(pieces[q]->bytes.data(), pieces[q]->shape,
                Shape(box.sizes.size(), 0), whole.bytes.data(), whole.shape,
                box.offsets, box.sizes, sizeOf(*type));
      }
    }
    if (!fromPieces) {
      std::lock_guard<std::mutex> lock(mu);
      if (auto l = loaded.find(name); l != loaded.end()) {
        absl::StatusOr<HostTensor> read = l->second.whole();
        if (!read.ok())
          return read.status();
        whole = *std::move(read);
      } else {
        if (absl::Status s = checkHostMemory(
                whole.numel() * 8,
                absl::StrCat("initializing parameter '", name, "'"));
            !s.ok())
          return s;
        std::vector<double> values = initialValues(p, seed);
        for (int64_t i = 0; i < whole.numel(); ++i)
          whole.set(i, values[i]);
      }
    }
    out[name] = std::move(whole);
  }
  return out;
}

absl::StatusOr<CpuRun> runOnCpu(ModuleOp module, llvm::StringRef graph,
                                const std::vector<HostTensor> &inputs,
                                uint64_t seed) {
  CpuSession session(module, seed);
  return session.run(graph, inputs);
}

absl::StatusOr<CpuRun> CpuSession::run(llvm::StringRef graph,
                                       const std::vector<HostTensor> &inputs,
                                       const CpuRunOptions &options) {
  std::vector<Input> borrowed;
  for (const HostTensor &t : inputs)
    borrowed.push_back(Input::borrow(t));
  return run(graph, borrowed, options);
}

absl::StatusOr<std::shared_ptr<const Tensor>>
CpuSession::read(int64_t rank, llvm::StringRef name, Type local,
                 int64_t iteration) {
  if (iteration > 0) {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = pending.find({rank, name.str()}); it != pending.end())
      if (auto v = it->second.find(iteration - 1); v != it->second.end())
        return v->second;
  }
  return param(rank, name, local);
}

void CpuSession::store(int64_t rank, llvm::StringRef name, int64_t iteration,
                       std::shared_ptr<const Tensor> piece) {
  std::lock_guard<std::mutex> lock(mu);
  pending[{rank, name.str()}][iteration] = std::move(piece);
}

void CpuSession::readsDone(int64_t rank, llvm::StringRef name,
                           int64_t iteration) {
  // The piece this iteration read has no readers left but the kernels
  // that hold it, which let it go as they finish. The session drops its
  // own reference: to what the iteration before stored and, in place, to
  // the parameter (the run's starting piece, or what the iteration before
  // settled); a transaction keeps the starting piece to roll back to.
  // Nothing reads a dropped piece again: the next iteration reads what
  // this one stores, and waits for the store.
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(rank, name.str());
  if (auto it = pending.find(key); it != pending.end() && iteration > 0)
    it->second.erase(iteration - 1);
  if (inPlaceUpdates)
    params.erase(key);
}

void CpuSession::settle(int64_t rank, llvm::StringRef name, int64_t iteration) {
  // In place, what this iteration stored becomes the parameter as soon as
  // its reads are done; in a transaction it waits for the run's success.
  if (!inPlaceUpdates)
    return;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(rank, name.str());
  auto it = pending.find(key);
  if (it == pending.end())
    return;
  auto stored = it->second.find(iteration);
  if (stored == it->second.end())
    return;
  params[key] = std::move(stored->second);
  pending.erase(it);
}

bool CpuSession::isBound(llvm::StringRef graph,
                         const CpuRunOptions &options) const {
  auto it = bound.find(graph.str());
  return it != bound.end() && it->second &&
         it->second->registers == options.registers &&
         it->second->generation == world.generation();
}

absl::Status
CpuSession::setEmulatedCompute(std::shared_ptr<const OpProfile> profile) {
  if (profile)
    for (const auto &[key, seconds] : profile->seconds)
      if (seconds > kMaxEmulatedWaitSeconds)
        return absl::InvalidArgumentError(
            absl::StrCat("op profile: the time of '", key, "' (", seconds,
                         " s) is longer than an emulated op waits (",
                         kMaxEmulatedWaitSeconds, " s)"));
  emulated = std::move(profile);
  bound.clear(); // their kernels are the old setting's
  return absl::OkStatus();
}

absl::StatusOr<CpuSession::BoundGraph *>
CpuSession::bind(llvm::StringRef graph,
                 const std::map<int64_t, func::FuncOp> &programOf,
                 const CpuRunOptions &options) {
  std::unique_ptr<BoundGraph> &slot = bound[graph.str()];
  if (isBound(graph, options))
    return slot.get();
  slot.reset();
  auto made = std::make_unique<BoundGraph>();
  made->registers = options.registers;
  made->generation = world.generation();
  std::vector<int64_t> hosted;
  for (auto &[rank, f] : programOf)
    if (world.hosts(rank)) {
      hosted.push_back(rank);
      auto r = std::make_unique<BoundGraph::Rank>();
      r->rank = rank;
      r->function = f;
      made->ranks[rank] = std::move(r);
    }
  if (absl::Status s = registerBackendsOf(hosted); !s.ok())
    return s;
  absl::Status status = launch(world, hosted, [&](int64_t rank) {
    BoundGraph::Rank &r = *made->ranks.at(rank);
    absl::StatusOr<RankDevice *> device = deviceOf(rank);
    if (!device.ok())
      return device.status();
    r.device = *device;
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        r.device->backend->makeCommunicator(world, rank);
    if (!comm.ok())
      return comm.status();
    r.comm = *std::move(comm);
    for (const char *name :
         {"compute", "comm", "input", "offload copies", "input copies"}) {
      absl::StatusOr<std::unique_ptr<Stream>> stream =
          r.device->device->createStream(name);
      if (!stream.ok())
        return stream.status();
      r.streams.push_back(*std::move(stream));
    }
    // Each rank binds its own program: the mesh cache is not shared
    // between threads.
    r.meshes = std::make_unique<MeshCache>(module);
    r.context.reset(
        new BindContext{rank, *r.meshes, *r.comm, *r.device->tensors});
    r.context->hostTensors = r.device->hostTensors.get();
    r.context->emulated = emulated.get();
    ParamStore access{
        [this, rank](llvm::StringRef name, Type local, int64_t iteration) {
          return read(rank, name, local, iteration);
        },
        [this, rank](llvm::StringRef name, int64_t iteration,
                     std::shared_ptr<const Tensor> piece) {
          this->store(rank, name, iteration, std::move(piece));
        },
        [this, rank](llvm::StringRef name, int64_t iteration) {
          readsDone(rank, name, iteration);
        },
        [this, rank](llvm::StringRef name, int64_t iteration) {
          settle(rank, name, iteration);
        }};
    r.program = std::make_unique<RankProgram>(
        kernels, *r.context, std::move(access), options.registers);
    return r.program->build(r.function);
  });
  if (!status.ok())
    return status;
  slot = std::move(made);
  return slot.get();
}

absl::StatusOr<CpuRun> CpuSession::run(llvm::StringRef graph,
                                       std::span<const Input> inputs,
                                       const CpuRunOptions &options) {
  if (absl::Status s = usable(); !s.ok())
    return s;
  if (options.iterations < 1 || options.registers < 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "a run needs at least one iteration and one register, not ",
        options.iterations, " and ", options.registers));
  // Bounds that keep the bookkeeping of a run (per iteration, per register)
  // far from memory limits.
  if (options.iterations > kMaxIterations || options.registers > kMaxRegisters)
    return absl::InvalidArgumentError(
        absl::StrCat("a run has at most ", kMaxIterations, " iterations and ",
                     kMaxRegisters, " registers per actor, not ",
                     options.iterations, " and ", options.registers));
  for (auto &[index, values] : options.varying)
    if (static_cast<int64_t>(values.size()) != options.iterations)
      return absl::InvalidArgumentError(absl::StrCat(
          "input #", index, " varies over ", values.size(),
          " values; the run has ", options.iterations, " iterations"));
  MeshCache meshes(module);
  std::map<int64_t, func::FuncOp> programOf; // every rank's, on every process
  int64_t worldSize = 0;
  for (auto f : module.getOps<func::FuncOp>()) {
    StringAttr g = attrs::getGraph(f);
    if (!g || g.getValue() != graph)
      continue;
    for (int64_t rank : attrs::getRanks(f)) {
      worldSize = std::max(worldSize, rank + 1);
      programOf[rank] = f;
    }
  }
  if (programOf.empty())
    return absl::NotFoundError(
        absl::StrCat("no per-device programs of @", graph.str()));
  if (absl::Status s = world.beginRun(worldSize); !s.ok())
    return s;
  // Each process slices its ranks' pieces of the inputs; what it reads can
  // fail on one process alone (a value out of range, a corrupt file): then
  // it aborts the world, so that the others do not wait for it until their
  // timeout, and they end with its error.
  std::map<int64_t, std::vector<std::vector<HostTensor>>> pieces;
  auto checked = [&](const Input &in, int64_t index,
                     Type logical) -> absl::Status {
    if (in.shape() != shapeOf(logical))
      return absl::InvalidArgumentError(absl::StrCat(
          "input #", index, " has the wrong shape for @", graph.str()));
    absl::StatusOr<CommType> type = commTypeOf(logical);
    if (!type.ok())
      return type.status();
    if (in.type() != *type)
      return absl::InvalidArgumentError(
          absl::StrCat("input #", index, " is ", nameOf(in.type()), "; @",
                       graph.str(), " takes ", nameOf(*type)));
    return absl::OkStatus();
  };
  // The run's clock starts before the inputs are read: a step's time holds
  // the reading of its batch, and the trace shows it (per rank, on the
  // input stream's row, as "read inputs").
  auto origin = std::chrono::steady_clock::now();
  auto usSinceOrigin = [&] {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now() - origin)
        .count();
  };
  std::map<int64_t, std::pair<double, double>> readUs; // rank: start, length
  // With a trace, what each rank read of token-id inputs (Input::sources):
  // the dataset samples behind its rows, per input and iteration.
  std::map<int64_t, std::string> readFrom;
  absl::Status prepared = [&]() -> absl::Status {
    for (auto &[rank, f] : programOf) {
      if (!world.hosts(rank))
        continue;
      double readStart = usSinceOrigin();
      std::vector<std::vector<HostTensor>> &args = pieces[rank];
      for (BlockArgument arg : f.getArguments()) {
        unsigned i = arg.getArgNumber();
        int64_t index = *attrs::getArgIndex(f, i);
        Type logical = attrs::getArgLogicalType(f, i);
        if (index >= static_cast<int64_t>(inputs.size()))
          return absl::InvalidArgumentError(absl::StrCat(
              "@", graph.str(), " needs input #", index, ", not given"));
        if (absl::Status s = checked(inputs[index], index, logical); !s.ok())
          return s;
        auto varying = options.varying.find(index);
        std::span<const Input> values =
            varying == options.varying.end()
                ? std::span<const Input>(&inputs[index], 1)
                : std::span<const Input>(varying->second);
        SbpAttr sbp = getSbp(logical);
        MeshOp mesh = meshes.lookup(sbp);
        std::vector<HostTensor> &out = args.emplace_back();
        std::vector<int64_t> coords = delinearize(
            mesh.getShape(), meshes.positionOf(sbp.getMesh(), rank));
        for (auto [iteration, value] : llvm::enumerate(values)) {
          if (absl::Status s = checked(value, index, logical); !s.ok())
            return s;
          absl::StatusOr<HostTensor> piece =
              pieceOf(value, sbp, mesh.getShape(), coords);
          if (options.trace)
            describeRead(readFrom[rank], value, sbp, mesh.getShape(), coords,
                         index, iteration);
          if (!piece.ok())
            return absl::Status(piece.status().code(),
                                absl::StrCat("input #", index, " of @",
                                             graph.str(), ": ",
                                             piece.status().message()));
          out.push_back(*std::move(piece));
        }
      }
      readUs[rank] = {readStart, usSinceOrigin() - readStart};
    }
    return absl::OkStatus();
  }();
  if (!prepared.ok()) {
    world.abort(prepared);
    return prepared;
  }
  // A failed run stores nothing and drops the bound programs (their streams
  // and endpoints may be poisoned); the next run binds afresh.
  // Under in-place updates a run that stores parameters and failed once
  // it started may have replaced some of them: the session keeps the
  // error and refuses to go on until parameters are loaded. Every process
  // starts the run or none does, so all of them decide alike.
  bool started = false;
  auto failed = [&](absl::Status s) {
    std::lock_guard<std::mutex> lock(mu);
    pending.clear();
    bound.erase(graph.str());
    if (started && inPlaceUpdates && storesParams(programOf))
      lost = s;
    return s;
  };

  // Every process binds on the same runs (the same sequence of runs and
  // failures everywhere), and then all bound or all fail. Reusing a bound
  // graph needs no word between processes.
  bool fresh = !isBound(graph, options);
  absl::StatusOr<BoundGraph *> made = bind(graph, programOf, options);
  if (fresh)
    if (absl::Status s = world.agree(made.status()); !s.ok())
      return failed(s);
  if (!made.ok())
    return failed(made.status());
  BoundGraph &b = **made;
  std::vector<int64_t> hosted;
  for (auto &[rank, r] : b.ranks) {
    hosted.push_back(rank);
    auto given = options.order.find(rank);
    if (absl::Status s = r->program->setOrder(
            given == options.order.end()
                ? std::span<const std::pair<int64_t, int64_t>>()
                : std::span<const std::pair<int64_t, int64_t>>(given->second),
            options.iterations);
        !s.ok())
      made = s;
  }
  auto checkRankOrders = [&]() -> absl::Status {
    if (absl::Status s = world.agree(made.status()); !s.ok())
      return s;
    std::map<int64_t, std::vector<CommEvent>> mine;
    for (auto &[rank, r] : b.ranks)
      mine[rank] = r->program->exchanges(options.iterations);
    absl::StatusOr<std::vector<std::string>> parts =
        world.gather(encodeOrders(mine));
    if (!parts.ok())
      return parts.status();
    auto judge = [&]() -> absl::Status {
      std::map<int64_t, std::vector<CommEvent>> byRank;
      for (const std::string &part : *parts)
        if (absl::Status s = decodeOrders(part, byRank); !s.ok())
          return s;
      return checkOrders(byRank);
    };
    return world.agree(world.process() == 0 ? judge() : absl::OkStatus());
  };
  // Before anything runs, the ranks' programs are checked against each
  // other: collectives' members agree on what they run, every message has
  // both ends, and no order deadlocks. A mismatch fails every rank with
  // the ranks and ops named, where running would hang or mix data.
  std::pair<std::string, int64_t> defaultKey{graph.str(), options.iterations};
  if (!options.order.empty() || !checkedDefaultOrders.count(defaultKey)) {
    if (absl::Status s = checkRankOrders(); !s.ok())
      return failed(s);
    if (options.order.empty())
      checkedDefaultOrders.insert(defaultKey);
  }
  // (A default order that passed the check once cannot fail to set.)
  if (!made.ok())
    return failed(made.status());

  ProgramRun programRun;
  programRun.iterations = options.iterations;
  programRun.step = options.step;
  programRun.trace = options.trace;
  programRun.everyIteration = options.everyIteration;
  programRun.origin = origin;
  programRun.onError = [this](const absl::Status &s) { world.abort(s); };
  std::map<int64_t, RankResult> mine;
  for (int64_t rank : hosted)
    mine[rank];
  started = true;
  absl::Status launched = launch(world, hosted, [&](int64_t rank) {
    BoundGraph::Rank &r = *b.ranks.at(rank);
    RankResult &out = mine.at(rank);
    RankDevice &d = *r.device;
    // The run's peak starts from what the device holds already (the
    // parameters and constants); the inputs' copies count in it.
    d.tensors->resetPeak();
    std::vector<ArgFeed> args;
    for (std::vector<HostTensor> &values : pieces.at(rank)) {
      ArgFeed &feed = args.emplace_back();
      if (values.size() > 1) {
        feed.perIteration = std::move(values);
        continue;
      }
      absl::StatusOr<std::shared_ptr<const Tensor>> t = d.upload(values[0]);
      if (!t.ok())
        return t.status();
      feed.fixed = *std::move(t);
    }
    Stream *streams[] = {r.streams[0].get(), r.streams[1].get(),
                         r.streams[2].get(), r.streams[3].get()};
    Stream &copy = *r.streams[4];
    CommStats before = r.comm->stats();
    auto upload = [&](const HostTensor &t)
        -> absl::StatusOr<std::shared_ptr<const Tensor>> {
      absl::StatusOr<std::shared_ptr<Tensor>> dst =
          d.tensors->allocate(t.shape, t.type);
      if (!dst.ok())
        return dst.status();
      d.device->copyAsync((*dst)->data(), t.data(), t.byteSize(), copy);
      if (absl::Status s = copy.synchronize(); !s.ok())
        return s;
      return std::shared_ptr<const Tensor>(*std::move(dst));
    };
    absl::StatusOr<actor::RunStats> stats =
        r.program->run(streams, std::move(args), programRun, upload);
    out.stats = since(r.comm->stats(), before);
    if (!stats.ok())
      return stats.status();
    for (auto &kept : r.program->takeResults()) {
      std::vector<HostTensor> &host = out.results.emplace_back();
      for (const std::shared_ptr<const Tensor> &t : kept) {
        absl::StatusOr<HostTensor> h = d.download(*t);
        if (!h.ok())
          return h.status();
        host.push_back(*std::move(h));
      }
    }
    out.peak = d.device->allocator().stats().peak;
    out.tensorPeak = d.tensors->count().peak;
    out.iterationDoneUs = stats->iterationDoneUs;
    // Every rank's thread reads these maps: find, never operator[].
    if (options.trace)
      if (auto read = readUs.find(rank); read != readUs.end()) {
        auto from = readFrom.find(rank);
        out.events.push_back(
            {"read inputs", "input", 0, read->second.first, read->second.second,
             /*cpuUs=*/0, "",
             from == readFrom.end() ? std::string() : from->second});
      }
    for (auto [s, events] : llvm::enumerate(stats->events))
      for (const actor::FiringEvent &e : events)
        out.events.push_back({r.program->nameOf(e.actor),
                              s == RankProgram::kComm    ? "comm"
                              : s == RankProgram::kInput ? "input"
                              : s == RankProgram::kCopy  ? "copy"
                                                         : "compute",
                              e.iteration, e.startUs, e.durationUs, e.cpuUs,
                              r.program->actionOf(e.actor),
                              r.program->detailOf(e.actor)});
    return absl::OkStatus();
  });
  if (!launched.ok())
    return failed(launched);

  // This process's part of the run, for process 0 to assemble.
  WireWriter w;
  w.i64(static_cast<int64_t>(mine.size()));
  for (auto &[rank, r] : mine)
    writeRankResult(w, rank, r);
  mine.clear();
  absl::StatusOr<std::vector<std::string>> parts = world.gather(w.take());
  if (!parts.ok())
    return failed(parts.status());
  CpuRun run;
  int64_t kept = options.everyIteration ? options.iterations : 1;
  // Process 0 assembles the results (the other processes' parts are empty).
  std::vector<std::vector<HostTensor>> all(kept);
  absl::Status assembled = [&]() -> absl::Status {
    // [kept iteration][result index] -> (logical type, pieces by rank)
    std::vector<
        std::map<int64_t, std::pair<Type, std::map<int64_t, HostTensor>>>>
        byResult(kept);
    for (const std::string &part : *parts) {
      WireReader r(part);
      for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
        int64_t rank = r.i64();
        RankResult got = readRankResult(r);
        run.comm[rank] = std::move(got.stats);
        run.peakBytes[rank] = got.peak;
        run.tensorPeakBytes[rank] = got.tensorPeak;
        run.events[rank] = std::move(got.events);
        if (got.iterationDoneUs.size() > run.iterationDoneUs.size())
          run.iterationDoneUs.resize(got.iterationDoneUs.size());
        for (size_t i = 0; i < got.iterationDoneUs.size(); ++i)
          run.iterationDoneUs[i] =
              std::max(run.iterationDoneUs[i], got.iterationDoneUs[i]);
        func::FuncOp program = programOf[rank];
        if (static_cast<int64_t>(got.results.size()) != kept)
          return absl::InternalError("a process sent a garbled run");
        for (int64_t k = 0; k < kept; ++k)
          for (auto [i, t] : llvm::enumerate(got.results[k])) {
            int64_t index = *attrs::getResultIndex(program, i);
            byResult[k][index].first = attrs::getResultLogicalType(program, i);
            byResult[k][index].second[rank] = std::move(t);
          }
      }
      if (!r.ok())
        return absl::InternalError("a process sent a garbled run");
    }
    for (int64_t k = 0; k < kept; ++k)
      for (auto &[index, entry] : byResult[k]) {
        absl::StatusOr<HostTensor> whole =
            assemble(meshes, entry.first, entry.second);
        if (!whole.ok())
          return whole.status();
        all[k].push_back(std::move(*whole));
      }
    return absl::OkStatus();
  }();
  bool everywhere = options.resultsOnEveryProcess || options.accept;
  // Process 0's verdict on every process: all commit the step, or none.
  if (world.processCount() > 1)
    if (absl::Status s = world.agree(assembled); !s.ok())
      return failed(s);
  if (everywhere && world.processCount() > 1) {
    // Process 0's results on every process.
    WireWriter out;
    writeResults(out, all);
    absl::StatusOr<std::string> sent = world.broadcast(out.take());
    if (!sent.ok())
      return failed(sent.status());
    WireReader r(*sent);
    all = readResults(r);
    if (!r.ok() || static_cast<int64_t>(all.size()) != kept)
      return failed(absl::InternalError("process 0 sent garbled results"));
  } else if (!assembled.ok()) {
    return failed(assembled);
  }
  // What the run stored becomes the parameters only now, once its results
  // are accepted (every process decides on the same results).
  if (options.accept)
    for (const std::vector<HostTensor> &results : all)
      if (absl::Status s = options.accept(results); !s.ok())
        return failed(s);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto &[key, byIteration] : pending)
      if (!byIteration.empty())
        params[key] = std::move(byIteration.rbegin()->second);
    pending.clear();
  }
  run.results = all.empty() ? std::vector<HostTensor>() : all.back();
  if (options.everyIteration)
    run.iterationResults = std::move(all);
  return run;
}

} // namespace pc::runtime
