//===- BoxingPlanner.cpp - Cheapest collective sequences between SBPs -----===//

#include "boxing/BoxingPlanner.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <queue>
#include <tuple>

namespace pc::boxing {

int64_t Plan::numCollectives() const {
  return std::count_if(steps.begin(), steps.end(),
                       [](const Step &s) { return isCollective(s.kind); });
}

namespace {

/// A layout as a key: a byte per mesh axis, so exact (and decodable) for
/// the at most 8 axes and split dims up to 15 that the dialect's verifiers
/// allow.
uint64_t encode(std::span<const SbpEntry> sbp) {
  assert(sbp.size() <= 8);
  uint64_t key = 0;
  for (SbpEntry e : sbp)
    key = (key << 8) | (uint64_t(e.kind) << 6) | (uint64_t(e.reduce) << 4) |
          uint64_t(e.dim & 0xF);
  return key;
}

/// The inverse of encode, into `sbp` (of the mesh's rank).
void decode(uint64_t key, std::vector<SbpEntry> &sbp) {
  for (size_t a = sbp.size(); a-- > 0; key >>= 8) {
    SbpEntry &e = sbp[a];
    e.kind = static_cast<SbpEntry::Kind>((key >> 6) & 0x3);
    e.reduce = static_cast<ReduceKind>((key >> 4) & 0x3);
    e.dim = static_cast<int32_t>(key & 0xF);
  }
}

std::string cacheKey(std::span<const int64_t> shape, int64_t elemBytes,
                     std::span<const int64_t> meshShape,
                     std::span<const SbpEntry> src,
                     std::span<const SbpEntry> dst) {
  std::string key;
  auto put = [&](int64_t v) {
    key.append(reinterpret_cast<const char *>(&v), sizeof(v));
  };
  put(shape.size());
  for (int64_t d : shape)
    put(d);
  put(elemBytes);
  put(meshShape.size());
  for (int64_t d : meshShape)
    put(d);
  put(encode(src));
  put(encode(dst));
  return key;
}

/// Every way of replacing the partial entries of `sbp` by B or a split, in a
/// fixed order; `sbp` itself when it has none.
std::vector<std::vector<SbpEntry>>
withoutPartials(std::span<const SbpEntry> sbp, size_t rank) {
  std::vector<std::vector<SbpEntry>> out = {{sbp.begin(), sbp.end()}};
  for (size_t a = 0; a < sbp.size(); ++a) {
    if (!sbp[a].isPartial())
      continue;
    std::vector<std::vector<SbpEntry>> next;
    for (const auto &c : out) {
      for (size_t d = 0; d <= rank; ++d) {
        auto v = c;
        v[a] = d == rank ? SbpEntry::broadcast() : SbpEntry::split(d);
        next.push_back(std::move(v));
      }
    }
    out = std::move(next);
  }
  return out;
}

/// The plan under `key`, made by `make` on the first request.
template <typename Make>
const Plan &cached(std::unordered_map<std::string, Plan> &cache,
                   std::string key, Make make) {
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(std::move(key), make()).first;
  return it->second;
}

struct Node {
  double cost;
  int64_t steps;
  uint64_t key;
  bool operator>(const Node &o) const {
    return std::tie(cost, steps, key) > std::tie(o.cost, o.steps, o.key);
  }
};

} // namespace

Plan Planner::collectives(std::span<const int64_t> shape, int64_t elemBytes,
                          std::span<const int64_t> meshShape,
                          std::span<const SbpEntry> src,
                          std::span<const SbpEntry> dst) {
  assert(!checkNdSbp(shape, meshShape, src) &&
         !checkNdSbp(shape, meshShape, dst));
  Plan result;
  if (std::equal(src.begin(), src.end(), dst.begin(), dst.end()))
    return result;

  // The entries a path may use: B, a split of every dim, and the partial
  // kinds of the endpoints.
  std::vector<SbpEntry> alphabet = {SbpEntry::broadcast()};
  for (size_t d = 0; d < shape.size(); ++d)
    alphabet.push_back(SbpEntry::split(d));
  for (auto sbp : {src, dst})
    for (SbpEntry e : sbp)
      if (e.isPartial() &&
          std::find(alphabet.begin(), alphabet.end(), e) == alphabet.end())
        alphabet.push_back(e);

  // A state is its key (encode); a visit records the step that reached it
  // from `prev` by its axes and new entry, so that the search itself
  // allocates nothing per edge (it runs for every conversion that
  // propagation weighs). The plan's steps are rebuilt once, at the end.
  struct Visit {
    double cost;
    int64_t steps;
    uint64_t prev;
    StepKind kind;
    uint8_t first, last; // the step's axes
    SbpEntry to;
  };
  std::unordered_map<uint64_t, Visit> visits;
  std::priority_queue<Node, std::vector<Node>, std::greater<Node>> queue;
  uint64_t srcKey = encode(src), dstKey = encode(dst);
  visits[srcKey] = {0, 0, srcKey, StepKind::LocalSlice, 0, 0, {}};
  queue.push({0, 0, srcKey});
  size_t n = meshShape.size();

  Step trial; // reused, so that its vectors keep their capacity
  std::vector<SbpEntry> state(src.begin(), src.end());
  while (!queue.empty()) {
    Node node = queue.top();
    queue.pop();
    const Visit &here = visits.at(node.key);
    if (node.cost > here.cost ||
        (node.cost == here.cost && node.steps > here.steps))
      continue;
    if (node.key == dstKey)
      break;
    decode(node.key, state);
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = a; b < n && state[b] == state[a]; ++b) {
        for (SbpEntry to : alphabet) {
          std::optional<StepKind> kind = transitionKind(state[a], to);
          if (!kind || !keepsHierarchy(state, b, state[a], to))
            continue;
          trial.kind = *kind;
          trial.axes.clear();
          for (size_t x = a; x <= b; ++x)
            trial.axes.push_back(x);
          trial.before.assign(state.begin(), state.end());
          trial.after.assign(state.begin(), state.end());
          for (size_t x = a; x <= b; ++x)
            trial.after[x] = to;
          double cost = node.cost + planningCost(trial, shape, elemBytes,
                                                 meshShape, params);
          uint64_t key = encode(trial.after);
          auto [it, fresh] = visits.try_emplace(key);
          if (!fresh && std::tie(it->second.cost, it->second.steps) <=
                            std::make_tuple(cost, node.steps + 1))
            continue;
          it->second = {cost,  node.steps + 1,          node.key,
                        *kind, static_cast<uint8_t>(a), static_cast<uint8_t>(b),
                        to};
          queue.push({cost, node.steps + 1, key});
        }
      }
    }
  }

  auto it = visits.find(dstKey);
  assert(it != visits.end() && "every nd-SBP reaches every other through B");
  result.cost = it->second.cost;
  for (uint64_t key = dstKey; key != srcKey;) {
    const Visit &v = visits.at(key);
    Step step;
    step.kind = v.kind;
    for (int64_t x = v.first; x <= v.last; ++x)
      step.axes.push_back(x);
    decode(v.prev, state);
    step.before = state;
    step.after = state;
    for (int64_t x = v.first; x <= v.last; ++x)
      step.after[x] = v.to;
    result.steps.push_back(std::move(step));
    key = v.prev;
  }
  std::reverse(result.steps.begin(), result.steps.end());
  return result;
}

