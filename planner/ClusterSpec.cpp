//===- ClusterSpec.cpp - Reading cluster specs ----------------------------===//
//
// Every quantity is a JSON number in base units (bytes, bytes/s, s, FLOP/s)
// or a string with a unit ("80 GB", "300 GB/s", "200 Gb/s", "3 us",
// "312 TFLOP/s"). Unknown keys are errors, so that a typo never silently
// leaves a default in place.
//
//===----------------------------------------------------------------------===//

#include "planner/ClusterSpec.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <optional>
#include <set>

namespace pc::planner {
namespace {

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// A number followed by an optional unit from `units` (unit -> factor).
std::optional<double>
parseWithUnit(llvm::StringRef text,
              std::initializer_list<std::pair<llvm::StringRef, double>> units) {
  text = text.trim();
  size_t end = 0;
  while (end < text.size() &&
         (llvm::isDigit(text[end]) || text[end] == '.' || text[end] == 'e' ||
          text[end] == 'E' || text[end] == '+' || text[end] == '-'))
    ++end;
  // "5e" followed by no digit is the number 5 and a unit starting with 'e';
  // no unit here starts so, so a failed parse is an error either way.
  double value;
  if (text.take_front(end).getAsDouble(value) || !std::isfinite(value))
    return std::nullopt;
  llvm::StringRef unit = text.drop_front(end).trim();
  if (unit.empty())
    return value;
  for (const auto &[name, factor] : units)
    if (unit == name)
      return value * factor;
  return std::nullopt;
}

enum class Quantity { Bytes, Bandwidth, Seconds, Flops, Plain };

const char *expected(Quantity q) {
  switch (q) {
  case Quantity::Bytes:
    return "bytes, or a size such as \"80 GB\" or \"64 GiB\"";
  case Quantity::Bandwidth:
    return "bytes/s, or a rate such as \"300 GB/s\" or \"200 Gb/s\"";
  case Quantity::Seconds:
    return "seconds, or a time such as \"5 us\"";
  case Quantity::Flops:
    return "FLOP/s, or a rate such as \"312 TFLOP/s\"";
  case Quantity::Plain:
    return "a number";
  }
  return "a number";
}

std::optional<double> parseQuantity(llvm::StringRef text, Quantity q) {
  switch (q) {
  case Quantity::Bytes:
    return parseWithUnit(text, {{"B", 1},
                                {"KB", 1e3},
                                {"MB", 1e6},
                                {"GB", 1e9},
                                {"TB", 1e12},
                                {"KiB", 1024.0},
                                {"MiB", 1048576.0},
                                {"GiB", 1073741824.0},
                                {"TiB", 1099511627776.0}});
  case Quantity::Bandwidth:
    return parseWithUnit(text, {{"B/s", 1},
                                {"KB/s", 1e3},
                                {"MB/s", 1e6},
                                {"GB/s", 1e9},
                                {"TB/s", 1e12},
                                {"Gb/s", 1e9 / 8},
                                {"Tb/s", 1e12 / 8}});
  case Quantity::Seconds:
    return parseWithUnit(text,
                         {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}});
  case Quantity::Flops:
    return parseWithUnit(text, {{"FLOP/s", 1},
                                {"GFLOP/s", 1e9},
                                {"TFLOP/s", 1e12},
                                {"PFLOP/s", 1e15},
                                {"GF/s", 1e9},
                                {"TF/s", 1e12}});
  case Quantity::Plain:
    return parseWithUnit(text, {});
  }
  return std::nullopt;
}

/// Reads one object's fields, checking names and kinds.
class Reader {
public:
  Reader(const llvm::json::Object &obj, std::string where, std::string source)
      : obj(obj), where(std::move(where)), source(std::move(source)) {}

  /// A positive quantity; `required` ones must be present.
  llvm::Error quantity(llvm::StringRef key, Quantity q, double &out,
                       bool required = true) {
    seen.insert(key.str());
    const llvm::json::Value *v = obj.get(key);
    if (!v)
      return required ? error(key, "is missing") : llvm::Error::success();
    std::optional<double> value;
    if (std::optional<double> n = v->getAsNumber())
      value = *n;
    else if (std::optional<llvm::StringRef> s = v->getAsString())
      value = parseQuantity(*s, q);
    if (!value)
      return error(key, llvm::Twine("must be ") + expected(q));
    if (!(*value > 0))
      return error(key, "must be positive");
    out = *value;
    return llvm::Error::success();
  }

