//===- OrderCheck.cpp - Ranks' communication orders, checked together -----===//

#include "runtime/exec/OrderCheck.h"

#include "runtime/comm/Wire.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <deque>
#include <numeric>

namespace pc::runtime {
namespace {

std::string describe(int64_t rank, const CommEvent &e) {
  return absl::StrCat("rank ", rank, "'s ", e.what, " (iteration ", e.iteration,
                      ")");
}

/// Nodes are (rank, position); a collective's members' nodes are merged.
struct Graph {
  std::vector<int64_t> parent;
  int64_t find(int64_t x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
};

} // namespace

std::string
encodeOrders(const std::map<int64_t, std::vector<CommEvent>> &byRank) {
  WireWriter w;
  w.i64(static_cast<int64_t>(byRank.size()));
  for (auto &[rank, events] : byRank) {
    w.i64(rank);
    w.i64(static_cast<int64_t>(events.size()));
    for (const CommEvent &e : events) {
      w.i64(e.iteration);
      w.bytes(e.what);
      w.bytes(e.program);
      w.i64(e.op);
      w.bytes(e.signature);
      w.i64(static_cast<int64_t>(e.group.size()));
      for (int64_t r : e.group)
        w.i64(r);
      for (auto *messages : {&e.sends, &e.recvs}) {
        w.i64(static_cast<int64_t>(messages->size()));
        for (const CommEvent::Message &m : *messages) {
          w.i64(m.peer);
          w.i64(m.tag);
          w.bytes(m.piece);
        }
      }
    }
  }
  return w.take();
}

absl::Status decodeOrders(std::string_view bytes,
                          std::map<int64_t, std::vector<CommEvent>> &into) {
  WireReader r(bytes);
  for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
    std::vector<CommEvent> &events = into[r.i64()];
    for (int64_t k = r.i64(); r.ok() && k > 0; --k) {
      CommEvent e;
      e.iteration = r.i64();
      e.what = std::string(r.bytes());
      e.program = std::string(r.bytes());
      e.op = r.i64();
      e.signature = std::string(r.bytes());
      for (int64_t g = r.i64(); r.ok() && g > 0; --g)
        e.group.push_back(r.i64());
      for (auto *messages : {&e.sends, &e.recvs})
        for (int64_t m = r.i64(); r.ok() && m > 0; --m) {
          CommEvent::Message message;
          message.peer = r.i64();
          message.tag = r.i64();
          message.piece = std::string(r.bytes());
          messages->push_back(std::move(message));
        }
      events.push_back(std::move(e));
    }
  }
  if (!r.ok())
    return absl::InternalError("a process sent a garbled order");
  return absl::OkStatus();
}

absl::Status
checkOrders(const std::map<int64_t, std::vector<CommEvent>> &byRank) {
  // Node numbering.
  std::map<int64_t, int64_t> first;
  int64_t count = 0;
  for (auto &[rank, events] : byRank) {
    first[rank] = count;
    count += static_cast<int64_t>(events.size());
  }
  Graph g;
  g.parent.resize(count);
  std::iota(g.parent.begin(), g.parent.end(), 0);

  // Collectives: the k-th over a group is one node for all its members.
  std::map<std::vector<int64_t>, std::map<int64_t, std::vector<int64_t>>>
      byGroup; // group -> member -> its positions
  for (auto &[rank, events] : byRank)
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].group.size() > 1)
        byGroup[events[i].group][rank].push_back(static_cast<int64_t>(i));
  for (auto &[group, members] : byGroup) {
    int64_t lead = group.front();
    for (int64_t m : group)
      if (!byRank.count(m))
        return absl::InvalidArgumentError(absl::StrCat(
            "rank ", m, " has no order, but collectives over ranks [",
            absl::StrJoin(group, ", "), "] need it"));
    const std::vector<int64_t> &mine = members[lead];
    for (int64_t m : group) {
      const std::vector<int64_t> &theirs = members[m];
      for (size_t k = 0; k < std::max(mine.size(), theirs.size()); ++k) {
        if (k >= mine.size() || k >= theirs.size()) {
          int64_t more = k < mine.size() ? lead : m;
          const std::vector<int64_t> &at = k < mine.size() ? mine : theirs;
          return absl::InvalidArgumentError(absl::StrCat(
              "the orders do not match: ",
              describe(more, byRank.at(more)[at[k]]), " is collective #", k + 1,
              " over ranks [", absl::StrJoin(group, ", "), "], which rank ",
              more == lead ? m : lead, " never issues"));
        }
        const CommEvent &a = byRank.at(lead)[mine[k]];
        const CommEvent &b = byRank.at(m)[theirs[k]];
        if (a.signature != b.signature)
          return absl::InvalidArgumentError(absl::StrCat(
              "the ranks disagree on collective #", k + 1, " over ranks [",
              absl::StrJoin(group, ", "), "]: ", describe(lead, a), " is ",
              a.signature, " but ", describe(m, b), " is ", b.signature));
        if (a.iteration != b.iteration ||
            (a.program == b.program && a.op != b.op))
          return absl::InvalidArgumentError(
              absl::StrCat("the orders do not match: collective #", k + 1,
                           " over ranks [", absl::StrJoin(group, ", "), "] is ",
                           describe(lead, a), " but ", describe(m, b)));
        int64_t x = g.find(first[lead] + mine[k]),
                y = g.find(first[m] + theirs[k]);
        g.parent[y] = x;
      }
    }
  }

  // Edges: each rank's order, and each message from its send to its
  // receive (the k-th of a (from, to, tag)).
  std::vector<std::pair<int64_t, int64_t>> edges;
  struct End {
    int64_t node, rank;
    const CommEvent *event;
    const std::string *piece;
  };
  using Key = std::tuple<int64_t, int64_t, int64_t>; // from, to, tag
  std::map<Key, std::vector<End>> sent, received;
  for (auto &[rank, events] : byRank)
    for (size_t i = 0; i < events.size(); ++i) {
      int64_t node = first[rank] + static_cast<int64_t>(i);
      if (i > 0)
        edges.push_back({node - 1, node});
      for (const CommEvent::Message &m : events[i].sends)
        sent[{rank, m.peer, m.tag}].push_back(
            {node, rank, &events[i], &m.piece});
      for (const CommEvent::Message &m : events[i].recvs)
        received[{m.peer, rank, m.tag}].push_back(
            {node, rank, &events[i], &m.piece});
    }
  for (auto &[key, recvs] : received)
    sent.try_emplace(key);
  for (auto &[key, sends] : sent) {
    auto [from, to, tag] = key;
    const std::vector<End> &recvs = received[key];
    if (sends.size() != recvs.size()) {
      // The first message that has no other end.
      const End &odd = sends.size() > recvs.size() ? sends[recvs.size()]
                                                   : recvs[sends.size()];
      return absl::InvalidArgumentError(
          absl::StrCat("the orders do not match: rank ", from, " sends ",
                       sends.size(), " messages (tag ", tag, ") to rank ", to,
                       ", which receives ", recvs.size(), "; ",
                       describe(odd.rank, *odd.event), " has no matching ",
                       sends.size() > recvs.size() ? "receive" : "send"));
    }
    for (size_t k = 0; k < recvs.size(); ++k) {
      if (*sends[k].piece != *recvs[k].piece)
        return absl::InvalidArgumentError(absl::StrCat(
            "the ranks disagree on message #", k + 1, " (tag ", tag,
            ") from rank ", from, " to rank ", to, ": ",
            describe(from, *sends[k].event), " sends ", *sends[k].piece,
            " but ", describe(to, *recvs[k].event), " receives ",
            *recvs[k].piece));
      edges.push_back({sends[k].node, recvs[k].node});
    }
  }

  // A cycle among the merged nodes is a deadlock (Kahn's algorithm).
  std::map<int64_t, std::vector<int64_t>> out;
  std::map<int64_t, int64_t> indegree;
  for (int64_t n = 0; n < count; ++n)
    indegree.try_emplace(g.find(n), 0);
  for (auto [a, b] : edges) {
    int64_t x = g.find(a), y = g.find(b);
    if (x == y)
      continue;
    out[x].push_back(y);
    ++indegree[y];
  }
  std::deque<int64_t> ready;
  for (auto &[n, d] : indegree)
    if (d == 0)
      ready.push_back(n);
  size_t done = 0;
  while (!ready.empty()) {
    int64_t n = ready.front();
    ready.pop_front();
    ++done;
    for (int64_t m : out[n])
      if (--indegree[m] == 0)
        ready.push_back(m);
  }
  if (done == indegree.size())
    return absl::OkStatus();
  // Name the first op of each rank that can never fire.
  std::vector<std::string> stuck;
  for (auto &[rank, events] : byRank)
    for (size_t i = 0; i < events.size(); ++i)
      if (indegree[g.find(first[rank] + static_cast<int64_t>(i))] > 0) {
        stuck.push_back(describe(rank, events[i]));
        break;
      }
  return absl::InvalidArgumentError(absl::StrCat(
      "the ranks' orders would deadlock: ", absl::StrJoin(stuck, ", "),
      " each wait, directly or through other ranks, for a later "
      "op of their own"));
}

} // namespace pc::runtime
