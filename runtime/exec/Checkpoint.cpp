//===- Checkpoint.cpp - Saving and loading parameters ---------------------===//

#include "runtime/exec/Checkpoint.h"

#include "boxing/MeshCache.h"
#include "dialect/PcOps.h"
#include "dialect/PcTraits.h"
#include "runtime/comm/Wire.h"
#include "runtime/exec/Safetensors.h"

#include "absl/strings/str_cat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

using namespace mlir;

namespace pc::runtime {
namespace {

using Shape = std::vector<int64_t>;

/// Fault injection for the crash tests: PC_CHECKPOINT_FAULT=before-commit
/// kills the process after the new data is written and before it becomes
/// the checkpoint, as a crash there would.
bool faultBeforeCommit() {
  const char *f = std::getenv("PC_CHECKPOINT_FAULT");
  return f && std::string(f) == "before-commit";
}

const char *kIndex = "index.json";

const char *kLock = ".pc-lock";

/// An exclusive advisory lock on a checkpoint directory (flock on its
/// `.pc-lock`), held by process 0 for a whole save: a second run saving
/// into the same directory gets an error instead of mixing generations.
class DirectoryLock {
public:
  static absl::StatusOr<std::unique_ptr<DirectoryLock>>
  acquire(const std::string &dir) {
    std::string path = dir + "/" + kLock;
    int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0)
      return absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot open (", std::strerror(errno), ")"));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return absl::FailedPreconditionError(absl::StrCat(
          dir, ": another run is saving a checkpoint here (it holds ", path,
          "); save to another directory or wait for it"));
    }
    return std::unique_ptr<DirectoryLock>(new DirectoryLock(fd));
  }
  ~DirectoryLock() { ::close(fd); } // releases the lock

private:
  explicit DirectoryLock(int fd) : fd(fd) {}
  int fd;
};

/// The shard files `index` names (pieces' "file" entries).
std::set<std::string> filesNamedBy(const llvm::json::Object &index) {
  std::set<std::string> out;
  if (const llvm::json::Object *tensors = index.getObject("tensors"))
    for (const auto &[name, value] : *tensors)
      if (const llvm::json::Object *t = value.getAsObject())
        if (const llvm::json::Array *pieces = t->getArray("pieces"))
          for (const llvm::json::Value &p : *pieces)
            if (const llvm::json::Object *piece = p.getAsObject())
              if (std::optional<llvm::StringRef> f = piece->getString("file"))
                out.insert(f->str());
  return out;
}

/// A shard file name pc generates: gN-rankR.safetensors or
/// gN-whole.safetensors, nothing else (no directory part).
bool isShardName(llvm::StringRef name) {
  if (!name.consume_front("g") || !name.consume_back(".safetensors"))
    return false;
  auto [generation, rest] = name.split('-');
  if (generation.empty() || !llvm::all_of(generation, llvm::isDigit))
    return false;
  if (rest == "whole")
    return true;
  return rest.consume_front("rank") && !rest.empty() &&
         llvm::all_of(rest, llvm::isDigit);
}

struct PreviousIndex {
  int64_t generation = 0;
  /// The shard files it names: the only files a save may delete.
  std::set<std::string> files;
};

absl::StatusOr<PreviousIndex> previousIndex(const std::string &dir) {
  std::string index = dir + "/" + kIndex;
  PreviousIndex out;
  if (!llvm::sys::fs::exists(index))
    return out;
  auto buffer = llvm::MemoryBuffer::getFile(index);
  if (!buffer)
    return absl::DataLossError(absl::StrCat(index, ": cannot read"));
  if (absl::Status s = checkJsonNesting((*buffer)->getBuffer(), index, 8);
      !s.ok())
    return absl::FailedPreconditionError(s.message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    llvm::consumeError(json.takeError());
    return absl::FailedPreconditionError(absl::StrCat(
        index, ": not a pc checkpoint index; save to another directory"));
  }
  const llvm::json::Object *top = json->getAsObject();
  // Someone else's index.json: not pc's to replace.
  if (!top || top->getString("format") != "pc-sharded")
    return absl::FailedPreconditionError(absl::StrCat(
        index, ": not a pc checkpoint index; save to another directory"));
  out.generation = top->getInteger("generation").value_or(0);
  for (const std::string &f : filesNamedBy(*top))
    if (isShardName(f))
      out.files.insert(f);
  return out;
}

