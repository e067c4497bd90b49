//===- MpiWorld.cpp - Ranks in many processes, through MPI ----------------===//

#include "runtime/mpi/MpiWorld.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <set>
#include <unistd.h>

namespace pc::runtime {
namespace {

// Tags of the control communicator.
constexpr int kQueryTag = 1, kReplyTag = 2, kAbortTag = 3;
// Payloads of the process-level exchanges go in chunks below MPI's int
// counts.
constexpr int64_t kChunk = int64_t(1) << 30;

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, len);
}

/// The world whose activity the signal handler prints. A signal handler can
/// reach nothing else; there is one MPI world per process.
std::atomic<MpiWorld *> signalWorld{nullptr};

} // namespace

absl::StatusOr<std::unique_ptr<MpiWorld>>
MpiWorld::create(const WorldOptions &options) {
  if (options.devicesPerProcess < 1)
    return absl::InvalidArgumentError("an MPI world needs at least one "
                                      "device per process");
  if (!(options.timeoutSeconds > 0))
    return absl::InvalidArgumentError("the timeout must be positive");
  std::unique_ptr<MpiWorld> w(new MpiWorld(options));
  if (absl::Status s = w->init(); !s.ok())
    return s;
  return w;
}

absl::Status MpiWorld::init() {
  int ready = 0;
  MPI_Initialized(&ready);
  int provided = 0;
  if (!ready) {
    if (int rc =
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
        rc != MPI_SUCCESS)
      return absl::UnavailableError(
          absl::StrCat("MPI_Init_thread failed: ", mpiError(rc)));
    initializedHere = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE)
    return absl::FailedPreconditionError(
        "this MPI library does not give MPI_THREAD_MULTIPLE, which pc's "
        "runtime needs (a service thread answers status queries while "
        "ranks wait)");
  // Errors come back as codes, which become statuses; never MPI's abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  me = rank;
  processes = size;
  perProcess = options.devicesPerProcess;
  for (MPI_Comm *c : {&base, &p2p, &host, &control}) {
    if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, c); rc != MPI_SUCCESS)
      return absl::UnavailableError(
          absl::StrCat("MPI_Comm_dup failed: ", mpiError(rc)));
    MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
  }
  signalText.resize(perProcess);
  for (auto &t : signalText)
    t[0] = '\0';
  service = std::thread([this] { serve(); });
  MpiWorld *none = nullptr;
  if (signalWorld.compare_exchange_strong(none, this)) {
    std::signal(SIGTERM, &MpiWorld::onSignal);
    std::signal(SIGINT, &MpiWorld::onSignal);
  }
  return absl::OkStatus();
}

MpiWorld::~MpiWorld() {
  stop = true;
  if (service.joinable())
    service.join();
  MpiWorld *self = this;
  if (signalWorld.compare_exchange_strong(self, nullptr)) {
    std::signal(SIGTERM, SIG_DFL);
    std::signal(SIGINT, SIG_DFL);
  }
  // A call that never returned, or peers that failed, would make
  // MPI_Finalize wait forever: the process ends without it (the launcher
  // sees the exit status).
  if (broken || aborted)
    return;
  // Nor when a peer is gone without saying so: MPI_Finalize waits for
  // every process, so first wait for them (bounded) here.
  std::vector<MPI_Request> done(1);
  MPI_Ibarrier(host, &done[0]);
  auto until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options.timeoutSeconds));
  if (!waitAll(done, until, "the processes' final barrier").ok())
    return;
  for (auto &[group, comm] : groups)
    MPI_Comm_free(&comm);
  for (MPI_Comm *c : {&base, &p2p, &host, &control})
    if (*c != MPI_COMM_NULL)
      MPI_Comm_free(c);
  if (initializedHere)
    MPI_Finalize();
}

