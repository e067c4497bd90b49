//===- DataTest.cpp - Datasets and the loader -----------------------------===//
//
// The loader draws every sample exactly once per epoch, under any split of
// a batch's rows among ranks; batches are a function of the seed and the
// position alone (what resuming relies on); ids are checked against the
// vocabulary as they are read; bad files are errors naming the file.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Loader.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <unistd.h>

using namespace pc::runtime;
using namespace pc::runtime::data;
using ::testing::HasSubstr;

namespace {

/// A scratch directory, removed with its files.
struct Scratch {
  Scratch() {
    char tmpl[] = "/tmp/pc-data-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~Scratch() {
    for (const std::string &f : files)
      std::remove(f.c_str());
    rmdir(dir.c_str());
  }
  std::string write(const std::string &name, const std::string &bytes) {
    std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    files.push_back(path);
    return path;
  }
  std::string dir;
  std::vector<std::string> files;
};

/// `n` uint16 ids: 0, 1, 2, ... (mod `mod`).
std::string u16Ids(int64_t n, int64_t mod = 65536) {
  std::string bytes;
  for (int64_t i = 0; i < n; ++i) {
    uint16_t v = static_cast<uint16_t>(i % mod);
    bytes.append(reinterpret_cast<const char *>(&v), 2);
  }
  return bytes;
}

TEST(DataTest, PermutationsAreBijections) {
  for (uint64_t n : {1, 2, 3, 7, 64, 1000, 4097})
    for (uint64_t key : {0, 1, 99}) {
      Permutation p(n, key);
      std::set<uint64_t> seen;
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t v = p(i);
        ASSERT_LT(v, n);
        seen.insert(v);
      }
      EXPECT_EQ(seen.size(), n) << "n " << n << " key " << key;
    }
  // Keys give different orders.
  Permutation a(1000, 1), b(1000, 2);
  int same = 0;
  for (uint64_t i = 0; i < 1000; ++i)
    same += a(i) == b(i);
  EXPECT_LT(same, 20);
}

/// Each sample of a split as the first id of its window; with ids 0, 1, 2,
/// ... the first id is the sample's position.
std::multiset<int64_t> drawEpoch(Loader &loader, int64_t rowsPerRank,
                                 int64_t ranks) {
  std::multiset<int64_t> drawn;
  int64_t samples = loader.source().samples();
  int64_t batch = loader.options().batch;
  for (int64_t at = 0; at < samples; at += batch) {
    Batch b = loader.next();
    // Each rank reads its own rows, as a data-parallel layout gives them.
    for (int64_t r = 0; r < ranks; ++r) {
      int64_t offsets[] = {r * rowsPerRank, 0};
      int64_t sizes[] = {rowsPerRank, loader.source().sequenceLength()};
      absl::StatusOr<HostTensor> in = b.inputs.box(offsets, sizes);
      absl::StatusOr<HostTensor> labels = b.labels.box(offsets, sizes);
      EXPECT_TRUE(in.ok() && labels.ok());
      for (int64_t row = 0; row < rowsPerRank; ++row) {
        int64_t seq = sizes[1];
        int64_t first = in->as<int64_t>()[row * seq];
        if (at + r * rowsPerRank + row < samples)
          drawn.insert(first);
        for (int64_t c = 0; c < seq; ++c) {
          EXPECT_EQ(in->as<int64_t>()[row * seq + c], first + c);
          EXPECT_EQ(labels->as<int64_t>()[row * seq + c], first + c + 1);
        }
      }
    }
  }
  return drawn;
}

TEST(DataTest, EveryRankLayoutDrawsEverySampleOncePerEpoch) {
  Scratch s;
  // 8 ids per sample: 1201 ids give 150 samples (1200 / 8).
  std::string path = s.write("ids.bin", u16Ids(1201));
  DatasetSpec spec = *DatasetSpec::parse("format=tokens,train=" + path);
  absl::StatusOr<Dataset> data = openDataset(spec, 8);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->train->samples(), 150);
  std::multiset<int64_t> all;
  for (int64_t k = 0; k < 150; ++k)
    all.insert(k * 8);
  for (int64_t ranks : {1, 2, 4}) {
    LoaderOptions o;
    o.batch = 12; // 150 is not a multiple: the epoch's last batch spills
    o.seed = 7;
    o.vocabulary = 65536;
    Loader loader(*data->train, o);
    std::multiset<int64_t> drawn = drawEpoch(loader, 12 / ranks, ranks);
    EXPECT_EQ(drawn, all) << ranks << " ranks";
    // The next epoch is another order of the same samples.
    Batch first = loader.at(0), second = loader.at(150);
    int64_t off[] = {0, 0}, size[] = {12, 8};
    EXPECT_NE(first.inputs.box(off, size)->bytes,
              second.inputs.box(off, size)->bytes);
  }
}

TEST(DataTest, BatchesDependOnTheSeedAndPositionOnly) {
  Scratch s;
  std::string path = s.write("ids.bin", u16Ids(4001));
  absl::StatusOr<Dataset> data =
      openDataset(*DatasetSpec::parse("format=tokens,train=" + path), 16);
  ASSERT_TRUE(data.ok());
  LoaderOptions o;
  o.batch = 4;
  o.seed = 3;
  o.vocabulary = 65536;
  Loader a(*data->train, o), b(*data->train, o);
  for (int i = 0; i < 5; ++i)
    a.next();
  b.seek(20); // a resumed run
  int64_t off[] = {0, 0}, size[] = {4, 16};
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(a.next().inputs.box(off, size)->bytes,
              b.next().inputs.box(off, size)->bytes);
  o.seed = 4;
  Loader c(*data->train, o);
  c.seek(a.position());
  EXPECT_NE(a.next().inputs.box(off, size)->bytes,
            c.next().inputs.box(off, size)->bytes);
}

