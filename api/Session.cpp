//===- Session.cpp - Running compiled programs ----------------------------===//

#include "api/Program.h"

#include "dialect/OpProfile.h"
#include "dialect/ProgramAttrs.h"

#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/CpuExecutor.h"
#include "runtime/exec/Input.h"
#include "runtime/exec/Npy.h"
#include "runtime/exec/Safetensors.h"
#include "runtime/exec/Schedule.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "llvm/ADT/StringExtras.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <thread>

namespace pc::api {

namespace {
/// The checkpoint metadata that lists the optimizer state's tensors.
constexpr const char *kOptimizerStateKey = "optimizer_state";
} // namespace

Session::~Session() = default;

absl::StatusOr<std::unique_ptr<Session>>
Session::create(const Program &program, const SessionOptions &options) {
  if (!program.impl)
    return absl::InvalidArgumentError("Session::create: an empty program");
  std::unique_ptr<Session> s(new Session());
  s->program = program;
  s->rates = program.optimizer();
  absl::StatusOr<std::unique_ptr<runtime::World>> world =
      runtime::makeWorld(options.world);
  if (!world.ok())
    return world.status();
  s->world_ = std::move(*world);
  // The devices of this process, and of the world.
  int64_t processes = s->world_->processCount();
  int64_t local = processes > 1     ? options.world.devicesPerProcess
                  : options.devices ? options.devices
                                    : program.numDevices();
  if (local * processes < program.numDevices())
    return absl::InvalidArgumentError(absl::StrCat(
        "the program's meshes need ", program.numDevices(),
        " devices, but the session has ", local * processes,
        processes > 1 ? absl::StrCat(" (", local, " per process x ", processes,
                                     " processes)")
                      : ""));
  s->cpu = std::make_unique<runtime::CpuSession>(program.programs(),
                                                 options.seed, s->world_.get());
  // Share the cores among the devices of every process on this node
  // rather than oversubscribe them.
  int cores = std::max(1u, std::thread::hardware_concurrency());
  int64_t onNode = 1;
  if (const char *n = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    onNode = std::max(1, std::atoi(n));
  s->cpu->setDeviceCapacity(options.deviceMemory);
  s->cpu->setInPlaceUpdates(program.inPlaceUpdates());
  s->cpu->setPortableKernels(options.portableKernels);
  s->cpu->setDeviceKind(options.deviceKind);
  s->cpu->setThreadsPerDevice(
      static_cast<int>(options.threadsPerDevice > 0
                           ? options.threadsPerDevice
                           : std::max<int64_t>(1, cores / (local * onNode))));
  for (const Port &port : program.inputs()) {
    s->inputIndex[port.name] = port.index;
    s->inputPorts[port.index] = port;
    // A placeholder that holds no memory: a run refuses unfed inputs.
    s->inputs.push_back(runtime::Input::tiled(port.shape, port.type, {}, {}));
    // A training step's rate comes from the schedule, not from feed().
    if (program.training() && program.lrIndex == port.index)
      s->lrIndex = port.index;
    if (program.training() && port.name == pc::attrs::kInjectOverflowInput)
      s->injectIndex = port.index;
  }
  for (const Port &port : program.outputs()) {
    s->outputIndex[port.name] = port.index;
    if (port.name == "grad_norm")
      s->gradNormIndex = port.index;
    if (port.name == "loss_scale")
      s->lossScaleIndex = port.index;
    if (port.name == "skipped")
      s->skippedIndex = port.index;
  }
  s->lossIndex = program.lossIndex;
  return s;
}

absl::Status Session::usable(const char *call) const {
  if (closed)
    return absl::FailedPreconditionError(
        absl::StrCat("Session::", call, ": the session is closed"));
  return absl::OkStatus();
}

absl::Status Session::feed(const std::string &name, runtime::HostTensor value) {
  if (absl::Status s = usable("feed"); !s.ok())
    return s;
  auto it = inputIndex.find(name);
  if (it == inputIndex.end() || it->second == lrIndex ||
      it->second == injectIndex)
    return absl::NotFoundError(
        absl::StrCat("Session::feed: the program has no input '", name, "'"));
  const Port &want = inputPorts.at(it->second);
  if (value.shape != want.shape || value.type != want.type)
    return absl::InvalidArgumentError(absl::StrCat(
        "Session::feed: input '", name, "' is ", runtime::nameOf(want.type),
        " of shape [", absl::StrJoin(want.shape, ", "), "], not ",
        runtime::nameOf(value.type), " of shape [",
        absl::StrJoin(value.shape, ", "), "]"));
  inputs[it->second] = runtime::Input::own(std::move(value));
  files.erase(it->second);
  fed.insert(it->second);
  return absl::OkStatus();
}

absl::Status Session::feedFile(const std::string &name,
                               const std::string &path) {
  if (absl::Status s = usable("feedFile"); !s.ok())
    return s;
  auto it = inputIndex.find(name);
  if (it == inputIndex.end() || it->second == lrIndex ||
      it->second == injectIndex)
    return absl::NotFoundError(absl::StrCat(
        "Session::feedFile: the program has no input '", name, "'"));
  absl::StatusOr<std::shared_ptr<const runtime::MappedNpy>> file =
      runtime::MappedNpy::open(path);
  if (!file.ok())
    return file.status();
  const Port &want = inputPorts.at(it->second);
  std::string what = absl::StrCat(" argument #", it->second);
  if ((*file)->shape() != want.shape)
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": shape does not match", what, " of @", program.graph()));
  auto isInteger = [](runtime::CommType t) {
    return t == runtime::CommType::I32 || t == runtime::CommType::I64;
  };
  runtime::CommType has = (*file)->type();
  if (has != want.type && !(isInteger(has) && isInteger(want.type)) &&
      !(want.type == runtime::CommType::BF16 && has == runtime::CommType::F32))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": dtype does not match", what, " (the file has ",
                     runtime::nameOf(has), ", the argument is ",
                     runtime::nameOf(want.type), ")"));
  files[it->second] = *file;
  inputs[it->second] = runtime::Input::file(*std::move(file), want.type);
  fed.insert(it->second);
  return absl::OkStatus();
}

