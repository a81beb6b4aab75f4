// The save protocol. Phases, each ending in a collective so that every rank learns of any rank's
// failure and no rank waits forever: (1) rank 0 prepares the temporary directory; (2) every rank
// writes and syncs its data file, then sends its chunk list to rank 0; (3) rank 0 builds and
// validates the manifest, commits, updates `latest`, applies retention, and broadcasts the result.
#include "ckpt/writer.h"

#include <nlohmann/json.hpp>

#include "ckpt/checksum.h"
#include "ckpt/file_io.h"
#include "ckpt/host_copy.h"
#include "ckpt/retention.h"

namespace ember::ckpt {

namespace fs = std::filesystem;
using nlohmann::json;

std::string step_name(int64_t step) { return fmt::format("step_{:09d}", step); }

HostTensor describe(const std::string& name, const LocalTensor& local) {
  return HostTensor{name,        local.tensor.dtype(), local.global_shape, local.sharding,
                    local.rows(), nullptr,             local.tensor.nbytes()};
}

void check_host_state(const HostState& state) {
  for (const HostTensor& tensor : state.tensors) {
    check_entry_name(tensor.name, "checkpoint save");
    if (tensor.dtype != kBool || tensor.data == nullptr) continue;  // null: another rank writes it
    const int64_t bad = first_invalid_bool(tensor.data, tensor.bytes);
    check(bad < 0, "checkpoint save: bool tensor '{}' holds byte {} at element {}; a bool element is 0 or 1",
          tensor.name, bad < 0 ? 0u : std::to_integer<unsigned>(tensor.data[bad]), bad);
  }
  for (const auto& [name, value] : state.values) check_entry_name(name, "checkpoint save");
}

HostState host_state(const RankState& state) {
  HostState host;
  for (const auto& [name, local] : state.tensors()) {
    HostTensor tensor = describe(name, local);
    if (local.tensor.device().is_cpu() && local.tensor.is_contiguous()) {
      tensor.data = static_cast<const std::byte*>(local.tensor.raw_data_ptr());
    } else {
      Tensor copy = make_tensor(local.tensor.sizes(), local.tensor.dtype(), kCPU);
      gather_bytes(local.tensor, static_cast<std::byte*>(copy.raw_data_ptr()));
      tensor.data = static_cast<const std::byte*>(copy.raw_data_ptr());
      host.keep_alive.push_back(std::move(copy));
    }
    host.tensors.push_back(std::move(tensor));
  }
  host.values = state.values();
  check_host_state(host);
  return host;
}

std::map<std::string, int> replicated_owners(const HostState& state, int world_size) {
  std::vector<const HostTensor*> replicated;
  for (const HostTensor& tensor : state.tensors)
    if (tensor.sharding == Sharding::Replicated) replicated.push_back(&tensor);
  std::stable_sort(replicated.begin(), replicated.end(),
                   [](const HostTensor* a, const HostTensor* b) { return a->bytes > b->bytes; });
  std::vector<uint64_t> load(world_size, 0);
  std::map<std::string, int> owners;
  for (const HostTensor* tensor : replicated) {
    const int owner = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    owners[tensor->name] = owner;
    load[owner] += tensor->bytes + 1;  // +1: empty tensors spread too
  }
  return owners;
}

namespace {

std::string data_file_name(int rank) { return fmt::format("rank_{:05d}.bin", rank); }

json declarations(const HostState& state) {
  json declared = json::array();
  for (const HostTensor& tensor : state.tensors)
    declared.push_back({tensor.name, dtype_name(tensor.dtype), tensor.global_shape.vec(),
                        sharding_name(tensor.sharding)});
  return declared;
}

// Writes this rank's chunks into its data file; returns the message for rank 0.
json write_rank_file(const fs::path& temporary, int rank, const HostState& state,
                     const std::map<std::string, int>& owners, bool durable) {
  if (!state.error.empty()) fail("{}", state.error);
  const std::string file_name = data_file_name(rank);
  File file = File::create(temporary / file_name);
  durability_point("data file created");
  json chunks = json::array();
  uint64_t offset = 0;
  for (const HostTensor& tensor : state.tensors) {
    const bool owned = tensor.sharding == Sharding::Replicated ? owners.at(tensor.name) == rank
                                                               : true;
    if (!owned || tensor.rows.empty()) continue;
    internal_assert(tensor.data != nullptr || tensor.bytes == 0, "a rank writes a tensor it holds no bytes of");
    const uint64_t block_bytes = choose_block_bytes(tensor.bytes);
    json sums = block_checksums(tensor.data, tensor.bytes, block_bytes);
    file.write_all(tensor.data, tensor.bytes);
    durability_point("chunk written");
    chunks.push_back({{"entry", tensor.name}, {"offset", offset}, {"length", tensor.bytes},
                      {"row_begin", tensor.rows.begin}, {"rows", tensor.rows.size()},
                      {"block_bytes", block_bytes}, {"checksums", std::move(sums)}});
    offset += tensor.bytes;
  }
  if (durable) file.sync();
  durability_point("data file synced");
  return {{"file", file_name}, {"size", offset}, {"chunks", std::move(chunks)},
          {"declared", declarations(state)}};
}

// Rank 0: the manifest from every rank's message, checked like any manifest read from disk.
Manifest build_manifest(const HostState& state, const std::vector<json>& messages,
                        const fs::path& manifest_path) {
  Manifest manifest;
  manifest.world_size = static_cast<int>(messages.size());
  for (size_t rank = 1; rank < messages.size(); ++rank)
    check(messages[rank]["declared"] == messages[0]["declared"],
          "checkpoint: rank {} declares entries {} but rank 0 declares {}; every rank must declare "
          "the same tensors (name, dtype, global shape, sharding)", rank,
          messages[rank]["declared"].dump(), messages[0]["declared"].dump());
  std::map<std::string, TensorEntry> tensors;
  for (const HostTensor& tensor : state.tensors)
    tensors[tensor.name] = TensorEntry{tensor.dtype, tensor.global_shape, tensor.sharding, {}};
  for (size_t rank = 0; rank < messages.size(); ++rank) {
    const json& message = messages[rank];
    manifest.files.push_back(DataFile{message["file"].get<std::string>(),
                                      message["size"].get<uint64_t>(), static_cast<int>(rank)});
    for (const json& chunk : message["chunks"])
      tensors.at(chunk["entry"].get<std::string>())
          .chunks.push_back(Chunk{message["file"].get<std::string>(), chunk["offset"].get<uint64_t>(),
                                  chunk["length"].get<uint64_t>(), chunk["row_begin"].get<int64_t>(),
                                  chunk["rows"].get<int64_t>(), chunk["block_bytes"].get<uint64_t>(),
                                  chunk["checksums"].get<std::vector<uint64_t>>()});
  }
  for (auto& [name, tensor] : tensors) manifest.entries.push_back(Entry{name, std::move(tensor)});
  for (const auto& [name, value] : state.values) {
    check(tensors.count(name) == 0, "checkpoint: '{}' is both a tensor and a value", name);
    manifest.entries.push_back(Entry{name, value});
  }
  validate_manifest(manifest, manifest_path.string());
  return manifest;
}

std::string error_text(const std::exception& error) { return error.what(); }

// Phase 1 on rank 0: a fresh temporary directory in root (created if absent). std::filesystem's own
// errors would name neither the save nor SaveOptions::root.
void prepare_temporary(const SaveOptions& options, const fs::path& final_path, const fs::path& temporary) {
  check_checkpoint_name(options.name);
  check(!options.root.empty(), "checkpoint save: SaveOptions::root is empty; give the directory that holds the "
        "checkpoints (\".\" for the current one)");
  std::error_code error;
  fs::create_directories(options.root, error);
  check(!error, "checkpoint save: cannot create root {}: {}", options.root.string(), error.message());
  const bool exists = fs::exists(final_path, error);
  check(!error, "checkpoint save: cannot look for {}: {}", final_path.string(), error.message());
  check(!exists, "checkpoint: {} already exists", final_path.string());
  fs::remove_all(temporary, error);  // a stale one from a crashed save of the same name
  check(!error, "checkpoint save: cannot remove the stale {}: {}", temporary.string(), error.message());
  fs::create_directory(temporary, error);
  check(!error, "checkpoint save: cannot create {}: {}", temporary.string(), error.message());
}

}  // namespace

fs::path write_checkpoint(Coordinator& coordinator, const HostState& state,
                          const SaveOptions& options) {
  const int rank = coordinator.rank();
  const fs::path final_path = options.root / options.name;
  const fs::path temporary = options.root / (std::string(kTemporaryPrefix) + options.name);

  std::string error;  // phase 1: rank 0 prepares a fresh temporary directory
  if (rank == 0) {
    try {
      prepare_temporary(options, final_path, temporary);
      durability_point("temporary directory created");
    } catch (const std::exception& failure) {
      error = error_text(failure);
    }
  }
  error = coordinator.broadcast(std::move(error));
  if (!error.empty()) fail("{}", error);

  json message;  // phase 2: every rank writes its file
  try {
    message = write_rank_file(temporary, rank, state,
                              replicated_owners(state, coordinator.world_size()), options.durable);
  } catch (const std::exception& failure) {
    message = {{"error", error_text(failure)}};
  }
  // Never throws: a string that is not UTF-8 must not keep this rank out of the gather (rank 0
  // would wait forever); rank 0's validation refuses what the replacement characters stand for.
  std::vector<std::string> gathered =
      coordinator.gather(message.dump(-1, ' ', false, json::error_handler_t::replace));

  if (rank == 0) {  // phase 3: rank 0 commits
    bool committed = false;
    try {
      std::vector<json> messages;
      for (size_t from = 0; from < gathered.size(); ++from) {
        messages.push_back(json::parse(gathered[from]));
        if (messages.back().contains("error"))  // "rank r: " only where there are ranks to tell apart
          fail("{}{}", gathered.size() > 1 ? fmt::format("rank {}: ", from) : "",
               messages.back()["error"].get<std::string>());
      }
      const Manifest manifest = build_manifest(state, messages, temporary / kManifestFileName);
      const std::string text = serialize_manifest(manifest);
      check(text.size() <= kMaxManifestBytes,
            "checkpoint {}: the manifest would be {} bytes, more than the {} bytes (64 MiB) a reader accepts; "
            "save fewer entries or chunks (small tensors replicated, not split over many ranks), or large data "
            "as tensors rather than values", final_path.string(), text.size(), kMaxManifestBytes);
      {
        File file = File::create(temporary / kManifestFileName);
        file.write_all(text.data(), text.size());
        if (options.durable) file.sync();
      }
      durability_point("manifest written");
      if (options.durable) sync_directory(temporary);
      durability_point("temporary directory synced");
      rename_path(temporary, final_path);
      committed = true;
      durability_point("checkpoint renamed into place");
      // Updating `latest` ends with a sync of root, which makes this rename durable too; a reader
      // whose `latest` names a checkpoint lost to a power cut falls back to listing.
      if (options.durable && !options.update_latest) sync_directory(options.root);
      durability_point("root directory synced");
      if (options.update_latest) write_latest(options.root, options.name, options.durable);
      if (options.keep_last > 0)
        apply_retention(options.root, options.keep_last, options.durable, Leftovers::Keep);
    } catch (const std::exception& failure) {
      error = committed ? fmt::format("checkpoint {} was committed, but then: {}",
                                      final_path.string(), failure.what())
                        : error_text(failure);
      if (!committed) {
        std::error_code ignored;  // best effort: apply_retention(Leftovers::Remove) finds any left
        fs::remove_all(temporary, ignored);
      }
    }
  }
  error = coordinator.broadcast(std::move(error));
  if (!error.empty()) fail("{}", error);
  return final_path;
}

fs::path save(Coordinator& coordinator, const RankState& state, const SaveOptions& options) {
  HostState host;
  try {
    host = host_state(state);
  } catch (const std::exception& failure) {
    host.error = error_text(failure);
  }
  return write_checkpoint(coordinator, host, options);
}

}  // namespace ember::ckpt
