//===- CpuExecutor.cpp - Per-device programs on CPU virtual devices -------===//

#include "runtime/exec/CpuExecutor.h"

#include "boxing/MeshCache.h"
#include "dialect/ParamInit.h"
#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "runtime/actor/ActorRuntime.h"
#include "runtime/comm/Launcher.h"
#include "runtime/comm/Wire.h"
#include "runtime/device/HostMemory.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <atomic>
#include <chrono>
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

/// `s` with "rank R: 'op' at LOC: " in front, payloads kept: the per-device
/// program keeps the logical op's location, so this is where the user wrote
/// it.
absl::Status named(const absl::Status &s, int64_t rank, Operation *op) {
  std::string where;
  llvm::raw_string_ostream os(where);
  os << op->getLoc();
  absl::Status out(s.code(), absl::StrCat("rank ", rank, ": '",
                                          op->getName().getStringRef().str(),
                                          "' at ", where, ": ", s.message()));
  s.ForEachPayload([&](absl::string_view url, const absl::Cord &p) {
    out.SetPayload(url, p);
  });
  return out;
}

/// One rank's program as an actor graph: an actor per argument and per op,
/// and one for the results. Registers hold shared device tensors, addressed
/// by (actor, iteration % registers); onFree drops them.
class RankProgram {
public:
  RankProgram(const KernelRegistry &kernels, BindContext &context,
              const CpuRunOptions &options)
      : kernels(kernels), context(context), options(options) {}

  absl::Status build(func::FuncOp f,
                     std::vector<std::shared_ptr<const Tensor>> args);

  /// Sets the order of the communication ops' firings: (iteration, index
  /// among the communication ops); InvalidArgument when it names an op or
  /// iteration that does not exist, or would deadlock on this rank.
  absl::Status setOrder(std::span<const std::pair<int64_t, int64_t>> order);
  /// The communication this rank does, in firing order.
  std::vector<CommEvent> exchanges() const;

  /// Runs on `streams` (compute, then communication).
  absl::StatusOr<actor::RunStats>
  run(std::span<Stream *const> streams,
      std::chrono::steady_clock::time_point origin,
      std::function<void(const absl::Status &)> onError);

  /// The last iteration's results, still on the device.
  std::vector<std::shared_ptr<const Tensor>> takeResults() {
    return std::move(results);
  }
  const std::string &nameOf(uint32_t actor) const {
    return graph.actors()[actor].name;
  }
  /// "F1.3" for an actor of action F(1, mb 3); empty when none.
  std::string actionOf(uint32_t actor) const {
    auto a = actor < actions.size()
                 ? dyn_cast_or_null<ActionAttr>(actions[actor])
                 : ActionAttr();
    if (!a)
      return "";
    return pipeline::shortName(a.asAction());
  }

private:
  using Source = std::pair<uint32_t, unsigned>; // (actor, result)
  using Fire = std::function<absl::Status(KernelIO &, int64_t iteration)>;
  struct Actor {
    std::vector<Source> inputs;
    unsigned numResults = 0;
    uint32_t stream = 0;
    std::vector<std::vector<std::shared_ptr<const Tensor>>> registers;
  };

  uint32_t addActor(std::string name, StreamKind stream,
                    std::vector<Source> inputs, unsigned numResults, Fire fire,
                    bool scheduled = false);
  /// A pipelined program's order: iteration by iteration, its schedule's
  /// actions in turn, each action's ops in program order.
  absl::Status orderBySchedule(func::FuncOp f);

  const KernelRegistry &kernels;
  BindContext &context;
  const CpuRunOptions &options;
  actor::ActorGraph graph;
  std::vector<Actor> actors;
  /// Per stream, what its kernels run with (set by run()).
  std::vector<KernelContext> contexts;
  /// The communication ops' actors, in program order, with what each
  /// exchanges; the order they fire in (empty: the default).
  std::vector<uint32_t> commActors;
  std::vector<CommEvent> commExchanges;
  std::vector<actor::OrderedFiring> order;
  /// Per actor of a pipelined program, its action (null: none).
  std::vector<Attribute> actions;
  DenseMap<Value, Source> sources;
  std::vector<std::shared_ptr<const Tensor>> results;
};

