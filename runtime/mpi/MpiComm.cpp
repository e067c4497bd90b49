//===- MpiComm.cpp - A rank's endpoint in an MPI world --------------------===//
//
// Two ways to run a collective:
//  - native: an MPI collective on the group's communicator, when each
//    process hosts one rank. It blocks, so it runs on the
//    endpoint's caller thread while the rank waits with a deadline.
//  - ring: the ring algorithms of the in-process communicator (and its
//    reduction order) over MPI point-to-point messages, when processes
//    host several ranks; every request is polled with the deadline.
// Before each collective the members compare a hash of the call's
// signature (kind, element type, counts, reduction, the group's call
// number and the op); a mismatch is an error naming both ranks and both
// ops, raised by every member, before any data moves.
//
// Byte counts follow the ring algorithms whichever way the data moved, so
// that reports match the cost model (boxing/CostModel.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/device/HostTensor.h"
#include "runtime/mpi/MpiWorld.h"

#include "runtime/comm/Reduce.h"
#include "runtime/device/HalfFloat.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace pc::runtime {
namespace {

using Clock = std::chrono::steady_clock;

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, len);
}

/// 16-bit floats reduce in f32 and round at each step.
template <bool Bf16, ReduceKind Kind>
void reduce16(void *in, void *inout, int *len, MPI_Datatype *) {
  reduceInto(inout, in, *len, Bf16 ? CommType::BF16 : CommType::F16, Kind);
}

/// MPI's names for pc's element types and reductions.
struct MpiTypes {
  MPI_Datatype f16 = MPI_DATATYPE_NULL, bf16 = MPI_DATATYPE_NULL;
  MPI_Op ops16[2][3] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                        {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};
  MpiTypes() {
    MPI_Type_contiguous(2, MPI_BYTE, &f16);
    MPI_Type_commit(&f16);
    MPI_Type_contiguous(2, MPI_BYTE, &bf16);
    MPI_Type_commit(&bf16);
    MPI_Op_create(&reduce16<false, ReduceKind::Sum>, 1, &ops16[0][0]);
    MPI_Op_create(&reduce16<false, ReduceKind::Max>, 1, &ops16[0][1]);
    MPI_Op_create(&reduce16<false, ReduceKind::Min>, 1, &ops16[0][2]);
    MPI_Op_create(&reduce16<true, ReduceKind::Sum>, 1, &ops16[1][0]);
    MPI_Op_create(&reduce16<true, ReduceKind::Max>, 1, &ops16[1][1]);
    MPI_Op_create(&reduce16<true, ReduceKind::Min>, 1, &ops16[1][2]);
  }
  // Each communicator (one per rank and run) makes its own; freed with it,
  // or a long training run would leak them step by step.
  ~MpiTypes() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return;
    for (MPI_Datatype *t : {&f16, &bf16})
      if (*t != MPI_DATATYPE_NULL)
        MPI_Type_free(t);
    for (auto &row : ops16)
      for (MPI_Op &op : row)
        if (op != MPI_OP_NULL)
          MPI_Op_free(&op);
  }
  MpiTypes(const MpiTypes &) = delete;
  MpiTypes &operator=(const MpiTypes &) = delete;
  MPI_Datatype type(CommType t) const {
    switch (t) {
    case CommType::F32:
      return MPI_FLOAT;
    case CommType::F64:
      return MPI_DOUBLE;
    case CommType::I32:
      return MPI_INT32_T;
    case CommType::I64:
      return MPI_INT64_T;
    case CommType::F16:
      return f16;
    case CommType::BF16:
      return bf16;
    case CommType::U8:
      return MPI_UINT8_T;
    }
    return MPI_BYTE;
  }
  MPI_Op op(CommType t, ReduceKind k) const {
    int which = k == ReduceKind::Max ? 1 : k == ReduceKind::Min ? 2 : 0;
    if (t == CommType::F16 || t == CommType::BF16)
      return ops16[t == CommType::BF16][which];
    return which == 1 ? MPI_MAX : which == 2 ? MPI_MIN : MPI_SUM;
  }
};

