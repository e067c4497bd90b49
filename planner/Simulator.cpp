//===- Simulator.cpp - Step time, bubble and memory of a strategy ---------===//

#include "planner/Simulator.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

namespace pc::planner {
namespace {

using Parts = std::map<std::string, double>;

/// The category of an op's time in the breakdown.
std::string category(const SimOp &op) {
  if (!op.collective)
    return std::string_view(op.name) == "optimizer" ? "optimizer" : "compute";
  return std::string(axisName(op.axis)) + " comm";
}

/// The group a collective of `axis` runs over.
Group groupOf(const SimOp &op, const Strategy &st, int64_t perNode) {
  switch (op.axis) {
  case Axis::Tensor:
    return axisGroup(st.tp, 1, perNode);
  case Axis::Data:
    return axisGroup(st.dp, st.tp, perNode);
  case Axis::Pipeline:
    // Neighbouring stages (a send), or the first and the last (the tied
    // embeddings).
    if (op.kind == CollectiveKind::SendRecv)
      return axisGroup(2, st.tp * st.dp, perNode);
    return axisGroup(2, st.tp * st.dp * std::max<int64_t>(1, st.pp - 1),
                     perNode);
  }
  return {};
}

double opTime(const SimOp &op, const CostModel &cost, const Strategy &st) {
  double one =
      op.collective
          ? cost.collective(op.kind, op.bytes,
                            groupOf(op, st, cost.getSpec().devicesPerNode))
          : cost.kernel(op.flops, op.bytes, op.matmul);
  return one * double(op.count);
}

/// The time of a list of ops run in order, what runs alongside hidden up
/// to the rest; `parts` gets each category's share.
double listTime(const std::vector<SimOp> &ops, const CostModel &cost,
                const Strategy &st, Parts &parts) {
  double serial = 0, overlapped = 0;
  for (const SimOp &op : ops) {
    double t = opTime(op, cost, st);
    if (op.overlapped) {
      overlapped += t;
      continue;
    }
    serial += t;
    parts[category(op)] += t;
  }
  if (overlapped > serial) {
    parts["dp comm"] += overlapped - serial;
    return overlapped;
  }
  return serial;
}

double flopsOf(const std::vector<SimOp> &ops) {
  double f = 0;
  for (const SimOp &op : ops)
    if (!op.collective)
      f += op.flops * double(op.count);
  return f;
}

struct ActionTimes {
  double time[3] = {0, 0, 0}; // F, B (with recompute), W
  Parts parts[3];
};

/// Each model stage's action times, and the FLOPs they run.
std::vector<ActionTimes> timeChunks(const DeviceProgram &prog,
                                    const CostModel &cost, const Strategy &st,
                                    double *flops) {
  std::vector<ActionTimes> chunk(prog.chunks.size());
  for (size_t c = 0; c < prog.chunks.size(); ++c) {
    const ChunkProgram &cp = prog.chunks[c];
    ActionTimes &at = chunk[c];
    at.time[0] = listTime(cp.forward, cost, st, at.parts[0]);
    std::vector<SimOp> b = cp.recompute;
    b.insert(b.end(), cp.backwardInput.begin(), cp.backwardInput.end());
    at.time[1] = listTime(b, cost, st, at.parts[1]);
    at.time[2] = listTime(cp.backwardWeight, cost, st, at.parts[2]);
    if (flops)
      *flops += flopsOf(cp.forward) + flopsOf(b) + flopsOf(cp.backwardWeight);
  }
  return chunk;
}

/// The tail of device stage `d`: what overlap cannot hide behind a last
/// backward of `window` seconds, and what runs after it.
double tailTime(const TailProgram &tail, const CostModel &cost,
                const Strategy &st, double window, double hostShard,
                Parts *parts) {
  double overlapped = 0, serial = 0;
  for (const SimOp &op : tail.ops) {
    double t = opTime(op, cost, st);
    if (op.overlapped)
      overlapped += t;
    else {
      serial += t;
      if (parts)
        (*parts)[category(op)] += t;
    }
  }
  double exposed = std::max(0.0, overlapped - window);
  double offload = 0;
  if (st.offloadOptimizer)
    offload = cost.hostCopy(4 * hostShard) +
              hostShard / cost.getSpec().hostAdamRate +
              cost.hostCopy(4 * hostShard);
  if (parts) {
    (*parts)["dp comm"] += exposed;
    if (offload > 0)
      (*parts)["offload"] += offload;
  }
  return exposed + serial + offload;
}

} // namespace

double layerActivationBytes(const TransformerSpec &m, const Strategy &st) {
  double s = m.seq, b = st.microBatchSize, h = m.hidden, a = m.heads;
  double t = st.tp, e = dtypeBytes(st.dtype);
  bool sp = st.sequenceParallel && st.tp > 1;
  double sbh = s * b * h;
  double core = a * s * s * b * (2 * e + 1) / t; // softmax out, mask, dropout
  switch (st.recompute) {
  case Recompute::Full:
    return e * sbh / (sp ? t : 1);
  case Recompute::Selective:
    core = 0;
    break;
  case Recompute::None:
    break;
  }
  // 16 e-byte values and 2 one-byte masks per token and hidden unit; of
  // them, without sequence parallelism, the norms' and dropouts' 4e + 2
  // are on every tensor-parallel rank.
  if (sp)
    return sbh * (16 * e + 2) / t + core;
  return sbh * (4 * e + 2) + sbh * 12 * e / t + core;
}

int64_t inFlight(const Strategy &st, int64_t d) {
  const int64_t p = st.pp, m = st.microBatches, v = st.virtualStages;
  if (p == 1)
    return 1;
  switch (st.schedule) {
  case pipeline::ScheduleKind::GPipe:
    return m;
  case pipeline::ScheduleKind::Interleaved:
    // Megatron's warm-up, plus the one the steady state adds.
    return std::min(m * v, (p - d - 1) * 2 + (v - 1) * p + 1);
  case pipeline::ScheduleKind::OneFOneB:
  case pipeline::ScheduleKind::ZeroBubbleH1:
    return std::min(m, p - d);
  }
  return m;
}

std::string Simulator::check(const TransformerSpec &m,
                             const Strategy &st) const {
  auto n = [](int64_t v) { return std::to_string(v); };
  if (st.dp < 1 || st.tp < 1 || st.pp < 1 || st.microBatches < 1 ||
      st.microBatchSize < 1 || st.virtualStages < 1)
    return "every size must be at least 1";
  if (st.devices() != spec.devices())
    return "dp x tp x pp = " + n(st.devices()) + " devices, but the cluster " +
           "has " + n(spec.devices());
  if (m.heads % st.tp || m.ffnWidth() % st.tp)
    return "tp " + n(st.tp) + " does not divide the " + n(m.heads) +
           " heads and the MLP's " + n(m.ffnWidth()) + " units";
  if (st.modelStages() > m.layers)
    return n(st.modelStages()) + " model stages for " + n(m.layers) + " layers";
  if (st.virtualStages > 1) {
    if (st.schedule != pipeline::ScheduleKind::Interleaved)
      return "virtual stages need the interleaved schedule";
    if (st.pp == 1)
      return "virtual stages need pipeline stages (pp > 1)";
    // Megatron's rule, which its warm-up (the memory formula) assumes;
    // pc's own schedule runs any m, holding more.
    if (st.microBatches % st.pp)
      return "interleaving needs the " + n(st.microBatches) +
             " micro-batches to divide by the " + n(st.pp) + " stages";
    if (m.layers % st.modelStages())
      return "interleaving needs the " + n(m.layers) +
             " layers to divide evenly into " + n(st.modelStages()) +
             " model stages";
  }
  if (st.sequenceParallel && st.tp == 1)
    return "sequence parallelism needs tp > 1";
  if (st.zero < 0 || st.zero > 3)
    return "ZeRO's stages are 0 to 3";
  if (st.zero && st.dp == 1)
    return "ZeRO shards over data-parallel ranks, and dp is 1";
  if (st.offloadOptimizer && spec.hostAdamRate <= 0)
    return "the cluster spec '" + spec.name + "' has no host to offload to";
  if (!spec.peakFlops.count(st.dtype))
    return "the cluster spec '" + spec.name + "' gives no peak for " + st.dtype;
  return {};
}

const pipeline::Schedule &Simulator::schedule(const pipeline::ScheduleSpec &s) {
  auto key =
      std::make_tuple(int(s.kind), s.devices, s.microBatches, s.virtualStages);
  auto &slot = schedules[key];
  if (!slot)
    slot = std::make_unique<pipeline::Schedule>(pipeline::buildSchedule(s));
  return *slot;
}

std::vector<Memory> Simulator::memory(const TransformerSpec &m,
                                      const Strategy &st) const {
  const double act = layerActivationBytes(m, st);
  const double e = dtypeBytes(st.dtype);
  const double tokens = double(st.microBatchSize) * m.seq;
  std::vector<Memory> out(st.pp);
  for (int64_t d = 0; d < st.pp; ++d) {
    Memory &mem = out[d];
    const int64_t stages = st.modelStages();
    double params = 0, layers = 0;
    for (int64_t c = d; c < stages; c += st.pp) {
      params += chunkParameters(m, st, c);
      layers += double(chunkLayers(m.layers, stages, c));
    }
    const bool last = (stages - 1) % st.pp == d;
    const double largestLayer = double(m.layerParameters()) / st.tp;
    const double dp = double(st.dp);
    mem.weights = 4 * params / (st.zero >= 3 ? dp : 1);
    if (st.dtype != "f32" || st.zero >= 3) // working copies: two layers
      mem.weights += 2 * largestLayer * e;
    mem.gradients = 4 * params / (st.zero >= 2 ? dp : 1);
    double moments = 8 * params / (st.zero >= 1 ? dp : 1);
    (st.offloadOptimizer ? mem.host : mem.optimizer) = moments;
    // Activations: the micro-batches in flight, each holding its chunk's
    // layers (a chunk's share of the device's layers).
    double perChunk = layers / double(st.virtualStages);
    int64_t held = inFlight(st, d);
    mem.activations = double(held) * perChunk * act;
    if (st.recompute == Recompute::Full) {
      Strategy none = st;
      none.recompute = Recompute::None;
      mem.activations += layerActivationBytes(m, none); // one layer replayed
    }
    if (last) // f32 logits and their gradient, one micro-batch at a time
      mem.activations += 2 * tokens * double(m.vocab) / st.tp * 4;
  }
  return out;
}

llvm::Expected<double> Simulator::checkedPeak(const TransformerSpec &m,
                                              const Strategy &st) const {
  if (std::string bad = check(m, st); !bad.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "strategy '" + st.str() + "': " + bad);
  return spec.peak(st.dtype);
}

llvm::Expected<Simulation> Simulator::simulate(const TransformerSpec &m,
                                               const Strategy &st) {
  llvm::Expected<double> peak = checkedPeak(m, st);
  if (!peak)
    return peak.takeError();
  CostModel cost(spec, *peak);
  DeviceProgram prog = buildProgram(m, st);
  const bool split = pipeline::splitsBackward(st.schedule) && st.pp > 1;

  // Each model stage's action times.
  double hwFlops = 0;
  std::vector<ActionTimes> chunk = timeChunks(prog, cost, st, &hwFlops);
  auto actionTime = [&](const pipeline::Action &a) {
    const ActionTimes &at = chunk[a.stage];
    switch (a.kind) {
    case pipeline::ActionKind::F:
      return at.time[0];
    case pipeline::ActionKind::B:
      return split ? at.time[1] : at.time[1] + at.time[2];
    case pipeline::ActionKind::W:
      return at.time[2];
    }
    return 0.0;
  };

  Simulation sim;
  sim.strategy = st;
  // The pipeline (or, with one stage, the micro-batches one after another).
  pipeline::Prediction pred;
  if (st.pp > 1) {
    pipeline::ScheduleSpec ss;
    ss.kind = st.schedule;
    ss.devices = st.pp;
    ss.microBatches = st.microBatches;
    ss.virtualStages = st.virtualStages;
    pipeline::ActionCosts costs;
    costs.of = actionTime;
    const pipeline::Schedule &s = schedule(ss);
    if (std::string bad = pipeline::checkSchedule(
            s, pipeline::chainDependencies(ss), costs, pred);
        !bad.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "schedule: " + bad);
  } else {
    pred.timeline.assign(1, {});
    double t = 0;
    for (int64_t mb = 0; mb < st.microBatches; ++mb)
      for (auto kind : {pipeline::ActionKind::F, pipeline::ActionKind::B}) {
        pipeline::Action a{kind, 0, mb};
        double d = actionTime(a);
        pred.timeline[0].push_back({a, t, t + d});
        t += d;
      }
    pred.makespan = t;
    pred.peakInFlight = {1};
  }
  sim.bubble = pred.bubble;
  sim.timeline = pred.timeline;

  // Each device stage: its actions, then its tail.
  std::vector<Memory> mem = memory(m, st);
  std::vector<double> ends(st.pp);
  sim.stages.resize(st.pp);
  for (int64_t d = 0; d < st.pp; ++d) {
    StageReport &r = sim.stages[d];
    r.memory = mem[d];
    // As the memory counts them (the schedule's own count holds a zero-bubble
    // schedule's micro-batches until their W, though only the products'
    // inputs wait for it).
    r.peakInFlight = inFlight(st, d);
    double end = 0, window = 0;
    for (const pipeline::TimedAction &ta : pred.timeline[d]) {
      const ActionTimes &at = chunk[ta.action.stage];
      auto add = [&](int k) {
        for (const auto &[name, t] : at.parts[k])
          r.time[name] += t;
      };
      if (ta.action.kind == pipeline::ActionKind::F)
        add(0);
      else if (ta.action.kind == pipeline::ActionKind::W)
        add(2);
      else {
        add(1);
        if (!split)
          add(2);
      }
      end = std::max(end, ta.end);
      if (ta.action.kind != pipeline::ActionKind::F)
        window = ta.end - ta.start; // the last backward action
    }
    ends[d] = end + tailTime(prog.tails[d], cost, st, window, mem[d].host / 8,
                             &r.time);
  }
  sim.stepTime = *std::max_element(ends.begin(), ends.end());
  sim.critical = std::max_element(ends.begin(), ends.end()) - ends.begin();
  for (StageReport &r : sim.stages) {
    double busy = 0;
    for (const auto &kv : r.time)
      busy += kv.second;
    r.time["idle"] = std::max(0.0, sim.stepTime - busy);
  }

  // FLOPs: per data-parallel replica the programs ran once per
  // micro-batch on each tensor-parallel rank.
  const double perRank = hwFlops * double(st.microBatches);
  sim.hardwareFlops = perRank * double(st.tp * st.dp);
  sim.modelFlops = m.iterationFlops(st.globalBatch(), Recompute::None);
  double peakAll = *peak * double(st.devices());
  sim.mfu = sim.modelFlops / (sim.stepTime * peakAll);
  sim.hfu = sim.hardwareFlops / (sim.stepTime * peakAll);
  sim.memoryBudget = spec.memoryBytes * spec.usableMemory;
  sim.fits = fits(mem, &sim.peakMemory);
  return sim;
}

bool Simulator::fits(const std::vector<Memory> &stages, double *peak) const {
  double device = 0, host = 0;
  for (const Memory &x : stages) {
    device = std::max(device, x.total());
    host = std::max(host, x.host);
  }
  if (peak)
    *peak = device;
  // Every device of a node offloads to that node's memory.
  return device <= spec.memoryBytes * spec.usableMemory &&
         host * double(spec.devicesPerNode) <= spec.hostMemoryBytes;
}

llvm::Expected<double> Simulator::estimate(const TransformerSpec &m,
                                           const Strategy &st) const {
  llvm::Expected<double> peak = checkedPeak(m, st);
  if (!peak)
    return peak.takeError();
  CostModel cost(spec, *peak);
  DeviceProgram prog = buildProgram(m, st);
  std::vector<ActionTimes> chunk = timeChunks(prog, cost, st, nullptr);
  std::vector<Memory> mem = memory(m, st);
  // Per device: one micro-batch's work over its model stages.
  double slowest = 0, fb = 0, w = 0, step = 0;
  for (int64_t d = 0; d < st.pp; ++d) {
    double work = 0;
    for (int64_t c = d; c < st.modelStages(); c += st.pp) {
      work += chunk[c].time[0] + chunk[c].time[1] + chunk[c].time[2];
      fb = std::max(fb, chunk[c].time[0] + chunk[c].time[1]);
      w = std::max(w, chunk[c].time[2]);
    }
    slowest = std::max(slowest, work);
  }
  const double p = double(st.pp), mb = double(st.microBatches);
  double ramp = (p - 1) * slowest / double(st.virtualStages);
  if (st.pp > 1 && st.schedule == pipeline::ScheduleKind::ZeroBubbleH1 &&
      fb + w > 0)
    ramp = (p - 1) * slowest * std::max(0.0, fb - w) / (fb + w);
  for (int64_t d = 0; d < st.pp; ++d) {
    double window = chunk[d].time[1] + chunk[d].time[2];
    step = std::max(step, tailTime(prog.tails[d], cost, st, window,
                                   mem[d].host / 8, nullptr));
  }
  return mb * slowest + (st.pp > 1 ? ramp : 0) + step;
}

std::string formatSimulation(const Simulation &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  const char *cats[] = {"compute",   "tp comm", "pp comm", "dp comm",
                        "optimizer", "offload", "idle"};
  os << "stage  memory(GB)  weights  grads  optim  activ  in-flight";
  for (const char *c : cats)
    os << llvm::format("  %9s", c);
  os << "\n";
  for (size_t d = 0; d < s.stages.size(); ++d) {
    const StageReport &r = s.stages[d];
    const Memory &m = r.memory;
    os << llvm::format("%5zu  %10.2f  %7.2f  %5.2f  %5.2f  %5.2f  %9lld", d,
                       m.total() / 1e9, m.weights / 1e9, m.gradients / 1e9,
                       m.optimizer / 1e9, m.activations / 1e9,
                       (long long)r.peakInFlight);
    for (const char *c : cats) {
      auto it = r.time.find(c);
      os << llvm::format("  %8.3fs", it == r.time.end() ? 0.0 : it->second);
    }
    os << (int64_t(d) == s.critical ? "  <- ends last" : "") << "\n";
  }
  return out;
}

} // namespace pc::planner
