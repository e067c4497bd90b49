//===- Interpreter.cpp - Reference execution of pc programs ---------------===//

//
// The entry points: parameters, inputs, the logical run, the distributed run
// (one thread per rank, results assembled from the pieces) and the
// comparison. Evaluator.cpp runs the ops.
//
//===----------------------------------------------------------------------===//

#include "runtime/reference/Interpreter.h"
#include "dialect/ProgramAttrs.h"

#include "runtime/reference/Evaluator.h"

#include "dialect/ParamInit.h"

#include "absl/strings/str_cat.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cmath>
#include <random>
#include <thread>

using namespace mlir;

namespace pc::reference {

using namespace detail;

absl::StatusOr<Array> initialParam(ModuleOp module, llvm::StringRef name,
                                   uint64_t seed) {
  auto param = module.lookupSymbol<ParamOp>(name);
  if (!param)
    return absl::NotFoundError(absl::StrCat("no parameter @", name.str()));
  Array a = Array::zeros(shapeOf(param.getType()));
  a.data = initialValues(param, seed);
  return a;
}

std::optional<int64_t> idBound(BlockArgument arg) {
  std::optional<int64_t> bound;
  auto lower = [&](int64_t b) { bound = std::min(bound.value_or(b), b); };
  // Through ops that only move the ids (micro-batches are slices).
  SmallVector<Operation *> users;
  SmallVector<Value> work{arg};
  while (!work.empty())
    for (Operation *user : work.pop_back_val().getUsers()) {
      if (isa<ReshapeOp, SliceOp, TransposeOp, ToSbpOp, ConcatOp>(user))
        work.push_back(user->getResult(0));
      users.push_back(user);
    }
  for (Operation *user : users) {
    if (auto e = dyn_cast<EmbeddingOp>(user))
      lower(e.getTable().getType().getShape()[0]);
    if (auto c = dyn_cast<CrossEntropyOp>(user))
      lower(c.getLogits().getType().getShape().back());
    if (auto o = dyn_cast<OneHotOp>(user))
      lower(o.getType().getShape().back());
    if (auto g = dyn_cast<EmbeddingGradOp>(user))
      lower(g.getType().getShape()[0]);
  }
  return bound;
}

absl::StatusOr<std::vector<Array>>
randomInputs(ModuleOp module, llvm::StringRef graph, uint64_t seed) {
  func::FuncOp f = findGraph(module, graph);
  if (!f)
    return absl::NotFoundError(absl::StrCat("no graph @", graph.str()));
  std::mt19937_64 rng(seed);
  std::vector<Array> inputs;
  for (BlockArgument arg : f.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    Array a = Array::zeros(shapeOf(type));
    if (isa<FloatType>(type.getElementType())) {
      for (double &x : a.data)
        x = std::uniform_real_distribution<double>(-1, 1)(rng);
    } else {
      int64_t bound = idBound(arg).value_or(int64_t(1) << 20);
      for (double &x : a.data)
        x = std::uniform_int_distribution<int64_t>(0, bound - 1)(rng);
    }
    inputs.push_back(std::move(a));
  }
  return inputs;
}

absl::StatusOr<double> maxRelativeError(const std::vector<Array> &actual,
                                        const std::vector<Array> &expected) {
  if (actual.size() != expected.size())
    return absl::InvalidArgumentError(absl::StrCat(
        actual.size(), " results but ", expected.size(), " expected"));
  double worst = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i].shape != expected[i].shape)
      return absl::InvalidArgumentError(
          absl::StrCat("result ", i, " has another shape"));
    for (int64_t j = 0; j < expected[i].size(); ++j) {
      double e = expected[i].data[j], a = actual[i].data[j];
      double err = std::abs(a - e) / (1 + std::abs(e));
      if (std::isnan(err) || (std::isinf(e) != std::isinf(a)))
        err = std::isinf(e) && a == e ? 0 : HUGE_VAL;
      worst = std::max(worst, err);
    }
  }
  return worst;
}

absl::StatusOr<std::vector<Array>>
runLogical(ModuleOp module, llvm::StringRef graph,
           const std::vector<Array> &inputs, uint64_t seed,
           const std::map<std::string, Array> *params,
           std::map<std::string, Array> *updates) {
  func::FuncOp f = findGraph(module, graph);
  if (!f)
    return absl::NotFoundError(absl::StrCat("no graph @", graph.str()));
  if (f.getNumArguments() != inputs.size())
    return absl::InvalidArgumentError(
        absl::StrCat("@", graph.str(), " takes ", f.getNumArguments(),
                     " inputs, not ", inputs.size()));
  Evaluator evaluator(module, seed, /*rank=*/0, nullptr, params);
  evaluator.collectUpdates(updates);
  return evaluator.run(f, inputs);
}