std::vector<int64_t> offsetsOf(std::span<const int64_t> counts) {
  std::vector<int64_t> off(counts.size() + 1, 0);
  for (size_t i = 0; i < counts.size(); ++i)
    off[i + 1] = off[i] + counts[i];
  return off;
}

int64_t mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

/// A thread that makes blocking MPI calls for a rank, so that the rank can
/// stop waiting for one at its deadline. A call that never returns leaves
/// the thread behind when the endpoint dies; the process ends soon after.
class Caller {
public:
  Caller() : thread([this] { loop(); }) {}
  ~Caller() {
    {
      std::lock_guard<std::mutex> lock(mu);
      quit = true;
    }
    cv.notify_all();
    if (stuck)
      thread.detach();
    else
      thread.join();
  }
  enum class Outcome { Done, TimedOut, Aborted };
  Outcome call(std::function<void()> fn, Clock::time_point deadline,
               const std::atomic<bool> &aborted) {
    std::unique_lock<std::mutex> lock(mu);
    job = std::move(fn);
    done = false;
    cv.notify_all();
    while (!done) {
      cv.wait_for(lock, std::chrono::milliseconds(20));
      if (done)
        break;
      if (aborted.load()) {
        stuck = true;
        return Outcome::Aborted;
      }
      if (Clock::now() > deadline) {
        stuck = true;
        return Outcome::TimedOut;
      }
    }
    return Outcome::Done;
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return job || quit; });
      if (!job)
        return;
      std::function<void()> fn = std::move(job);
      job = nullptr;
      lock.unlock();
      fn();
      lock.lock();
      done = true;
      cv.notify_all();
    }
  }
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()> job;
  bool done = false, quit = false, stuck = false;
  std::thread thread;
};

constexpr int kDescBytes = 240;

} // namespace

class MpiComm final : public Communicator {
public:
  MpiComm(MpiWorld &world, int64_t rank)
      : world(world), myRank(rank), slot(rank % world.perProcess) {}
  ~MpiComm() override {
    world.setActivity(myRank, "");
    // Sends not yet matched: wait for them a while (a receiver that
    // failed never takes them; the process is ending then).
    if (!pendingSends.empty() && !world.isAborted()) {
      std::vector<MPI_Request> reqs;
      for (auto &[r, buf] : pendingSends)
        reqs.push_back(r);
      (void)world.waitAll(reqs, deadline(), "sends not yet received");
    }
  }

  int64_t rank() const override { return myRank; }
  CommStats stats() const override { return counters; }
  void setCallSite(std::string what) override { site = std::move(what); }

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
  /// A send's or receive's checks: the world is not aborted, `peer` is in
  /// it, and the tag and size fit MPI's ints.
  absl::Status checkMessage(const char *kind, int64_t peer, int64_t tag,
                            int64_t bytes) const;
  /// One collective call: who, what, and how it is described in errors.
  struct Call {
    std::span<const int64_t> group;
    int64_t index = 0;
    bool native = false;
    MPI_Comm comm = MPI_COMM_NULL;
    std::string id;   // "all_reduce #3 over ranks [0, 1]"
    std::string text; // id, the payload and the call site
  };

  Clock::time_point deadline() const {
    return Clock::now() +
           std::chrono::duration_cast<Clock::duration>(
               std::chrono::duration<double>(world.options.timeoutSeconds));
  }
  /// Checks the group, numbers the call, finds its communicator and checks
  /// that every member issues the same call.
  absl::StatusOr<Call> begin(const char *kind, std::span<const int64_t> group,
                             const std::string &payload);
  absl::Status checkSignature(Call &call, const std::string &payload);
  /// Runs `fn` (blocking MPI calls on call.comm) on the caller thread.
  absl::Status blocking(Call &call, std::function<int()> fn);
  absl::Status failed(const Call &call, const std::string &why);
  absl::Status timedOut(const std::string &text,
                        std::span<const int64_t> waitedFor);
  /// Ring steps: post, then wait with the deadline.
  absl::Status exchange(const Call &call, std::vector<MPI_Request> &reqs);
  void isend(const void *p, int64_t bytes, int64_t peer,
             std::vector<MPI_Request> &reqs);
  void irecv(void *p, int64_t bytes, int64_t peer,
             std::vector<MPI_Request> &reqs);
  int ringTag(int64_t from, int64_t to) const {
    return static_cast<int>(1 + (from % world.perProcess) * world.perProcess +
                            to % world.perProcess);
  }
  absl::Status ringReduceScatter(const Call &call, char *work,
                                 const std::vector<int64_t> &off, CommType type,
                                 ReduceKind reduce);
  absl::Status ringAllGather(const Call &call, char *out,
                             const std::vector<int64_t> &off, CommType type);
  void countRing(const std::vector<int64_t> &off, int64_t i, CommType type,
                 bool reduceScatter);

