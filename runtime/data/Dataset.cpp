//===- Dataset.cpp - Token datasets: files, splits, samples ---------------===//

#include "runtime/data/Dataset.h"

#include "runtime/exec/Npy.h"

#include "absl/strings/str_cat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <sys/mman.h>
#include <unistd.h>

namespace pc::runtime::data {

namespace {

absl::StatusOr<Format> formatNamed(llvm::StringRef name) {
  if (name == "tokens")
    return Format::Tokens;
  if (name == "npy")
    return Format::Npy;
  if (name == "text")
    return Format::Text;
  return absl::InvalidArgumentError(absl::StrCat(
      "dataset: format '", name.str(), "' is not tokens, npy or text"));
}

absl::StatusOr<Input::IdFormat> dtypeNamed(llvm::StringRef name) {
  if (name == "uint16" || name == "u16")
    return Input::IdFormat::U16;
  if (name == "uint32" || name == "u32")
    return Input::IdFormat::U32;
  return absl::InvalidArgumentError(absl::StrCat(
      "dataset: dtype '", name.str(),
      "' is not uint16 or uint32 (token files hold unsigned ids)"));
}

/// A single file given as the whole spec: its format from its extension.
absl::StatusOr<DatasetSpec> fromPath(const std::string &path) {
  DatasetSpec spec;
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (ext == ".npy")
    spec.format = Format::Npy;
  else if (ext == ".bin")
    spec.format = Format::Tokens;
  else if (ext == ".txt" || ext == ".text")
    spec.format = Format::Text;
  else
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset '", path,
        "': give its format (format=tokens|npy|text,train=FILE), or name "
        "the file .txt, .npy or .bin"));
  spec.train.push_back(path);
  return spec;
}

/// Applies one key of a description; `files` splits a list.
absl::Status setKey(DatasetSpec &spec, llvm::StringRef key,
                    llvm::StringRef value,
                    const std::vector<std::string> &files) {
  if (key == "format") {
    absl::StatusOr<Format> f = formatNamed(value);
    if (!f.ok())
      return f.status();
    spec.format = *f;
  } else if (key == "dtype") {
    absl::StatusOr<Input::IdFormat> d = dtypeNamed(value);
    if (!d.ok())
      return d.status();
    spec.dtype = *d;
  } else if (key == "train") {
    spec.train = files;
  } else if (key == "validation") {
    spec.validation = files;
  } else if (key == "validation_fraction") {
    if (value.getAsDouble(spec.validationFraction) ||
        !(spec.validationFraction >= 0 && spec.validationFraction < 1))
      return absl::InvalidArgumentError(
          absl::StrCat("dataset: validation_fraction must be in [0, 1), not '",
                       value.str(), "'"));
  } else if (key == "sequence_length") {
    if (value.getAsInteger(10, spec.sequenceLength) || spec.sequenceLength < 1)
      return absl::InvalidArgumentError(absl::StrCat(
          "dataset: sequence_length must be a positive integer, not '",
          value.str(), "'"));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset: unknown key '", key.str(),
        "' (format, dtype, train, validation, validation_fraction, "
        "sequence_length)"));
  }
  return absl::OkStatus();
}

/// `file` as named in a description in `dir`: relative to it.
std::string besideSpec(llvm::StringRef dir, llvm::StringRef file) {
  if (llvm::sys::path::is_absolute(file))
    return file.str();
  llvm::SmallString<256> full(dir);
  llvm::sys::path::append(full, file);
  return std::string(full);
}

