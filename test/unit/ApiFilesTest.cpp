//===- ApiFilesTest.cpp - Host tensors from data, and pc's files ----------===//
//
// HostTensor::fromData copies exactly the bytes a shape and type take, and
// refuses any other count; api/Files.h writes .npy, .safetensors and reads
// checkpoints of both formats, bit-exact through a round trip, and a
// missing or corrupt file is an error naming the call and the file.
//
//===----------------------------------------------------------------------===//

#include "api/Files.h"
#include "api/Program.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <vector>

using namespace pc::api;
using pc::runtime::CommType;
using pc::runtime::HostTensor;
namespace fs = std::filesystem;

namespace {

/// A fresh directory of this process's own, removed at the end.
class TempDir {
public:
  explicit TempDir(const std::string &name)
      : dir(fs::temp_directory_path() /
            (name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string operator/(const std::string &file) const {
    return (dir / file).string();
  }
  fs::path path() const { return dir; }

private:
  fs::path dir;
};

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// `n` elements of `type` with distinct values, in a tensor of `shape`.
HostTensor ramp(std::vector<int64_t> shape, CommType type) {
  HostTensor t = HostTensor::zeros(std::move(shape), type);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, 0.5 * static_cast<double>(i) - 3.0);
  return t;
}

void expectBitEqual(const HostTensor &a, const HostTensor &b) {
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.bytes, b.bytes);
}

TEST(ApiFilesTest, HostTensorsAreBuiltFromData) {
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  absl::StatusOr<HostTensor> t = HostTensor::fromData<float>({2, 3}, values);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->type, CommType::F32);
  EXPECT_EQ(t->as<float>()[5], 6.0f);
  // A copy: the caller's buffer may change or go.
  values[5] = 0;
  EXPECT_EQ(t->as<float>()[5], 6.0f);

  std::vector<double> d = {0.25, -1};
  EXPECT_EQ(HostTensor::fromData<double>({2}, d)->type, CommType::F64);
  std::vector<int32_t> i32 = {7};
  absl::StatusOr<HostTensor> scalar = HostTensor::fromData<int32_t>({}, i32);
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(scalar->type, CommType::I32);
  EXPECT_EQ(scalar->get(0), 7);
  std::vector<int64_t> i64 = {1LL << 40, -2};
  absl::StatusOr<HostTensor> ids = HostTensor::fromData(
      std::vector<int64_t>{2}, std::span<const int64_t>(i64));
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->as<int64_t>()[0], 1LL << 40);

  // Untyped, e.g. bf16 bits; an empty tensor may come from null.
  uint16_t bf16[2] = {0x3f80, 0xc000}; // 1, -2
  absl::StatusOr<HostTensor> b =
      HostTensor::fromData({2}, CommType::BF16, bf16, sizeof(bf16));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->get(1), -2.0);
  EXPECT_TRUE(HostTensor::fromData({0, 5}, CommType::F32, nullptr, 0).ok());
}

TEST(ApiFilesTest, HostTensorsRefuseTheWrongByteCount) {
  std::vector<float> five = {1, 2, 3, 4, 5};
  absl::StatusOr<HostTensor> t = HostTensor::fromData<float>({2, 3}, five);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), "HostTensor::fromData: f32 of shape [2, 3]: "
                                  "takes 24 bytes, not 20");
  EXPECT_EQ(HostTensor::fromData({-1, 2}, CommType::F32, five.data(), 8)
                .status()
                .message(),
            "HostTensor::fromData: f32 of shape [-1, 2]: a negative dim");
  EXPECT_EQ(
      HostTensor::fromData({1}, CommType::F32, nullptr, 4).status().message(),
      "HostTensor::fromData: f32 of shape [1]: the data is null");
  // A shape whose size overflows is refused, not wrapped to a small one.
  EXPECT_EQ(
      HostTensor::fromData({int64_t(1) << 62, 8}, CommType::F32, five.data(), 0)
          .status()
          .message(),
      "HostTensor::fromData: f32 of shape [4611686018427387904, 8]: "
      "too large");
}