  MpiWorld &world;
  int64_t myRank, slot;
  Caller caller;
  MpiTypes types;
  std::string site;
  std::map<std::vector<int64_t>, int64_t> sequence;
  std::vector<std::pair<MPI_Request, std::vector<char>>> pendingSends;
  CommStats counters;
};

absl::StatusOr<std::unique_ptr<Communicator>> MpiWorld::endpoint(int64_t rank) {
  if (!hosts(rank))
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank, " is not hosted by process ", me, " of the MPI world"));
  return std::unique_ptr<Communicator>(new MpiComm(*this, rank));
}

absl::StatusOr<MpiComm::Call> MpiComm::begin(const char *kind,
                                             std::span<const int64_t> group,
                                             const std::string &payload) {
  if (world.isAborted())
    return releasedByAbort(world.abortStatus(), kind);
  Call call;
  call.group = group;
  absl::StatusOr<int64_t> index =
      memberIndex(kind, group, myRank, world.size());
  if (!index.ok())
    return index.status();
  call.index = *index;
  std::vector<int64_t> key(group.begin(), group.end());
  int64_t n = ++sequence[key];
  call.id = absl::StrCat(kind, " #", n, " over ranks [",
                         absl::StrJoin(group, ", "), "]");
  call.text = absl::StrCat(call.id, " (", payload, ")",
                           site.empty() ? "" : " for ", site);
  // With one rank per process every group is a set of processes. With
  // several, two threads of a process could create the communicators of
  // two groups over the same processes at once, which MPI cannot tell
  // apart; those groups take the ring.
  call.native = world.perProcess == 1;
  ++counters.calls[kind];
  if (call.native) {
    absl::StatusOr<MPI_Comm> comm = world.groupComm(group);
    if (!comm.ok())
      return comm.status();
    call.comm = *comm;
  }
  if (group.size() > 1 && world.options.checkDesync)
    if (absl::Status s = checkSignature(call, payload); !s.ok())
      return s;
  return call;
}

