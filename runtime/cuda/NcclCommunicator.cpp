//===- NcclCommunicator.cpp - Collectives between GPUs through NCCL -------===//

#include "runtime/cuda/NcclCommunicator.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>

namespace pc::cuda {

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t ncclType(CommType t) {
  switch (t) {
  case CommType::F32:
    return ncclFloat32;
  case CommType::F64:
    return ncclFloat64;
  case CommType::I32:
    return ncclInt32;
  case CommType::I64:
    return ncclInt64;
  case CommType::F16:
    return ncclFloat16;
  case CommType::BF16:
    return ncclBfloat16;
  case CommType::U8:
    return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t ncclOp(ReduceKind r) {
  switch (r) {
  case ReduceKind::Sum:
    return ncclSum;
  case ReduceKind::Max:
    return ncclMax;
  case ReduceKind::Min:
    return ncclMin;
  case ReduceKind::Avg:
    return ncclAvg;
  }
  return ncclSum;
}

std::string ranksOf(std::span<const int64_t> group) {
  return absl::StrCat("[", absl::StrJoin(group, ", "), "]");
}

} // namespace

struct NcclCommunicator::Comm {
  ncclComm_t comm = nullptr;
  /// Aborted by a failure: never used or destroyed again.
  bool aborted = false;
  std::vector<int64_t> members;
  int index = 0; // this rank's, in members
};

NcclCommunicator::NcclCommunicator(std::unique_ptr<runtime::Communicator> host,
                                   int64_t rank, int ordinal,
                                   double timeoutSeconds)
    : host(std::move(host)), me(rank), gpu(ordinal), timeout(timeoutSeconds) {
  watchdog = std::thread([this] { watch(); });
}

NcclCommunicator::~NcclCommunicator() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  wake.notify_all();
  watchdog.join();
  cudaSetDevice(gpu);
  bool clean = failure.ok();
  for (Pending &p : pending)
    cudaEventDestroy(static_cast<cudaEvent_t>(p.event));
  for (auto &[members, c] : comms)
    if (c->comm && !c->aborted) {
      // A communicator whose peers may be gone is aborted, not destroyed
      // (destroying waits for them).
      if (clean)
        ncclCommDestroy(c->comm);
      else
        ncclCommAbort(c->comm);
    }
}

absl::Status NcclCommunicator::failed() const {
  std::lock_guard<std::mutex> lock(mu);
  return failure;
}

void NcclCommunicator::fail(absl::Status why) {
  std::vector<ncclComm_t> all;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!failure.ok())
      return;
    // Set first: no call enqueues on a communicator once it is aborting.
    failure = std::move(why);
    for (auto &[members, c] : comms)
      if (c->comm && !c->aborted) {
        c->aborted = true;
        all.push_back(c->comm);
      }
  }
  // Kernels waiting for a peer that will not come return once aborted.
  for (ncclComm_t c : all)
    ncclCommAbort(c);
}

absl::Status NcclCommunicator::settle(Comm &c, const char *kind) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(c.comm, &state);
    if (r == ncclSuccess && state == ncclSuccess)
      return absl::OkStatus();
    if (r != ncclSuccess || state != ncclInProgress) {
      absl::Status s = absl::InternalError(absl::StrCat(
          "rank ", me, ": NCCL ", kind, " over ranks ", ranksOf(c.members),
          site.empty() ? "" : " (" + site + ")", ": ",
          ncclGetErrorString(r != ncclSuccess ? r : state), ": ",
          ncclGetLastError(c.comm)));
      fail(s);
      return s;
    }
    if (Clock::now() > deadline) {
      absl::Status s = absl::DeadlineExceededError(
          absl::StrCat("rank ", me, ": NCCL ", kind, " over ranks ",
                       ranksOf(c.members), " did not start within ",
                       timeout.count(), " s: a member did not come"));
      fail(s);
      return s;
    }
    std::this_thread::yield();
  }
}