uint32_t RankProgram::addActor(std::string name, StreamKind stream,
                               std::vector<Source> inputs, unsigned numResults,
                               Fire fire, bool scheduled) {
  uint32_t id = static_cast<uint32_t>(actors.size());
  Actor a;
  a.numResults = numResults;
  a.stream = stream == StreamKind::Comm ? 1 : 0;
  a.registers.resize(options.registers);
  actor::ActorSpec spec;
  spec.name = std::move(name);
  spec.stream = a.stream;
  // Communication keeps its order across ranks; a pipeline schedule orders
  // its actions' compute too.
  spec.ordered = stream == StreamKind::Comm || scheduled;
  spec.registers = options.registers;
  for (auto [producer, result] : inputs)
    spec.inputs.push_back(producer);
  a.inputs = std::move(inputs);
  actors.push_back(std::move(a));
  spec.fire = [this, id, fire = std::move(fire)](int64_t iteration) {
    Actor &a = actors[id];
    llvm::SmallVector<const Tensor *, 4> in;
    llvm::SmallVector<std::shared_ptr<const Tensor>, 4> shared;
    for (auto [producer, result] : a.inputs) {
      Actor &p = actors[producer];
      shared.push_back(p.registers[iteration % p.registers.size()][result]);
      in.push_back(shared.back().get());
    }
    std::vector<std::shared_ptr<const Tensor>> out(a.numResults);
    KernelIO io{contexts[a.stream], in, shared, out};
    if (absl::Status s = fire(io, iteration); !s.ok())
      return s;
    a.registers[iteration % a.registers.size()] = std::move(out);
    return absl::OkStatus();
  };
  return graph.add(std::move(spec));
}

absl::Status
RankProgram::build(func::FuncOp f,
                   std::vector<std::shared_ptr<const Tensor>> args) {
  // A step that stores parameters must finish before the next reads them.
  if (options.iterations > 1)
    for (auto set : f.getOps<SetParamOp>())
      return named(absl::InvalidArgumentError(
                       "a training step stores parameters, so it runs one "
                       "iteration per run (steps are runs)"),
                   context.rank, set);
  for (auto [arg, value] : llvm::zip(f.getArguments(), args))
    sources[arg] = {addActor(absl::StrCat("arg", arg.getArgNumber()),
                             StreamKind::Compute, {}, 1,
                             [value](KernelIO &io, int64_t) {
                               io.outputs[0] = value;
                               return absl::OkStatus();
                             }),
                    0};
  bool hasSchedule = f->hasAttr(attrs::kSchedule);
  for (Operation &op : f.getBody().front()) {
    std::vector<Source> ins;
    for (Value v : op.getOperands())
      ins.push_back(sources.lookup(v));
    if (isa<func::ReturnOp>(op)) {
      int64_t last = options.iterations - 1;
      // Kept on the device; the session copies them out after the run.
      addActor("return", StreamKind::Compute, ins, 0,
               [this, last](KernelIO &io, int64_t iteration) {
                 if (iteration == last)
                   results.assign(io.sharedInputs.begin(),
                                  io.sharedInputs.end());
                 return absl::OkStatus();
               });
      continue;
    }
    absl::StatusOr<KernelRegistry::Bound> bound = kernels.bind(&op, context);
    if (!bound.ok())
      return named(bound.status(), context.rank, &op);
    // Communication calls say what they are for, so that a timeout or a
    // desync names the op, where the user wrote it, and the step.
    std::string site;
    if (bound->stream == StreamKind::Comm) {
      llvm::raw_string_ostream os(site);
      os << "'" << op.getName().getStringRef() << "' at " << op.getLoc();
    }
    ActionAttr action = attrs::getAction(&op);
    bool scheduled = action && hasSchedule;
    CommEvent exchange = std::move(bound->exchange);
    exchange.what = site;
    exchange.program = f.getSymName().str();
    exchange.op = static_cast<int64_t>(commActors.size());
    uint32_t id = addActor(
        op.getName().getStringRef().str(), bound->stream, ins,
        op.getNumResults(),
        [rank = context.rank, op = &op, site = std::move(site),
         comm = &context.comm, step = options.step,
         kernel = std::move(bound->kernel)](KernelIO &io, int64_t iteration) {
          if (!site.empty())
            comm->setCallSite(absl::StrCat(site, ", step ", step + iteration));
          if (absl::Status s = kernel(io); !s.ok())
            return named(s, rank, op);
          return absl::OkStatus();
        },
        scheduled);
    for (unsigned r = 0; r < op.getNumResults(); ++r)
      sources[op.getResult(r)] = {id, r};
    actions.resize(id + 1);
    actions[id] = scheduled ? Attribute(action) : Attribute();
    if (bound->stream == StreamKind::Comm) {
      commActors.push_back(id);
      commExchanges.push_back(std::move(exchange));
    }
  }
  if (attrs::getSchedule(f))
    return orderBySchedule(f);
  return absl::OkStatus();
}