absl::Status MpiComm::checkSignature(Call &call, const std::string &payload) {
  // The signature leaves out the rank-specific part of the call site.
  std::string signature = absl::StrCat(call.id, "|", payload, "|", site);
  int64_t h = static_cast<int64_t>(std::hash<std::string>{}(signature) >> 1);
  std::string desc = call.text.substr(0, kDescBytes - 1);
  desc.resize(kDescBytes, '\0');
  int64_t n = static_cast<int64_t>(call.group.size());
  std::vector<char> all(n * kDescBytes);
  bool mismatch = false;
  if (call.native) {
    int64_t sig[2] = {h, ~h};
    if (absl::Status s = blocking(
            call,
            [&] {
              int rc = MPI_Allreduce(MPI_IN_PLACE, sig, 2, MPI_INT64_T, MPI_MAX,
                                     call.comm);
              if (rc != MPI_SUCCESS || ~sig[1] == sig[0])
                return rc;
              return MPI_Allgather(desc.data(), kDescBytes, MPI_CHAR,
                                   all.data(), kDescBytes, MPI_CHAR, call.comm);
            });
        !s.ok())
      return s;
    mismatch = ~sig[1] != sig[0];
  } else {
    // Every member sends its description to every other.
    std::vector<MPI_Request> reqs;
    copyBytes(&all[call.index * kDescBytes], desc.data(), kDescBytes);
    for (int64_t j = 0; j < n; ++j) {
      if (j == call.index)
        continue;
      isend(desc.data(), kDescBytes, call.group[j], reqs);
      irecv(&all[j * kDescBytes], kDescBytes, call.group[j], reqs);
    }
    if (absl::Status s = exchange(call, reqs); !s.ok())
      return s;
    for (int64_t j = 0; j < n; ++j)
      mismatch |=
          std::memcmp(&all[j * kDescBytes], desc.data(), kDescBytes) != 0;
    // The sequence number and payload are in the description; the call
    // site is too, so this compares what the hash compares.
  }
  if (!mismatch)
    return absl::OkStatus();
  // Name the first member that differs from the first member.
  auto at = [&](int64_t j) {
    return std::string(&all[j * kDescBytes],
                       ::strnlen(&all[j * kDescBytes], kDescBytes));
  };
  for (int64_t j = 1; j < n; ++j)
    if (at(j) != at(0))
      return absl::FailedPreconditionError(absl::StrCat(
          "collectives out of step (desync) at the first call on which they "
          "differ: rank ",
          call.group[0], " issued ", at(0), ", but rank ", call.group[j],
          " issued ", at(j)));
  return absl::FailedPreconditionError(
      absl::StrCat("collectives out of step (desync) at ", call.text));
}

absl::Status MpiComm::blocking(Call &call, std::function<int()> fn) {
  world.setActivity(myRank, call.text);
  auto rc = std::make_shared<int>(MPI_SUCCESS);
  Caller::Outcome outcome = caller.call(
      [rc, fn = std::move(fn)] { *rc = fn(); }, deadline(), world.aborted);
  world.setActivity(myRank, "");
  if (outcome == Caller::Outcome::Aborted) {
    world.markBroken();
    return releasedByAbort(world.abortStatus(), call.text);
  }
  if (outcome == Caller::Outcome::TimedOut) {
    world.markBroken();
    return timedOut(call.text, call.group);
  }
  if (*rc != MPI_SUCCESS)
    return failed(call, mpiError(*rc));
  return absl::OkStatus();
}

absl::Status MpiComm::failed(const Call &call, const std::string &why) {
  return absl::InternalError(absl::StrCat(call.text, ": MPI error: ", why));
}

absl::Status MpiComm::timedOut(const std::string &text,
                               std::span<const int64_t> waitedFor) {
  std::map<int64_t, std::string> states = world.query(waitedFor);
  std::string why =
      absl::StrCat("rank ", myRank, " waited ", world.options.timeoutSeconds,
                   " s (the ", "timeout) in ", text, ", which did not finish:");
  std::string id = text.substr(0, text.find(" ("));
  for (int64_t r : waitedFor) {
    if (r == myRank)
      continue;
    const std::string &s = states[r];
    if (s.rfind("waiting in " + id, 0) == 0)
      absl::StrAppend(&why, " rank ", r, " waits in it too;");
    else if (s.rfind("did not answer", 0) == 0)
      absl::StrAppend(&why, " rank ", r, " is dead or hung (it ", s, ");");
    else
      absl::StrAppend(&why, " rank ", r, " is late: it is alive and ", s, ";");
  }
  why.pop_back();
  return absl::DeadlineExceededError(why);
}

void MpiComm::isend(const void *p, int64_t bytes, int64_t peer,
                    std::vector<MPI_Request> &reqs) {
  reqs.emplace_back();
  MPI_Isend(p, static_cast<int>(bytes), MPI_BYTE,
            static_cast<int>(world.processOf(peer)), ringTag(myRank, peer),
            world.p2p, &reqs.back());
}

void MpiComm::irecv(void *p, int64_t bytes, int64_t peer,
                    std::vector<MPI_Request> &reqs) {
  reqs.emplace_back();
  MPI_Irecv(p, static_cast<int>(bytes), MPI_BYTE,
            static_cast<int>(world.processOf(peer)), ringTag(peer, myRank),
            world.p2p, &reqs.back());
}