absl::Status
Session::runOnce(const char *call, const RunOptions &options,
                 const Accept &accept,
                 std::map<int64_t, std::vector<runtime::Input>> varying,
                 std::vector<std::vector<runtime::HostTensor>> *every) {
  // Every input must have been fed: a zero tensor nobody asked for would
  // be a wrong result, not an error.
  for (auto &[name, index] : inputIndex)
    if (index != lrIndex && index != injectIndex && !fed.count(index))
      return absl::FailedPreconditionError(
          absl::StrCat("Session::", call, ": input '", name, "' was not fed"));
  // A mapped file that shrank would fault when read: check first. Each
  // process sees the file system on its own; one that fails here releases
  // the others (which would wait for it in the run) with its error.
  for (auto &[index, file] : files)
    if (absl::Status s = file->unchanged(); !s.ok()) {
      world_->abort(s);
      return s;
    }
  runtime::CpuRunOptions o;
  o.accept = accept;
  o.iterations = options.iterations;
  o.registers = options.registers;
  o.trace = options.trace;
  o.step = step;
  o.resultsOnEveryProcess = true; // fetch() works on every process
  o.varying = std::move(varying);
  o.everyIteration = every != nullptr;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<runtime::CpuRun> run = cpu->run(program.graph(), inputs, o);
  if (!run.ok())
    return run.status();
  last.wallSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  last.peakBytes = run->peakBytes;
  last.bytesSent.clear();
  last.bytesReceived.clear();
  last.collectives.clear();
  for (auto &[rank, stats] : run->comm) {
    last.bytesSent[rank] = stats.bytesSent;
    last.bytesReceived[rank] = stats.bytesReceived;
    for (auto &[kind, n] : stats.calls)
      last.collectives[kind] += n;
  }
  last.comm = std::move(run->comm);
  last.events.clear();
  for (auto &[rank, events] : run->events)
    for (runtime::OpEvent &e : events)
      last.events[rank].push_back(
          {std::move(e.name), std::move(e.stream), e.iteration, e.startUs,
           e.durationUs, e.cpuUs, std::move(e.action), std::move(e.detail)});
  last.iterationDoneUs = std::move(run->iterationDoneUs);
  outputs = std::move(run->results);
  if (every)
    *every = std::move(run->iterationResults);
  return absl::OkStatus();
}

