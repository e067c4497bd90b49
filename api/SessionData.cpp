//===- SessionData.cpp - Training and evaluating on a dataset -------------===//
//
// Session::setData binds a dataset's loader to the program's token and
// label inputs; each training step then draws its batch (a varying input
// of the run, read rank by rank: each rank reads its own rows). evaluate()
// runs the graph's forward pass (Program::canEvaluate) on the validation
// split's first batches. The loader's position travels in checkpoints.
//
//===----------------------------------------------------------------------===//

#include "api/Program.h"

#include "runtime/data/Loader.h"
#include "runtime/exec/CpuExecutor.h"
#include "runtime/exec/Input.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace pc::api {

struct Session::Data {
  runtime::data::Dataset dataset;
  std::unique_ptr<runtime::data::Loader> train;
  int64_t inputs = 0, labels = 0; // input indices
  int64_t batch = 0, sequence = 0;
  runtime::data::LoaderOptions validation;
};

namespace {
bool isInteger(runtime::CommType t) {
  return t == runtime::CommType::I32 || t == runtime::CommType::I64;
}

// Checkpoint metadata keys.
constexpr const char *kPosition = "data.position";
constexpr const char *kSeed = "data.seed";
constexpr const char *kSamples = "data.samples";
} // namespace

absl::Status Session::setData(const DataOptions &options) {
  if (absl::Status s = usable("setData"); !s.ok())
    return s;
  if (!program.training() || !lrIndex)
    return absl::FailedPreconditionError(
        "Session::setData: the program was not compiled for training");
  // The token and label inputs: named, or the first two integer inputs.
  auto find = [&](const std::string &name,
                  int64_t skip) -> absl::StatusOr<int64_t> {
    if (!name.empty()) {
      auto it = inputIndex.find(name);
      if (it == inputIndex.end() || it->second == lrIndex)
        return absl::NotFoundError(absl::StrCat(
            "Session::setData: the program has no input '", name, "'"));
      return it->second;
    }
    for (auto &[index, port] : inputPorts)
      if (index != skip && index != lrIndex && isInteger(port.type))
        return index;
    return absl::NotFoundError(
        "Session::setData: the program has no integer input for the "
        "dataset's token ids and labels");
  };
  absl::StatusOr<int64_t> ids = find(options.inputs, -1);
  if (!ids.ok())
    return ids.status();
  absl::StatusOr<int64_t> labels = find(options.labels, *ids);
  if (!labels.ok())
    return labels.status();
  const Port &in = inputPorts.at(*ids), &out = inputPorts.at(*labels);
  if (in.shape.size() != 2 || out.shape != in.shape)
    return absl::InvalidArgumentError(absl::StrCat(
        "Session::setData: the token input '", in.name, "' and the labels '",
        out.name,
        "' must both be [batch, sequence] (a dataset's windows), not [",
        absl::StrJoin(in.shape, ", "), "] and [",
        absl::StrJoin(out.shape, ", "), "]"));
  if (!isInteger(in.type) || !isInteger(out.type))
    return absl::InvalidArgumentError(absl::StrCat("Session::setData: '",
                                                   in.name, "' and '", out.name,
                                                   "' must take integer ids"));
  absl::StatusOr<runtime::data::DatasetSpec> spec =
      runtime::data::DatasetSpec::parse(options.spec);
  if (!spec.ok())
    return spec.status();
  absl::StatusOr<runtime::data::Dataset> dataset =
      runtime::data::openDataset(*spec, in.shape[1]);
  if (!dataset.ok())
    return dataset.status();
  auto d = std::make_shared<Data>();
  d->dataset = *std::move(dataset);
  d->inputs = *ids;
  d->labels = *labels;
  d->batch = in.shape[0];
  d->sequence = in.shape[1];
  runtime::data::LoaderOptions o;
  o.batch = d->batch;
  o.seed = options.seed;
  o.inputType = in.type;
  o.labelType = out.type;
  // Ids index the smallest table either input meets; text's bytes need
  // 256, whatever the model says, so a smaller one fails as ids are read.
  o.vocabulary = std::min(in.idBound.value_or(int64_t(1) << 40),
                          out.idBound.value_or(int64_t(1) << 40));
  o.prefetch = options.prefetch;
  // The prefetcher reads ahead only the rows this process's ranks read of
  // the tokens or the labels (under mpirun, its share of a data-parallel
  // batch; with pipeline stages, the labels may be another process's).
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (int64_t index : {*ids, *labels}) {
    absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> read =
        cpu->rowsRead(program.graph(), index);
    if (!read.ok())
      return read.status();
    rows.insert(rows.end(), read->begin(), read->end());
  }
  o.wanted = [rows = std::move(rows)](int64_t row) {
    return llvm::any_of(rows, [&](const std::pair<int64_t, int64_t> &r) {
      return r.first <= row && row < r.second;
    });
  };
  d->validation = o;
  d->validation.prefetch = 0;
  d->train =
      std::make_unique<runtime::data::Loader>(*d->dataset.train, std::move(o));
  data = std::move(d);
  // The batches feed these inputs from now on.
  fed.insert(data->inputs);
  fed.insert(data->labels);
  last.tokensPerStep = data->batch * data->sequence;
  resumeData();
  return absl::OkStatus();
}