absl::Status MpiComm::exchange(const Call &call,
                               std::vector<MPI_Request> &reqs) {
  world.setActivity(myRank, call.text);
  absl::Status s = world.waitAll(reqs, deadline(), call.text);
  world.setActivity(myRank, "");
  if (s.code() == absl::StatusCode::kDeadlineExceeded)
    return timedOut(call.text, call.group);
  return s;
}

void MpiComm::countRing(const std::vector<int64_t> &off, int64_t i,
                        CommType type, bool reduceScatter) {
  int64_t n = static_cast<int64_t>(off.size()) - 1;
  auto len = [&](int64_t k) { return (off[k + 1] - off[k]) * sizeOf(type); };
  for (int64_t s = 0; s + 1 < n; ++s) {
    counters.bytesReceived += len(mod(i - s - (reduceScatter ? 2 : 1), n));
    counters.bytesSent += len(mod(i - s - (reduceScatter ? 1 : 0), n));
  }
}

absl::Status MpiComm::ringReduceScatter(const Call &call, char *work,
                                        const std::vector<int64_t> &off,
                                        CommType type, ReduceKind reduce) {
  int64_t n = call.group.size(), i = call.index, e = sizeOf(type);
  int64_t next = call.group[mod(i + 1, n)], prev = call.group[mod(i - 1, n)];
  std::vector<char> tmp;
  for (int64_t s = 0; s + 1 < n; ++s) {
    int64_t out = mod(i - s - 1, n), in = mod(i - s - 2, n);
    tmp.resize((off[in + 1] - off[in]) * e);
    std::vector<MPI_Request> reqs;
    isend(work + off[out] * e, (off[out + 1] - off[out]) * e, next, reqs);
    irecv(tmp.data(), tmp.size(), prev, reqs);
    if (absl::Status st = exchange(call, reqs); !st.ok())
      return st;
    reduceInto(work + off[in] * e, tmp.data(), off[in + 1] - off[in], type,
               reduce);
  }
  if (reduce == ReduceKind::Avg)
    divide(work + off[i] * e, off[i + 1] - off[i], type, n);
  return absl::OkStatus();
}

absl::Status MpiComm::ringAllGather(const Call &call, char *out,
                                    const std::vector<int64_t> &off,
                                    CommType type) {
  int64_t n = call.group.size(), i = call.index, e = sizeOf(type);
  int64_t next = call.group[mod(i + 1, n)], prev = call.group[mod(i - 1, n)];
  for (int64_t s = 0; s + 1 < n; ++s) {
    int64_t sent = mod(i - s, n), got = mod(i - s - 1, n);
    std::vector<MPI_Request> reqs;
    isend(out + off[sent] * e, (off[sent + 1] - off[sent]) * e, next, reqs);
    irecv(out + off[got] * e, (off[got + 1] - off[got]) * e, prev, reqs);
    if (absl::Status st = exchange(call, reqs); !st.ok())
      return st;
  }
  return absl::OkStatus();
}

namespace {
bool fitsInt(int64_t n) { return n >= 0 && n <= INT32_MAX; }
std::vector<int> ints(std::span<const int64_t> v) {
  return std::vector<int>(v.begin(), v.end());
}
std::vector<int> displs(std::span<const int64_t> counts) {
  std::vector<int> d(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i)
    d[i] = d[i - 1] + static_cast<int>(counts[i - 1]);
  return d;
}
} // namespace