TEST(DataTest, TextIsBytesAndValidationIsTheTail) {
  Scratch s;
  std::string text(1000, 'a');
  for (size_t i = 0; i < text.size(); ++i)
    text[i] = static_cast<char>('a' + i % 26);
  std::string path = s.write("corpus.txt", text);
  absl::StatusOr<Dataset> data =
      openDataset(*DatasetSpec::parse("format=text,train=" + path +
                                      ",validation_fraction=0.1"),
                  32);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train->tokens(), 900);
  EXPECT_EQ(data->validation->tokens(), 100);
  EXPECT_EQ(data->validation->samples(), 3); // (100 - 1) / 32
  LoaderOptions o;
  o.batch = 2;
  o.shuffle = false;
  o.vocabulary = 256;
  o.inputType = CommType::I32;
  Loader v(*data->validation, o);
  absl::StatusOr<HostTensor> in = v.next().inputs.whole();
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->as<int32_t>()[0], 'a' + 900 % 26);
}

TEST(DataTest, NpyArraysOfAnyIntegerType) {
  Scratch s;
  // A 1-D uint32 array of 100 ids, written the way NumPy writes it.
  std::string header = "{'descr': '<u4', 'fortran_order': False, "
                       "'shape': (100,), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes.push_back(static_cast<char>(header.size()));
  bytes.push_back(0);
  bytes += header;
  for (uint32_t i = 0; i < 100; ++i)
    bytes.append(reinterpret_cast<const char *>(&i), 4);
  std::string path = s.write("ids.npy", bytes);
  absl::StatusOr<Dataset> data = openDataset(*DatasetSpec::parse(path), 9);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train->samples(), 11);
  LoaderOptions o;
  o.batch = 11;
  o.vocabulary = 100;
  Loader l(*data->train, o);
  std::multiset<int64_t> drawn = drawEpoch(l, 11, 1);
  EXPECT_EQ(drawn.size(), 11u);
}

TEST(DataTest, BadInputIsAnErrorNamingTheFile) {
  Scratch s;
  auto error = [](absl::StatusOr<Dataset> d) {
    return d.ok() ? std::string("ok") : std::string(d.status().message());
  };
  std::string shortFile = s.write("short.bin", u16Ids(8));
  EXPECT_THAT(error(openDataset(
                  *DatasetSpec::parse("format=tokens,train=" + shortFile), 8)),
              HasSubstr("short.bin: 8 ids, fewer than one sample"));
  EXPECT_THAT(
      error(openDataset(
          *DatasetSpec::parse("format=tokens,train=/nonexistent.bin"), 8)),
      HasSubstr("/nonexistent.bin: cannot open"));
  std::string odd = s.write("odd.bin", std::string(101, 'x'));
  EXPECT_THAT(
      error(openDataset(*DatasetSpec::parse("format=tokens,train=" + odd), 8)),
      HasSubstr("odd.bin: 101 bytes is not a whole number of uint16 ids"));
  std::string floats = s.write(
      "f.npy", std::string("\x93NUMPY\x01\x00\x36\x00", 10) +
                   "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), "
                   "}\n" +
                   std::string(16, '\0'));
  EXPECT_THAT(error(openDataset(*DatasetSpec::parse(floats), 2)),
              HasSubstr("f.npy: dtype '<f4' is not an integer type"));
  EXPECT_FALSE(DatasetSpec::parse("format=csv,train=a").ok());
  EXPECT_FALSE(DatasetSpec::parse("colour=blue").ok());
  EXPECT_THAT(
      error(openDataset(
          *DatasetSpec::parse("format=tokens,sequence_length=4,train=" + odd),
          8)),
      HasSubstr("sequence_length 4 is not the model's"));

  // An id beyond the vocabulary fails the read that meets it, naming the
  // file and the id's position.
  std::string big = s.write("big.bin", u16Ids(100));
  absl::StatusOr<Dataset> data =
      openDataset(*DatasetSpec::parse("format=tokens,train=" + big), 9);
  ASSERT_TRUE(data.ok());
  LoaderOptions o;
  o.batch = 11;
  o.shuffle = false;
  o.vocabulary = 50;
  Loader l(*data->train, o);
  absl::StatusOr<HostTensor> read = l.next().inputs.whole();
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(std::string(read.status().message()),
              HasSubstr("big.bin: token 50 at position 50 is not below the "
                        "model's vocabulary of 50"));
}

TEST(DataTest, JsonDescriptionsNameFilesRelativeToThemselves) {
  Scratch s;
  s.write("train.bin", u16Ids(200));
  s.write("val.bin", u16Ids(100));
  std::string spec =
      s.write("data.json", R"({"format": "tokens", "dtype": "uint16",
                      "train": ["train.bin"], "validation": "val.bin",
                      "sequence_length": 9})");
  absl::StatusOr<DatasetSpec> parsed = DatasetSpec::parse(spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<Dataset> data = openDataset(*parsed, 9);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train->samples(), 22);
  EXPECT_EQ(data->validation->samples(), 11);
}

} // namespace
