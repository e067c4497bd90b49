//===- RankProgram.cpp - A rank's program as an actor graph ---------------===//

#include "runtime/exec/RankProgram.h"

#include "dialect/OpProfile.h"
#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "pipeline/Schedule.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

using namespace mlir;

namespace pc::runtime {

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

namespace {

/// detailOf's text: the local types (shape and element type only; the
/// layout is the program's) and the op's location as `named` prints it.
std::string describe(Operation &op) {
  std::string out;
  llvm::raw_string_ostream os(out);
  auto types = [&](TypeRange range) {
    llvm::interleaveComma(range, os, [&](Type t) {
      if (auto ranked = dyn_cast<RankedTensorType>(t)) {
        for (int64_t d : ranked.getShape())
          os << d << 'x';
        os << ranked.getElementType();
      } else {
        os << t;
      }
    });
  };
  types(op.getOperandTypes());
  os << " -> ";
  types(op.getResultTypes());
  os << " at " << op.getLoc();
  return out;
}

} // namespace

std::string RankProgram::actionOf(uint32_t actor) const {
  auto a = actor < actions.size() ? dyn_cast_or_null<ActionAttr>(actions[actor])
                                  : ActionAttr();
  if (!a)
    return "";
  return pipeline::shortName(a.asAction());
}

uint32_t RankProgram::addActor(std::string name, uint32_t stream,
                               std::vector<Source> inputs, unsigned numResults,
                               Fire fire, bool ordered) {
  uint32_t id = static_cast<uint32_t>(actors.size());
  Actor a;
  a.numResults = numResults;
  a.stream = stream;
  a.registers.resize(registers);
  a.readers.assign(numResults, 0);
  a.unread = std::make_unique<std::atomic<uint32_t>[]>(
      static_cast<size_t>(registers) * numResults);
  for (auto [producer, result] : inputs)
    ++actors[producer].readers[result];
  actor::ActorSpec spec;
  spec.name = std::move(name);
  spec.stream = stream;
  spec.ordered = ordered;
  spec.registers = registers;
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
    // Host contexts follow the device's, one per stream.
    size_t perSpace = contexts.size() / 2;
    KernelIO io{contexts[a.stream + (a.host ? perSpace : 0)], in, shared, out};
    absl::Status fired = fire(io, iteration);
    // This read is done: the last one lets the tensor go (with `shared`,
    // as this returns).
    for (auto [producer, result] : a.inputs) {
      Actor &p = actors[producer];
      size_t at = (iteration % p.registers.size()) * p.numResults + result;
      if (p.unread[at].fetch_sub(1, std::memory_order_acq_rel) == 1)
        p.registers[iteration % p.registers.size()][result].reset();
    }
    if (!fired.ok())
      return fired;
    size_t slot = iteration % a.registers.size();
    a.registers[slot] = std::move(out);
    for (unsigned r = 0; r < a.numResults; ++r)
      a.unread[slot * a.numResults + r].store(a.readers[r],
                                              std::memory_order_relaxed);
    return absl::OkStatus();
  };
  actions.push_back(Attribute());
  details.emplace_back();
  return graph.add(std::move(spec));
}

absl::Status RankProgram::build(func::FuncOp f) {
  for (BlockArgument arg : f.getArguments()) {
    unsigned i = arg.getArgNumber();
    // An argument is the run's: the same tensor every iteration, or one
    // copied in for each (a step's batch), beside the kernels.
    sources[arg] = {
        addActor(absl::StrCat("arg", i), kInput, {}, 1,
                 [this, i](KernelIO &io, int64_t iteration) -> absl::Status {
                   const ArgFeed &feed = feeds[i];
                   if (feed.perIteration.empty()) {
                     io.outputs[0] = feed.fixed;
                     return absl::OkStatus();
                   }
                   absl::StatusOr<std::shared_ptr<const Tensor>> t =
                       upload(feed.perIteration[iteration]);
                   if (!t.ok())
                     return t.status();
                   io.outputs[0] = *std::move(t);
                   return absl::OkStatus();
                 }),
        0};
  }
  if (auto s = attrs::getSchedule(f))
    schedule.assign(s->begin(), s->end());
  for (Operation &op : f.getBody().front())
    if (absl::Status s = addOp(op, !schedule.empty()); !s.ok())
      return s;
  linkParameters();
  return absl::OkStatus();
}

absl::Status RankProgram::emulate(Operation &op, KernelRegistry::Bound &bound) {
  if (!context.emulated || bound.stream != StreamKind::Compute ||
      keepsKernel(&op))
    return absl::OkStatus();
  double seconds = context.emulated->lookup(&op);
  if (seconds < 0)
    return absl::OkStatus(); // not profiled: its kernel runs
  absl::StatusOr<Kernel> wait =
      emulatedKernel(&op, seconds, context, emulatedZeros);
  if (!wait.ok())
    return wait.status();
  bound.kernel = *std::move(wait);
  return absl::OkStatus();
}

