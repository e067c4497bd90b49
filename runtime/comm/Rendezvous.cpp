//===- Rendezvous.cpp - One value from rank 0 to every process, over TCP --===//

#include "runtime/comm/Rendezvous.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

extern char **environ;

namespace pc::runtime {

namespace {

using Clock = std::chrono::steady_clock;

/// What each side sends first, so that a stray connection is refused.
constexpr uint32_t kMagic = 0x70637276; // "pcrv"

absl::StatusOr<int64_t> number(const std::map<std::string, std::string> &env,
                               const std::string &name) {
  int64_t v = 0;
  auto it = env.find(name);
  if (it == env.end() || !absl::SimpleAtoi(it->second, &v) || v < 0)
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be a number >= 0, not '",
                     it == env.end() ? "" : it->second, "'"));
  return v;
}

/// An fd closed on every path.
class Fd {
public:
  explicit Fd(int fd = -1) : fd(fd) {}
  Fd(Fd &&o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd &operator=(Fd &&o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
  int get() const { return fd; }

private:
  int fd;
};

double secondsLeft(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

/// Waits until `fd` is ready for `events`, or the deadline.
absl::Status waitFor(int fd, short events, Clock::time_point deadline,
                     const std::string &what) {
  for (;;) {
    double left = secondsLeft(deadline);
    if (left <= 0)
      return absl::DeadlineExceededError(absl::StrCat("rendezvous: ", what));
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min(left * 1000, 1e9)) + 1);
    if (r > 0)
      return absl::OkStatus();
    if (r < 0 && errno != EINTR)
      return absl::InternalError(
          absl::StrCat("rendezvous: poll: ", std::strerror(errno)));
  }
}

absl::Status sendAll(int fd, const void *data, size_t n,
                     Clock::time_point deadline) {
  const char *p = static_cast<const char *>(data);
  while (n > 0) {
    if (absl::Status s = waitFor(fd, POLLOUT, deadline, "sending"); !s.ok())
      return s;
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (k <= 0)
      return absl::UnavailableError(
          absl::StrCat("rendezvous: send: ", std::strerror(errno)));
    p += k;
    n -= static_cast<size_t>(k);
  }
  return absl::OkStatus();
}

absl::Status recvAll(int fd, void *data, size_t n, Clock::time_point deadline,
                     const std::string &what) {
  char *p = static_cast<char *>(data);
  while (n > 0) {
    if (absl::Status s = waitFor(fd, POLLIN, deadline, what); !s.ok())
      return s;
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (k <= 0)
      return absl::UnavailableError(absl::StrCat(
          "rendezvous: ", what, ": the peer closed the connection"));
    p += k;
    n -= static_cast<size_t>(k);
  }
  return absl::OkStatus();
}

struct Hello {
  uint32_t magic;
  uint32_t pad;
  int64_t rank, worldSize;
};

absl::StatusOr<std::string> serve(const LaunchEnv &env,
                                  const std::string &value,
                                  Clock::time_point deadline) {
  Fd listener(::socket(AF_INET6, SOCK_STREAM, 0));
  bool v6 = listener.get() >= 0;
  if (!v6)
    listener = Fd(::socket(AF_INET, SOCK_STREAM, 0));
  if (listener.get() < 0)
    return absl::InternalError(
        absl::StrCat("rendezvous: socket: ", std::strerror(errno)));
  int one = 1, zero = 0;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int bound;
  if (v6) {
    ::setsockopt(listener.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(env.port));
    bound = ::bind(listener.get(), reinterpret_cast<sockaddr *>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(env.port));
    bound = ::bind(listener.get(), reinterpret_cast<sockaddr *>(&a), sizeof a);
  }
  if (bound != 0 || ::listen(listener.get(), 128) != 0)
    return absl::UnavailableError(
        absl::StrCat("rendezvous: rank 0 cannot listen on port ", env.port,
                     ": ", std::strerror(errno)));
  std::vector<Fd> peers(env.worldSize);
  std::set<int64_t> arrived;
  while (static_cast<int64_t>(arrived.size()) < env.worldSize - 1) {
    if (absl::Status s = waitFor(listener.get(), POLLIN, deadline, "");
        !s.ok()) {
      std::vector<int64_t> missing;
      for (int64_t r = 1; r < env.worldSize; ++r)
        if (!arrived.count(r))
          missing.push_back(r);
      return absl::DeadlineExceededError(
          absl::StrCat("rendezvous: rank", missing.size() == 1 ? " " : "s ",
                       absl::StrJoin(missing, ", "), " of ", env.worldSize,
                       " did not connect to port ", env.port, " in time"));
    }
    Fd peer(::accept(listener.get(), nullptr, nullptr));
    if (peer.get() < 0)
      continue;
    Hello h{};
    if (!recvAll(peer.get(), &h, sizeof h, deadline, "a rank's hello").ok() ||
        h.magic != kMagic)
      continue; // Not one of ours.
    if (h.worldSize != env.worldSize)
      return absl::InvalidArgumentError(
          absl::StrCat("rendezvous: rank ", h.rank, " says the world has ",
                       h.worldSize, " ranks, rank 0 says ", env.worldSize));
    if (h.rank <= 0 || h.rank >= env.worldSize || arrived.count(h.rank))
      return absl::InvalidArgumentError(absl::StrCat(
          "rendezvous: rank ", h.rank,
          h.rank > 0 && h.rank < env.worldSize ? " connected twice"
                                               : " is outside the world",
          " (", env.worldSize, " ranks)"));
    arrived.insert(h.rank);
    peers[h.rank] = std::move(peer);
  }
  uint64_t size = value.size();
  for (int64_t r = 1; r < env.worldSize; ++r) {
    if (absl::Status s = sendAll(peers[r].get(), &size, sizeof size, deadline);
        !s.ok())
      return s;
    if (absl::Status s =
            sendAll(peers[r].get(), value.data(), value.size(), deadline);
        !s.ok())
      return s;
  }
  return value;
}

absl::StatusOr<std::string> join(const LaunchEnv &env,
                                 Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string port = std::to_string(env.port);
  absl::Status last = absl::UnavailableError("no address");
  // Rank 0 may not listen yet: retry until the deadline.
  for (int attempt = 0; secondsLeft(deadline) > 0; ++attempt) {
    if (attempt)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    addrinfo *found = nullptr;
    if (int e =
            ::getaddrinfo(env.masterAddr.c_str(), port.c_str(), &hints, &found);
        e != 0) {
      last = absl::InvalidArgumentError(absl::StrCat(
          "rendezvous: MASTER_ADDR '", env.masterAddr, "': ", gai_strerror(e)));
      continue;
    }
    for (addrinfo *a = found; a; a = a->ai_next) {
      Fd fd(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
      if (fd.get() < 0 || ::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
        last = absl::UnavailableError(absl::StrCat(
            "rendezvous: rank ", env.rank, " cannot reach rank 0 at ",
            env.masterAddr, ":", env.port, ": ", std::strerror(errno)));
        continue;
      }
      ::freeaddrinfo(found);
      found = nullptr;
      Hello h{kMagic, 0, env.rank, env.worldSize};
      if (absl::Status s = sendAll(fd.get(), &h, sizeof h, deadline); !s.ok())
        return s;
      uint64_t size = 0;
      std::string what =
          absl::StrCat("rank ", env.rank, " waiting for rank 0's value");
      if (absl::Status s =
              recvAll(fd.get(), &size, sizeof size, deadline, what);
          !s.ok())
        return s;
      if (size > (1 << 20))
        return absl::InvalidArgumentError("rendezvous: a value over 1 MiB");
      std::string value(size, '\0');
      if (absl::Status s =
              recvAll(fd.get(), value.data(), size, deadline, what);
          !s.ok())
        return s;
      return value;
    }
    if (found)
      ::freeaddrinfo(found);
  }
  return absl::DeadlineExceededError(last.message());
}

} // namespace

absl::StatusOr<LaunchEnv>
launchEnvFrom(const std::map<std::string, std::string> &env) {
  LaunchEnv out;
  auto has = [&](const char *name) { return env.count(name) > 0; };
  const char *rankVar = nullptr, *sizeVar = nullptr, *localVar = nullptr;
  if (has("RANK") && has("WORLD_SIZE")) {
    out.launcher = "torchrun";
    rankVar = "RANK";
    sizeVar = "WORLD_SIZE";
    localVar = "LOCAL_RANK";
  } else if (has("SLURM_PROCID") && has("SLURM_NTASKS")) {
    out.launcher = "slurm";
    rankVar = "SLURM_PROCID";
    sizeVar = "SLURM_NTASKS";
    localVar = "SLURM_LOCALID";
  } else if (has("OMPI_COMM_WORLD_RANK") && has("OMPI_COMM_WORLD_SIZE")) {
    out.launcher = "mpi";
    rankVar = "OMPI_COMM_WORLD_RANK";
    sizeVar = "OMPI_COMM_WORLD_SIZE";
    localVar = "OMPI_COMM_WORLD_LOCAL_RANK";
  } else {
    return out;
  }
  absl::StatusOr<int64_t> rank = number(env, rankVar),
                          size = number(env, sizeVar);
  if (!rank.ok())
    return rank.status();
  if (!size.ok())
    return size.status();
  if (*size < 1 || *rank >= *size)
    return absl::InvalidArgumentError(
        absl::StrCat(rankVar, "=", *rank, " is outside ", sizeVar, "=", *size));
  out.rank = *rank;
  out.worldSize = *size;
  if (has(localVar)) {
    absl::StatusOr<int64_t> local = number(env, localVar);
    if (!local.ok())
      return local.status();
    out.localRank = *local;
  }
  if (out.launcher == "mpi")
    return out; // MPI exchanges the id itself.
  if (has("MASTER_ADDR"))
    out.masterAddr = env.at("MASTER_ADDR");
  else if (out.launcher == "slurm" && has("SLURM_LAUNCH_NODE_IPADDR"))
    out.masterAddr = env.at("SLURM_LAUNCH_NODE_IPADDR");
  else if (out.worldSize > 1)
    return absl::InvalidArgumentError(
        "MASTER_ADDR is not set (rank 0's host, for the rendezvous)");
  out.port = 29500;
  if (has("MASTER_PORT")) {
    absl::StatusOr<int64_t> port = number(env, "MASTER_PORT");
    if (!port.ok() || *port < 1 || *port > 65535)
      return absl::InvalidArgumentError(
          absl::StrCat("MASTER_PORT must be a port number, not '",
                       env.at("MASTER_PORT"), "'"));
    out.port = static_cast<int>(*port);
  }
  return out;
}

absl::StatusOr<LaunchEnv> launchEnvFromEnvironment() {
  std::map<std::string, std::string> env;
  for (char **e = environ; e && *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos)
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return launchEnvFrom(env);
}

absl::StatusOr<std::string> rendezvous(const LaunchEnv &env,
                                       const std::string &value,
                                       double timeoutSeconds) {
  if (env.worldSize <= 1)
    return value;
  auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeoutSeconds));
  return env.rank == 0 ? serve(env, value, deadline) : join(env, deadline);
}

} // namespace pc::runtime