absl::StatusOr<DatasetSpec> fromJson(const std::string &path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
      llvm::MemoryBuffer::getFile(path);
  if (!text)
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open (", text.getError().message(), ")"));
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*text)->getBuffer());
  if (!json)
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": bad JSON: ", llvm::toString(json.takeError())));
  const llvm::json::Object *top = json->getAsObject();
  if (!top)
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a dataset description is a JSON object"));
  // Relative files are relative to the description.
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  DatasetSpec spec;
  for (const auto &[key, value] : *top) {
    std::vector<std::string> files;
    std::string scalar;
    if (const llvm::json::Array *list = value.getAsArray()) {
      for (const llvm::json::Value &v : *list) {
        std::optional<llvm::StringRef> f = v.getAsString();
        if (!f)
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": '", key.str(), "' must list file names"));
        files.push_back(besideSpec(dir, *f));
      }
    } else if (std::optional<llvm::StringRef> s = value.getAsString()) {
      scalar = s->str();
      files.push_back(besideSpec(dir, *s));
    } else if (std::optional<int64_t> i = value.getAsInteger()) {
      scalar = std::to_string(*i);
    } else if (std::optional<double> d = value.getAsNumber()) {
      scalar = absl::StrCat(*d);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": '", key.str(), "' has a value of no use"));
    }
    if (absl::Status s = setKey(spec, key, scalar, files); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }
  return spec;
}

} // namespace

absl::StatusOr<DatasetSpec> DatasetSpec::parse(const std::string &text) {
  llvm::StringRef spec(text);
  if (spec.ends_with(".json"))
    return fromJson(text);
  if (!spec.contains('='))
    return fromPath(text);
  DatasetSpec out;
  llvm::SmallVector<llvm::StringRef, 8> pairs;
  spec.split(pairs, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef pair : pairs) {
    auto [key, value] = pair.split('=');
    llvm::SmallVector<llvm::StringRef, 4> parts;
    value.split(parts, '+', -1, /*KeepEmpty=*/false);
    std::vector<std::string> files(parts.begin(), parts.end());
    if (absl::Status s = setKey(out, key.trim(), value.trim(), files); !s.ok())
      return s;
  }
  return out;
}

TokenFile::~TokenFile() = default;

absl::StatusOr<std::shared_ptr<const TokenFile>>
TokenFile::open(const std::string &path, Format format, Input::IdFormat dtype) {
  // Mapped, not read: only the pages of the samples drawn are read.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open (", file.getError().message(), ")"));
  std::shared_ptr<TokenFile> t(new TokenFile());
  t->filePath = path;
  llvm::StringRef bytes = (*file)->getBuffer();
  size_t offset = 0;
  if (format == Format::Text) {
    dtype = Input::IdFormat::U8;
  } else if (format == Format::Npy) {
    absl::StatusOr<NpyHeader> header = parseNpyHeader(path, bytes);
    if (!header.ok())
      return header.status();
    const std::string &d = header->descr;
    if (d == "|u1" || d == "<u1")
      dtype = Input::IdFormat::U8;
    else if (d == "<u2")
      dtype = Input::IdFormat::U16;
    else if (d == "<u4")
      dtype = Input::IdFormat::U32;
    else if (d == "<i4")
      dtype = Input::IdFormat::I32;
    else if (d == "<i8")
      dtype = Input::IdFormat::I64;
    else
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": dtype '", d,
          "' is not an integer type token ids can have (uint8, uint16, "
          "uint32, int32, int64, little endian)"));
    offset = header->dataOffset;
    int64_t want = 1;
    for (int64_t d : header->shape)
      want *= d;
    if (static_cast<int64_t>(bytes.size() - offset) <
        want * Input::bytesOf(dtype))
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": has ", bytes.size() - offset,
                       " bytes of data, its header promises ",
                       want * Input::bytesOf(dtype)));
    t->count = want;
  }
  if (format != Format::Npy) {
    int64_t width = Input::bytesOf(dtype);
    if (bytes.size() % width != 0)
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": ", bytes.size(), " bytes is not a whole number of ",
          width == 2 ? "uint16" : "uint32",
          " ids (is the dtype right? token files hold uint16 or uint32)"));
    t->count = static_cast<int64_t>(bytes.size()) / width;
  }
  t->ids = dtype;
  t->first = bytes.data() + offset;
  t->buffer = std::move(*file);
  return std::shared_ptr<const TokenFile>(std::move(t));
}