absl::StatusOr<NcclCommunicator::Comm *>
NcclCommunicator::commOf(std::span<const int64_t> group, const char *kind) {
  std::vector<int64_t> key(group.begin(), group.end());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!failure.ok())
      return failure;
    auto it = comms.find(key);
    if (it != comms.end())
      return it->second.get();
  }
  absl::StatusOr<int64_t> index =
      runtime::memberIndex(kind, group, me, /*worldSize=*/INT64_MAX);
  if (!index.ok())
    return index.status();
  // The group's first member makes the id; the host endpoint hands it on.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (*index == 0)
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
      return absl::InternalError(absl::StrCat(
          "rank ", me, ": ncclGetUniqueId: ", ncclGetErrorString(r)));
  if (group.size() > 1)
    if (absl::Status s =
            host->broadcast(&id, sizeof id, CommType::U8, 0, group);
        !s.ok())
      return s;
  auto c = std::make_unique<Comm>();
  c->members = key;
  c->index = static_cast<int>(*index);
  if (cudaError_t e = cudaSetDevice(gpu); e != cudaSuccess)
    return absl::InternalError(
        absl::StrCat("rank ", me, ": cudaSetDevice: ", cudaGetErrorString(e)));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(
      &c->comm, static_cast<int>(group.size()), id, c->index, &config);
  if (r != ncclSuccess && r != ncclInProgress)
    return absl::InternalError(
        absl::StrCat("rank ", me, ": NCCL initialisation over ranks ",
                     ranksOf(group), ": ", ncclGetErrorString(r)));
  if (absl::Status s = settle(*c, "initialisation"); !s.ok()) {
    ncclCommAbort(c->comm);
    return s;
  }
  std::lock_guard<std::mutex> lock(mu);
  return comms.emplace(std::move(key), std::move(c)).first->second.get();
}

absl::Status NcclCommunicator::issue(Comm &c, const char *kind,
                                     const std::function<int()> &enqueue) {
  if (absl::Status s = failed(); !s.ok())
    return s;
  auto r = static_cast<ncclResult_t>(enqueue());
  if (r != ncclSuccess && r != ncclInProgress) {
    absl::Status s = absl::InternalError(absl::StrCat(
        "rank ", me, ": NCCL ", kind, " over ranks ", ranksOf(c.members),
        site.empty() ? "" : " (" + site + ")", ": ", ncclGetErrorString(r),
        ": ", ncclGetLastError(c.comm)));
    fail(s);
    return s;
  }
  if (absl::Status s = settle(c, kind); !s.ok())
    return s;
  // The watchdog's view of the call: done when this event is.
  cudaEvent_t done = nullptr;
  if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventRecord(done, static_cast<cudaStream_t>(stream)) != cudaSuccess)
    return absl::InternalError(
        absl::StrCat("rank ", me, ": cannot record the end of ", kind));
  {
    std::lock_guard<std::mutex> lock(mu);
    pending.push_back(
        {done,
         Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout),
         absl::StrCat(kind, " over ranks ", ranksOf(c.members),
                      site.empty() ? "" : " (" + site + ")"),
         &c});
  }
  wake.notify_all();
  return absl::OkStatus();
}

void NcclCommunicator::watch() {
  cudaSetDevice(gpu);
  std::unique_lock<std::mutex> lock(mu);
  while (!stopping) {
    wake.wait_for(lock, std::chrono::milliseconds(50));
    // Finished calls leave in order.
    while (!pending.empty() && cudaEventQuery(static_cast<cudaEvent_t>(
                                   pending.front().event)) == cudaSuccess) {
      cudaEventDestroy(static_cast<cudaEvent_t>(pending.front().event));
      pending.pop_front();
    }
    absl::Status why;
    for (auto &[members, c] : comms) {
      ncclResult_t state = ncclSuccess;
      if (c->comm && !c->aborted &&
          ncclCommGetAsyncError(c->comm, &state) == ncclSuccess &&
          state != ncclSuccess && state != ncclInProgress) {
        why = absl::UnavailableError(absl::StrCat(
            "rank ", me, ": NCCL over ranks ", ranksOf(members), ": ",
            ncclGetErrorString(state), " (a peer failed or left)"));
        break;
      }
    }
    if (why.ok() && !pending.empty() && Clock::now() > pending.front().deadline)
      why = absl::DeadlineExceededError(
          absl::StrCat("rank ", me, ": NCCL ", pending.front().what,
                       " did not complete within ", timeout.count(),
                       " s: a member died or stalls"));
    if (!why.ok() && failure.ok()) {
      lock.unlock();
      fail(why);
      lock.lock();
    }
  }
}