void Session::resumeData() {
  if (!data || dataMeta.empty())
    return;
  // Only on the same data, in the same order: otherwise the position
  // names other batches, and training starts the new data afresh.
  auto get = [&](const char *key) {
    return dataMeta.count(key) ? dataMeta.at(key) : "";
  };
  if (get(kSamples) == std::to_string(data->dataset.train->samples()) &&
      get(kSeed) == std::to_string(data->train->options().seed)) {
    int64_t position = 0;
    if (llvm::StringRef(get(kPosition)).getAsInteger(10, position) == false)
      data->train->seek(position);
  }
  last.dataPosition = data->train->position();
  last.dataEpoch = data->train->epochOf(last.dataPosition);
}

namespace {
/// The next `count` batches of `loader`, as the varying inputs of a run's
/// iterations: token ids into input `inputs`, labels into `labels`.
std::map<int64_t, std::vector<runtime::Input>>
nextBatches(runtime::data::Loader &loader, int64_t count, int64_t inputs,
            int64_t labels) {
  std::map<int64_t, std::vector<runtime::Input>> varying;
  for (int64_t i = 0; i < count; ++i) {
    runtime::data::Batch b = loader.next();
    varying[inputs].push_back(std::move(b.inputs));
    varying[labels].push_back(std::move(b.labels));
  }
  return varying;
}
} // namespace

std::map<int64_t, std::vector<runtime::Input>>
Session::drawBatches(int64_t steps) {
  if (!data)
    return {};
  return nextBatches(*data->train, steps, data->inputs, data->labels);
}

int64_t Session::dataPositionNow() const {
  return data ? data->train->position() : 0;
}

void Session::rewindData(int64_t position) {
  if (data)
    data->train->seek(position);
}

void Session::noteData() {
  if (!data)
    return;
  last.dataPosition = data->train->position();
  last.dataEpoch = data->train->epochOf(last.dataPosition);
  last.prefetchSeconds = data->train->prefetchSeconds();
}

std::map<std::string, std::string> Session::dataMetadata() const {
  if (!data)
    return dataMeta; // what a loaded checkpoint had, kept
  return {{kPosition, std::to_string(data->train->position())},
          {kSeed, std::to_string(data->train->options().seed)},
          {kSamples, std::to_string(data->dataset.train->samples())}};
}

absl::StatusOr<double> Session::evaluate(int64_t batches) {
  if (absl::Status s = usable("evaluate"); !s.ok())
    return s;
  if (!data)
    return absl::FailedPreconditionError(
        "Session::evaluate: no dataset (setData)");
  if (!data->dataset.validation)
    return absl::FailedPreconditionError(
        "Session::evaluate: the dataset has no validation split (give "
        "validation files or validation_fraction)");
  if (!program.canEvaluate())
    return absl::FailedPreconditionError(
        "Session::evaluate: the program has no forward pass to evaluate "
        "with (it keeps one when compiled for training from a logical "
        "graph)");
  const runtime::data::Split &split = *data->dataset.validation;
  if (batches < 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "Session::evaluate: batches must be at least 1, not ", batches));
  if (split.samples() < data->batch)
    return absl::InvalidArgumentError(
        absl::StrCat("the validation split has ", split.samples(),
                     " samples, fewer than one batch of ", data->batch));
  // The same batches every time, spread over the split, each sample at
  // most once.
  batches = std::min(batches, split.samples() / data->batch);
  runtime::data::Loader loader(split, data->validation);
  std::map<int64_t, std::vector<runtime::Input>> varying =
      nextBatches(loader, batches, data->inputs, data->labels);
  // The forward pass's inputs are the step's without the rate.
  std::vector<runtime::Input> in;
  for (auto &[index, port] : inputPorts)
    if (index != lrIndex)
      in.push_back(varying.count(index) ? varying[index].front()
                                        : inputs[index]);
  runtime::CpuRunOptions o;
  o.iterations = batches;
  o.step = step;
  o.resultsOnEveryProcess = true;
  o.everyIteration = true;
  o.varying = std::move(varying);
  absl::StatusOr<runtime::CpuRun> run = cpu->run(program.evalGraph, in, o);
  if (!run.ok())
    return absl::Status(run.status().code(),
                        absl::StrCat("evaluating: ", run.status().message()));
  double sum = 0;
  for (const std::vector<runtime::HostTensor> &r : run->iterationResults)
    sum += r.at(*program.evalLossIndex).get(0);
  double mean = sum / static_cast<double>(batches);
  last.evals.push_back({step, mean});
  return mean;
}

