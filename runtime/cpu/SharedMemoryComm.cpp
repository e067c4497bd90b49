//===- SharedMemoryComm.cpp - Collectives between CPU virtual devices -----===//

#include "runtime/cpu/SharedMemoryComm.h"
#include "runtime/device/HostTensor.h"

#include "runtime/comm/Reduce.h"

#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cstring>

namespace pc::runtime {

// The payload's URL follows absl's type-URL convention; its value is unused.
constexpr absl::string_view kReleasedUrl = "type.pc/runtime.ReleasedByAbort";

absl::Status releasedByAbort(const absl::Status &cause,
                             absl::string_view what) {
  absl::Status s(cause.code(),
                 absl::StrCat(what, " aborted: ", cause.message()));
  s.SetPayload(kReleasedUrl, absl::Cord("1"));
  return s;
}

bool isReleasedByAbort(const absl::Status &status) {
  return status.GetPayload(kReleasedUrl).has_value();
}

absl::StatusOr<int64_t> memberIndex(const char *kind,
                                    std::span<const int64_t> group,
                                    int64_t rank, int64_t worldSize) {
  auto self = std::find(group.begin(), group.end(), rank);
  if (self == group.end() || std::count(group.begin(), group.end(), rank) != 1)
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " calls ", kind, " for the group [",
                     absl::StrJoin(group, ", "), "], which it is not in once"));
  for (int64_t r : group)
    if (r < 0 || r >= worldSize)
      return absl::InvalidArgumentError(absl::StrCat(
          kind, ": rank ", r, " is outside the world of ", worldSize));
  return self - group.begin();
}

int64_t sizeOf(CommType type) {
  switch (type) {
  case CommType::F32:
  case CommType::I32:
    return 4;
  case CommType::F64:
  case CommType::I64:
    return 8;
  case CommType::F16:
  case CommType::BF16:
    return 2;
  case CommType::U8:
    return 1;
  }
  return 1;
}

const char *nameOf(CommType type) {
  switch (type) {
  case CommType::F32:
    return "f32";
  case CommType::F64:
    return "f64";
  case CommType::I32:
    return "i32";
  case CommType::I64:
    return "i64";
  case CommType::F16:
    return "f16";
  case CommType::BF16:
    return "bf16";
  case CommType::U8:
    return "ui8";
  }
  return "?";
}

namespace {

/// Attributes the bytes an endpoint moves within its lifetime to `kind`.
class KindBytes {
public:
  KindBytes(CommStats &stats, const char *kind)
      : stats(stats), kind(kind), sent(stats.bytesSent),
        received(stats.bytesReceived) {}
  ~KindBytes() {
    auto &[s, r] = stats.bytes[kind];
    s += stats.bytesSent - sent;
    r += stats.bytesReceived - received;
  }

private:
  CommStats &stats;
  const char *kind;
  int64_t sent, received;
};

char *at(void *base, int64_t elems, CommType type) {
  return static_cast<char *>(base) + elems * sizeOf(type);
}
const char *at(const void *base, int64_t elems, CommType type) {
  return static_cast<const char *>(base) + elems * sizeOf(type);
}

std::vector<int64_t> offsetsOf(std::span<const int64_t> counts) {
  std::vector<int64_t> off(counts.size() + 1, 0);
  for (size_t i = 0; i < counts.size(); ++i)
    off[i + 1] = off[i] + counts[i];
  return off;
}

/// acc = x[k-1] (+) (... (+) (x[k+2] (+) x[k+1])), where x[j] is the piece
/// [off, off + len) of member j's buffer: every member's term but member
/// k's, as NCCL's ring reduces piece k (each member combines its own term
/// with the partial result it receives, its own term first: max and min
/// tell the operands apart), so that x[k] (+) acc has the ring's bits.
/// `acc` must not overlap any of the terms.
void foldOthers(void *acc, std::span<const void *const> bufs, int64_t k,
                int64_t off, int64_t len, CommType type, ReduceKind reduce) {
  int64_t n = bufs.size();
  copyBytes(acc, at(bufs[(k + 1) % n], off, type), len * sizeOf(type));
  for (int64_t t = 2; t < n; ++t)
    reduceOnto(acc, at(bufs[(k + t) % n], off, type), len, type, reduce);
}

bool overlaps(const void *a, int64_t aBytes, const void *b, int64_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

} // namespace

class SharedMemoryComm final : public Communicator {
public:
  SharedMemoryComm(SharedMemoryWorld &world, int64_t rank)
      : world(world), myRank(rank) {}