void NcclCommunicator::tally(const char *kind, int64_t sent, int64_t received) {
  std::lock_guard<std::mutex> lock(mu);
  counters.calls[kind]++;
  counters.bytesSent += sent;
  counters.bytesReceived += received;
  auto &[s, r] = counters.bytes[kind];
  s += sent;
  r += received;
}

CommStats NcclCommunicator::stats() const {
  std::lock_guard<std::mutex> lock(mu);
  return counters;
}

absl::Status NcclCommunicator::allReduce(void *data, int64_t count,
                                         CommType type, ReduceKind reduce,
                                         std::span<const int64_t> group) {
  absl::StatusOr<Comm *> c = commOf(group, "all_reduce");
  if (!c.ok())
    return c.status();
  int64_t bytes = count * runtime::sizeOf(type);
  tally("all_reduce", bytes, bytes);
  return issue(**c, "all_reduce", [&] {
    return ncclAllReduce(data, data, count, ncclType(type), ncclOp(reduce),
                         (*c)->comm, static_cast<cudaStream_t>(stream));
  });
}

absl::Status NcclCommunicator::allGather(const void *in, void *out,
                                         std::span<const int64_t> counts,
                                         CommType type,
                                         std::span<const int64_t> group) {
  absl::StatusOr<Comm *> c = commOf(group, "all_gather");
  if (!c.ok())
    return c.status();
  int64_t e = runtime::sizeOf(type), total = 0;
  for (int64_t n : counts)
    total += n;
  int self = (*c)->index;
  tally("all_gather", counts[self] * e, (total - counts[self]) * e);
  bool even = std::all_of(counts.begin(), counts.end(),
                          [&](int64_t n) { return n == counts[0]; });
  auto s = static_cast<cudaStream_t>(stream);
  return issue(**c, "all_gather", [&]() -> int {
    if (even)
      return ncclAllGather(in, out, counts[0], ncclType(type), (*c)->comm, s);
    // Uneven pieces: one broadcast per member, grouped.
    ncclGroupStart();
    int64_t offset = 0;
    for (size_t j = 0; j < counts.size(); ++j) {
      char *at = static_cast<char *>(out) + offset * e;
      ncclBroadcast(static_cast<int>(j) == self ? in : at, at, counts[j],
                    ncclType(type), static_cast<int>(j), (*c)->comm, s);
      offset += counts[j];
    }
    return ncclGroupEnd();
  });
}

absl::Status NcclCommunicator::reduceScatter(const void *in, void *out,
                                             std::span<const int64_t> counts,
                                             CommType type, ReduceKind reduce,
                                             std::span<const int64_t> group) {
  absl::StatusOr<Comm *> c = commOf(group, "reduce_scatter");
  if (!c.ok())
    return c.status();
  int64_t e = runtime::sizeOf(type), total = 0;
  for (int64_t n : counts)
    total += n;
  int self = (*c)->index;
  tally("reduce_scatter", (total - counts[self]) * e,
        (total - counts[self]) * e);
  bool even = std::all_of(counts.begin(), counts.end(),
                          [&](int64_t n) { return n == counts[0]; });
  auto s = static_cast<cudaStream_t>(stream);
  return issue(**c, "reduce_scatter", [&]() -> int {
    if (even)
      return ncclReduceScatter(in, out, counts[0], ncclType(type),
                               ncclOp(reduce), (*c)->comm, s);
    // Uneven pieces: one reduce to each member, grouped.
    ncclGroupStart();
    int64_t offset = 0;
    for (size_t j = 0; j < counts.size(); ++j) {
      ncclReduce(static_cast<const char *>(in) + offset * e, out, counts[j],
                 ncclType(type), ncclOp(reduce), static_cast<int>(j),
                 (*c)->comm, s);
      offset += counts[j];
    }
    return ncclGroupEnd();
  });
}