absl::StatusOr<std::vector<Array>>
runDistributed(ModuleOp module, llvm::StringRef graph,
               const std::vector<Array> &inputs, uint64_t seed,
               Traffic *traffic) {
  MeshCache meshes(module);
  struct Job {
    func::FuncOp program;
    int64_t rank;
    std::vector<Array> args;
    absl::StatusOr<std::vector<Array>> results = std::vector<Array>{};
  };
  std::vector<Job> jobs;
  for (auto f : module.getOps<func::FuncOp>()) {
    StringAttr g = attrs::getGraph(f);
    if (!g || g.getValue() != graph)
      continue;
    for (int64_t rank : attrs::getRanks(f)) {
      Job job{f, rank, {}};
      for (BlockArgument arg : f.getArguments()) {
        int64_t index = *attrs::getArgIndex(f, arg.getArgNumber());
        Type logical = attrs::getArgLogicalType(f, arg.getArgNumber());
        if (index >= static_cast<int64_t>(inputs.size()))
          return absl::InvalidArgumentError("too few inputs");
        SbpAttr sbp = getSbp(logical);
        MeshOp mesh = meshes.lookup(sbp);
        std::vector<int64_t> c = delinearize(
            mesh.getShape(), meshes.positionOf(sbp.getMesh(), rank));
        job.args.push_back(pieceOf(inputs[index], sbp, mesh.getShape(), c));
      }
      jobs.push_back(std::move(job));
    }
  }
  if (jobs.empty())
    return absl::NotFoundError(
        absl::StrCat("no per-device programs of @", graph.str()));

  World world;
  std::vector<std::thread> threads;
  for (Job &job : jobs)
    threads.emplace_back([&, j = &job] {
      j->results =
          Evaluator(module, seed, j->rank, &world).run(j->program, j->args);
      if (!j->results.ok())
        world.abort();
    });
  for (std::thread &t : threads)
    t.join();
  for (Job &job : jobs)
    if (!job.results.ok() && !absl::IsAborted(job.results.status()))
      return job.results.status();
  for (Job &job : jobs)
    if (!job.results.ok())
      return job.results.status();

  // Assemble each logical result from the mesh positions holding it.
  std::map<int64_t, std::pair<Type, std::map<int64_t, Array>>> pieces;
  for (Job &job : jobs)
    for (auto [i, value] : llvm::enumerate(*job.results)) {
      int64_t index = *attrs::getResultIndex(job.program, i);
      Type logical = attrs::getResultLogicalType(job.program, i);
      pieces[index].first = logical;
      pieces[index].second[job.rank] = value;
    }
  std::vector<Array> out;
  for (auto &[index, entry] : pieces) {
    auto &[logical, byRank] = entry;
    SbpAttr sbp = getSbp(logical);
    MeshOp mesh = meshes.lookup(sbp);
    ArrayRef<int64_t> meshShape = mesh.getShape();
    int64_t n = mesh.getNumDevices();
    std::vector<Array> at(n);
    for (int64_t p = 0; p < n; ++p)
      at[p] = byRank.at(mesh.getRank(p));
    at = reducePartials(std::move(at), meshShape, sbp.getEntries(), combine);
    Array whole = Array::zeros(shapeOf(logical));
    for (int64_t p = 0; p < n; ++p)
      place(whole, at[p],
            localBox(whole.shape, meshShape, sbp.getEntries(),
                     delinearize(meshShape, p))
                .offsets);
    out.push_back(std::move(whole));
  }
  if (traffic)
    *traffic = world.traffic;
  return out;
}

absl::StatusOr<CheckResult>
checkCompiled(MLIRContext &context, llvm::StringRef source,
              llvm::StringRef graph, llvm::StringRef pipeline, uint64_t seed) {
  OwningOpRef<ModuleOp> logical = parseSourceString<ModuleOp>(source, &context);
  OwningOpRef<ModuleOp> compiled =
      parseSourceString<ModuleOp>(source, &context);
  if (!logical || !compiled)
    return absl::InvalidArgumentError("the model does not parse");
  absl::StatusOr<std::vector<Array>> inputs =
      randomInputs(*logical, graph, seed);
  if (!inputs.ok())
    return inputs.status();
  absl::StatusOr<std::vector<Array>> expected =
      runLogical(*logical, graph, *inputs, seed);
  if (!expected.ok())
    return expected.status();
  PassManager pm = PassManager::on<ModuleOp>(&context);
  if (failed(parsePassPipeline(pipeline, pm)))
    return absl::InvalidArgumentError(
        absl::StrCat("bad pipeline '", pipeline.str(), "'"));
  if (failed(pm.run(*compiled)))
    return absl::InvalidArgumentError("the pipeline failed");
  CheckResult result;
  absl::StatusOr<std::vector<Array>> actual =
      runDistributed(*compiled, graph, *inputs, seed, &result.traffic);
  if (!actual.ok())
    return actual.status();
  absl::StatusOr<double> error = maxRelativeError(*actual, *expected);
  if (!error.ok())
    return error.status();
  result.maxRelativeError = *error;
  return result;
}

} // namespace pc::reference