void MpiWorld::onSignal(int sig) {
  // Async-signal-safe: write(2) of prepared text, then the default action.
  MpiWorld *w = signalWorld.load();
  char head[160];
  int n = std::snprintf(head, sizeof head,
                        "pc: process %lld ended by signal %d (mpirun ends "
                        "every process when one dies or fails; its message "
                        "names that one)\n",
                        w ? static_cast<long long>(w->me) : -1LL, sig);
  if (n > 0)
    (void)!::write(STDERR_FILENO, head, static_cast<size_t>(n));
  if (w)
    for (auto &t : w->signalText)
      if (t[0])
        (void)!::write(STDERR_FILENO, t.data(), ::strnlen(t.data(), t.size()));
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void MpiWorld::setActivity(int64_t rank, const std::string &what) {
  {
    std::lock_guard<std::mutex> lock(mu);
    activity[rank] = what;
  }
  auto &t = signalText[rank % perProcess];
  if (what.empty()) {
    t[0] = '\0';
    return;
  }
  std::snprintf(t.data(), t.size(), "  rank %lld was waiting in %s\n",
                static_cast<long long>(rank), what.c_str());
}

absl::Status MpiWorld::beginRun(int64_t ranks) {
  if (isAborted())
    return abortStatus();
  if (ranks > size())
    return absl::InvalidArgumentError(absl::StrCat(
        "the programs need ", ranks, " ranks, but the MPI world has ", size(),
        " (", processes, " processes x ", perProcess,
        " devices each); start more processes or pass --devices cpu:K"));
  return absl::OkStatus();
}

absl::Status MpiWorld::abortStatus() {
  std::lock_guard<std::mutex> lock(mu);
  return cause;
}

void MpiWorld::abort(const absl::Status &why) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (aborted)
      return;
    cause = why.ok() ? absl::AbortedError("aborted") : why;
    aborted.store(true, std::memory_order_release);
    // Tell every other process, unless the cause came from one: a
    // released status is already known everywhere that matters.
    if (isReleasedByAbort(why))
      return;
    auto text = std::make_shared<std::string>(
        absl::StrCat(static_cast<int>(why.code()), ":", why.message()));
    for (int64_t p = 0; p < processes; ++p) {
      if (p == me)
        continue;
      MPI_Request r;
      if (MPI_Isend(text->data(), static_cast<int>(text->size()), MPI_CHAR,
                    static_cast<int>(p), kAbortTag, control, &r) == MPI_SUCCESS)
        outgoing.push_back({r, text});
    }
  }
}

void MpiWorld::serve() {
  while (!stop) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, control, &flag, &st) !=
            MPI_SUCCESS ||
        !flag) {
      // Reap finished sends now and then.
      {
        std::lock_guard<std::mutex> lock(mu);
        std::erase_if(outgoing, [](auto &o) {
          int done = 0;
          MPI_Test(&o.first, &done, MPI_STATUS_IGNORE);
          return done != 0;
        });
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    int count = 0;
    MPI_Get_count(&st, MPI_CHAR, &count);
    std::string text(static_cast<size_t>(count), '\0');
    MPI_Recv(text.data(), count, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, control,
             MPI_STATUS_IGNORE);
    if (st.MPI_TAG == kQueryTag) {
      std::string answer;
      {
        std::lock_guard<std::mutex> lock(mu);
        for (int64_t k = 0; k < perProcess; ++k) {
          int64_t rank = me * perProcess + k;
          auto it = activity.find(rank);
          absl::StrAppend(&answer, rank, "\t",
                          it == activity.end() || it->second.empty()
                              ? "not waiting in any collective or receive"
                              : "waiting in " + it->second,
                          "\n");
        }
      }
      auto reply = std::make_shared<std::string>(std::move(answer));
      MPI_Request r;
      if (MPI_Isend(reply->data(), static_cast<int>(reply->size()), MPI_CHAR,
                    st.MPI_SOURCE, kReplyTag, control, &r) == MPI_SUCCESS) {
        std::lock_guard<std::mutex> lock(mu);
        outgoing.push_back({r, reply});
      }
    } else if (st.MPI_TAG == kReplyTag) {
      std::lock_guard<std::mutex> lock(mu);
      replies[st.MPI_SOURCE] = std::move(text);
      repliesCv.notify_all();
    } else if (st.MPI_TAG == kAbortTag) {
      size_t colon = text.find(':');
      int code = std::atoi(text.substr(0, colon).c_str());
      absl::Status why(static_cast<absl::StatusCode>(code),
                       absl::StrCat("process ", st.MPI_SOURCE, " failed: ",
                                    colon == std::string::npos
                                        ? text
                                        : text.substr(colon + 1)));
      std::lock_guard<std::mutex> lock(mu);
      if (!aborted) {
        cause = releasedByAbort(why, "the run");
        aborted.store(true, std::memory_order_release);
      }
    }
  }
}

