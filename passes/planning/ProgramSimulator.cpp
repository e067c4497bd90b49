//===- ProgramSimulator.cpp - Timing a module's per-device programs -------===//

#include "passes/planning/ProgramSimulator.h"

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "planner/CostModel.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace mlir;

namespace pc {
namespace {

double bytesOf(Type t) { return double(tensorBytes(t)); }

/// The module's rates as the planner's cost model sees one node's devices.
planner::ClusterSpec specOf(const attrs::CostModel &m) {
  planner::ClusterSpec s;
  s.name = "the module's cost model";
  s.devicesPerNode = 1 << 20; // a mesh's devices share the link
  s.peakFlops["f32"] = m.peakFlops;
  s.memoryBandwidth = m.memoryBandwidth;
  s.intraNode.bandwidth = m.linkBandwidth;
  s.intraNode.latency = m.linkLatency;
  s.intraNode.callLatency = m.callLatency;
  s.kernelLatency = m.kernelLatency;
  return s;
}

/// The ops of `f` in the order the runtime fires them: by the action of
/// the schedule they belong to (an op outside every action goes with the
/// ops before it), in program order within one.
std::vector<Operation *> firingOrder(func::FuncOp f) {
  llvm::DenseMap<Attribute, int64_t> position;
  if (std::optional<SmallVector<ActionAttr>> s = attrs::getSchedule(f))
    for (auto [i, a] : llvm::enumerate(*s))
      position[a] = i;
  std::vector<std::pair<int64_t, Operation *>> keyed;
  int64_t key = -1;
  f.walk([&](Operation *op) {
    if (op == f.getOperation())
      return;
    if (ActionAttr a = attrs::getAction(op))
      if (auto it = position.find(a); it != position.end())
        key = it->second;
    keyed.push_back({key, op});
  });
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](auto &a, auto &b) { return a.first < b.first; });
  std::vector<Operation *> ops;
  for (auto &[k, op] : keyed)
    ops.push_back(op);
  return ops;
}

/// "from -> to" of a send or receive: the pair its matching counts in.
std::string pairOf(TypeAttr from, TypeAttr to) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << from << "->" << to;
  return s;
}

class Simulator {
public:
  Simulator(ModuleOp module, const OpProfile *profile,
            const attrs::CostModel *given)
      : module(module), rates(given ? *given : costModelOf(module)),
        spec(specOf(rates)), cost(spec, rates.peakFlops),
        halfCost(spec, rates.halfPeakFlops > 0 ? rates.halfPeakFlops
                                               : rates.peakFlops),
        meshes(module), profile(profile) {}

  Simulation run(StringRef graph) {
    Simulation result;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal() || attrs::getRanks(f).empty())
        continue;
      StringAttr g = attrs::getGraph(f);
      if (!graph.empty() && (!g || g.getValue() != graph))
        continue;
      auto p = std::make_unique<Program>();
      p->timing.name = f.getSymName().str();
      p->timing.ranks = ranksText(f);
      p->ranks = std::max<int64_t>(1, attrs::getRanks(f).size());
      devices += p->ranks;
      for (Operation *op : firingOrder(f)) {
        p->local.insert(op);
        p->streams[onCommStream(op)].ops.push_back(op);
      }
      findQueued(f, *p);
      programs.push_back(std::move(p));
    }
    if (programs.empty()) {
      result.error = "no per-device programs; run pc-partition (or "
                     "--pc-distribute) first";
      return result;
    }
    simulate();
    for (auto &p : programs) {
      for (Stream &s : p->streams)
        if (s.next < s.ops.size()) {
          result.error = "@" + p->timing.name +
                         ": a receive has no matching send (the schedule "
                         "would deadlock)";
          return result;
        }
      result.step = std::max(result.step, p->timing.end);
      result.programs.push_back(p->timing);
    }
    double idle = 0;
    for (auto &p : programs)
      idle += double(p->ranks) *
              (result.step > 0 ? 1 - p->timing.compute / result.step : 0);
    result.idle = idle / double(devices);
    if (rates.sharedCores) {
      result.work = work;
      result.cores = hostCores();
    }
    return result;
  }