absl::Status MpiComm::allReduce(void *data, int64_t count, CommType type,
                                ReduceKind reduce,
                                std::span<const int64_t> group) {
  int64_t before = counters.bytesSent, beforeR = counters.bytesReceived;
  absl::StatusOr<Call> call =
      begin("all_reduce", group,
            absl::StrCat(count, " x ", nameOf(type), ", ",
                         stringifyReduceKind(reduce)));
  if (!call.ok())
    return call.status();
  int64_t n = group.size();
  if (n == 1)
    return absl::OkStatus();
  if (!fitsInt(count))
    return failed(*call, "more than 2^31 elements");
  std::vector<int64_t> chunks;
  for (int64_t k = 0; k < n; ++k)
    chunks.push_back(splitRange(count, n, k).size);
  std::vector<int64_t> off = offsetsOf(chunks);
  absl::Status s;
  if (call->native) {
    s = blocking(*call, [&] {
      return MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count),
                           types.type(type), types.op(type, reduce),
                           call->comm);
    });
    if (s.ok() && reduce == ReduceKind::Avg)
      divide(data, count, type, n);
  } else {
    char *work = static_cast<char *>(data);
    s = ringReduceScatter(*call, work, off, type,
                          reduce == ReduceKind::Avg ? ReduceKind::Sum : reduce);
    if (s.ok() && reduce == ReduceKind::Avg)
      divide(work + off[call->index] * sizeOf(type), chunks[call->index], type,
             n);
    if (s.ok())
      s = ringAllGather(*call, work, off, type);
  }
  countRing(off, call->index, type, true);
  countRing(off, call->index, type, false);
  auto &[bs, br] = counters.bytes["all_reduce"];
  bs += counters.bytesSent - before;
  br += counters.bytesReceived - beforeR;
  return s;
}

absl::Status MpiComm::allGather(const void *in, void *out,
                                std::span<const int64_t> counts, CommType type,
                                std::span<const int64_t> group) {
  if (counts.size() != group.size())
    return absl::InvalidArgumentError("all_gather: one count per member");
  int64_t before = counters.bytesSent, beforeR = counters.bytesReceived;
  absl::StatusOr<Call> call = begin(
      "all_gather", group,
      absl::StrCat("[", absl::StrJoin(counts, ", "), "] x ", nameOf(type)));
  if (!call.ok())
    return call.status();
  std::vector<int64_t> off = offsetsOf(counts);
  int64_t e = sizeOf(type), i = call->index;
  if (!fitsInt(off.back()))
    return failed(*call, "more than 2^31 elements");
  absl::Status s;
  if (call->native && group.size() > 1) {
    std::vector<int> c = ints(counts), d = displs(counts);
    s = blocking(*call, [&] {
      return MPI_Allgatherv(in, c[i], types.type(type), out, c.data(), d.data(),
                            types.type(type), call->comm);
    });
  } else {
    std::memmove(static_cast<char *>(out) + off[i] * e, in, counts[i] * e);
    s = ringAllGather(*call, static_cast<char *>(out), off, type);
  }
  countRing(off, i, type, false);
  auto &[bs, br] = counters.bytes["all_gather"];
  bs += counters.bytesSent - before;
  br += counters.bytesReceived - beforeR;
  return s;
}

absl::Status MpiComm::reduceScatter(const void *in, void *out,
                                    std::span<const int64_t> counts,
                                    CommType type, ReduceKind reduce,
                                    std::span<const int64_t> group) {
  if (counts.size() != group.size())
    return absl::InvalidArgumentError("reduce_scatter: one count per member");
  int64_t before = counters.bytesSent, beforeR = counters.bytesReceived;
  absl::StatusOr<Call> call =
      begin("reduce_scatter", group,
            absl::StrCat("[", absl::StrJoin(counts, ", "), "] x ", nameOf(type),
                         ", ", stringifyReduceKind(reduce)));
  if (!call.ok())
    return call.status();
  std::vector<int64_t> off = offsetsOf(counts);
  int64_t e = sizeOf(type), i = call->index, n = group.size();
  if (!fitsInt(off.back()))
    return failed(*call, "more than 2^31 elements");
  absl::Status s;
  if (call->native && n > 1) {
    std::vector<int> c = ints(counts);
    s = blocking(*call, [&] {
      return MPI_Reduce_scatter(in, out, c.data(), types.type(type),
                                types.op(type, reduce), call->comm);
    });
    if (s.ok() && reduce == ReduceKind::Avg)
      divide(out, counts[i], type, n);
  } else {
    std::vector<char> work(static_cast<const char *>(in),
                           static_cast<const char *>(in) + off.back() * e);
    s = ringReduceScatter(*call, work.data(), off, type, reduce);
    if (s.ok())
      copyBytes(out, work.data() + off[i] * e, counts[i] * e);
  }
  countRing(off, i, type, true);
  auto &[bs, br] = counters.bytes["reduce_scatter"];
  bs += counters.bytesSent - before;
  br += counters.bytesReceived - beforeR;
  return s;
}

