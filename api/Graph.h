//===- Graph.h - Building logical graphs in C++ -----------------*- C++ -*-===//
//
// The C++ graph-building API: meshes, SBP layouts, and a builder with typed
// values for every logical op, producing the pc MLIR module that pc-opt
// reads. Names follow OneFlow and PyTorch DTensor: a mesh is a placement,
// S(d) / B / P() are the SBP entries, toSbp() is the layout constraint.
//
//   pc::api::Graph g("mlp");
//   pc::api::Mesh m = g.mesh("m", {{"dp", 2}});
//   auto x = g.input("x", {8, 64}, DType::F32, {m, {S(0)}});
//   auto w = g.param("w", {64, 64}, DType::F32, Init::normal(0.02));
//   g.loss(g.reduceMean(g.relu(g.matmul(x, w)), {0, 1}));
//
// Misuse never aborts and throws nothing: the first error is kept in
// status(), naming the call ("Graph::matmul: ..."), and every later call
// returns an invalid Value.
//
//===----------------------------------------------------------------------===//

#ifndef PC_API_GRAPH_H
#define PC_API_GRAPH_H

#include "dialect/Sharding.h"

#include "absl/status/status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
class ModuleOp;
} // namespace mlir

namespace pc::api {

/// SBP entries: split along a dim, broadcast, partial (sum by default).
inline SbpEntry S(int64_t dim) { return SbpEntry::split(dim); }
inline const SbpEntry B = SbpEntry::broadcast();
inline SbpEntry P(ReduceKind kind = ReduceKind::Sum) {
  return SbpEntry::partial(kind);
}

enum class DType { F32, F16, BF16, I32, I64 };

/// The comparisons of Graph::compare.
enum class Compare { Eq, Ne, Lt, Le, Gt, Ge };

/// How a parameter is first filled.
struct Init {
  enum class Kind { Zeros, Ones, Constant, Normal, TruncatedNormal, Uniform };
  Kind kind = Kind::Zeros;
  double a = 0, b = 0;
  static Init zeros() { return {Kind::Zeros}; }
  static Init ones() { return {Kind::Ones}; }
  static Init constant(double v) { return {Kind::Constant, v}; }
  static Init normal(double std, double mean = 0) {
    return {Kind::Normal, mean, std};
  }
  static Init truncatedNormal(double std, double mean = 0) {
    return {Kind::TruncatedNormal, mean, std};
  }
  static Init uniform(double low, double high) {
    return {Kind::Uniform, low, high};
  }
};

class Graph;
namespace detail {
struct GraphState;
} // namespace detail

/// A device mesh of a graph: named axes and their sizes.
class Mesh {
public:
  Mesh() = default;
  const std::string &name() const { return meshName; }
  const std::vector<int64_t> &shape() const { return sizes; }
  int64_t size() const { return product(sizes); }

private:
  friend class Graph;
  /// The state of the graph that declared it: stable when the Graph moves.
  const detail::GraphState *owner = nullptr;
  std::string meshName;
  std::vector<int64_t> sizes;
};

/// A layout: one SBP entry per axis of a mesh.
struct Placement {
  Mesh mesh;
  std::vector<SbpEntry> sbp;
};

/// A value of a graph. Cheap to copy; invalid after a failed call.
class Value {
public:
  Value() = default;
  bool valid() const { return impl != nullptr; }
  const std::vector<int64_t> &shape() const { return dims; }
  DType dtype() const { return type; }
  /// The mlir::Value's opaque pointer (mlir::Value::getFromOpaquePointer).
  void *implPointer() const { return impl; }

private:
  friend class Graph;
  /// The state of its graph, not the Graph object: values stay valid when
  /// the Graph moves.
  const detail::GraphState *graph = nullptr;
  void *impl = nullptr; // the mlir::Value's opaque pointer
  std::vector<int64_t> dims;
  DType type = DType::F32;
};

class Graph {
public:
  /// A graph named `name` (the function name in the module).
  explicit Graph(std::string name = "main");
  ~Graph();
  /// A graph moves (a builder function may return one by value): its
  /// state lives behind a pointer, so its Values, Meshes and live scopes
  /// stay valid and follow it. A moved-from graph is empty: its status()
  /// is FailedPrecondition, its calls build nothing, and it may be
  /// assigned to.
  Graph(Graph &&other) noexcept;
  Graph &operator=(Graph &&other) noexcept;
  /// No copies: every Value and Mesh names the one graph it was built in,
  /// so a copy could not be built on with the values the caller holds, and
  /// the MLIR context would be shared by two graphs' modules.
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  /// Declares a mesh; its devices are ranks 0..N-1 (row-major).
  Mesh mesh(const std::string &name,
            const std::vector<std::pair<std::string, int64_t>> &axes);