absl::Status saveSharded(CpuSession &session, const std::string &dir,
                         int64_t step,
                         const std::map<std::string, std::string> &extra) {
  World &world = session.getWorld();
  // Process 0 numbers the generation; every process writes its ranks'
  // shards of it (the directory is on a file system they share).
  // Process 0 holds the directory's lock for the whole save.
  absl::StatusOr<PreviousIndex> previous = PreviousIndex{};
  std::unique_ptr<DirectoryLock> lock;
  if (world.process() == 0) {
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      previous =
          absl::PermissionDeniedError(absl::StrCat(dir, ": ", ec.message()));
    } else if (absl::StatusOr<std::unique_ptr<DirectoryLock>> l =
                   DirectoryLock::acquire(dir);
               !l.ok()) {
      previous = l.status();
    } else {
      lock = *std::move(l);
      previous = previousIndex(dir);
      // The new shards' names must be free: the generation goes above every
      // shard-named file in the directory, recorded or not (a user's file,
      // an orphan of a crashed save), so a save never replaces one.
      std::error_code ec;
      for (llvm::sys::fs::directory_iterator it(dir, ec), end;
           previous.ok() && it != end && !ec; it.increment(ec)) {
        llvm::StringRef file = llvm::sys::path::filename(it->path());
        int64_t g = 0;
        if (isShardName(file) &&
            !file.drop_front(1).split('-').first.getAsInteger(10, g))
          previous->generation = std::max(previous->generation, g);
      }
      if (previous.ok() && previous->generation >= (int64_t(1) << 62))
        previous = absl::FailedPreconditionError(
            absl::StrCat(dir, ": checkpoint generations are exhausted"));
    }
  }
  if (absl::Status s = world.agree(previous.status()); !s.ok())
    return s;
  WireWriter gw;
  gw.i64(previous->generation + 1);
  absl::StatusOr<std::string> shared = world.broadcast(gw.take());
  if (!shared.ok())
    return shared.status();
  int64_t generation = WireReader(*shared).i64();
  ModuleOp module = session.getModule();
  MeshCache meshes(module);
  absl::StatusOr<std::map<std::pair<int64_t, std::string>, HostTensor>> pieces =
      session.pieces();
  if (absl::Status s = world.agree(pieces.status()); !s.ok())
    return s;
  // Which (rank, parameter) pieces exist on any process: the plan below is
  // computed identically everywhere from it.
  std::set<std::pair<int64_t, std::string>> held;
  {
    WireWriter w;
    w.i64(static_cast<int64_t>(pieces->size()));
    for (auto &[key, piece] : *pieces) {
      w.i64(key.first);
      w.bytes(key.second);
    }
    absl::StatusOr<std::vector<std::string>> parts = world.gather(w.take());
    if (!parts.ok())
      return parts.status();
    WireWriter all;
    std::vector<std::pair<int64_t, std::string>> keys;
    for (const std::string &part : *parts) {
      WireReader r(part);
      for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
        int64_t rank = r.i64();
        keys.push_back({rank, std::string(r.bytes())});
      }
    }
    all.i64(static_cast<int64_t>(keys.size()));
    for (auto &[rank, name] : keys) {
      all.i64(rank);
      all.bytes(name);
    }
    absl::StatusOr<std::string> everyone = world.broadcast(all.take());
    if (!everyone.ok())
      return everyone.status();
    WireReader r(*everyone);
    for (int64_t n = r.i64(); r.ok() && n > 0; --n) {
      int64_t rank = r.i64();
      held.insert({rank, std::string(r.bytes())});
    }
  }
  // Parameters no program read yet have no pieces: they are saved whole,
  // from a snapshot (taken only then), in a shard of their own.
  std::optional<std::map<std::string, HostTensor>> whole;

  std::map<int64_t, std::map<std::string, HostTensor>> files; // by rank
  llvm::json::Object tensors;
  std::map<std::string, HostTensor> unplaced;
  for (auto p : module.getOps<ParamOp>()) {
    std::string name = p.getSymName().str();
    std::vector<int64_t> logicalShape = shapeOf(p.getType());
    llvm::json::Array shape;
    for (int64_t d : logicalShape)
      shape.push_back(d);
    llvm::json::Array placed;
    SbpAttr sbp = getSbp(p.getType());
    std::vector<Box> seen;
    bool complete = sbp != nullptr;
    if (sbp) {
      MeshOp mesh = meshes.lookup(sbp);
      for (int64_t q = 0; complete && q < mesh.getNumDevices(); ++q)
        complete = held.count({mesh.getRank(q), name}) > 0;
      for (int64_t q = 0; complete && q < mesh.getNumDevices(); ++q) {
        Box box = localBox(logicalShape, mesh.getShape(), sbp.getEntries(),
                           delinearize(mesh.getShape(), q));
        bool dup = llvm::any_of(seen, [&](const Box &b) {
          return b.offsets == box.offsets && b.sizes == box.sizes;
        });
        if (dup)
          continue; // A replica: saved once, by the first rank holding it.
        seen.push_back(box);
        int64_t rank = mesh.getRank(q);
        if (world.hosts(rank))
          files[rank][name] = pieces->at({rank, name});
        llvm::json::Array offsets, sizes;
        for (int64_t o : box.offsets)
          offsets.push_back(o);
        for (int64_t s : box.sizes)
          sizes.push_back(s);
        placed.push_back(
            llvm::json::Object{{"file", absl::StrCat("g", generation, "-rank",
                                                     rank, ".safetensors")},
                               {"offsets", std::move(offsets)},
                               {"sizes", std::move(sizes)}});
      }
    }
    if (!complete) {
      if (!whole) {
        absl::StatusOr<std::map<std::string, HostTensor>> snap =
            session.snapshot();
        // Every process learns whether process 0 could assemble it.
        if (absl::Status s = world.agree(snap.status()); !s.ok())
          return s;
        whole = std::move(*snap);
      }
      placed = llvm::json::Array{};
      llvm::json::Array offsets, sizes;
      for (int64_t d : logicalShape) {
        offsets.push_back(0);
        sizes.push_back(d);
      }
      // The snapshot is on process 0, which writes the whole tensors.
      if (world.process() == 0)
        unplaced[name] = whole->at(name);
      placed.push_back(llvm::json::Object{
          {"file", absl::StrCat("g", generation, "-whole.safetensors")},
          {"offsets", std::move(offsets)},
          {"sizes", std::move(sizes)}});
    }
    tensors[name] = llvm::json::Object{{"shape", std::move(shape)},
                                       {"pieces", std::move(placed)}};
  }
  std::map<std::string, std::string> meta = extra;
  meta["step"] = std::to_string(step);
  absl::Status written;
  for (auto &[rank, content] : files)
    if (written.ok())
      written = writeSafetensors(
          absl::StrCat(dir, "/g", generation, "-rank", rank, ".safetensors"),
          content, meta);
  if (written.ok() && !unplaced.empty() && world.process() == 0)
    written = writeSafetensors(
        absl::StrCat(dir, "/g", generation, "-whole.safetensors"), unplaced,
        meta);
  // Every piece is durable (written, flushed, renamed) before the index
  // names it.
  if (absl::Status s = world.agree(written); !s.ok())
    return s;
  if (faultBeforeCommit())
    std::_Exit(86);
  llvm::json::Object metadataJson;
  for (auto &[k, v] : extra)
    metadataJson[k] = v;
  llvm::json::Object index{{"format", "pc-sharded"},
                           {"version", 1},
                           {"generation", generation},
                           {"step", step},
                           {"metadata", std::move(metadataJson)},
                           {"tensors", std::move(tensors)}};
  std::set<std::string> named = filesNamedBy(index);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(index))) << "\n";
  absl::Status committed;
  if (world.process() == 0)
    committed = writeFileAtomically(dir + "/" + kIndex, text);
  if (absl::Status s = world.agree(committed); !s.ok())
    return s;
  // Committed: the shards the previous index named, and this one does not,
  // are garbage now. Process 0 removes exactly those (the directory is
  // shared): a file pc did not name in its own index is never touched.
  if (world.process() != 0)
    return absl::OkStatus();
  for (const std::string &file : previous->files)
    if (!named.count(file))
      llvm::sys::fs::remove(dir + "/" + file);
  return absl::OkStatus();
}