absl::Status RankProgram::addOp(Operation &op, bool hasSchedule) {
  std::vector<Source> ins;
  for (Value v : op.getOperands())
    ins.push_back(sources.lookup(v));
  if (isa<func::ReturnOp>(op)) {
    // Kept on the device; the session copies them out after the run.
    addActor(
        "return", kCompute, ins, 0, [this](KernelIO &io, int64_t iteration) {
          if (current->everyIteration || iteration + 1 == current->iterations)
            results[current->everyIteration ? iteration : 0].assign(
                io.sharedInputs.begin(), io.sharedInputs.end());
          return absl::OkStatus();
        });
    return absl::OkStatus();
  }
  if (auto get = dyn_cast<GetParamOp>(op)) {
    // Initialized now, so that the run only reads it.
    std::string name = get.getName().str();
    Type local = get.getType();
    if (absl::StatusOr<std::shared_ptr<const Tensor>> first =
            params.read(name, local, 0);
        !first.ok())
      return named(first.status(), context.rank, &op);
    // std::map's entries stay where they are: the actor keeps a pointer.
    const ParamActors &actorsOfParam = paramActors[name];
    uint32_t id = addActor(
        "pc.get_param", kCompute, ins, 1,
        [this, name, local, rank = context.rank, op = &op,
         &actorsOfParam](KernelIO &io, int64_t iteration) -> absl::Status {
          absl::StatusOr<std::shared_ptr<const Tensor>> value =
              params.read(name, local, iteration);
          if (!value.ok())
            return named(value.status(), rank, op);
          io.outputs[0] = *std::move(value);
          noteParamDone(name, actorsOfParam, iteration, false);
          return absl::OkStatus();
        });
    sources[get.getResult()] = {id, 0};
    paramActors[name].reads.push_back(id);
    return absl::OkStatus();
  }
  if (auto set = dyn_cast<SetParamOp>(op)) {
    std::string name = set.getName().str();
    // The value is shared, not copied: it is the next iteration's piece.
    const ParamActors &actorsOfParam = paramActors[name];
    uint32_t id =
        addActor("pc.set_param", kCompute, ins, 0,
                 [this, name, &actorsOfParam](KernelIO &io, int64_t iteration) {
                   params.store(name, iteration, io.sharedInputs[0]);
                   noteParamDone(name, actorsOfParam, iteration, true);
                   return absl::OkStatus();
                 });
    std::optional<uint32_t> &store = paramActors[name].store;
    if (store)
      return named(absl::InvalidArgumentError(absl::StrCat(
                       "parameter '", name, "' is stored twice in one step")),
                   context.rank, &op);
    store = id;
    return absl::OkStatus();
  }
  absl::StatusOr<KernelRegistry::Bound> bound = kernels.bind(&op, context);
  if (!bound.ok())
    return named(bound.status(), context.rank, &op);
  if (absl::Status s = emulate(op, *bound); !s.ok())
    return named(s, context.rank, &op);
  // Communication calls say what they are for, so that a timeout or a
  // desync names the op, where the user wrote it, and the step.
  std::string site;
  bool isComm = bound->stream == StreamKind::Comm;
  if (isComm) {
    llvm::raw_string_ostream os(site);
    os << "'" << op.getName().getStringRef() << "' at " << op.getLoc();
  }
  ActionAttr action = attrs::getAction(&op);
  bool scheduled = action && hasSchedule;
  CommEvent exchange = std::move(bound->exchange);
  exchange.what = site;
  exchange.program = cast<func::FuncOp>(op.getParentOp()).getSymName().str();
  exchange.op = static_cast<int64_t>(commActors.size());
  uint32_t id = addActor(
      op.getName().getStringRef().str(),
      isComm                              ? kComm
      : bound->stream == StreamKind::Copy ? kCopy
                                          : kCompute,
      ins, op.getNumResults(),
      [this, op = &op, site = std::move(site),
       kernel = std::move(bound->kernel)](KernelIO &io, int64_t iteration) {
        if (!site.empty())
          context.comm.setCallSite(
              absl::StrCat(site, ", step ", current->step + iteration));
        if (absl::Status s = kernel(io); !s.ok())
          return named(s, context.rank, op);
        return absl::OkStatus();
      },
      // Communication keeps its order across ranks; a pipeline schedule
      // orders its actions' compute too.
      isComm || scheduled);
  actors[id].host = attrs::isHost(&op);
  for (unsigned r = 0; r < op.getNumResults(); ++r)
    sources[op.getResult(r)] = {id, r};
  if (scheduled)
    actions[id] = action;
  details[id] = describe(op);
  if (isComm) {
    commActors.push_back(id);
    commExchanges.push_back(std::move(exchange));
  }
  return absl::OkStatus();
}