absl::Status Session::run(const RunOptions &options) {
  if (absl::Status s = usable("run"); !s.ok())
    return s;
  if (program.training())
    return absl::FailedPreconditionError(
        "Session::run: the program is a training step; call trainStep()");
  return runOnce("run", options);
}

absl::Status Session::setSchedule(const OptimizerOptions &r) {
  if (absl::Status s = usable("setSchedule"); !s.ok())
    return s;
  if (absl::StatusOr<runtime::LrSchedule::Kind> kind =
          runtime::LrSchedule::parse(r.schedule);
      !kind.ok())
    return kind.status();
  // The rate is fed as f32.
  constexpr double kMaxRate = std::numeric_limits<float>::max();
  if (!std::isfinite(r.lr) || r.lr < 0 || r.lr > kMaxRate ||
      !std::isfinite(r.minLr) || r.minLr < 0 || r.minLr > kMaxRate)
    return absl::InvalidArgumentError(
        absl::StrCat("the learning rate must be a finite number >= 0, not ",
                     std::isfinite(r.lr) && r.lr >= 0 ? r.minLr : r.lr));
  rates.lr = r.lr;
  rates.schedule = r.schedule;
  rates.warmupSteps = r.warmupSteps;
  rates.totalSteps = r.totalSteps;
  rates.minLr = r.minLr;
  return absl::OkStatus();
}

absl::StatusOr<double> Session::trainStep(const RunOptions &options) {
  absl::StatusOr<std::vector<double>> losses =
      trainSteps("trainStep", 1, options);
  if (!losses.ok())
    return losses.status();
  return losses->back();
}

absl::StatusOr<std::vector<double>> Session::train(int64_t steps,
                                                   const RunOptions &options) {
  return trainSteps("train", steps, options);
}

absl::Status Session::injectOverflow(std::set<int64_t> steps) {
  if (absl::Status s = usable("injectOverflow"); !s.ok())
    return s;
  if (!injectIndex)
    return absl::FailedPreconditionError(
        "Session::injectOverflow: the program was not compiled with "
        "CompileOptions::mixedPrecision.injectOverflow");
  overflowAt = std::move(steps);
  return absl::OkStatus();
}

absl::Status Session::emulateCompute(const std::string &opProfile) {
  if (absl::Status s = usable("emulateCompute"); !s.ok())
    return s;
  if (opProfile.empty())
    return cpu->setEmulatedCompute(nullptr);
  llvm::Expected<OpProfile> profile = parseOpProfile(opProfile, "op profile");
  if (!profile)
    return absl::InvalidArgumentError(llvm::toString(profile.takeError()));
  return cpu->setEmulatedCompute(
      std::make_shared<const OpProfile>(*std::move(profile)));
}