absl::StatusOr<LoadedCheckpoint> readSharded(const std::string &dir) {
  std::string indexPath = dir + "/" + kIndex;
  auto buffer = llvm::MemoryBuffer::getFile(indexPath);
  if (!buffer)
    return absl::NotFoundError(absl::StrCat(indexPath, ": cannot open"));
  if (absl::Status s = checkJsonNesting((*buffer)->getBuffer(), indexPath, 8);
      !s.ok())
    return absl::DataLossError(s.message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    std::string why = llvm::toString(json.takeError());
    return absl::DataLossError(absl::StrCat(indexPath, ": bad JSON: ", why));
  }
  const llvm::json::Object *top = json->getAsObject();
  const llvm::json::Object *tensors = top ? top->getObject("tensors") : nullptr;
  if (!top || top->getString("format") != "pc-sharded" || !tensors)
    return absl::DataLossError(
        absl::StrCat(indexPath, ": not a pc sharded checkpoint index"));
  LoadedCheckpoint out;
  out.step = top->getInteger("step").value_or(0);
  if (const llvm::json::Object *meta = top->getObject("metadata"))
    for (const auto &[k, v] : *meta)
      if (std::optional<llvm::StringRef> s = v.getAsString())
        out.metadata[k.str()] = s->str();
  // Shard files are mapped, not read: a process later reads only the
  // pieces its ranks need.
  std::map<std::string, std::map<std::string, Input>> files;
  for (const auto &[key, value] : *tensors) {
    std::string name = key.str();
    auto bad = [&](const std::string &why) {
      return absl::DataLossError(
          absl::StrCat(indexPath, ": tensor '", name, "': ", why));
    };
    const llvm::json::Object *t = value.getAsObject();
    const llvm::json::Array *shapeJson = t ? t->getArray("shape") : nullptr;
    const llvm::json::Array *piecesJson = t ? t->getArray("pieces") : nullptr;
    if (!shapeJson || !piecesJson)
      return bad("needs a shape and pieces");
    Shape shape;
    for (const llvm::json::Value &d : *shapeJson) {
      std::optional<int64_t> n = d.getAsInteger();
      if (!n || *n < 0)
        return bad("bad shape");
      shape.push_back(*n);
    }
    if (!fitsElementLimit(shape))
      return bad("bad shape");
    // Coverage without a per-element map: the pieces are boxes, so they
    // tile the tensor exactly when they are pairwise disjoint and their
    // volumes add up to its size.
    std::vector<Input::Piece> pieces;
    auto holders = std::make_shared<std::vector<std::shared_ptr<const void>>>();
    std::optional<CommType> type;
    int64_t volume = 0;
    for (const llvm::json::Value &pv : *piecesJson) {
      const llvm::json::Object *piece = pv.getAsObject();
      std::optional<llvm::StringRef> file =
          piece ? piece->getString("file") : std::nullopt;
      const llvm::json::Array *offsetsJson =
          piece ? piece->getArray("offsets") : nullptr;
      if (!file || !offsetsJson || offsetsJson->size() != shape.size() ||
          file->contains('/'))
        return bad("a piece needs a file in the directory and offsets");
      auto [it, inserted] = files.try_emplace(file->str());
      if (inserted) {
        absl::StatusOr<std::map<std::string, Input>> mapped =
            mapSafetensors(dir + "/" + file->str());
        if (!mapped.ok())
          return mapped.status();
        it->second = std::move(*mapped);
      }
      auto found = it->second.find(name);
      if (found == it->second.end())
        return bad(absl::StrCat(file->str(), " does not hold it"));
      const Input &p = found->second;
      if (p.shape().size() != shape.size())
        return bad(
            absl::StrCat("its piece in ", file->str(), " has the wrong rank"));
      Shape offsets;
      for (auto [d, o] : llvm::enumerate(*offsetsJson)) {
        std::optional<int64_t> n = o.getAsInteger();
        // No sum that could overflow: offsets near 2^63 are hostile.
        if (!n || *n < 0 || p.shape()[d] > shape[d] ||
            *n > shape[d] - p.shape()[d])
          return bad(absl::StrCat("its piece in ", file->str(),
                                  " does not fit its shape"));
        offsets.push_back(*n);
      }
      if (type && p.storedType() != *type)
        return bad("its pieces have different element types");
      type = p.storedType();
      int64_t size = product(p.shape());
      for (const Input::Piece &q : pieces) {
        bool overlap = true;
        for (size_t d = 0; d < shape.size() && overlap; ++d)
          overlap = offsets[d] < q.offsets[d] + q.shape[d] &&
                    q.offsets[d] < offsets[d] + p.shape()[d];
        if (overlap && size && product(q.shape))
          return bad("two of its pieces overlap");
      }
      Input::Piece part = p.parts().front();
      part.offsets = offsets;
      pieces.push_back(std::move(part));
      holders->push_back(p.holder());
      volume += size;
    }
    if (!type)
      return bad("has no pieces");
    if (volume != product(shape))
      return bad(absl::StrCat("its pieces leave ", product(shape) - volume,
                              " of ", product(shape), " elements unwritten"));
    out.tensors.emplace(name, Input::tiled(shape, *type, std::move(pieces),
                                           std::move(holders)));
  }
  return out;
}

} // namespace