void RankProgram::linkParameters() {
  // A step's reads of a parameter wait for the step before's update of it
  // (the value they read), and an update waits for the step before's reads
  // (whose value it lets go): the only links between steps, so step i+1's
  // forward starts with the first parameter step i has updated.
  for (auto &[name, p] : paramActors) {
    if (!p.store)
      continue;
    for (uint32_t get : p.reads) {
      graph.carry(*p.store, get);
      graph.carry(get, *p.store);
    }
  }
}

void RankProgram::noteParamDone(const std::string &name, const ParamActors &p,
                                int64_t iteration, bool isStore) {
  if (!p.store)
    return;
  bool readsDone = false, settled = false;
  {
    std::lock_guard<std::mutex> lock(settlingMu);
    auto key = std::make_pair(name, iteration);
    Settling &s = settling[key];
    if (isStore)
      s.stored = true;
    else
      readsDone = ++s.reads == p.reads.size();
    settled = s.stored && s.reads == p.reads.size();
    if (settled)
      settling.erase(key);
  }
  // A parameter nobody reads is done with its reads as it is stored.
  if ((readsDone || (isStore && p.reads.empty())) && params.readsDone)
    params.readsDone(name, iteration);
  if (settled && params.settled)
    params.settled(name, iteration);
}

absl::Status RankProgram::orderBySchedule(int64_t iterations) {
  DenseMap<Attribute, std::vector<uint32_t>> actorsOf;
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
  for (int64_t it = 0; it < iterations; ++it)
    for (Attribute a : schedule)
      for (uint32_t id : actorsOf.lookup(a))
        order.push_back({it, id});
  if (absl::Status s = actor::verifyOrder(graph, iterations, order); !s.ok())
    return absl::Status(s.code(),
                        absl::StrCat("rank ", context.rank,
                                     ": the pipeline schedule: ", s.message()));
  return absl::OkStatus();
}

absl::Status
RankProgram::setOrder(std::span<const std::pair<int64_t, int64_t>> given,
                      int64_t iterations) {
  order.clear();
  if (given.empty())
    return schedule.empty() ? absl::OkStatus() : orderBySchedule(iterations);
  if (!schedule.empty())
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", context.rank,
                     ": its program follows a pipeline schedule "
                     "(pc.schedule); an explicit order would replace it"));
  for (auto [iteration, op] : given) {
    if (op < 0 || op >= static_cast<int64_t>(commActors.size()))
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", context.rank, ": the order names communication op #", op,
          "; the program has ", commActors.size()));
    order.push_back({iteration, commActors[op]});
  }
  if (absl::Status s = actor::verifyOrder(graph, iterations, order); !s.ok())
    return absl::Status(s.code(),
                        absl::StrCat("rank ", context.rank, ": ", s.message()));
  return absl::OkStatus();
}

std::vector<CommEvent> RankProgram::exchanges(int64_t iterations) const {
  std::vector<actor::OrderedFiring> firing =
      order.empty() ? actor::defaultOrder(graph, iterations) : order;
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
RankProgram::run(std::span<Stream *const> streams, std::vector<ArgFeed> args,
                 const ProgramRun &run,
                 std::function<absl::StatusOr<std::shared_ptr<const Tensor>>(
                     const HostTensor &)>
                     uploader) {
  contexts.clear();
  for (Stream *stream : streams)
    contexts.emplace_back(context.tensors, *stream);
  for (Stream *stream : streams)
    contexts.emplace_back(
        context.hostTensors ? *context.hostTensors : context.tensors, *stream);
  feeds = std::move(args);
  upload = std::move(uploader);
  current = &run;
  settling.clear(); // what a failed run left
  results.assign(run.everyIteration ? run.iterations : 1, {});
  actor::RunOptions options;
  options.iterations = run.iterations;
  options.trace = run.trace;
  options.origin = run.origin;
  options.onError = run.onError;
  options.order = order;
  options.onFree = [this](uint32_t actor, int64_t iteration) {
    Actor &a = actors[actor];
    for (auto &t : a.registers[iteration % a.registers.size()])
      t.reset();
  };
  absl::StatusOr<actor::RunStats> stats = actor::run(graph, streams, options);
  // A failed run leaves tensors in registers; they go now. So do the
  // run's arguments: the program keeps only its constants between runs.
  for (Actor &a : actors)
    for (auto &slot : a.registers)
      slot.clear();
  feeds.clear();
  current = nullptr;
  if (!stats.ok())
    results.clear();
  return stats;
}

} // namespace pc::runtime