  /// A graph input, fed at run time by name.
  Value input(const std::string &name, std::vector<int64_t> shape, DType dtype,
              std::optional<Placement> layout = std::nullopt);
  /// A persistent parameter and its read; `layout` is how it is stored.
  Value param(const std::string &name, std::vector<int64_t> shape, DType dtype,
              Init init, bool trainable = true,
              std::optional<Placement> layout = std::nullopt);
  /// A tensor filled with `value`.
  Value constant(double value, std::vector<int64_t> shape,
                 DType dtype = DType::F32);

  Value matmul(Value lhs, Value rhs, bool transposeLhs = false,
               bool transposeRhs = false);
  Value add(Value lhs, Value rhs);
  Value sub(Value lhs, Value rhs);
  Value mul(Value lhs, Value rhs);
  Value div(Value lhs, Value rhs);
  Value compare(Value lhs, Value rhs, Compare predicate);
  Value neg(Value x);
  Value exp(Value x);
  Value log(Value x);
  Value tanh(Value x);
  Value relu(Value x);
  Value sigmoid(Value x);
  Value sqrt(Value x);
  Value erf(Value x);
  Value gelu(Value x, bool approximate = false);
  Value softmax(Value x, int64_t axis = -1);
  Value logSoftmax(Value x, int64_t axis = -1);
  Value layerNorm(Value x, Value gamma, Value beta, int64_t axis = -1,
                  double epsilon = 1e-5);
  Value rmsNorm(Value x, Value gamma, int64_t axis = -1, double epsilon = 1e-6);
  Value reduceSum(Value x, std::vector<int64_t> axes, bool keepdim = false);
  Value reduceMean(Value x, std::vector<int64_t> axes, bool keepdim = false);
  Value reduceMax(Value x, std::vector<int64_t> axes, bool keepdim = false);
  Value reshape(Value x, std::vector<int64_t> shape);
  Value transpose(Value x, std::vector<int64_t> perm);
  Value broadcastTo(Value x, std::vector<int64_t> shape);
  Value slice(Value x, std::vector<int64_t> start, std::vector<int64_t> limit);
  Value concat(const std::vector<Value> &xs, int64_t axis);
  Value embedding(Value ids, Value table);
  Value causalMask(Value x);
  Value crossEntropy(Value logits, Value labels);
  Value oneHot(Value labels, int64_t classes, DType dtype = DType::F32);
  Value cast(Value x, DType dtype);

  /// The value in `layout` (a constraint that propagation keeps).
  Value toSbp(Value x, const Placement &layout);
  /// The same on the mesh of the current scope (see on()).
  Value toSbp(Value x, std::vector<SbpEntry> sbp);

  /// A named output.
  void output(const std::string &name, Value v);
  /// The scalar loss that training differentiates (an output named "loss").
  void loss(Value v);

  /// While it lives, inputs and parameters built without a layout are
  /// replicated on `mesh`, and toSbp(x, entries) uses it: a placement
  /// scope, as for pipeline stages.
  class Scope {
  public:
    ~Scope();
    Scope(Scope &&other) noexcept;
    Scope(const Scope &) = delete;

  private:
    friend class Graph;
    Scope(detail::GraphState *g, std::optional<Mesh> previous)
        : graph(g), previous(std::move(previous)) {}
    detail::GraphState *graph; // the state: the Graph may move meanwhile
    std::optional<Mesh> previous;
  };
  [[nodiscard]] Scope on(const Mesh &mesh);

  /// While it lives, every op built belongs to pipeline stage `stage`
  /// (pc.stage): the explicit form of the compiler's balanced cut. Stages
  /// count from 0, and a stage may use values of its own and earlier
  /// stages; compile with CompileOptions::microbatches (and ::schedule).
  /// Model stage c runs on device stage c / virtualStages... see
  /// docs/pipeline.md.
  class StageScope {
  public:
    ~StageScope();
    StageScope(StageScope &&other) noexcept;
    StageScope(const StageScope &) = delete;

  private:
    friend class Graph;
    StageScope(detail::GraphState *g, std::optional<int64_t> previous)
        : graph(g), previous(previous) {}
    detail::GraphState *graph; // the state: the Graph may move meanwhile
    std::optional<int64_t> previous;
  };
  [[nodiscard]] StageScope stage(int64_t stage);

  /// OK, or the first misuse, naming the call.
  const absl::Status &status() const;
  /// The module: meshes, parameters and the graph function.
  mlir::ModuleOp module();
  /// The module as IR text for pc-opt.
  std::string str();
  const std::string &name() const;
  /// The context the module lives in, shared with compiled programs.
  std::shared_ptr<mlir::MLIRContext> context() const;

private:
  using State = detail::GraphState;
  Value fail(const std::string &call, const std::string &why);
  bool check(const std::string &call, std::initializer_list<Value> operands);
  /// Builds one op with `build` at the end of the graph, verifies it, and
  /// wraps its result (or records the verifier's error against `call`).
  template <typename Build>
  Value make(const std::string &call, std::initializer_list<Value> operands,
             Build build);
  Value wrap(void *opaqueValue);

  /// Everything, the name and the first error included: null only in a
  /// moved-from graph.
  std::unique_ptr<State> state;
};

} // namespace pc::api

#endif // PC_API_GRAPH_H