absl::Status
NcclCommunicator::allToAll(const void *in, std::span<const int64_t> sendCounts,
                           void *out, std::span<const int64_t> recvCounts,
                           CommType type, std::span<const int64_t> group) {
  absl::StatusOr<Comm *> c = commOf(group, "all_to_all");
  if (!c.ok())
    return c.status();
  int64_t e = runtime::sizeOf(type), sent = 0, received = 0;
  int self = (*c)->index;
  for (size_t j = 0; j < sendCounts.size(); ++j)
    if (static_cast<int>(j) != self) {
      sent += sendCounts[j] * e;
      received += recvCounts[j] * e;
    }
  tally("all_to_all", sent, received);
  auto s = static_cast<cudaStream_t>(stream);
  return issue(**c, "all_to_all", [&]() -> int {
    ncclGroupStart();
    int64_t so = 0, ro = 0;
    for (size_t j = 0; j < sendCounts.size(); ++j) {
      int peer = static_cast<int>(j);
      if (sendCounts[j])
        ncclSend(static_cast<const char *>(in) + so * e, sendCounts[j],
                 ncclType(type), peer, (*c)->comm, s);
      if (recvCounts[j])
        ncclRecv(static_cast<char *>(out) + ro * e, recvCounts[j],
                 ncclType(type), peer, (*c)->comm, s);
      so += sendCounts[j];
      ro += recvCounts[j];
    }
    return ncclGroupEnd();
  });
}

absl::Status NcclCommunicator::broadcast(void *data, int64_t count,
                                         CommType type, int64_t root,
                                         std::span<const int64_t> group) {
  absl::StatusOr<Comm *> c = commOf(group, "broadcast");
  if (!c.ok())
    return c.status();
  int64_t bytes = count * runtime::sizeOf(type);
  bool isRoot = (*c)->index == root;
  tally("broadcast", isRoot ? bytes : 0, isRoot ? 0 : bytes);
  return issue(**c, "broadcast", [&] {
    return ncclBroadcast(data, data, count, ncclType(type),
                         static_cast<int>(root), (*c)->comm,
                         static_cast<cudaStream_t>(stream));
  });
}

absl::Status NcclCommunicator::send(const void *data, int64_t count,
                                    CommType type, int64_t peer, int64_t tag) {
  (void)tag; // A pair's messages match in order, as their tags do.
  int64_t pair[2] = {std::min(me, peer), std::max(me, peer)};
  absl::StatusOr<Comm *> c = commOf(pair, "send");
  if (!c.ok())
    return c.status();
  tally("send", count * runtime::sizeOf(type), 0);
  return issue(**c, "send", [&] {
    return ncclSend(data, count, ncclType(type), 1 - (*c)->index, (*c)->comm,
                    static_cast<cudaStream_t>(stream));
  });
}

absl::Status NcclCommunicator::recv(void *data, int64_t count, CommType type,
                                    int64_t peer, int64_t tag) {
  (void)tag;
  int64_t pair[2] = {std::min(me, peer), std::max(me, peer)};
  absl::StatusOr<Comm *> c = commOf(pair, "recv");
  if (!c.ok())
    return c.status();
  tally("recv", 0, count * runtime::sizeOf(type));
  return issue(**c, "recv", [&] {
    return ncclRecv(data, count, ncclType(type), 1 - (*c)->index, (*c)->comm,
                    static_cast<cudaStream_t>(stream));
  });
}

} // namespace pc::cuda
