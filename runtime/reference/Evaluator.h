//===- Evaluator.h - The interpreter's machinery ----------------*- C++ -*-===//
//
// Internal to the reference interpreter: the simulated machine (World), where
// devices meet for collectives and transfers, and the Evaluator, which runs
// one function on one device.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_REFERENCE_EVALUATOR_H
#define PC_RUNTIME_REFERENCE_EVALUATOR_H

#include "runtime/reference/Interpreter.h"

#include "boxing/MeshCache.h"
#include "dialect/PcOps.h"
#include "runtime/reference/Kernels.h"

#include "absl/status/statusor.h"

#include <condition_variable>
#include <map>
#include <mutex>

namespace pc::reference::detail {

Shape shapeOf(mlir::Type t);

/// `logical` as the piece a device at `coords` holds in `sbp`: its box, and
/// for partial entries the value on the first member (sum) or on all
/// (max, min, avg).
Array pieceOf(const Array &logical, SbpAttr sbp,
              llvm::ArrayRef<int64_t> meshShape,
              llvm::ArrayRef<int64_t> coords);

mlir::func::FuncOp findGraph(mlir::ModuleOp module, llvm::StringRef name);

/// The members of the simulated machine meet here for collectives. Every
/// member deposits its array, waits for the others, copies them all, and
/// leaves; a failed member aborts the world so that no one waits forever.
class World {
public:
  /// The arrays of all `size` members of group `key`, in group order.
  absl::StatusOr<std::vector<Array>> exchange(int64_t rank,
                                              const std::string &key,
                                              int64_t index, int64_t size,
                                              const Array &mine) {
    std::unique_lock<std::mutex> lock(mu);
    int64_t seq = sequence[{rank, key}]++;
    Slot &slot = slots[{key, seq}];
    slot.parts.resize(size);
    slot.parts[index] = &mine;
    ++slot.arrived;
    cv.notify_all();
    cv.wait(lock, [&] { return slot.arrived == size || aborted; });
    if (aborted)
      return absl::AbortedError("another device failed");
    std::vector<Array> all;
    for (const Array *p : slot.parts)
      all.push_back(*p);
    if (++slot.departed == size)
      slots.erase({key, seq});
    else
      // The others still read `mine`: wait until they have.
      cv.wait(lock, [&] {
        return aborted || !slots.count({key, seq}) ||
               slots[{key, seq}].departed == size;
      });
    cv.notify_all();
    return all;
  }

  /// Leaves `piece` (the box `box` of the logical tensor) for `dstRank`
  /// under the transfer `key`.
  void post(const std::string &key, int64_t dstRank, Box box, Array piece) {
    std::lock_guard<std::mutex> lock(mu);
    mail[{key, dstRank}].push_back({std::move(box), std::move(piece)});
    cv.notify_all();
  }

  /// Waits for `expected` pieces of the transfer `key` for `rank`.
  absl::StatusOr<std::vector<std::pair<Box, Array>>>
  collect(const std::string &key, int64_t rank, size_t expected) {
    std::unique_lock<std::mutex> lock(mu);
    auto &box = mail[{key, rank}];
    cv.wait(lock, [&] { return box.size() >= expected || aborted; });
    if (aborted)
      return absl::AbortedError("another device failed");
    std::vector<std::pair<Box, Array>> pieces = std::move(box);
    mail.erase({key, rank});
    return pieces;
  }

  void abort() {
    std::lock_guard<std::mutex> lock(mu);
    aborted = true;
    cv.notify_all();
  }

  void record(int64_t rank, const std::string &kind, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    traffic.bytesReceived[rank] += bytes;
    ++traffic.collectives[kind];
  }

  Traffic traffic;

private:
  struct Slot {
    std::vector<const Array *> parts;
    int64_t arrived = 0, departed = 0;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::pair<std::string, int64_t>, Slot> slots;
  std::map<std::pair<int64_t, std::string>, int64_t> sequence;
  std::map<std::pair<std::string, int64_t>, std::vector<std::pair<Box, Array>>>
      mail;
  bool aborted = false;
};

class Evaluator {
public:
  /// Runs on `rank` of `world`; a null world runs the logical program.
  /// `params` (by name) replace the initial values of those parameters.
  Evaluator(mlir::ModuleOp module, uint64_t seed, int64_t rank, World *world,
            const std::map<std::string, Array> *params = nullptr)
      : module(module), meshes(module), seed(seed), rank(rank), world(world),
        params(params) {}

  absl::StatusOr<std::vector<Array>> run(mlir::func::FuncOp f,
                                         const std::vector<Array> &args);
  /// Where pc.set_param values go (logical runs).
  void collectUpdates(std::map<std::string, Array> *into) { updates = into; }

private:
  bool distributed() const { return world != nullptr; }
  absl::Status eval(mlir::Operation *op);
  absl::Status evalStep(mlir::Operation *op);
  absl::Status evalRedistribute(RedistributeOp op);
  absl::Status evalTransfer(mlir::Operation *op, mlir::TypeAttr from,
                            mlir::TypeAttr to, mlir::Value input,
                            mlir::Value result);
  llvm::SmallVector<int64_t, 4> coordsOn(mlir::FlatSymbolRefAttr mesh);
  /// The group over `axes` of `mesh` this rank is in: global ranks in group
  /// order, and this rank's index.
  std::pair<std::vector<int64_t>, int64_t> group(mlir::FlatSymbolRefAttr mesh,
                                                 llvm::ArrayRef<int64_t> axes);
  absl::StatusOr<std::vector<Array>> exchange(mlir::FlatSymbolRefAttr mesh,
                                              llvm::ArrayRef<int64_t> axes,
                                              const Array &mine,
                                              int64_t &index);
  /// Extents of the members along a dim whose group whole is `whole`.
  std::vector<int64_t> extents(mlir::FlatSymbolRefAttr mesh,
                               llvm::ArrayRef<int64_t> axes, int64_t whole);
  Array &valueOf(mlir::Value v) { return env[v]; }

  mlir::ModuleOp module;
  MeshCache meshes;
  uint64_t seed;
  int64_t rank;
  World *world;
  const std::map<std::string, Array> *params;
  std::map<std::string, Array> *updates = nullptr;
  llvm::DenseMap<mlir::Value, Array> env;
  std::vector<Array> results;
  std::map<std::string, int64_t> transferCount;
};

} // namespace pc::reference::detail

#endif // PC_RUNTIME_REFERENCE_EVALUATOR_H