absl::Status MpiComm::allToAll(const void *in,
                               std::span<const int64_t> sendCounts, void *out,
                               std::span<const int64_t> recvCounts,
                               CommType type, std::span<const int64_t> group) {
  int64_t n = group.size();
  if (static_cast<int64_t>(sendCounts.size()) != n ||
      static_cast<int64_t>(recvCounts.size()) != n)
    return absl::InvalidArgumentError("all_to_all: one count per member");
  // Members send different counts: the signature holds only the type.
  absl::StatusOr<Call> call =
      begin("all_to_all", group, absl::StrCat(nameOf(type)));
  if (!call.ok())
    return call.status();
  std::vector<int64_t> so = offsetsOf(sendCounts), ro = offsetsOf(recvCounts);
  if (!fitsInt(so.back()) || !fitsInt(ro.back()))
    return failed(*call, "more than 2^31 elements");
  int64_t e = sizeOf(type), i = call->index;
  absl::Status s;
  if (call->native && n > 1) {
    std::vector<int> sc = ints(sendCounts), rc = ints(recvCounts),
                     sd = displs(sendCounts), rd = displs(recvCounts);
    s = blocking(*call, [&] {
      return MPI_Alltoallv(in, sc.data(), sd.data(), types.type(type), out,
                           rc.data(), rd.data(), types.type(type), call->comm);
    });
  } else {
    std::vector<MPI_Request> reqs;
    for (int64_t j = 0; j < n; ++j) {
      if (j == i) {
        copyBytes(static_cast<char *>(out) + ro[j] * e,
                  static_cast<const char *>(in) + so[j] * e, recvCounts[j] * e);
        continue;
      }
      isend(static_cast<const char *>(in) + so[j] * e, sendCounts[j] * e,
            group[j], reqs);
      irecv(static_cast<char *>(out) + ro[j] * e, recvCounts[j] * e, group[j],
            reqs);
    }
    s = exchange(*call, reqs);
  }
  auto &[bs, br] = counters.bytes["all_to_all"];
  for (int64_t j = 0; j < n; ++j)
    if (j != i) {
      counters.bytesSent += sendCounts[j] * e;
      counters.bytesReceived += recvCounts[j] * e;
      bs += sendCounts[j] * e;
      br += recvCounts[j] * e;
    }
  return s;
}

absl::Status MpiComm::broadcast(void *data, int64_t count, CommType type,
                                int64_t root, std::span<const int64_t> group) {
  int64_t n = group.size();
  if (root < 0 || root >= n)
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast: root ", root, " is outside the group"));
  absl::StatusOr<Call> call =
      begin("broadcast", group,
            absl::StrCat(count, " x ", nameOf(type), " from member ", root));
  if (!call.ok())
    return call.status();
  if (!fitsInt(count))
    return failed(*call, "more than 2^31 elements");
  int64_t e = sizeOf(type), i = call->index;
  absl::Status s;
  if (n == 1) {
    s = absl::OkStatus();
  } else if (call->native) {
    s = blocking(*call, [&] {
      return MPI_Bcast(data, static_cast<int>(count), types.type(type),
                       static_cast<int>(root), call->comm);
    });
  } else {
    std::vector<MPI_Request> reqs;
    if (i == root) {
      for (int64_t j = 0; j < n; ++j)
        if (j != root)
          isend(data, count * e, group[j], reqs);
    } else {
      irecv(data, count * e, group[root], reqs);
    }
    s = exchange(*call, reqs);
  }
  auto &[bs, br] = counters.bytes["broadcast"];
  if (i == root) {
    counters.bytesSent += (n - 1) * count * e;
    bs += (n - 1) * count * e;
  } else {
    counters.bytesReceived += count * e;
    br += count * e;
  }
  return s;
}