TEST(ApiFilesTest, NpyRoundTripsBitExact) {
  TempDir dir("pc-api-files-npy");
  for (CommType type : {CommType::F32, CommType::F64, CommType::I32,
                        CommType::I64, CommType::F16}) {
    SCOPED_TRACE(pc::runtime::nameOf(type));
    HostTensor t = ramp({3, 4, 5}, type);
    std::string path = dir / "t.npy";
    ASSERT_TRUE(writeNpy(path, t).ok());
    absl::StatusOr<HostTensor> back = readNpy(path);
    ASSERT_TRUE(back.ok()) << back.status();
    expectBitEqual(*back, t);
  }
  // NumPy has no bf16: written as f32, the same values.
  HostTensor bf = ramp({7}, CommType::BF16);
  ASSERT_TRUE(writeNpy(dir / "bf.npy", bf).ok());
  absl::StatusOr<HostTensor> back = readNpy(dir / "bf.npy");
  ASSERT_TRUE(back.ok()) << back.status();
  expectBitEqual(*back, bf.convert(CommType::F32));
  // Only the file itself: the temporary file was renamed over it.
  int files = 0;
  for (auto &entry : fs::directory_iterator(dir.path()))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 2);
}

TEST(ApiFilesTest, SafetensorsRoundTripBitExact) {
  TempDir dir("pc-api-files-st");
  std::map<std::string, HostTensor> tensors = {
      {"wte", ramp({8, 4}, CommType::F32)},
      {"ln.gamma", ramp({4}, CommType::BF16)},
      {"half", ramp({2, 2}, CommType::F16)},
      {"step", ramp({}, CommType::I64)},
      {"ids", ramp({3}, CommType::I32)},
      {"f64", ramp({2}, CommType::F64)},
      {"empty", HostTensor::zeros({0, 3}, CommType::F32)}};
  std::string path = dir / "m.safetensors";
  ASSERT_TRUE(writeSafetensors(path, tensors).ok());
  // Written again over itself: replaced, never appended to.
  ASSERT_TRUE(writeSafetensors(path, tensors).ok());
  absl::StatusOr<std::map<std::string, HostTensor>> back =
      readSafetensors(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), tensors.size());
  for (auto &[name, t] : tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(back->count(name));
    expectBitEqual(back->at(name), t);
  }
  int files = 0;
  for (auto &entry : fs::directory_iterator(dir.path()))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(ApiFilesTest, CheckpointsOfEitherFormatReadWhole) {
  Graph g("train");
  Mesh m = g.mesh("m", {{"dp", 2}});
  Value x = g.input("x", {4, 6}, DType::F32, Placement{m, {S(0)}});
  Value w = g.param("w", {6, 4}, DType::F32, Init::normal(0.5), true,
                    Placement{m, {S(1)}});
  Value y = g.matmul(x, w);
  g.loss(g.reduceMean(g.mul(y, y), {0, 1}));
  CompileOptions options;
  options.train = true; // adamw: moments and a step counter too
  absl::StatusOr<Program> program = compile(g, options);
  ASSERT_TRUE(program.ok()) << program.status();
  auto s = Session::create(*program);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)->feed("x", ramp({4, 6}, CommType::F32)).ok());
  ASSERT_TRUE((*s)->trainStep().ok());
  ASSERT_TRUE((*s)->trainStep().ok());
  TempDir dir("pc-api-files-ckpt");
  ASSERT_TRUE((*s)->save(dir / "logical.safetensors").ok());
  ASSERT_TRUE((*s)->save(dir / "sharded", /*sharded=*/true).ok());

  absl::StatusOr<Checkpoint> logical =
      readCheckpoint(dir / "logical.safetensors");
  ASSERT_TRUE(logical.ok()) << logical.status();
  absl::StatusOr<Checkpoint> sharded = readCheckpoint(dir / "sharded");
  ASSERT_TRUE(sharded.ok()) << sharded.status();
  EXPECT_EQ(logical->step, 2);
  EXPECT_EQ(sharded->step, 2);
  ASSERT_TRUE(logical->tensors.count("w"));
  EXPECT_EQ(logical->tensors.at("w").shape, (std::vector<int64_t>{6, 4}));
  // Every parameter, weights and optimizer state, whole: the shards of the
  // split weight put back together are the logical file's bytes.
  EXPECT_GT(logical->tensors.size(), 1u);
  ASSERT_EQ(sharded->tensors.size(), logical->tensors.size());
  for (auto &[name, t] : logical->tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(sharded->tensors.count(name));
    expectBitEqual(sharded->tensors.at(name), t);
  }
  // A logical checkpoint is a .safetensors file of the same tensors.
  absl::StatusOr<std::map<std::string, HostTensor>> asFile =
      readSafetensors(dir / "logical.safetensors");
  ASSERT_TRUE(asFile.ok()) << asFile.status();
  expectBitEqual(asFile->at("w"), logical->tensors.at("w"));
}

