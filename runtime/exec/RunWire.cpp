//===- RunWire.cpp - What a run's processes send each other ---------------===//

#include "runtime/exec/RunWire.h"

namespace pc::runtime {

void writeTensor(WireWriter &w, const HostTensor &t) {
  w.i64(static_cast<int64_t>(t.type));
  w.i64(static_cast<int64_t>(t.shape.size()));
  for (int64_t d : t.shape)
    w.i64(d);
  w.bytes(std::string_view(t.bytes.data(), t.bytes.size()));
}

HostTensor readTensor(WireReader &r) {
  HostTensor t;
  t.type = static_cast<CommType>(r.i64());
  int64_t rank = r.i64();
  for (int64_t d = 0; r.ok() && d < rank && d < 64; ++d)
    t.shape.push_back(r.i64());
  std::string_view b = r.bytes();
  t.bytes.assign(b.begin(), b.end());
  return t;
}

namespace {

void writeStats(WireWriter &w, const CommStats &s) {
  w.i64(s.bytesSent);
  w.i64(s.bytesReceived);
  w.i64(static_cast<int64_t>(s.calls.size()));
  for (auto &[k, n] : s.calls) {
    w.bytes(k);
    w.i64(n);
  }
  w.i64(static_cast<int64_t>(s.bytes.size()));
  for (auto &[k, b] : s.bytes) {
    w.bytes(k);
    w.i64(b.first);
    w.i64(b.second);
  }
}

CommStats readStats(WireReader &r) {
  CommStats s;
  s.bytesSent = r.i64();
  s.bytesReceived = r.i64();
  for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
    std::string k(r.bytes());
    s.calls[k] = r.i64();
  }
  for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
    std::string k(r.bytes());
    int64_t sent = r.i64();
    s.bytes[k] = {sent, r.i64()};
  }
  return s;
}

} // namespace

CommStats since(const CommStats &now, const CommStats &before) {
  CommStats d = now;
  d.bytesSent -= before.bytesSent;
  d.bytesReceived -= before.bytesReceived;
  for (auto &[kind, n] : before.calls)
    if ((d.calls[kind] -= n) == 0)
      d.calls.erase(kind);
  for (auto &[kind, b] : before.bytes) {
    auto &[sent, received] = d.bytes[kind];
    sent -= b.first;
    received -= b.second;
    if (sent == 0 && received == 0 && !d.calls.count(kind))
      d.bytes.erase(kind);
  }
  return d;
}

void writeRankResult(WireWriter &w, int64_t rank, const RankResult &r) {
  w.i64(rank);
  writeStats(w, r.stats);
  w.i64(r.peak);
  w.i64(r.tensorPeak);
  w.i64(static_cast<int64_t>(r.events.size()));
  for (const OpEvent &e : r.events) {
    w.bytes(e.name);
    w.bytes(e.stream);
    w.i64(e.iteration);
    w.f64(e.startUs);
    w.f64(e.durationUs);
    w.f64(e.cpuUs);
    w.bytes(e.action);
    w.bytes(e.detail);
  }
  w.i64(static_cast<int64_t>(r.iterationDoneUs.size()));
  for (double us : r.iterationDoneUs)
    w.f64(us);
  w.i64(static_cast<int64_t>(r.results.size()));
  for (const std::vector<HostTensor> &kept : r.results) {
    w.i64(static_cast<int64_t>(kept.size()));
    for (const HostTensor &t : kept)
      writeTensor(w, t);
  }
}

RankResult readRankResult(WireReader &r) {
  RankResult out;
  out.stats = readStats(r);
  out.peak = r.i64();
  out.tensorPeak = r.i64();
  for (int64_t e = r.i64(); r.ok() && e > 0; --e) {
    OpEvent ev;
    ev.name = std::string(r.bytes());
    ev.stream = std::string(r.bytes());
    ev.iteration = r.i64();
    ev.startUs = r.f64();
    ev.durationUs = r.f64();
    ev.cpuUs = r.f64();
    ev.action = std::string(r.bytes());
    ev.detail = std::string(r.bytes());
    out.events.push_back(std::move(ev));
  }
  for (int64_t n = r.i64(); r.ok() && n > 0; --n)
    out.iterationDoneUs.push_back(r.f64());
  for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
    std::vector<HostTensor> kept;
    for (int64_t k = r.i64(); r.ok() && k > 0; --k)
      kept.push_back(readTensor(r));
    out.results.push_back(std::move(kept));
  }
  return out;
}

void writeResults(WireWriter &w,
                  const std::vector<std::vector<HostTensor>> &all) {
  w.i64(static_cast<int64_t>(all.size()));
  for (const std::vector<HostTensor> &results : all) {
    w.i64(static_cast<int64_t>(results.size()));
    for (const HostTensor &t : results)
      writeTensor(w, t);
  }
}

std::vector<std::vector<HostTensor>> readResults(WireReader &r) {
  std::vector<std::vector<HostTensor>> all;
  for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
    std::vector<HostTensor> results;
    for (int64_t k = r.i64(); r.ok() && k > 0; --k)
      results.push_back(readTensor(r));
    all.push_back(std::move(results));
  }
  return all;
}

} // namespace pc::runtime