absl::StatusOr<std::vector<double>>
Session::trainSteps(const char *call, int64_t steps,
                    const RunOptions &options) {
  if (absl::Status s = usable(call); !s.ok())
    return s;
  if (!program.training() || !lrIndex || !lossIndex)
    return absl::FailedPreconditionError(
        absl::StrCat("Session::", call,
                     ": the program was not compiled for training "
                     "(CompileOptions::train)"));
  if (steps < 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "Session::", call, ": steps must be at least 1, not ", steps));
  absl::StatusOr<runtime::LrSchedule::Kind> kind =
      runtime::LrSchedule::parse(rates.schedule);
  if (!kind.ok())
    return kind.status();
  runtime::LrSchedule schedule{
      *kind, rates.lr, rates.warmupSteps,
      rates.totalSteps ? rates.totalSteps : step + steps, rates.minLr};
  // Each step's rate is an input of its own iteration.
  std::vector<double> rate;
  std::vector<runtime::Input> perStep;
  for (int64_t i = 0; i < steps; ++i) {
    rate.push_back(schedule.at(step + i));
    runtime::HostTensor lr =
        runtime::HostTensor::zeros({}, runtime::CommType::F32);
    lr.as<float>()[0] = static_cast<float>(rate.back());
    perStep.push_back(runtime::Input::own(std::move(lr)));
  }
  inputs[*lrIndex] = perStep.back();
  // Overflows forced by a test: the backward seed times infinity.
  std::vector<runtime::Input> injected;
  for (int64_t i = 0; injectIndex && i < steps; ++i) {
    runtime::HostTensor k =
        runtime::HostTensor::zeros({}, runtime::CommType::F32);
    k.as<float>()[0] = overflowAt.count(step + i)
                           ? std::numeric_limits<float>::infinity()
                           : 1.0f;
    injected.push_back(runtime::Input::own(std::move(k)));
  }
  if (injectIndex)
    inputs[*injectIndex] = injected.back();
  RunOptions run = options;
  run.iterations = steps;
  // A step whose loss or gradient norm is not finite is not applied, nor
  // is any step of its run: the parameters stay those before it, and the
  // caller gets the error. Under in-place updates they are applied
  // already; the session then waits for a checkpoint (CpuSession::usable).
  int64_t checked = 0;
  std::string fate =
      program.inPlaceUpdates()
          ? "; the parameters were updated in place: load a checkpoint to go "
            "on"
      : steps > 1 ? absl::StrCat("; the run's steps ", step, "-",
                                 step + steps - 1, " were not applied")
                  : "; the step was not applied";
  Accept finite = [&](const std::vector<runtime::HostTensor> &results) {
    int64_t at = step + checked++;
    // A step loss scaling skipped stored nothing: its overflow is handled.
    if (skippedIndex && results.at(*skippedIndex).get(0) != 0)
      return absl::OkStatus();
    std::string where = steps > 1 ? absl::StrCat("step ", at, ": ") : "";
    double loss = results.at(*lossIndex).get(0);
    if (!std::isfinite(loss))
      return absl::InvalidArgumentError(
          absl::StrCat(where, "the loss is ", loss, fate,
                       " (lower the rate or clip gradients)"));
    if (gradNormIndex)
      if (double norm = results.at(*gradNormIndex).get(0); !std::isfinite(norm))
        return absl::InvalidArgumentError(
            absl::StrCat(where, "the gradients' norm is ", norm, fate,
                         " (lower the rate or clip gradients)"));
    return absl::OkStatus();
  };
  std::vector<std::vector<runtime::HostTensor>> every;
  // A dataset's batches, one per step; a run that fails or is rejected
  // leaves the loader where it was, as it leaves the parameters.
  int64_t position = dataPositionNow();
  std::map<int64_t, std::vector<runtime::Input>> varying = drawBatches(steps);
  varying[*lrIndex] = std::move(perStep);
  if (injectIndex)
    varying[*injectIndex] = std::move(injected);
  if (absl::Status s = runOnce(call, run, finite, std::move(varying), &every);
      !s.ok()) {
    rewindData(position);
    return s;
  }
  std::vector<double> losses;
  last.steps.clear();
  double before = 0;
  for (int64_t i = 0; i < steps; ++i) {
    Report::Step &s = last.steps.emplace_back();
    s.step = step + i;
    s.loss = every[i].at(*lossIndex).get(0);
    s.lr = rate[i];
    if (gradNormIndex)
      s.gradNorm = every[i].at(*gradNormIndex).get(0);
    if (lossScaleIndex)
      s.lossScale = every[i].at(*lossScaleIndex).get(0);
    if (skippedIndex)
      s.skipped = every[i].at(*skippedIndex).get(0) != 0;
    if (i < static_cast<int64_t>(last.iterationDoneUs.size())) {
      s.endSeconds = last.iterationDoneUs[i] * 1e-6;
      s.seconds = s.endSeconds - before;
      before = s.endSeconds;
    }
    losses.push_back(s.loss);
    last.losses.push_back(s.loss);
  }
  last.lr = rate.back();
  last.gradNorm = last.steps.back().gradNorm;
  noteData();
  step += steps;
  last.step = step;
  return losses;
}