const Plan &Planner::collectivePlan(std::span<const int64_t> shape,
                                    int64_t elemBytes,
                                    std::span<const int64_t> meshShape,
                                    std::span<const SbpEntry> src,
                                    std::span<const SbpEntry> dst) {
  return cached(
      collectiveCache, cacheKey(shape, elemBytes, meshShape, src, dst),
      [&] { return collectives(shape, elemBytes, meshShape, src, dst); });
}

namespace {

/// True when `received` turns into `dst` without the impossible S -> P(avg)
/// (an average of zero-padded pieces is not the value).
bool reachesByLocalSteps(std::span<const SbpEntry> received,
                         std::span<const SbpEntry> dst) {
  for (size_t a = 0; a < dst.size(); ++a)
    if (dst[a].isPartial() && dst[a].reduce == ReduceKind::Avg &&
        received[a].isSplit())
      return false;
  return true;
}

} // namespace

Plan Planner::search(std::span<const int64_t> shape, int64_t elemBytes,
                     std::span<const int64_t> meshShape,
                     std::span<const SbpEntry> src,
                     std::span<const SbpEntry> dst) {
  Plan best = collectivePlan(shape, elemBytes, meshShape, src, dst);
  if (!params.redistribute || product(meshShape) == 1)
    return best;
  // The direct candidates: collectives remove the source's partial entries
  // (a reduce-scatter reduces them on the way), one redistribution moves
  // what each position lacks, local steps make the target's partials. A
  // tie keeps the collectives, which libraries tune hardest.
  std::vector<int64_t> axes(meshShape.size());
  for (size_t a = 0; a < axes.size(); ++a)
    axes[a] = a;
  for (const auto &sent : withoutPartials(src, shape.size())) {
    if (checkNdSbp(shape, meshShape, sent))
      continue;
    const Plan &pre = collectivePlan(shape, elemBytes, meshShape, src, sent);
    if (pre.cost >= best.cost)
      continue;
    for (const auto &received : withoutPartials(dst, shape.size())) {
      if (received == sent || checkNdSbp(shape, meshShape, received) ||
          !reachesByLocalSteps(received, dst))
        continue;
      Step move;
      move.kind = StepKind::Redistribute;
      move.axes = axes;
      move.before = sent;
      move.after = received;
      double moveCost = planningCost(move, shape, elemBytes, meshShape, params);
      if (pre.cost + moveCost >= best.cost)
        continue;
      const Plan &post =
          collectivePlan(shape, elemBytes, meshShape, received, dst);
      double cost = pre.cost + moveCost + post.cost;
      if (cost >= best.cost)
        continue;
      best.steps = pre.steps;
      best.steps.push_back(std::move(move));
      best.steps.insert(best.steps.end(), post.steps.begin(), post.steps.end());
      best.cost = cost;
    }
  }
  return best;
}