TEST(ApiFilesTest, BadFilesAreErrorsNamingTheCallAndTheFile) {
  TempDir dir("pc-api-files-bad");
  std::string missing = dir / "missing.npy";
  absl::Status s = readNpy(missing).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message().rfind("readNpy: " + missing + ": ", 0), 0u) << s;

  std::string npy = dir / "corrupt.npy";
  writeBytes(npy, std::string("\x93NUMPY\x01\x00\x10\x00{'descr': 'x", 21));
  s = readNpy(npy).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message().rfind("readNpy: " + npy + ": ", 0), 0u) << s;
  writeBytes(npy, "not a numpy file at all, just text");
  s = readNpy(npy).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message().rfind("readNpy: " + npy + ": ", 0), 0u) << s;

  s = readSafetensors(dir / "missing.safetensors").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("readSafetensors: " + dir / "missing.safetensors"),
            std::string::npos)
      << s;
  // A header length past the end of the file, then a header that is not
  // JSON.
  std::string st = dir / "corrupt.safetensors";
  writeBytes(st, std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10));
  s = readSafetensors(st).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message().rfind("readSafetensors: " + st + ": ", 0), 0u) << s;
  writeBytes(st, std::string("\x08\x00\x00\x00\x00\x00\x00\x00{\"a\": [}", 16));
  s = readSafetensors(st).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message().rfind("readSafetensors: " + st + ": ", 0), 0u) << s;

  // A tensor whose bytes do not match the checksum the writer recorded.
  std::string flipped = dir / "flipped.safetensors";
  ASSERT_TRUE(
      writeSafetensors(flipped, {{"w", ramp({16}, CommType::F32)}}).ok());
  {
    std::fstream f(flipped, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x7f');
  }
  s = readSafetensors(flipped).status();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("readSafetensors: ", 0), 0u) << s;
  EXPECT_NE(s.message().find(flipped), std::string::npos) << s;

  s = readCheckpoint(dir / "no-checkpoint").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(s.message().rfind("readCheckpoint: " + dir / "no-checkpoint", 0),
            0u)
      << s;
  fs::create_directories(dir / "empty-dir");
  s = readCheckpoint(dir / "empty-dir").status();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("readCheckpoint: " + dir / "empty-dir", 0), 0u)
      << s;

  // Writes into a directory that does not exist fail and name the file.
  std::string nowhere = dir / "no/such/dir/t.npy";
  s = writeNpy(nowhere, ramp({2}, CommType::F32));
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("writeNpy: " + nowhere + ": ", 0), 0u) << s;
  s = writeSafetensors(dir / "no/such/dir/m.safetensors", {});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("writeSafetensors: ", 0), 0u) << s;
}

} // namespace