absl::StatusOr<runtime::HostTensor>
Session::fetch(const std::string &name) const {
  if (absl::Status s = usable("fetch"); !s.ok())
    return s;
  auto it = outputIndex.find(name);
  if (it == outputIndex.end())
    return absl::NotFoundError(
        absl::StrCat("Session::fetch: the program has no output '", name, "'"));
  if (it->second >= static_cast<int64_t>(outputs.size()))
    return absl::FailedPreconditionError(absl::StrCat(
        "Session::fetch: '", name, "' has no value yet; run first"));
  return outputs[it->second];
}

absl::Status Session::save(const std::string &path, bool sharded) {
  if (absl::Status s = usable("save"); !s.ok())
    return s;
  // Which tensors are optimizer state: a program without that state (a
  // forward pass) skips exactly those when it loads the checkpoint.
  std::map<std::string, std::string> meta = dataMetadata();
  std::vector<std::string> state;
  for (const Parameter &p : program.parameters())
    if (p.optimizerState)
      state.push_back(p.name);
  meta[kOptimizerStateKey] = absl::StrJoin(state, "\n");
  return runtime::saveCheckpoint(*cpu, path,
                                 sharded ? runtime::CheckpointFormat::Sharded
                                         : runtime::CheckpointFormat::Logical,
                                 step, meta);
}

absl::Status Session::load(const std::string &path) {
  if (absl::Status s = usable("load"); !s.ok())
    return s;
  absl::StatusOr<runtime::LoadedCheckpoint> ck = runtime::readCheckpoint(path);
  if (!ck.ok())
    return ck.status();
  // Every tensor must be a parameter of the program, or optimizer state the
  // checkpoint lists as such (a training checkpoint read by a forward
  // program): anything else means another model, which must not load
  // silently.
  std::set<std::string> params, state;
  for (const Parameter &p : program.parameters())
    params.insert(p.name);
  if (auto it = ck->metadata.find(kOptimizerStateKey); it != ck->metadata.end())
    for (llvm::StringRef name : llvm::split(it->second, '\n'))
      state.insert(name.str());
  std::vector<std::string> unexpected;
  for (const auto &[name, value] : ck->tensors)
    if (!params.count(name) && !state.count(name))
      unexpected.push_back("'" + name + "'");
  if (!unexpected.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", unexpected.size() == 1 ? "tensor " : "tensors ",
        absl::StrJoin(unexpected, ", "),
        unexpected.size() == 1 ? " matches" : " match",
        " no parameter of the program (a checkpoint of another model?)"));
  ck->metadata.erase(kOptimizerStateKey);
  absl::StatusOr<std::vector<std::string>> skipped =
      cpu->load(std::move(ck->tensors));
  if (!skipped.ok())
    return absl::Status(skipped.status().code(),
                        absl::StrCat(path, ": ", skipped.status().message()));
  last.skippedTensors = *std::move(skipped);
  step = ck->step;
  last.step = step;
  // The loader's entries only (a file's own, such as its checksums, are
  // the format's business).
  dataMeta.clear();
  for (auto &[key, value] : ck->metadata)
    if (llvm::StringRef(key).starts_with("data."))
      dataMeta[key] = value;
  resumeData();
  return absl::OkStatus();
}

absl::Status Session::loadParameters(const std::string &path) {
  if (absl::Status s = usable("loadParameters"); !s.ok())
    return s;
  absl::StatusOr<std::map<std::string, runtime::Input>> values =
      runtime::mapSafetensors(path);
  if (!values.ok())
    return values.status();
  absl::StatusOr<std::vector<std::string>> loaded =
      cpu->load(std::move(*values), runtime::CpuSession::LoadKind::Weights);
  if (!loaded.ok())
    return absl::Status(loaded.status().code(),
                        absl::StrCat(path, ": ", loaded.status().message()));
  return absl::OkStatus();
}

int Session::threadsPerDevice() const {
  return cpu ? cpu->threadsPerDevice() : 0; // 0 once closed
}

void Session::close() {
  closed = true;
  cpu.reset();
  outputs.clear();
}

} // namespace pc::api