namespace {
/// The next id from the logits of one position.
int64_t sample(const float *logits, int64_t vocabulary, double temperature,
               int64_t topK, std::mt19937_64 &rng) {
  if (temperature <= 0)
    return std::max_element(logits, logits + vocabulary) - logits;
  std::vector<int64_t> order(vocabulary);
  std::iota(order.begin(), order.end(), 0);
  int64_t k = topK > 0 ? std::min(topK, vocabulary) : vocabulary;
  std::partial_sort(
      order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
      });
  double top = logits[order[0]];
  std::vector<double> weights(k);
  for (int64_t i = 0; i < k; ++i)
    weights[i] = std::exp((logits[order[i]] - top) / temperature);
  std::discrete_distribution<int64_t> pick(weights.begin(), weights.end());
  return order[pick(rng)];
}
} // namespace

absl::StatusOr<std::vector<int64_t>>
Session::generate(const std::vector<int64_t> &prompt, int64_t tokens,
                  double temperature, int64_t topK, uint64_t seed) {
  if (absl::Status s = usable("generate"); !s.ok())
    return s;
  if (!program.canGenerate())
    return absl::FailedPreconditionError(
        "Session::generate: the program has no logits to sample from (it "
        "needs a logical graph with one cross-entropy, and every pipeline "
        "stage must keep work once the loss is gone)");
  if (prompt.empty())
    return absl::InvalidArgumentError(
        "Session::generate: the prompt needs at least one id");
  if (tokens < 0 || !(temperature >= 0) || topK < 0)
    return absl::InvalidArgumentError(
        "Session::generate: tokens, temperature and top_k must not be "
        "negative");
  // The ids input: the dataset's (by name: the logits graph keeps only
  // the inputs its logits read, so indices may differ), else the first
  // integer [batch, seq] one.
  const std::vector<Port> &ports = program.logitsPorts;
  const Port *ids = nullptr;
  for (const Port &p : ports)
    if (isInteger(p.type) && p.shape.size() == 2 &&
        (!ids || (data && p.name == inputPorts.at(data->inputs).name)))
      ids = &p;
  if (!ids)
    return absl::FailedPreconditionError(
        "Session::generate: the graph has no [batch, sequence] integer input "
        "for the context");
  int64_t batch = ids->shape[0], seq = ids->shape[1];
  int64_t vocabulary =
      inputPorts.count(ids->index) && inputPorts.at(ids->index).idBound
          ? *inputPorts.at(ids->index).idBound
          : std::numeric_limits<int64_t>::max();
  for (int64_t id : prompt)
    if (id < 0 || id >= vocabulary)
      return absl::InvalidArgumentError(
          absl::StrCat("Session::generate: the prompt's id ", id,
                       " is not below the model's vocabulary of ", vocabulary));
  std::vector<runtime::Input> in;
  for (const Port &p : ports)
    in.push_back(
        runtime::Input::own(runtime::HostTensor::zeros(p.shape, p.type)));
  std::mt19937_64 rng(seed);
  std::vector<int64_t> context = prompt, out;
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t start = std::max<int64_t>(0, context.size() - seq);
    int64_t length = static_cast<int64_t>(context.size()) - start;
    runtime::HostTensor window =
        runtime::HostTensor::zeros(ids->shape, ids->type);
    for (int64_t r = 0; r < batch; ++r)
      for (int64_t c = 0; c < length; ++c)
        window.set(r * seq + c, static_cast<double>(context[start + c]));
    in[ids->index] = runtime::Input::own(std::move(window));
    runtime::CpuRunOptions o;
    o.step = step;
    o.resultsOnEveryProcess = true; // every process samples the same id
    absl::StatusOr<runtime::CpuRun> run = cpu->run(program.logitsGraph, in, o);
    if (!run.ok())
      return absl::Status(run.status().code(),
                          absl::StrCat("generating: ", run.status().message()));
    const runtime::HostTensor &logits = run->results.at(0);
    int64_t v = logits.shape.back();
    std::vector<float> row(v);
    for (int64_t j = 0; j < v; ++j)
      row[j] = static_cast<float>(logits.get((length - 1) * v + j));
    int64_t next =
        sample(row.data(), std::min(v, vocabulary), temperature, topK, rng);
    out.push_back(next);
    context.push_back(next);
  }
  return out;
}

} // namespace pc::api