  /// A fraction in (0, 1]; `of` says of what.
  llvm::Error fraction(llvm::StringRef key, double &out,
                       llvm::StringRef of = "a peak") {
    if (llvm::Error e = quantity(key, Quantity::Plain, out, false))
      return e;
    if (out > 1)
      return error(key, "is a fraction of " + of + " and must be at most 1");
    return llvm::Error::success();
  }

  llvm::Error integer(llvm::StringRef key, int64_t &out, bool required = true) {
    seen.insert(key.str());
    const llvm::json::Value *v = obj.get(key);
    if (!v)
      return required ? error(key, "is missing") : llvm::Error::success();
    std::optional<int64_t> n = v->getAsInteger();
    if (!n || *n < 1)
      return error(key, "must be a positive integer");
    out = *n;
    return llvm::Error::success();
  }

  llvm::Error string(llvm::StringRef key, std::string &out,
                     bool required = true) {
    seen.insert(key.str());
    const llvm::json::Value *v = obj.get(key);
    if (!v)
      return required ? error(key, "is missing") : llvm::Error::success();
    std::optional<llvm::StringRef> s = v->getAsString();
    if (!s)
      return error(key, "must be a string");
    out = s->str();
    return llvm::Error::success();
  }

  /// A nested object (nullptr when absent and not required).
  llvm::Expected<const llvm::json::Object *> object(llvm::StringRef key,
                                                    bool required = true) {
    seen.insert(key.str());
    const llvm::json::Value *v = obj.get(key);
    if (!v) {
      if (required)
        return error(key, "is missing");
      return nullptr;
    }
    const llvm::json::Object *o = v->getAsObject();
    if (!o)
      return error(key, "must be an object");
    return o;
  }

  /// Errors on keys no reader asked for.
  llvm::Error noOthers() const {
    for (const auto &kv : obj)
      if (!seen.count(kv.first.str()))
        return fail(source + ": unknown key '" + path(kv.first) + "'");
    return llvm::Error::success();
  }

  std::string path(llvm::StringRef key) const {
    return where.empty() ? key.str() : where + "." + key.str();
  }
  const std::string &getSource() const { return source; }

private:
  llvm::Error error(llvm::StringRef key, const llvm::Twine &what) const {
    return fail(source + ": '" + path(key) + "' " + what);
  }