void TokenFile::prefetch(int64_t begin, int64_t end) const {
  if (end <= begin)
    return;
  const long page = sysconf(_SC_PAGESIZE);
  uintptr_t lo = reinterpret_cast<uintptr_t>(at(begin));
  uintptr_t hi = reinterpret_cast<uintptr_t>(at(end));
  uintptr_t start = lo & ~static_cast<uintptr_t>(page - 1);
  // A hint only (a buffer read into memory rather than mapped ignores it).
  (void)madvise(reinterpret_cast<void *>(start), hi - start, MADV_WILLNEED);
  // Touch a byte per page: on file systems that ignore the hint this is
  // the read, here on the loader's thread rather than in the step.
  volatile char sink = 0;
  for (uintptr_t p = std::max(start, lo); p < hi; p += page)
    sink = sink + *reinterpret_cast<const char *>(p);
  (void)sink;
}

Split::Split(std::vector<Segment> segments, int64_t sequenceLength)
    : parts(std::move(segments)), seq(sequenceLength) {
  for (const Segment &s : parts) {
    firstSample.push_back(total);
    total += (s.end - s.begin - 1) / seq;
  }
}

std::pair<const TokenFile *, int64_t> Split::sample(int64_t k) const {
  size_t s = std::upper_bound(firstSample.begin(), firstSample.end(), k) -
             firstSample.begin() - 1;
  const Segment &seg = parts[s];
  return {seg.file.get(), seg.begin + (k - firstSample[s]) * seq};
}

int64_t Split::tokens() const {
  int64_t n = 0;
  for (const Segment &s : parts)
    n += s.end - s.begin;
  return n;
}

absl::StatusOr<Dataset> openDataset(const DatasetSpec &spec,
                                    int64_t sequenceLength) {
  if (spec.sequenceLength && spec.sequenceLength != sequenceLength)
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset: sequence_length ", spec.sequenceLength,
        " is not the model's (its inputs are ", sequenceLength, " ids long)"));
  if (spec.train.empty())
    return absl::InvalidArgumentError("dataset: no training files");
  if (!spec.validation.empty() && spec.validationFraction > 0)
    return absl::InvalidArgumentError(
        "dataset: give validation files or validation_fraction, not both");
  int64_t need = sequenceLength + 1;
  auto segment = [&](const std::shared_ptr<const TokenFile> &f, int64_t begin,
                     int64_t end,
                     const char *what) -> absl::StatusOr<Split::Segment> {
    if (end - begin < need)
      return absl::InvalidArgumentError(absl::StrCat(
          f->path(), ": ", what, end - begin, " ids, fewer than one sample (",
          sequenceLength, " ids and the next one as the last label)"));
    return Split::Segment{f, begin, end};
  };
  Dataset out;
  out.spec = spec;
  std::vector<Split::Segment> train, validation;
  for (const std::string &path : spec.train) {
    absl::StatusOr<std::shared_ptr<const TokenFile>> f =
        TokenFile::open(path, spec.format, spec.dtype);
    if (!f.ok())
      return f.status();
    int64_t n = (*f)->size();
    int64_t cut = n;
    if (spec.validationFraction > 0) {
      cut = n - static_cast<int64_t>(std::ceil(n * spec.validationFraction));
      absl::StatusOr<Split::Segment> v =
          segment(*f, cut, n, "its validation part has ");
      if (!v.ok())
        return v.status();
      validation.push_back(*v);
    }
    absl::StatusOr<Split::Segment> t =
        segment(*f, 0, cut,
                spec.validationFraction > 0 ? "its training part has " : "");
    if (!t.ok())
      return t.status();
    train.push_back(*t);
  }
  for (const std::string &path : spec.validation) {
    absl::StatusOr<std::shared_ptr<const TokenFile>> f =
        TokenFile::open(path, spec.format, spec.dtype);
    if (!f.ok())
      return f.status();
    absl::StatusOr<Split::Segment> v = segment(*f, 0, (*f)->size(), "");
    if (!v.ok())
      return v.status();
    validation.push_back(*v);
  }
  out.train.emplace(std::move(train), sequenceLength);
  if (!validation.empty())
    out.validation.emplace(std::move(validation), sequenceLength);
  return out;
}

} // namespace pc::runtime::data