const Plan &Planner::plan(std::span<const int64_t> shape, int64_t elemBytes,
                          std::span<const int64_t> meshShape,
                          std::span<const SbpEntry> src,
                          std::span<const SbpEntry> dst) {
  return cached(cache, cacheKey(shape, elemBytes, meshShape, src, dst),
                [&] { return search(shape, elemBytes, meshShape, src, dst); });
}

RankBytes planBytes(const Plan &plan, std::span<const int64_t> shape,
                    int64_t elemBytes, std::span<const int64_t> meshShape,
                    std::span<const int64_t> coords) {
  RankBytes total;
  for (const Step &s : plan.steps) {
    RankBytes b = exactBytes(s, shape, elemBytes, meshShape, coords);
    total.received += b.received;
    total.sent += b.sent;
  }
  return total;
}

//===----------------------------------------------------------------------===//
// Transfers between meshes
//===----------------------------------------------------------------------===//

namespace {} // namespace

TransferPlan Planner::planTransfer(std::span<const int64_t> shape,
                                   int64_t elemBytes, const MeshInfo &srcMesh,
                                   std::span<const SbpEntry> src,
                                   const MeshInfo &dstMesh,
                                   std::span<const SbpEntry> dst) {
  TransferPlan best;
  best.cost = std::numeric_limits<double>::infinity();
  int64_t srcCount = product(srcMesh.shape), dstCount = product(dstMesh.shape);

  for (const auto &sent : withoutPartials(src, shape.size())) {
    const Plan &pre = plan(shape, elemBytes, srcMesh.shape, src, sent);
    // The distinct pieces on the source and the positions holding each.
    std::map<Box, std::vector<int64_t>> holders;
    std::vector<Box> srcBoxes;
    for (int64_t q = 0; q < srcCount; ++q) {
      Box b =
          localBox(shape, srcMesh.shape, sent, delinearize(srcMesh.shape, q));
      holders[b].push_back(q);
    }
    for (const auto &received : withoutPartials(dst, shape.size())) {
      if (!reachesByLocalSteps(received, dst))
        continue;
      const Plan &post = plan(shape, elemBytes, dstMesh.shape, received, dst);
      std::vector<Transfer> transfers;
      int64_t worst = 0;
      for (int64_t p = 0; p < dstCount; ++p) {
        Box want = localBox(shape, dstMesh.shape, received,
                            delinearize(dstMesh.shape, p));
        int64_t bytes = 0;
        for (const auto &[have, who] : holders) {
          Box part = intersect(have, want);
          if (product(part.sizes) == 0)
            continue;
          // Prefer the holder on the same device; otherwise spread the
          // destinations over the holders (designatedHolder's rule).
          int64_t from = designatedHolder(who, p);
          for (int64_t q : who)
            if (srcMesh.ranks[q] == dstMesh.ranks[p])
              from = q;
          bool local = srcMesh.ranks[from] == dstMesh.ranks[p];
          if (!local)
            bytes += product(part.sizes) * elemBytes;
          transfers.push_back({from, p, std::move(part), local});
        }
        worst = std::max(worst, bytes);
      }
      bool communicates =
          std::any_of(transfers.begin(), transfers.end(),
                      [](const Transfer &t) { return !t.local; });
      double cost = pre.cost + post.cost + static_cast<double>(worst) +
                    (communicates ? params.latencyBytes : 0.0);
      if (cost < best.cost) {
        best.pre = pre;
        best.post = post;
        best.sent = sent;
        best.received = received;
        best.transfers = std::move(transfers);
        best.cost = cost;
      }
    }
  }
  return best;
}

} // namespace pc::boxing
