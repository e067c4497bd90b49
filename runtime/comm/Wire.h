//===- Wire.h - Bytes for the process-level exchanges -----------*- C++ -*-===//
//
// A minimal little-endian encoding of integers and byte strings, for what
// processes send each other through World::gather and World::broadcast
// (results, statistics, parameter pieces). A reader that runs past its
// input stays failed and returns zeros and empty strings.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_COMM_WIRE_H
#define PC_RUNTIME_COMM_WIRE_H

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace pc::runtime {

class WireWriter {
public:
  void i64(int64_t v) { out.append(reinterpret_cast<const char *>(&v), 8); }
  void f64(double v) { out.append(reinterpret_cast<const char *>(&v), 8); }
  void bytes(std::string_view b) {
    i64(static_cast<int64_t>(b.size()));
    out.append(b);
  }
  std::string take() { return std::move(out); }

private:
  std::string out;
};

class WireReader {
public:
  explicit WireReader(std::string_view in) : in(in) {}
  int64_t i64() {
    int64_t v = 0;
    if (!take(8))
      return 0;
    std::memcpy(&v, in.data() + pos - 8, 8);
    return v;
  }
  double f64() {
    double v = 0;
    if (!take(8))
      return 0;
    std::memcpy(&v, in.data() + pos - 8, 8);
    return v;
  }
  std::string_view bytes() {
    int64_t n = i64();
    if (n < 0 || !take(static_cast<size_t>(n)))
      return {};
    return in.substr(pos - n, n);
  }
  bool ok() const { return good; }
  bool done() const { return pos == in.size(); }

private:
  bool take(size_t n) {
    if (!good || in.size() - pos < n)
      return good = false;
    pos += n;
    return true;
  }
  std::string_view in;
  size_t pos = 0;
  bool good = true;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_COMM_WIRE_H