absl::Status RankProgram::orderBySchedule(func::FuncOp f) {
  SmallVector<ActionAttr> schedule = *attrs::getSchedule(f);
  DenseMap<Attribute, std::vector<uint32_t>> actorsOf;
  actions.resize(graph.actors().size());
  for (uint32_t id = 0; id < graph.actors().size(); ++id) {
    if (!graph.actors()[id].ordered)
      continue;
    if (!actions[id])
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", context.rank, ": '", graph.actors()[id].name,
          "' communicates but belongs to no action of the pipeline schedule"));
    actorsOf[actions[id]].push_back(id);
  }
  order.clear();
  for (int64_t it = 0; it < options.iterations; ++it)
    for (ActionAttr a : schedule)
      for (uint32_t id : actorsOf.lookup(a))
        order.push_back({it, id});
  if (absl::Status s = actor::verifyOrder(graph, options.iterations, order);
      !s.ok())
    return absl::Status(s.code(),
                        absl::StrCat("rank ", context.rank,
                                     ": the pipeline schedule: ", s.message()));
  return absl::OkStatus();
}

absl::Status
RankProgram::setOrder(std::span<const std::pair<int64_t, int64_t>> given) {
  order.clear();
  for (auto [iteration, op] : given) {
    if (op < 0 || op >= static_cast<int64_t>(commActors.size()))
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", context.rank, ": the order names communication op #", op,
          "; the program has ", commActors.size()));
    order.push_back({iteration, commActors[op]});
  }
  if (absl::Status s = actor::verifyOrder(graph, options.iterations, order);
      !s.ok())
    return absl::Status(s.code(),
                        absl::StrCat("rank ", context.rank, ": ", s.message()));
  return absl::OkStatus();
}