  const llvm::json::Object &obj;
  std::string where, source;
  std::set<std::string> seen;
};

llvm::Error readLink(Reader &parent, llvm::StringRef key, Link &link,
                     std::string *kind, bool required) {
  auto obj = parent.object(key, required);
  if (!obj)
    return obj.takeError();
  if (!*obj)
    return llvm::Error::success();
  Reader r(**obj, parent.path(key), parent.getSource());
  if (kind)
    if (llvm::Error e = r.string("kind", *kind))
      return e;
  if (llvm::Error e =
          r.quantity("bandwidth", Quantity::Bandwidth, link.bandwidth))
    return e;
  if (llvm::Error e = r.quantity("latency", Quantity::Seconds, link.latency))
    return e;
  if (llvm::Error e = r.quantity("p2p_latency", Quantity::Seconds,
                                 link.p2pLatency, /*required=*/false))
    return e;
  if (llvm::Error e = r.quantity("p2p_work", Quantity::Seconds, link.p2pWork,
                                 /*required=*/false))
    return e;
  if (llvm::Error e = r.quantity("call_latency", Quantity::Seconds,
                                 link.callLatency, /*required=*/false))
    return e;
  if (llvm::Error e = r.quantity("straggler_lag", Quantity::Plain,
                                 link.stragglerLag, /*required=*/false))
    return e;
  if (llvm::Error e =
          r.fraction("latency_busy", link.latencyBusy, "the latency"))
    return e;
  if (llvm::Error e =
          r.fraction("queued_share", link.queuedShare, "the latency"))
    return e;
  return r.noOthers();
}

llvm::Error readDevice(Reader &top, ClusterSpec &spec) {
  auto obj = top.object("device");
  if (!obj)
    return obj.takeError();
  Reader r(**obj, "device", top.getSource());
  if (llvm::Error e = r.string("name", spec.deviceName))
    return e;
  if (llvm::Error e = r.quantity("memory", Quantity::Bytes, spec.memoryBytes))
    return e;
  if (llvm::Error e = r.quantity("memory_bandwidth", Quantity::Bandwidth,
                                 spec.memoryBandwidth))
    return e;
  auto peaks = r.object("peak_flops");
  if (!peaks)
    return peaks.takeError();
  Reader pr(**peaks, "device.peak_flops", top.getSource());
  for (const auto &kv : **peaks)
    if (llvm::Error e = pr.quantity(kv.first, Quantity::Flops,
                                    spec.peakFlops[kv.first.str()]))
      return e;
  if (spec.peakFlops.empty())
    return fail(top.getSource() + ": 'device.peak_flops' names no dtype");
  return r.noOthers();
}

llvm::Error readRest(Reader &top, ClusterSpec &spec) {
  if (llvm::Error e = readLink(top, "intra_node", spec.intraNode,
                               &spec.intraNodeKind, spec.devicesPerNode > 1))
    return e;
  if (llvm::Error e =
          readLink(top, "inter_node", spec.interNode, nullptr, false))
    return e;
  if (auto host = top.object("host", false); !host)
    return host.takeError();
  else if (*host) {
    Reader r(**host, "host", top.getSource());
    if (llvm::Error e = readLink(r, "link", spec.hostLink, nullptr, true))
      return e;
    if (llvm::Error e =
            r.quantity("memory", Quantity::Bytes, spec.hostMemoryBytes))
      return e;
    if (llvm::Error e =
            r.quantity("adam_rate", Quantity::Plain, spec.hostAdamRate))
      return e;
    if (llvm::Error e = r.noOthers())
      return e;
  }
  auto eff = top.object("efficiency");
  if (!eff)
    return eff.takeError();
  Reader r(**eff, "efficiency", top.getSource());
  for (auto [key, out] :
       {std::pair<const char *, double *>{"matmul", &spec.matmulEfficiency},
        {"memory", &spec.memoryEfficiency},
        {"collective", &spec.collectiveEfficiency},
        {"usable_memory", &spec.usableMemory}})
    if (llvm::Error e = r.fraction(key, *out))
      return e;
  if (llvm::Error e =
          r.fraction("shared_cores", spec.sharedCoreEfficiency, "the cores"))
    return e;
  if (llvm::Error e = r.quantity("kernel_latency", Quantity::Seconds,
                                 spec.kernelLatency, false))
    return e;
  if (llvm::Error e =
          r.quantity("wake_work", Quantity::Seconds, spec.wakeWork, false))
    return e;
  if (llvm::Error e = r.quantity("kernel_in_step", Quantity::Plain,
                                 spec.kernelInStep, false))
    return e;
  return r.noOthers();
}

} // namespace

llvm::Expected<double> ClusterSpec::peak(llvm::StringRef dtype) const {
  auto it = peakFlops.find(dtype.str());
  if (it == peakFlops.end())
    return fail("cluster '" + name + "' gives no peak FLOP/s for " + dtype);
  return it->second;
}

llvm::Expected<double> parseBytes(llvm::StringRef text) {
  std::optional<double> v = parseQuantity(text, Quantity::Bytes);
  if (!v || !(*v > 0))
    return fail("'" + text + "' is not a size: " + expected(Quantity::Bytes));
  return *v;
}

llvm::Expected<ClusterSpec> parseClusterSpec(llvm::StringRef json,
                                             llvm::StringRef source) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (!value)
    return fail(source + ": not JSON: " + llvm::toString(value.takeError()));
  const llvm::json::Object *obj = value->getAsObject();
  if (!obj)
    return fail(source + ": a cluster spec is a JSON object");
  ClusterSpec spec;
  Reader top(*obj, "", source.str());
  if (llvm::Error e = top.string("name", spec.name))
    return std::move(e);
  if (llvm::Error e = top.integer("nodes", spec.nodes))
    return std::move(e);
  if (llvm::Error e = top.integer("devices_per_node", spec.devicesPerNode))
    return std::move(e);
  if (llvm::Error e = top.integer("concurrent_devices", spec.concurrentDevices,
                                  /*required=*/false))
    return std::move(e);
  if (llvm::Error e = readDevice(top, spec))
    return std::move(e);
  if (llvm::Error e = readRest(top, spec))
    return std::move(e);
  if (llvm::Error e = top.noOthers())
    return std::move(e);
  return spec;
}

llvm::Expected<ClusterSpec> loadClusterSpec(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail(path + ": cannot read the cluster spec: " +
                buffer.getError().message());
  return parseClusterSpec((*buffer)->getBuffer(), path);
}

} // namespace pc::planner