private:
  /// One of a program's streams: its ops in firing order.
  struct Stream {
    std::vector<Operation *> ops;
    size_t next = 0;
    bool busy = false;
  };
  struct Program {
    ProgramTiming timing;
    Stream streams[2]; // compute, communication
    int64_t ranks = 1;
    llvm::DenseSet<Operation *> local;
    /// When each result is ready; absent until its op ends.
    DenseMap<Value, double> ready;
    std::map<std::string, int64_t> sends, recvs;
    /// (producer, consuming stream is communication) already charged a
    /// wake-up.
    llvm::DenseSet<std::pair<Operation *, int>> woken;
    /// Collectives queued behind the one before them on the communication
    /// stream (findQueued).
    llvm::DenseSet<Operation *> queued;
    /// The seconds of compute each of its devices has done (as it would
    /// alone); that figure when its last collective with a latency ended;
    /// and when that was (meetingLag).
    double computed = 0, computedAtMeeting = 0, lastMeetingEnd = 0;
  };

  /// Marks the collectives of `p` queued behind the collective before them
  /// on the communication stream: those that do not depend on it. Their
  /// members come from that one together and awake, not from their compute
  /// one by one, and pay queued_share of their latency. Decided by the
  /// program, not by the simulated timing: as with the wake-ups, the
  /// runtime's streams run dry or queue up unlike the simulation's ideal
  /// timing, and the share is fitted to queued collectives as they run.
  void findQueued(func::FuncOp f, Program &p) {
    if (!(rates.queuedShare < 1))
      return;
    // Program order is topological (a pipeline's firing order need not
    // be, for ops outside its actions): nothing before `prev` in it
    // depends on `prev`.
    llvm::DenseMap<Operation *, size_t> position;
    f.walk([&](Operation *op) {
      size_t next = position.size();
      position[op] = next;
    });
    const std::vector<Operation *> &comm = p.streams[1].ops;
    for (size_t i = 1; i < comm.size(); ++i) {
      Operation *prev = comm[i - 1], *op = comm[i];
      if (hasLatency(prev) && hasLatency(op) &&
          !dependsOn(p, op, prev, position))
        p.queued.insert(op);
    }
  }

  /// Whether `op` is a collective with a latency: over a group of more
  /// than one, not a local slice or partial (a copy).
  bool hasLatency(Operation *op) {
    return isCommOp(op) &&
           !isa<SendOp, RecvOp, LocalSliceOp, LocalPartialOp>(op) &&
           groupSize(op) > 1;
  }

  /// Whether `op` reads, through `p`'s ops, a result of `prev`.
  static bool dependsOn(Program &p, Operation *op, Operation *prev,
                        const llvm::DenseMap<Operation *, size_t> &position) {
    const size_t from = position.lookup(prev);
    llvm::SmallVector<Operation *> worklist{op};
    llvm::DenseSet<Operation *> seen;
    while (!worklist.empty()) {
      Operation *o = worklist.pop_back_val();
      for (Value v : o->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def == prev)
          return true;
        if (def && p.local.contains(def) && position.lookup(def) > from &&
            seen.insert(def).second)
          worklist.push_back(def);
      }
    }
    return false;
  }

  /// An op in progress: the seconds it would still take alone, on each
  /// rank of its program.
  struct Task {
    Program *program;
    Stream *stream;
    Operation *op;
    double start, left;
    bool comm;
    /// Seconds it sleeps first, holding no core: a receive's wait for its
    /// hop's latency, a collective's for its last member (meetingLag()).
    double sleep = 0;
    /// Seconds of a collective's latency, after that and before its work:
    /// it keeps its wall time and holds latencyCores() per rank.
    double wait = 0;
    /// Of a compute op's work, the share that is its firing's overhead;
    /// of any op's, the share that is its stream's wake-up.
    double firingShare = 0, wakeShare = 0;
  };

  /// Time advances from one op's end to the next; at each end every stream
  /// whose next op can start starts it.
  void simulate() {
    double now = 0;
    std::vector<Task> running;
    for (;;) {
      startReady(now, running);
      if (running.empty())
        return;
      // The cores latencies hold first (a program's op runs on each of
      // its ranks); the other busy ops share the rest.
      int64_t busy = 0;
      double held = 0;
      for (const Task &t : running)
        if (t.sleep > 0)
          continue;
        else if (t.wait > 0)
          held += latencyCores() * double(t.program->ranks);
        else
          busy += t.program->ranks;
      const double cores = hostCores();
      const double waitRate = held > cores ? cores / held : 1;
      const double rate =
          busy ? std::min(1.0, std::max(0.0, cores - held) / double(busy)) : 1;
      double dt = std::numeric_limits<double>::infinity();
      for (const Task &t : running) {
        if (t.sleep > 0)
          dt = std::min(dt, t.sleep);
        else if (t.wait > 0)
          dt = std::min(dt, t.wait / waitRate);
        else if (rate > 0)
          dt = std::min(dt, t.left / rate);
      }
      now += dt;
      for (const Task &t : running)
        if (!(t.sleep > 0))
          countWork(t, dt * double(t.program->ranks) *
                           (t.wait > 0 ? latencyCores() * waitRate : rate));
      for (Task &t : running) {
        if (t.sleep > 0)
          t.sleep = std::max(0.0, t.sleep - dt);
        else if (t.wait > 0)
          t.wait = std::max(0.0, t.wait - dt * waitRate);
        else {
          t.left -= dt * rate;
          if (!t.comm)
            t.program->computed += dt * rate;
        }
      }
      std::vector<Task> done;
      llvm::erase_if(running, [&](const Task &t) {
        if (t.sleep > 0 || t.wait > 0 || t.left > 1e-15)
          return false;
        done.push_back(t);
        return true;
      });
      for (const Task &t : done)
        finish(t, now);
    }
  }

  /// Adds `seconds` of the cores that `t` kept busy to the step's work.
  void countWork(const Task &t, double seconds) {
    if (t.wait > 0)
      work.latency += seconds;
    else {
      work.wakes += seconds * t.wakeShare;
      if (t.comm)
        work.transfers += seconds * (1 - t.wakeShare);
      else {
        work.firings += seconds * t.firingShare;
        work.kernels += seconds * (1 - t.firingShare - t.wakeShare);
      }
    }
    work.total += seconds;
  }

  /// The cores the busy ops share: on shared cores, the host's (one per
  /// device unless fewer run at once); else every device has its own.
  double hostCores() const {
    // Less the share the threads' wake-ups leave idle.
    if (oversubscribed())
      return double(rates.concurrentDevices) * rates.coreEfficiency;
    if (rates.sharedCores)
      return double(devices);
    return std::numeric_limits<double>::infinity();
  }

  /// The cores one member holds through a collective's latency: the
  /// latency_busy share of the cores it had when the latency was measured
  /// (every device taking part). A woken member runs before the compute
  /// that holds its core, so the latency keeps its time and the compute
  /// shares what is left.
  double latencyCores() const {
    double perDevice = oversubscribed()
                           ? double(rates.concurrentDevices) / double(devices)
                           : 1;
    return rates.latencyBusy * perDevice;
  }

  /// The seconds `op` waits for its last member beyond its latency, on
  /// shared cores with more devices than cores: straggler_lag times the
  /// compute its program's devices did (their seconds alone) since their
  /// previous collective with a latency ended (since the step began, for
  /// the first), where its members come to it from that compute (its
  /// operands were ready only after the previous one ended, so that its
  /// stream waited for them). The longer a device computes among the
  /// others' threads, the likelier one of the group is descheduled on the
  /// way, and its peers sleep until it arrives; the simulator, which runs
  /// a program's ranks in lockstep, cannot see that itself (TP4's traced
  /// step: a rank's compute descheduled 0.98 ms a step on average, the
  /// slowest member's 2.54 ms, summed over its meetings). Fitted to a
  /// chain of tensor-parallel blocks (pc-bench-calibrate).
  double meetingLag(Program &p, Operation *op) {
    if (!rates.sharedCores || !(rates.stragglerLag > 0) || !oversubscribed() ||
        !hasLatency(op))
      return 0;
    double ready = 0;
    for (Value v : op->getOperands())
      if (auto it = p.ready.find(v); it != p.ready.end())
        ready = std::max(ready, it->second);
    return ready > p.lastMeetingEnd
               ? rates.stragglerLag * (p.computed - p.computedAtMeeting)
               : 0;
  }

  /// Whether the host runs more devices than it has cores for: then every
  /// op, communication too, is work on the shared cores.
  bool oversubscribed() const {
    return rates.concurrentDevices > 0 && devices > rates.concurrentDevices;
  }

  void startReady(double now, std::vector<Task> &running) {
    for (bool started = true; started;) {
      started = false;
      for (auto &p : programs)
        for (Stream &s : p->streams) {
          if (s.busy || s.next == s.ops.size() || !canStart(*p, s.ops[s.next]))
            continue;
          Operation *op = s.ops[s.next++];
          Task t{p.get(), &s, op, now, 0, isCommOp(op)};
          double firing = 0, wake = wakeWork(*p, op);
          t.left = duration(*p, op, t.wait, firing) + wake;
          if (t.left > 0) {
            t.firingShare = std::min(1.0, firing / t.left);
            t.wakeShare = std::min(1.0 - t.firingShare, wake / t.left);
          }
          if (auto recv = dyn_cast<RecvOp>(op); recv && rates.p2pWork > 0)
            // The hop's latency beyond its work, from its send's end.
            t.sleep = std::max(0.0, sentAt(*p, recv) + rates.p2pLatency - now);
          else
            t.sleep = meetingLag(*p, op);
          started = true;
          if (t.left <= 0 && t.wait <= 0 && t.sleep <= 0) {
            finish(t, now); // views, parameters: no time unless woken
            continue;
          }
          s.busy = true;
          running.push_back(t);
        }
    }
  }

  /// The work of waking `op`'s stream, on shared cores, when an operand
  /// of `op` comes from the device's other stream (a collective's input
  /// from the compute, a compute op's from a collective): the operand's
  /// Done wakes the device's dispatcher, which wakes the stream's worker.
  /// Charged whether or not the simulated stream waited: the runtime's
  /// streams run dry before such operands far more often than this
  /// simulation's timing says (docs/decisions.md), so the charge is
  /// fitted to the measured steps rather than to the simulated waits.
  /// Once per producer and stream: the dispatcher queues all of a Done's
  /// consumers on that stream at once. A receive's wait for its send is
  /// the hop's own (p2p_work, p2p_latency). A collective's wake-up runs
  /// after its latency here (its work follows its wait), where the
  /// runtime's comes first: the same work, a little later.
  double wakeWork(Program &p, Operation *op) {
    if (!rates.sharedCores || !(rates.wakeWork > 0))
      return 0;
    const bool comm = onCommStream(op);
    double work = 0;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && p.local.contains(def) && onCommStream(def) != comm &&
          p.woken.insert({def, int(comm)}).second)
        work = rates.wakeWork;
    return work;
  }

  /// Whether `op` goes on its device's communication stream: every
  /// collective; a send or receive on shared cores stays in line with the
  /// compute, as its latency was measured (a hop's hand-offs between the
  /// two devices' streams, with every device busy).
  bool onCommStream(Operation *op) const {
    return isCommOp(op) && !(rates.sharedCores && isa<SendOp, RecvOp>(op));
  }

  /// When the send a receive of `p`'s, just started, matches ended.
  double sentAt(Program &p, RecvOp recv) {
    std::string pair = pairOf(recv.getFromAttr(), recv.getToAttr());
    auto it = posted.find({pair, p.recvs[pair] - 1});
    assert(it != posted.end() && "a receive starts after its send");
    return it->second;
  }

  /// Whether `op`'s operands are ready, and a receive's send has ended.
  bool canStart(Program &p, Operation *op) {
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && p.local.contains(def) && !p.ready.count(v))
        return false;
    if (auto recv = dyn_cast<RecvOp>(op)) {
      std::string pair = pairOf(recv.getFromAttr(), recv.getToAttr());
      return posted.count({pair, p.recvs[pair]});
    }
    return true;
  }

  /// The seconds of work `op` takes alone; `wait`, the latency it spends
  /// before that work without taking a core; `firing`, the part of the
  /// work that is the runtime's cost of firing a compute op.
  double duration(Program &p, Operation *op, double &wait, double &firing) {
    if (auto recv = dyn_cast<RecvOp>(op)) {
      ++p.recvs[pairOf(recv.getFromAttr(), recv.getToAttr())];
      ++p.timing.collectives;
      p.timing.moved += bytesOf(recv.getType());
      // The pieces arrived with the send; the receive places them.
      return cost.kernel(0, bytesOf(recv.getType()), false);
    }
    if (!isCommOp(op))
      return computeTime(op, p.timing, firing);
    // The link's rates were measured in wall time with every device taking
    // part: on shared cores that time is the work of all of them at once.
    // A hop's p2p_work is already its seconds of the cores.
    double hop = isa<SendOp>(op) ? rates.p2pWork : 0;
    double work = hop + linkWork(commTime(op, p.timing, wait));
    if (p.queued.contains(op))
      wait *= rates.queuedShare;
    return work;
  }

  /// The work on the cores of `seconds` of a link's wall time, measured
  /// with every device taking part and the cores as busy as the runtime
  /// keeps them.
  double linkWork(double seconds) const {
    return oversubscribed() ? seconds * hostCores() / double(devices) : seconds;
  }

  void finish(const Task &t, double now) {
    Program &p = *t.program;
    t.stream->busy = false;
    for (Value r : t.op->getResults())
      p.ready[r] = now;
    (t.comm ? p.timing.comm : p.timing.compute) += now - t.start;
    if (t.comm && rates.stragglerLag > 0 && hasLatency(t.op)) {
      p.lastMeetingEnd = now;
      p.computedAtMeeting = p.computed;
    }
    p.timing.end = std::max(p.timing.end, now);
    if (auto send = dyn_cast<SendOp>(t.op)) {
      std::string pair = pairOf(send.getFromAttr(), send.getToAttr());
      // Ranks of several programs may send the k-th piece of a pair: the
      // receive waits for the last.
      double &at = posted[{pair, p.sends[pair]++}];
      at = std::max(at, now);
    }
  }

  /// `op`'s compute time; `firing`, the runtime's cost of firing it, which
  /// that time holds (the kernel latency).
  double computeTime(Operation *op, ProgramTiming &t, double &firing) {
    auto sbp = dyn_cast<SbpOpInterface>(op);
    if (sbp)
      t.flops += sbp.getComputeCost();
    // With a profile every firing pays the runtime's overhead (the kernel
    // latency), beyond the kernel's measured time; views and parameters
    // fire too. Without one, the roofline's time holds the latency, and
    // views and parameters take no time.
    firing = profile || sbp ? rates.kernelLatency : 0;
    if (double measured = profile ? profile->lookup(op) : -1; measured >= 0) {
      ++t.measured;
      // Profiled on one device; in a step, slower by kernel_in_step.
      return measured * (rates.kernelInStep > 0 ? rates.kernelInStep : 1) +
             firing;
    }
    if (!sbp) // views, parameters, constants
      return firing;
    ++t.modelled;
    double bytes = 0;
    for (Type ty : op->getOperandTypes())
      bytes += bytesOf(ty);
    for (Type ty : op->getResultTypes())
      bytes += bytesOf(ty);
    // Matmuls on 16-bit floats (mixed precision) run at their own peak.
    const planner::CostModel &c =
        rates.peakFor(computeElementType(op)) != rates.peakFlops ? halfCost
                                                                 : cost;
    return c.kernel(sbp.getComputeCost(), bytes, /*matmul=*/true);
  }

  int64_t groupSize(Operation *op) {
    if (auto r = dyn_cast<RedistributeOp>(op))
      if (MeshOp m = meshes.lookup(getSbp(r.getFrom())))
        return m.getNumDevices();
    auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
    if (!mesh || !axes)
      return 2; // a point-to-point transfer
    MeshOp m = meshes.lookup(mesh);
    int64_t n = 1;
    for (int64_t a : axes.asArrayRef())
      n *= m ? m.getShape()[a] : 1;
    return n;
  }

  double commTime(Operation *op, ProgramTiming &t, double &wait) {
    using K = planner::CollectiveKind;
    double in = op->getNumOperands() ? bytesOf(op->getOperand(0).getType()) : 0;
    double out = op->getNumResults() ? bytesOf(op->getResult(0).getType()) : 0;
    if (isa<SendOp>(op) && (rates.p2pLatency > 0 || rates.p2pWork > 0)) {
      // A hop of its own rates. Without p2p_work, its latency was measured
      // with every device busy, as work on the shared cores (hopLatency in
      // bench/CalibrateRuntime.cpp); with it, the receive waits the latency out
      // and duration() adds the work.
      t.moved += in;
      ++t.collectives;
      return (rates.p2pWork > 0 ? 0 : rates.p2pLatency) +
             in / rates.linkBandwidth;
    }
    std::optional<std::pair<K, double>> c;
    if (isa<AllReduceOp>(op))
      c = {K::AllReduce, in};
    else if (isa<AllGatherOp>(op))
      c = {K::AllGather, out};
    else if (isa<ReduceScatterOp>(op))
      c = {K::ReduceScatter, in};
    else if (isa<AllToAllOp>(op))
      c = {K::AllToAll, in};
    else if (isa<RedistributeOp>(op)) // as an all-to-all of the new piece
      c = {K::AllToAll, out};
    else if (isa<BroadcastOp>(op))
      c = {K::AllGather, out};
    else if (isa<SendOp>(op))
      c = {K::SendRecv, in};
    if (!c) // a local slice or partial: a copy
      return cost.kernel(0, in + out, false);
    planner::Group g;
    g.size = groupSize(op);
    g.perNode = g.size;
    double n = double(g.size);
    if (g.size > 1)
      ++t.collectives;
    switch (c->first) {
    case K::AllReduce:
      t.moved += 2 * (n - 1) / n * c->second;
      break;
    case K::SendRecv:
      t.moved += c->second;
      break;
    default:
      t.moved += (n - 1) / n * c->second;
    }
    double total = cost.collective(c->first, c->second, g);
    // The latency term alone (the time of a vanishing payload) keeps its
    // time; the payload's copies are work on the cores.
    wait = cost.collective(c->first, 1e-30, g);
    return std::max(0.0, total - wait);
  }

  ModuleOp module;
  attrs::CostModel rates;
  planner::ClusterSpec spec; // `cost` and `halfCost` refer to it
  planner::CostModel cost, halfCost;
  MeshCache meshes;
  const OpProfile *profile;
  std::vector<std::unique_ptr<Program>> programs;
  int64_t devices = 0; // the ranks of all programs
  CoreWork work;       // of the busy ops, all ranks
  /// When the k-th send of a pair ended.
  std::map<std::pair<std::string, int64_t>, double> posted;
};

} // namespace