std::vector<CommEvent> RankProgram::exchanges() const {
  std::vector<actor::OrderedFiring> firing =
      order.empty() ? actor::defaultOrder(graph, options.iterations) : order;
  std::map<uint32_t, size_t> indexOf;
  for (size_t i = 0; i < commActors.size(); ++i)
    indexOf[commActors[i]] = i;
  std::vector<CommEvent> out;
  for (const actor::OrderedFiring &f : firing) {
    auto comm = indexOf.find(f.actor);
    if (comm == indexOf.end())
      continue; // a scheduled compute op
    CommEvent e = commExchanges[comm->second];
    e.iteration = f.iteration;
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<actor::RunStats>
RankProgram::run(std::span<Stream *const> streams,
                 std::chrono::steady_clock::time_point origin,
                 std::function<void(const absl::Status &)> onError) {
  contexts.clear();
  for (Stream *stream : streams)
    contexts.emplace_back(context.tensors, *stream);
  actor::RunOptions run;
  run.iterations = options.iterations;
  run.trace = options.trace;
  run.origin = origin;
  run.onError = std::move(onError);
  run.order = order;
  run.onFree = [this](uint32_t actor, int64_t iteration) {
    Actor &a = actors[actor];
    for (auto &t : a.registers[iteration % a.registers.size()])
      t.reset();
  };
  absl::StatusOr<actor::RunStats> stats = actor::run(graph, streams, run);
  // A failed run leaves tensors in registers; they go now, not with the
  // program.
  for (Actor &a : actors)
    for (auto &slot : a.registers)
      slot.clear();
  return stats;
}

} // namespace

namespace {

void writeTensor(WireWriter &w, const HostTensor &t) {
  w.i64(static_cast<int64_t>(t.type));
  w.i64(static_cast<int64_t>(t.shape.size()));
  for (int64_t d : t.shape)
    w.i64(d);
  w.bytes(std::string_view(t.bytes.data(), t.bytes.size()));
}

HostTensor readTensor(WireReader &r) {
  HostTensor t;
  t.type = static_cast<CommType>(r.i64());
  int64_t rank = r.i64();
  for (int64_t d = 0; r.ok() && d < rank && d < 64; ++d)
    t.shape.push_back(r.i64());
  std::string_view b = r.bytes();
  t.bytes.assign(b.begin(), b.end());
  return t;
}

void writeStats(WireWriter &w, const CommStats &s) {
  w.i64(s.bytesSent);
  w.i64(s.bytesReceived);
  w.i64(static_cast<int64_t>(s.calls.size()));
  for (auto &[k, n] : s.calls) {
    w.bytes(k);
    w.i64(n);
  }
  w.i64(static_cast<int64_t>(s.bytes.size()));
  for (auto &[k, b] : s.bytes) {
    w.bytes(k);
    w.i64(b.first);
    w.i64(b.second);
  }
}

CommStats readStats(WireReader &r) {
  CommStats s;
  s.bytesSent = r.i64();
  s.bytesReceived = r.i64();
  for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
    std::string k(r.bytes());
    s.calls[k] = r.i64();
  }
  for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
    std::string k(r.bytes());
    int64_t sent = r.i64();
    s.bytes[k] = {sent, r.i64()};
  }
  return s;
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

CpuSession::CpuSession(ModuleOp module, uint64_t seed, World *world)
    : module(module), seed(seed), backends(availableBackends()),
      ownWorld(world ? nullptr : makeInProcessWorld()),
      world(world ? *world : *ownWorld) {
  for (const Backend &b : backends)
    b.registerKernels(kernels);
}

CpuSession::~CpuSession() {
  // The tensors first, then their devices.
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

absl::StatusOr<CpuSession::RankDevice *> CpuSession::deviceOf(int64_t rank) {
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = devices.find(rank); it != devices.end())
    return &it->second;
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
  std::string name = stringifyDeviceKind(kind.value_or(DeviceKind::cpu)).str();
  const Backend *backend = nullptr;
  for (const Backend &b : backends)
    if (b.kind == name)
      backend = &b;
  if (!backend)
    return absl::UnimplementedError(
        absl::StrCat("rank ", rank, " runs on a ", name,
                     " device, and this build has no ", name, " backend"));
  RankDevice d;
  d.backend = backend;
  absl::StatusOr<std::unique_ptr<Device>> device =
      backend->makeDevice(rank, deviceOptions);
  if (!device.ok())
    return device.status();
  d.device = *std::move(device);
  absl::StatusOr<std::unique_ptr<Stream>> transfer =
      d.device->createStream("transfer");
  if (!transfer.ok())
    return transfer.status();
  d.transfer = *std::move(transfer);
  d.tensors = std::make_unique<TensorAllocator>(*d.device);
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
  return unmatched;
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
      (*device)->upload(*piece);
  if (!onDevice.ok())
    return onDevice.status();
  return params.emplace(key, *std::move(onDevice)).first->second;
}

absl::StatusOr<std::map<std::pair<int64_t, std::string>, HostTensor>>
CpuSession::pieces() {
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

absl::StatusOr<CpuRun> CpuSession::run(llvm::StringRef graph,
                                       std::span<const Input> inputs,
                                       const CpuRunOptions &options) {
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
  MeshCache meshes(module);
  struct Job {
    func::FuncOp program;
    int64_t rank;
    std::vector<HostTensor> args;
    // Bound before anything runs, then run.
    RankDevice *device = nullptr;
    std::unique_ptr<Communicator> comm;
    std::unique_ptr<MeshCache> meshes;
    std::unique_ptr<BindContext> context;
    std::unique_ptr<RankProgram> bound;
    std::vector<HostTensor> results;
    CommStats stats;
    int64_t peak = 0, tensorPeak = 0;
    std::vector<OpEvent> events;
    std::vector<double> iterationDoneUs;
  };
  std::vector<Job> jobs;
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
  absl::Status prepared = [&]() -> absl::Status {
    for (auto &[rank, f] : programOf) {
      if (!world.hosts(rank))
        continue;
      Job job{f, rank, {}};
      for (BlockArgument arg : f.getArguments()) {
        unsigned i = arg.getArgNumber();
        int64_t index = *attrs::getArgIndex(f, i);
        Type logical = attrs::getArgLogicalType(f, i);
        if (index >= static_cast<int64_t>(inputs.size()))
          return absl::InvalidArgumentError(absl::StrCat(
              "@", graph.str(), " needs input #", index, ", not given"));
        if (inputs[index].shape() != shapeOf(logical))
          return absl::InvalidArgumentError(absl::StrCat(
              "input #", index, " has the wrong shape for @", graph.str()));
        absl::StatusOr<CommType> type = commTypeOf(logical);
        if (!type.ok())
          return type.status();
        if (inputs[index].type() != *type)
          return absl::InvalidArgumentError(absl::StrCat(
              "input #", index, " is ", nameOf(inputs[index].type()), "; @",
              graph.str(), " takes ", nameOf(*type)));
        SbpAttr sbp = getSbp(logical);
        MeshOp mesh = meshes.lookup(sbp);
        absl::StatusOr<HostTensor> piece =
            pieceOf(inputs[index], sbp, mesh.getShape(),
                    delinearize(mesh.getShape(),
                                meshes.positionOf(sbp.getMesh(), rank)));
        if (!piece.ok())
          return absl::Status(piece.status().code(),
                              absl::StrCat("input #", index, " of @",
                                           graph.str(), ": ",
                                           piece.status().message()));
        job.args.push_back(*std::move(piece));
      }
      jobs.push_back(std::move(job));
    }
    return absl::OkStatus();
  }();
  if (!prepared.ok()) {
    world.abort(prepared);
    return prepared;
  }

  auto origin = std::chrono::steady_clock::now();
  std::map<int64_t, Job *> jobOf;
  std::vector<int64_t> hosted;
  for (Job &job : jobs) {
    jobOf[job.rank] = &job;
    hosted.push_back(job.rank);
  }
  // Bind every hosted rank's program first, so that the ranks' orders can
  // be checked together before anything runs.
  absl::Status bound = launch(world, hosted, [&](int64_t rank) {
    Job *j = jobOf.at(rank);
    absl::StatusOr<RankDevice *> device = deviceOf(j->rank);
    if (!device.ok())
      return device.status();
    j->device = *device;
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        j->device->backend->makeCommunicator(world, j->rank);
    if (!comm.ok())
      return comm.status();
    j->comm = *std::move(comm);
    // The run's peak starts from what the device holds already (the
    // parameters); the inputs' copies count in it.
    j->device->tensors->resetPeak();
    std::vector<std::shared_ptr<const Tensor>> args;
    for (const HostTensor &arg : j->args) {
      absl::StatusOr<std::shared_ptr<const Tensor>> t = j->device->upload(arg);
      if (!t.ok())
        return t.status();
      args.push_back(*std::move(t));
    }
    j->args.clear();
    // Each rank binds its own program: the mesh cache is not shared
    // between threads.
    j->meshes = std::make_unique<MeshCache>(module);
    j->context.reset(new BindContext{
        j->rank, *j->meshes, *j->comm, *j->device->tensors,
        [this, rank = j->rank](llvm::StringRef name, Type local) {
          return param(rank, name, local);
        },
        [this, rank = j->rank](llvm::StringRef name,
                               std::shared_ptr<const Tensor> piece) {
          std::lock_guard<std::mutex> lock(mu);
          pending[{rank, name.str()}] = std::move(piece);
        }});
    j->bound = std::make_unique<RankProgram>(kernels, *j->context, options);
    if (absl::Status s = j->bound->build(j->program, std::move(args)); !s.ok())
      return s;
    if (auto given = options.order.find(j->rank);
        given != options.order.end()) {
      if (attrs::getSchedule(j->program))
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", j->rank,
                         ": its program follows a pipeline schedule "
                         "(pc.schedule); an explicit order would replace it"));
      return j->bound->setOrder(given->second);
    }
    return absl::OkStatus();
  });
  // Every process takes part: all bound or all fail; then process 0 checks
  // every rank's order against the others' and all agree on the verdict.
  auto checkRankOrders = [&]() -> absl::Status {
    if (absl::Status s = world.agree(bound); !s.ok())
      return s;
    std::map<int64_t, std::vector<CommEvent>> mine;
    for (Job &job : jobs)
      mine[job.rank] = job.bound->exchanges();
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
  bool checked =
      options.order.empty() && checkedDefaultOrders.count(defaultKey);
  if (!checked) {
    if (absl::Status s = checkRankOrders(); !s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      pending.clear();
      return s;
    }
    if (options.order.empty())
      checkedDefaultOrders.insert(defaultKey);
  }
  absl::Status launched =
      !bound.ok() ? bound : launch(world, hosted, [&](int64_t rank) {
        Job *j = jobOf.at(rank);
        RankDevice &d = *j->device;
        RankProgram &program = *j->bound;
        absl::StatusOr<std::unique_ptr<Stream>> compute =
            d.device->createStream("compute");
        absl::StatusOr<std::unique_ptr<Stream>> commStream =
            d.device->createStream("comm");
        if (!compute.ok() || !commStream.ok())
          return compute.ok() ? commStream.status() : compute.status();
        Stream *streams[] = {compute->get(), commStream->get()};
        absl::StatusOr<actor::RunStats> stats = program.run(
            streams, origin, [&](const absl::Status &s) { world.abort(s); });
        j->stats = j->comm->stats();
        if (!stats.ok())
          return stats.status();
        std::vector<HostTensor> results;
        for (const std::shared_ptr<const Tensor> &t : program.takeResults()) {
          absl::StatusOr<HostTensor> host = d.download(*t);
          if (!host.ok())
            return host.status();
          results.push_back(*std::move(host));
        }
        j->results = std::move(results);
        j->peak = d.device->allocator().stats().peak;
        j->tensorPeak = d.tensors->count().peak;
        j->iterationDoneUs = stats->iterationDoneUs;
        for (auto [s, events] : llvm::enumerate(stats->events))
          for (const actor::FiringEvent &e : events)
            j->events.push_back({program.nameOf(e.actor),
                                 s ? "comm" : "compute", e.iteration, e.startUs,
                                 e.durationUs, program.actionOf(e.actor)});
        return absl::OkStatus();
      });
  // The programs (and the constants and parameters they hold) go now.
  for (Job &job : jobs) {
    job.bound.reset();
    job.context.reset();
  }
  // A failed step stores nothing.
  auto failedStep = [&](absl::Status s) {
    std::lock_guard<std::mutex> lock(mu);
    pending.clear();
    return s;
  };
  if (!launched.ok())
    return failedStep(launched);

  // This process's part of the run, for process 0 to assemble.
  WireWriter w;
  w.i64(static_cast<int64_t>(jobs.size()));
  for (Job &job : jobs) {
    w.i64(job.rank);
    writeStats(w, job.stats);
    w.i64(job.peak);
    w.i64(job.tensorPeak);
    w.i64(static_cast<int64_t>(job.events.size()));
    for (const OpEvent &e : job.events) {
      w.bytes(e.name);
      w.bytes(e.stream);
      w.i64(e.iteration);
      w.f64(e.startUs);
      w.f64(e.durationUs);
      w.bytes(e.action);
    }
    w.i64(static_cast<int64_t>(job.iterationDoneUs.size()));
    for (double us : job.iterationDoneUs)
      w.f64(us);
    w.i64(static_cast<int64_t>(job.results.size()));
    for (const HostTensor &t : job.results)
      writeTensor(w, t);
  }
  absl::StatusOr<std::vector<std::string>> parts = world.gather(w.take());
  if (!parts.ok())
    return failedStep(parts.status());
  CpuRun run;
  // Process 0 assembles the results (the other processes' parts are empty).
  absl::Status assembled = [&]() -> absl::Status {
    std::map<int64_t, std::pair<Type, std::map<int64_t, HostTensor>>> pieces;
    for (const std::string &part : *parts) {
      WireReader r(part);
      for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
        int64_t rank = r.i64();
        run.comm[rank] = readStats(r);
        run.peakBytes[rank] = r.i64();
        run.tensorPeakBytes[rank] = r.i64();
        std::vector<OpEvent> &events = run.events[rank];
        for (int64_t e = r.i64(); r.ok() && e > 0; --e) {
          OpEvent ev;
          ev.name = std::string(r.bytes());
          ev.stream = std::string(r.bytes());
          ev.iteration = r.i64();
          ev.startUs = r.f64();
          ev.durationUs = r.f64();
          ev.action = std::string(r.bytes());
          events.push_back(std::move(ev));
        }
        int64_t iterations = r.i64();
        if (iterations > static_cast<int64_t>(run.iterationDoneUs.size()))
          run.iterationDoneUs.resize(iterations);
        for (int64_t i = 0; r.ok() && i < iterations; ++i)
          run.iterationDoneUs[i] = std::max(run.iterationDoneUs[i], r.f64());
        func::FuncOp program = programOf[rank];
        int64_t results = r.i64();
        for (int64_t i = 0; r.ok() && i < results; ++i) {
          int64_t index = *attrs::getResultIndex(program, i);
          pieces[index].first = attrs::getResultLogicalType(program, i);
          pieces[index].second[rank] = readTensor(r);
        }
      }
      if (!r.ok())
        return absl::InternalError("a process sent a garbled run");
    }
    for (auto &[index, entry] : pieces) {
      absl::StatusOr<HostTensor> whole =
          assemble(meshes, entry.first, entry.second);
      if (!whole.ok())
        return whole.status();
      run.results.push_back(std::move(*whole));
    }
    return absl::OkStatus();
  }();
  bool everywhere = options.resultsOnEveryProcess || options.accept;
  // Process 0's verdict on every process: all commit the step, or none.
  if (world.processCount() > 1)
    if (absl::Status s = world.agree(assembled); !s.ok())
      return failedStep(s);
  if (everywhere && world.processCount() > 1) {
    // Process 0's results on every process.
    WireWriter out;
    out.i64(static_cast<int64_t>(run.results.size()));
    for (const HostTensor &t : run.results)
      writeTensor(out, t);
    absl::StatusOr<std::string> all = world.broadcast(out.take());
    if (!all.ok())
      return failedStep(all.status());
    WireReader r(*all);
    run.results.clear();
    for (int64_t n = r.i64(); r.ok() && n > 0; --n)
      run.results.push_back(readTensor(r));
    if (!r.ok())
      return failedStep(absl::InternalError("process 0 sent garbled results"));
  } else if (!assembled.ok()) {
    return failedStep(assembled);
  }
  // What the step stored becomes the parameters only now, once its results
  // are accepted (every process decides on the same results).
  if (options.accept)
    if (absl::Status s = options.accept(run.results); !s.ok())
      return failedStep(s);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto &[key, piece] : pending)
      params[key] = std::move(piece);
    pending.clear();
  }
  return run;
}

} // namespace pc::runtime