std::map<int64_t, std::string> MpiWorld::query(std::span<const int64_t> ranks) {
  std::lock_guard<std::mutex> one(queryMu);
  std::set<int64_t> procs;
  for (int64_t r : ranks)
    if (processOf(r) != me)
      procs.insert(processOf(r));
  {
    std::lock_guard<std::mutex> lock(mu);
    for (int64_t p : procs) {
      replies.erase(p);
      auto empty = std::make_shared<std::string>("?");
      MPI_Request r;
      if (MPI_Isend(empty->data(), 1, MPI_CHAR, static_cast<int>(p), kQueryTag,
                    control, &r) == MPI_SUCCESS)
        outgoing.push_back({r, empty});
    }
  }
  // A live process answers within milliseconds; give it a little longer
  // than that, bounded by the timeout.
  double grace = std::min(5.0, std::max(1.0, options.timeoutSeconds / 4));
  auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(grace));
  std::unique_lock<std::mutex> lock(mu);
  repliesCv.wait_until(lock, until, [&] {
    return std::all_of(procs.begin(), procs.end(),
                       [&](int64_t p) { return replies.count(p); });
  });
  std::map<int64_t, std::string> out;
  for (int64_t r : ranks) {
    int64_t p = processOf(r);
    if (p == me) {
      auto it = activity.find(r);
      out[r] = it == activity.end() || it->second.empty()
                   ? "not waiting in any collective or receive"
                   : "waiting in " + it->second;
      continue;
    }
    auto it = replies.find(p);
    if (it == replies.end()) {
      out[r] = absl::StrCat("did not answer a status query within ", grace,
                            " s: its process ", p, " is dead or hung");
      continue;
    }
    std::string prefix = absl::StrCat(r, "\t");
    size_t at = it->second.find(prefix);
    size_t end = at == std::string::npos ? at : it->second.find('\n', at);
    out[r] =
        at == std::string::npos
            ? "unknown"
            : it->second.substr(at + prefix.size(), end - at - prefix.size());
  }
  return out;
}

absl::Status MpiWorld::waitAll(std::vector<MPI_Request> &requests,
                               Clock::time_point deadline,
                               const std::string &what) {
  int spins = 0;
  while (true) {
    int done = 0;
    if (int rc = MPI_Testall(static_cast<int>(requests.size()), requests.data(),
                             &done, MPI_STATUSES_IGNORE);
        rc != MPI_SUCCESS)
      return absl::InternalError(
          absl::StrCat(what, ": MPI error: ", mpiError(rc)));
    if (done)
      return absl::OkStatus();
    if (isAborted()) {
      markBroken();
      return releasedByAbort(abortStatus(), what);
    }
    if (Clock::now() > deadline) {
      markBroken();
      return absl::DeadlineExceededError(
          absl::StrCat(what, ": nothing arrived within the timeout of ",
                       options.timeoutSeconds, " s"));
    }
    if (++spins > 1000)
      std::this_thread::sleep_for(
          std::chrono::microseconds(spins > 20000 ? 1000 : 20));
  }
}