  int64_t rank() const override { return myRank; }
  CommStats stats() const override { return counters; }

  absl::Status allReduce(void *data, int64_t count, CommType type,
                         ReduceKind reduce,
                         std::span<const int64_t> group) override;
  absl::Status allGather(const void *in, void *out,
                         std::span<const int64_t> counts, CommType type,
                         std::span<const int64_t> group) override;
  absl::Status reduceScatter(const void *in, void *out,
                             std::span<const int64_t> counts, CommType type,
                             ReduceKind reduce,
                             std::span<const int64_t> group) override;
  absl::Status allToAll(const void *in, std::span<const int64_t> sendCounts,
                        void *out, std::span<const int64_t> recvCounts,
                        CommType type, std::span<const int64_t> group) override;
  absl::Status broadcast(void *data, int64_t count, CommType type, int64_t root,
                         std::span<const int64_t> group) override;
  absl::Status send(const void *data, int64_t count, CommType type,
                    int64_t peer, int64_t tag) override;
  absl::Status recv(void *data, int64_t count, CommType type, int64_t peer,
                    int64_t tag) override;

private:
  /// A collective in progress: the meeting, this member's index, and the
  /// key under which the group meets.
  struct Call {
    std::shared_ptr<SharedMemoryWorld::Meeting> meeting;
    int64_t index = 0;
    std::string key;
  };

  /// Joins the group's next meeting, posting `in`, `out` and `counts`; all
  /// members have posted when it returns OK.
  /// With `sameCounts`, every member must post the same counts.
  absl::StatusOr<Call> meet(const char *kind, std::span<const int64_t> group,
                            const void *in, void *out,
                            std::vector<int64_t> counts,
                            bool sameCounts = true);
  absl::Status finish(Call &call, absl::Status status);
  /// Counts what the ring moves for a reduce-scatter (`reduce`) or an
  /// all-gather over pieces at `off`, as member `i`: every piece but one
  /// comes in, and every piece but another goes out.
  void countRing(const std::vector<int64_t> &off, int64_t i, CommType type,
                 bool reduce);
  /// Copies every other member's piece at `off` of its `out` buffer into
  /// this member's: all of them have posted it, and none writes it again.
  void gatherPieces(Call &call, const std::vector<int64_t> &off, CommType type);

