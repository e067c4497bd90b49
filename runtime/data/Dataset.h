//===- Dataset.h - Token datasets: files, splits, samples -------*- C++ -*-===//
//
// A dataset is token ids in files, memory-mapped and never read whole:
//  - token files: flat little-endian arrays of uint16 or uint32 ids, the
//    format GPT-style training scripts write;
//  - .npy arrays of integer ids (uint8/16/32, int32/64), any shape, read
//    flat;
//  - plain text, through the byte-level tokenizer: each byte is an id
//    (vocabulary 256), so the file itself is the id array.
// A split (train or validation) is a list of segments of those files. Its
// samples are windows of sequenceLength + 1 ids (the inputs and, shifted by
// one, the next-token labels), laid end to end at a stride of
// sequenceLength within each segment, so that every id but a segment's
// last is an input of exactly one sample. Validation is its own files, or
// the last fraction of each training file.
//
// The description (DatasetSpec) is JSON or an inline key=value list; see
// docs/data.md.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_DATA_DATASET_H
#define PC_RUNTIME_DATA_DATASET_H

#include "runtime/exec/Input.h"

#include "absl/status/statusor.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace pc::runtime::data {

enum class Format { Tokens, Npy, Text };

struct DatasetSpec {
  Format format = Format::Text;
  /// The ids' type in token files (u16 or u32); .npy files say their own,
  /// text is bytes.
  Input::IdFormat dtype = Input::IdFormat::U16;
  std::vector<std::string> train, validation;
  /// Without validation files: the last fraction of each training file.
  double validationFraction = 0;
  /// 0: the model's (its inputs' second dim); otherwise it must match.
  int64_t sequenceLength = 0;

  /// `spec` is a JSON file (a path ending in .json), or inline
  /// "key=value,key=value" with files joined by '+', or a single file
  /// (its format from its extension: .txt text, .npy, .bin u16 tokens).
  /// Keys: format (tokens, npy, text), dtype (uint16, uint32), train,
  /// validation, validation_fraction, sequence_length.
  static absl::StatusOr<DatasetSpec> parse(const std::string &spec);
};

/// One file's ids, mapped into memory.
class TokenFile {
public:
  static absl::StatusOr<std::shared_ptr<const TokenFile>>
  open(const std::string &path, Format format, Input::IdFormat dtype);
  ~TokenFile();

  const std::string &path() const { return filePath; }
  int64_t size() const { return count; }
  Input::IdFormat idFormat() const { return ids; }
  /// Id `i`'s bytes.
  const char *at(int64_t i) const { return first + i * Input::bytesOf(ids); }
  /// Asks the kernel to read ids [begin, end) ahead, and touches their
  /// pages, so that a later read does not wait on the disk.
  void prefetch(int64_t begin, int64_t end) const;

private:
  TokenFile() = default;
  std::string filePath;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  const char *first = nullptr;
  int64_t count = 0;
  Input::IdFormat ids = Input::IdFormat::U8;
};

/// The samples of one split.
class Split {
public:
  struct Segment {
    std::shared_ptr<const TokenFile> file;
    int64_t begin = 0, end = 0; // ids
  };
  /// Every segment must hold at least one sample (the caller checked).
  Split(std::vector<Segment> segments, int64_t sequenceLength);

  int64_t samples() const { return total; }
  int64_t sequenceLength() const { return seq; }
  /// Sample `k`'s file and the position in it of its first id.
  std::pair<const TokenFile *, int64_t> sample(int64_t k) const;
  const std::vector<Segment> &segments() const { return parts; }
  /// Ids in the split's segments.
  int64_t tokens() const;

private:
  std::vector<Segment> parts;
  std::vector<int64_t> firstSample; // per segment, a prefix sum
  int64_t seq = 0, total = 0;
};

struct Dataset {
  DatasetSpec spec;
  std::optional<Split> train, validation;
};

/// Opens the files of `spec` for samples of `sequenceLength` ids. Errors
/// name the file: a missing one, a wrong dtype or size, one shorter than
/// one sample (sequenceLength + 1 ids), a sequence length that is not the
/// model's.
absl::StatusOr<Dataset> openDataset(const DatasetSpec &spec,
                                    int64_t sequenceLength);

} // namespace pc::runtime::data

#endif // PC_RUNTIME_DATA_DATASET_H