absl::Status MpiWorld::sendBytes(const std::string &data, int peer, int tag) {
  auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options.timeoutSeconds));
  int64_t len = static_cast<int64_t>(data.size());
  std::vector<MPI_Request> reqs(1);
  MPI_Isend(&len, 1, MPI_INT64_T, peer, tag, host, &reqs[0]);
  for (int64_t off = 0; off < len; off += kChunk) {
    reqs.emplace_back();
    MPI_Isend(data.data() + off, static_cast<int>(std::min(kChunk, len - off)),
              MPI_CHAR, peer, tag, host, &reqs.back());
  }
  return waitAll(reqs, deadline,
                 absl::StrCat("sending results to process ", peer));
}

absl::StatusOr<std::string> MpiWorld::recvBytes(int peer, int tag) {
  auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options.timeoutSeconds));
  std::string what = absl::StrCat("waiting for process ", peer);
  int64_t len = 0;
  std::vector<MPI_Request> reqs(1);
  MPI_Irecv(&len, 1, MPI_INT64_T, peer, tag, host, &reqs[0]);
  if (absl::Status s = waitAll(reqs, deadline, what); !s.ok())
    return s;
  std::string data(static_cast<size_t>(len), '\0');
  reqs.clear();
  for (int64_t off = 0; off < len; off += kChunk) {
    reqs.emplace_back();
    MPI_Irecv(data.data() + off, static_cast<int>(std::min(kChunk, len - off)),
              MPI_CHAR, peer, tag, host, &reqs.back());
  }
  if (absl::Status s = waitAll(reqs, deadline, what); !s.ok())
    return s;
  return data;
}

absl::StatusOr<std::vector<std::string>> MpiWorld::gather(std::string mine) {
  constexpr int kTag = 11;
  if (me != 0) {
    if (absl::Status s = sendBytes(mine, 0, kTag); !s.ok())
      return s;
    return std::vector<std::string>{};
  }
  std::vector<std::string> all(processes);
  all[0] = std::move(mine);
  for (int64_t p = 1; p < processes; ++p) {
    absl::StatusOr<std::string> got = recvBytes(static_cast<int>(p), kTag);
    if (!got.ok())
      return got.status();
    all[p] = std::move(*got);
  }
  return all;
}

absl::StatusOr<std::string> MpiWorld::broadcast(std::string data) {
  constexpr int kTag = 12;
  if (me != 0)
    return recvBytes(0, kTag);
  for (int64_t p = 1; p < processes; ++p)
    if (absl::Status s = sendBytes(data, static_cast<int>(p), kTag); !s.ok())
      return s;
  return data;
}

absl::StatusOr<MPI_Comm> MpiWorld::groupComm(std::span<const int64_t> group) {
  std::vector<int64_t> key(group.begin(), group.end());
  {
    std::lock_guard<std::mutex> lock(groupsMu);
    if (auto it = groups.find(key); it != groups.end())
      return it->second;
  }
  // Members in group order, so that the communicator's rank i is member i.
  std::vector<int> procs;
  for (int64_t r : group)
    procs.push_back(static_cast<int>(processOf(r)));
  MPI_Group all, sub;
  MPI_Comm_group(base, &all);
  MPI_Group_incl(all, static_cast<int>(procs.size()), procs.data(), &sub);
  // The tag keeps concurrent creations of different groups apart.
  size_t h = 0;
  for (int p : procs)
    h = h * 1000003 + static_cast<size_t>(p);
  MPI_Comm comm = MPI_COMM_NULL;
  int rc = MPI_Comm_create_group(base, sub, static_cast<int>(h % 30000), &comm);
  MPI_Group_free(&sub);
  MPI_Group_free(&all);
  if (rc != MPI_SUCCESS)
    return absl::InternalError(
        absl::StrCat("creating the communicator of ranks [",
                     absl::StrJoin(group, ", "), "]: ", mpiError(rc)));
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  std::lock_guard<std::mutex> lock(groupsMu);
  groups[key] = comm;
  return comm;
}

} // namespace pc::runtime