  SharedMemoryWorld &world;
  int64_t myRank;
  std::map<std::string, int64_t> sequence;
  CommStats counters;
  // A reduction's partial fold, reused between calls.
  std::vector<char> scratch;
};

std::unique_ptr<Communicator> SharedMemoryWorld::endpoint(int64_t rank) {
  return std::make_unique<SharedMemoryComm>(*this, rank);
}

void SharedMemoryWorld::abort(absl::Status why) {
  std::lock_guard<std::mutex> lock(mu);
  if (aborted.ok())
    aborted = why.ok() ? absl::AbortedError("aborted") : why;
  for (auto &[key, meeting] : meetings)
    meeting->cv.notify_all();
  for (auto &[key, box] : mail)
    box.cv.notify_all();
}

std::shared_ptr<SharedMemoryWorld::Meeting>
SharedMemoryWorld::join(const std::string &key, int64_t size) {
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<Meeting> &m = meetings[key];
  if (!m) {
    m = std::make_shared<Meeting>();
    m->size = size;
    m->in.resize(size);
    m->out.resize(size);
    m->counts.resize(size);
  }
  return m;
}

absl::Status SharedMemoryWorld::barrier(Meeting &m, bool abortable) {
  std::unique_lock<std::mutex> lock(mu);
  int64_t generation = m.generation;
  auto released = [&] { return abortable && !aborted.ok(); };
  if (!released()) {
    if (++m.arrived == m.size) {
      m.arrived = 0;
      ++m.generation;
      m.complete = !m.broken;
      m.cv.notify_all();
    } else {
      m.cv.wait(lock, [&] { return m.generation != generation || released(); });
    }
    // Everyone arrived, and nobody had been released before: the same
    // answer for every member.
    if (m.generation != generation && m.complete)
      return absl::OkStatus();
  }
  // Released before everyone arrived: the members still to come must fail
  // too, since this one will not go on.
  if (m.generation == generation)
    m.broken = true;
  return releasedByAbort(aborted, "collective");
}

void SharedMemoryWorld::leave(const std::string &key, Meeting &m) {
  std::lock_guard<std::mutex> lock(mu);
  if (++m.left == m.size)
    meetings.erase(key);
}

absl::StatusOr<SharedMemoryComm::Call>
SharedMemoryComm::meet(const char *kind, std::span<const int64_t> group,
                       const void *in, void *out, std::vector<int64_t> counts,
                       bool sameCounts) {
  absl::StatusOr<int64_t> index =
      memberIndex(kind, group, myRank, world.size());
  if (!index.ok())
    return index.status();
  std::string groupKey = absl::StrJoin(group, ",");
  Call call;
  call.index = *index;
  call.key = absl::StrCat(groupKey, "#", sequence[groupKey]++);
  call.meeting = world.join(call.key, group.size());
  SharedMemoryWorld::Meeting &m = *call.meeting;
  std::string signature = absl::StrCat(kind, "/", counts.size());
  {
    std::lock_guard<std::mutex> lock(world.mu);
    if (m.signature.empty())
      m.signature = signature;
    else if (m.signature != signature)
      m.mismatch = true;
    m.in[call.index] = in;
    m.out[call.index] = out;
    m.counts[call.index] = std::move(counts);
  }
  ++counters.calls[kind];
  // An abort releases the members waiting here; once all are here, every
  // member goes on to finish(), reading the others' buffers on the way.
  if (absl::Status s = world.barrier(m, /*abortable=*/true); !s.ok())
    return s;
  // Everyone has posted: check that they agree, the same way on every
  // member, so that all fail together.
  bool agree = !m.mismatch;
  for (const auto &c : m.counts)
    agree &= !sameCounts ? c.size() == m.counts.front().size()
                         : c == m.counts.front();
  if (!agree) {
    (void)finish(call, absl::OkStatus());
    return absl::InvalidArgumentError(absl::StrCat(
        kind, " over [", groupKey,
        "]: the members called different collectives or passed different "
        "counts"));
  }
  return call;
}

absl::Status SharedMemoryComm::finish(Call &call, absl::Status status) {
  // Nobody may leave while others still read its buffers, abort or not:
  // every member is past the meeting, and its work until here is bounded.
  absl::Status s = world.barrier(*call.meeting, /*abortable=*/false);
  world.leave(call.key, *call.meeting);
  return status.ok() ? s : status;
}

void SharedMemoryComm::countRing(const std::vector<int64_t> &off, int64_t i,
                                 CommType type, bool reduce) {
  int64_t n = off.size() - 1;
  if (n < 2)
    return;
  auto piece = [&](int64_t k) {
    return off[(k + n) % n + 1] - off[(k + n) % n];
  };
  int64_t total = off.back();
  // The reduce-scatter brings every piece but the predecessor's and sends
  // every piece but its own; the all-gather brings every piece but its own
  // and sends every piece but the successor's.
  counters.bytesReceived += (total - piece(reduce ? i - 1 : i)) * sizeOf(type);
  counters.bytesSent += (total - piece(reduce ? i : i + 1)) * sizeOf(type);
}

void SharedMemoryComm::gatherPieces(Call &call, const std::vector<int64_t> &off,
                                    CommType type) {
  SharedMemoryWorld::Meeting &m = *call.meeting;
  for (int64_t j = 0; j < m.size; ++j)
    if (j != call.index)
      copyBytes(at(m.out[call.index], off[j], type), at(m.out[j], off[j], type),
                (off[j + 1] - off[j]) * sizeOf(type));
  countRing(off, call.index, type, /*reduce=*/false);
}

absl::Status SharedMemoryComm::allReduce(void *data, int64_t count,
                                         CommType type, ReduceKind reduce,
                                         std::span<const int64_t> group) {
  KindBytes attribute(counters, "all_reduce");
  auto call = meet("all_reduce", group, data, data, {count});
  if (!call.ok())
    return call.status();
  // Even chunks of the flattened buffer: member i reduces chunk i of every
  // buffer into its own (nobody else reads or writes that chunk of it),
  // then, once all are reduced, copies the others' chunks.
  SharedMemoryWorld::Meeting &m = *call->meeting;
  int64_t n = group.size(), i = call->index;
  std::vector<int64_t> chunks;
  for (int64_t k = 0; k < n; ++k)
    chunks.push_back(splitRange(count, n, k).size);
  std::vector<int64_t> off = offsetsOf(chunks);
  int64_t len = chunks[i];
  if (n > 1 && len > 0) {
    // In place: every member posted its buffer as its input and output.
    scratch.resize(len * sizeOf(type));
    foldOthers(scratch.data(), m.in, i, off[i], len, type, reduce);
    reduceInto(at(data, off[i], type), scratch.data(), len, type, reduce);
  }
  if (reduce == ReduceKind::Avg)
    divide(at(data, off[i], type), len, type, n);
  countRing(off, i, type, /*reduce=*/true);
  absl::Status s = world.barrier(m, /*abortable=*/false);
  if (s.ok())
    gatherPieces(*call, off, type);
  return finish(*call, s);
}

absl::Status SharedMemoryComm::allGather(const void *in, void *out,
                                         std::span<const int64_t> counts,
                                         CommType type,
                                         std::span<const int64_t> group) {
  KindBytes attribute(counters, "all_gather");
  if (counts.size() != group.size())
    return absl::InvalidArgumentError("all_gather: one count per member");
  std::vector<int64_t> off = offsetsOf(counts);
  auto self = std::find(group.begin(), group.end(), myRank) - group.begin();
  if (self < static_cast<int64_t>(group.size()))
    std::memmove(at(out, off[self], type), in, counts[self] * sizeOf(type));
  auto call = meet("all_gather", group, in, out,
                   std::vector<int64_t>(counts.begin(), counts.end()));
  if (!call.ok())
    return call.status();
  gatherPieces(*call, off, type);
  return finish(*call, absl::OkStatus());
}

absl::Status SharedMemoryComm::reduceScatter(const void *in, void *out,
                                             std::span<const int64_t> counts,
                                             CommType type, ReduceKind reduce,
                                             std::span<const int64_t> group) {
  KindBytes attribute(counters, "reduce_scatter");
  if (counts.size() != group.size())
    return absl::InvalidArgumentError("reduce_scatter: one count per member");
  std::vector<int64_t> off = offsetsOf(counts);
  auto call = meet("reduce_scatter", group, in, nullptr,
                   std::vector<int64_t>(counts.begin(), counts.end()));
  if (!call.ok())
    return call.status();
  // Member i folds piece i of every member's input. The inputs are read by
  // every member until the last is done, so a piece that would land on one
  // of them waits in the scratch until then.
  SharedMemoryWorld::Meeting &m = *call->meeting;
  int64_t n = group.size(), i = call->index, len = counts[i];
  int64_t bytes = len * sizeOf(type);
  bool aliased = overlaps(out, bytes, in, off.back() * sizeOf(type));
  void *acc = out;
  if (aliased) {
    scratch.resize(bytes);
    acc = scratch.data();
  }
  if (n == 1) {
    copyBytes(acc, at(in, off[i], type), bytes);
  } else if (len > 0) {
    foldOthers(acc, m.in, i, off[i], len, type, reduce);
    reduceOnto(acc, at(in, off[i], type), len, type, reduce);
  }
  if (reduce == ReduceKind::Avg)
    divide(acc, len, type, n);
  countRing(off, i, type, /*reduce=*/true);
  absl::Status s = finish(*call, absl::OkStatus());
  if (s.ok() && aliased)
    copyBytes(out, acc, bytes);
  return s;
}

absl::Status
SharedMemoryComm::allToAll(const void *in, std::span<const int64_t> sendCounts,
                           void *out, std::span<const int64_t> recvCounts,
                           CommType type, std::span<const int64_t> group) {
  KindBytes attribute(counters, "all_to_all");
  int64_t n = group.size();
  if (static_cast<int64_t>(sendCounts.size()) != n ||
      static_cast<int64_t>(recvCounts.size()) != n)
    return absl::InvalidArgumentError("all_to_all: one count per member");
  // Each member posts its send counts; each checks them against its receive
  // counts.
  auto call = meet("all_to_all", group, in, out,
                   std::vector<int64_t>(sendCounts.begin(), sendCounts.end()),
                   /*sameCounts=*/false);
  if (!call.ok())
    return call.status();
  SharedMemoryWorld::Meeting &m = *call->meeting;
  absl::Status s;
  int64_t i = call->index, outOff = 0;
  for (int64_t q = 0; s.ok() && q < n; ++q) {
    const std::vector<int64_t> &theirs = m.counts[q];
    if (theirs[i] != recvCounts[q]) {
      s = absl::InvalidArgumentError(absl::StrCat(
          "all_to_all: member ", q, " sends ", theirs[i],
          " elements to member ", i, ", which expects ", recvCounts[q]));
      break;
    }
    int64_t inOff = 0;
    for (int64_t j = 0; j < i; ++j)
      inOff += theirs[j];
    copyBytes(at(out, outOff, type), at(m.in[q], inOff, type),
              recvCounts[q] * sizeOf(type));
    if (q != i) {
      counters.bytesReceived += recvCounts[q] * sizeOf(type);
      counters.bytesSent += sendCounts[q] * sizeOf(type);
    }
    outOff += recvCounts[q];
  }
  return finish(*call, s);
}

absl::Status SharedMemoryComm::broadcast(void *data, int64_t count,
                                         CommType type, int64_t root,
                                         std::span<const int64_t> group) {
  KindBytes attribute(counters, "broadcast");
  if (root < 0 || root >= static_cast<int64_t>(group.size()))
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast: root ", root, " is outside the group"));
  auto call = meet("broadcast", group, data, data, {count, root});
  if (!call.ok())
    return call.status();
  if (call->index != root) {
    copyBytes(data, call->meeting->in[root], count * sizeOf(type));
    counters.bytesReceived += count * sizeOf(type);
  } else {
    counters.bytesSent += (int64_t(group.size()) - 1) * count * sizeOf(type);
  }
  return finish(*call, absl::OkStatus());
}

absl::Status SharedMemoryComm::send(const void *data, int64_t count,
                                    CommType type, int64_t peer, int64_t tag) {
  KindBytes attribute(counters, "send");
  if (peer < 0 || peer >= world.size())
    return absl::InvalidArgumentError(
        absl::StrCat("send: peer ", peer, " is outside the world"));
  SharedMemoryWorld::Message msg;
  msg.bytes.assign(static_cast<const char *>(data),
                   static_cast<const char *>(data) + count * sizeOf(type));
  std::condition_variable *wake;
  {
    std::lock_guard<std::mutex> lock(world.mu);
    SharedMemoryWorld::Mailbox &box = world.mail[{myRank, peer, tag}];
    box.messages.push_back(std::move(msg));
    wake = &box.cv; // Boxes stay as long as the world.
  }
  wake->notify_one();
  if (peer != myRank) // A message to oneself is a local copy.
    counters.bytesSent += count * sizeOf(type);
  ++counters.calls["send"];
  return absl::OkStatus();
}

absl::Status SharedMemoryComm::recv(void *data, int64_t count, CommType type,
                                    int64_t peer, int64_t tag) {
  KindBytes attribute(counters, "recv");
  std::unique_lock<std::mutex> lock(world.mu);
  SharedMemoryWorld::Mailbox &box = world.mail[{peer, myRank, tag}];
  box.cv.wait(lock,
              [&] { return !box.messages.empty() || !world.aborted.ok(); });
  if (box.messages.empty())
    return releasedByAbort(world.aborted, "recv");
  SharedMemoryWorld::Message msg = std::move(box.messages.front());
  box.messages.pop_front();
  lock.unlock();
  int64_t bytes = count * sizeOf(type);
  if (static_cast<int64_t>(msg.bytes.size()) != bytes)
    return absl::InvalidArgumentError(
        absl::StrCat("recv from rank ", peer, " tag ", tag, ": expected ",
                     bytes, " bytes, got ", msg.bytes.size()));
  copyBytes(data, msg.bytes.data(), bytes);
  if (peer != myRank)
    counters.bytesReceived += bytes;
  ++counters.calls["recv"];
  return absl::OkStatus();
}

} // namespace pc::runtime