absl::Status saveCheckpoint(CpuSession &session, const std::string &path,
                            CheckpointFormat format, int64_t step,
                            const std::map<std::string, std::string> &extra) {
  if (format == CheckpointFormat::Sharded)
    return saveSharded(session, path, step, extra);
  absl::StatusOr<std::map<std::string, HostTensor>> tensors =
      session.snapshot();
  if (!tensors.ok())
    return tensors.status();
  // The logical file is assembled on process 0 and written there.
  World &world = session.getWorld();
  if (world.process() != 0)
    return world.agree(absl::OkStatus());
  if (faultBeforeCommit()) {
    // Killed while writing: part of the new file, under its temporary name.
    std::ofstream(path + ".tmp", std::ios::binary) << "partial";
    std::_Exit(86);
  }
  std::map<std::string, std::string> meta = extra;
  meta["step"] = std::to_string(step);
  return world.agree(writeSafetensors(path, *tensors, meta));
}

absl::StatusOr<LoadedCheckpoint> readCheckpoint(const std::string &path) {
  if (llvm::sys::fs::is_directory(path))
    return readSharded(path);
  std::map<std::string, std::string> metadata;
  absl::StatusOr<std::map<std::string, Input>> tensors =
      mapSafetensors(path, &metadata);
  if (!tensors.ok())
    return tensors.status();
  LoadedCheckpoint out;
  out.tensors = std::move(*tensors);
  if (auto step = metadata.find("step"); step != metadata.end())
    llvm::StringRef(step->second).getAsInteger(10, out.step);
  metadata.erase("step");
  out.metadata = std::move(metadata);
  return out;
}

} // namespace pc::runtime