Simulation simulatePrograms(ModuleOp module, StringRef graph,
                            const OpProfile *profile,
                            const attrs::CostModel *rates) {
  return Simulator(module, profile, rates).run(graph);
}

std::string formatSimulation(const Simulation &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  for (const ProgramTiming &t : s.programs)
    os << llvm::format(
        "pc-simulate: @%s %s: %.3f GFLOP, compute %.3f ms, comm %.3f ms "
        "(%lld collectives, %.3f MiB per device); ends at %.3f ms\n",
        t.name.c_str(), t.ranks.c_str(), t.flops / 1e9, 1e3 * t.compute,
        1e3 * t.comm, (long long)t.collectives, t.moved / 1048576.0,
        1e3 * t.end);
  for (const ProgramTiming &t : s.programs)
    if (t.measured)
      os << llvm::format("pc-simulate: @%s: %lld ops timed by the profile, "
                         "%lld by the roofline\n",
                         t.name.c_str(), (long long)t.measured,
                         (long long)t.modelled);
  if (s.cores > 0 && s.step > 0)
    os << llvm::format("pc-simulate: the host's cores: %.3f ms of work "
                       "(kernels %.3f, firings %.3f, collectives' latency "
                       "%.3f, transfers %.3f, wake-ups %.3f), %.2f of %.2f "
                       "usable cores busy on average\n",
                       1e3 * s.work.total, 1e3 * s.work.kernels,
                       1e3 * s.work.firings, 1e3 * s.work.latency,
                       1e3 * s.work.transfers, 1e3 * s.work.wakes,
                       s.work.total / s.step, s.cores);
  os << llvm::format("pc-simulate: predicted step %.3f ms\n", 1e3 * s.step);
  return out;
}

} // namespace pc