absl::Status MpiComm::checkMessage(const char *kind, int64_t peer, int64_t tag,
                                   int64_t bytes) const {
  if (world.isAborted())
    return releasedByAbort(world.abortStatus(), kind);
  if (peer < 0 || peer >= world.size())
    return absl::InvalidArgumentError(
        absl::StrCat(kind, ": peer ", peer, " is outside the world"));
  int64_t k = world.perProcess;
  if (tag < 0 || tag > (INT32_MAX / 2 - 16) / (k * k) || !fitsInt(bytes))
    return absl::InvalidArgumentError(
        absl::StrCat(kind, ": tag ", tag, " or size out of MPI's range"));
  return absl::OkStatus();
}

absl::Status MpiComm::send(const void *data, int64_t count, CommType type,
                           int64_t peer, int64_t tag) {
  int64_t bytes = count * sizeOf(type);
  if (absl::Status s = checkMessage("send", peer, tag, bytes); !s.ok())
    return s;
  int64_t k = world.perProcess;
  // The message is copied, so that the send does not wait for its receive.
  std::erase_if(pendingSends, [](auto &p) {
    int done = 0;
    MPI_Test(&p.first, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
  pendingSends.emplace_back(
      MPI_REQUEST_NULL,
      std::vector<char>(static_cast<const char *>(data),
                        static_cast<const char *>(data) + bytes));
  int mpiTag = static_cast<int>(INT32_MAX / 2 + tag * k * k + (myRank % k) * k +
                                peer % k);
  MPI_Isend(pendingSends.back().second.data(), static_cast<int>(bytes),
            MPI_BYTE, static_cast<int>(world.processOf(peer)), mpiTag,
            world.p2p, &pendingSends.back().first);
  if (peer != myRank)
    counters.bytesSent += bytes;
  ++counters.calls["send"];
  counters.bytes["send"].first += peer != myRank ? bytes : 0;
  return absl::OkStatus();
}

absl::Status MpiComm::recv(void *data, int64_t count, CommType type,
                           int64_t peer, int64_t tag) {
  int64_t bytes = count * sizeOf(type);
  if (absl::Status s = checkMessage("recv", peer, tag, bytes); !s.ok())
    return s;
  int64_t k = world.perProcess;
  int mpiTag = static_cast<int>(INT32_MAX / 2 + tag * k * k + (peer % k) * k +
                                myRank % k);
  std::string text =
      absl::StrCat("recv from rank ", peer, " tag ", tag, " (", count, " x ",
                   nameOf(type), ")", site.empty() ? "" : " for ", site);
  // Probe first: a message of another size is an error, not a truncation.
  int src = static_cast<int>(world.processOf(peer));
  world.setActivity(myRank, text);
  auto until = deadline();
  int spins = 0;
  MPI_Status st;
  while (true) {
    int flag = 0;
    MPI_Iprobe(src, mpiTag, world.p2p, &flag, &st);
    if (flag)
      break;
    if (world.isAborted()) {
      world.setActivity(myRank, "");
      return releasedByAbort(world.abortStatus(), text);
    }
    if (Clock::now() > until) {
      world.setActivity(myRank, "");
      int64_t who[] = {peer, myRank};
      return timedOut(text, who);
    }
    if (++spins > 1000)
      std::this_thread::sleep_for(
          std::chrono::microseconds(spins > 20000 ? 1000 : 20));
  }
  world.setActivity(myRank, "");
  int got = 0;
  MPI_Get_count(&st, MPI_BYTE, &got);
  if (got != bytes)
    return absl::InvalidArgumentError(
        absl::StrCat(text, ": expected ", bytes, " bytes, got ", got));
  if (int rc = MPI_Recv(data, got, MPI_BYTE, src, mpiTag, world.p2p,
                        MPI_STATUS_IGNORE);
      rc != MPI_SUCCESS)
    return absl::InternalError(absl::StrCat(text, ": ", mpiError(rc)));
  if (peer != myRank)
    counters.bytesReceived += bytes;
  ++counters.calls["recv"];
  counters.bytes["recv"].second += peer != myRank ? bytes : 0;
  return absl::OkStatus();
}

} // namespace pc::runtime
