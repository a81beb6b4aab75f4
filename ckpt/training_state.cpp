// Training state <-> checkpoint entries. Restore is two-phase: stage and verify everything (all
// ranks agree), then apply part by part, recording how to undo each, so that a part that refuses
// its state on any rank rolls every part of every rank back.
#include "ckpt/training_state.h"

#include <functional>
#include <optional>

#include "ckpt/host_copy.h"
#include "ckpt/reader.h"

namespace ember::ckpt {

namespace {

constexpr std::string_view kModel = "model.";
constexpr std::string_view kOptimizerTensors = "optimizer.tensors.";
constexpr std::string_view kOptimizerScalars = "optimizer.scalars.";
constexpr std::string_view kScheduler = "scheduler.";
constexpr std::string_view kScaler = "scaler.";
constexpr std::string_view kRng = "rng.";
constexpr std::string_view kExtra = "extra.";
constexpr const char* kLoader = "loader.state";
// (epoch, batches, samples, seed, dataset size, global samples consumed); checkpoints written
// before resharding loaders existed have the first 5.
constexpr int kLoaderFields = 6;
constexpr int kLoaderFieldsBefore = 5;

std::string key(std::string_view prefix, const std::string& name) { return std::string(prefix) + name; }

// A one-row int64 tensor: this rank's row of a per-rank entry.
Tensor int64_row(std::initializer_list<int64_t> values) {
  Tensor row = make_tensor({1, static_cast<int64_t>(values.size())}, kInt64, kCPU);
  std::copy(values.begin(), values.end(), row.data_ptr<int64_t>());
  return row;
}

void add_replicated_tensor(RankState& out, const std::string& name, const Tensor& tensor, int rank,
                           int world_size) {
  // Every rank holds it, so every rank writes an even share of its rows.
  if (tensor.dim() == 0) out.add_replicated(name, tensor);
  else out.add_even_shard(name, tensor, rank, world_size);
}

// What a restore will apply, read and verified.
struct Staged {
  std::map<std::string, Tensor> model;  // by the module's key
  optim::OptimizerState optimizer;
  OrderedDict<double> scheduler;
  OrderedDict<double> scaler;
  std::vector<GeneratorState> generators;
  std::optional<data::LoaderState> loader;
  int64_t step = 0;
  std::string config;
  std::map<std::string, Value> extra;
};

template <typename T>
const T& typed(const CheckpointReader& reader, const std::string& name) {
  const Value& value = reader.value(name);
  const T* typed_value = std::get_if<T>(&value);
  check(typed_value != nullptr, "checkpoint {}: value '{}' has type {}", reader.directory().string(),
        name, value_type_name(value));
  return *typed_value;
}

// The world size that saved the training state, which numbers the rows of the per-rank entries:
// train.world_size. An offline reshard rewrites the layout (the manifest's world_size) but keeps
// those rows, so the manifest's world_size only stands in for a checkpoint without the value.
int saved_world_size(const CheckpointReader& reader) {
  if (reader.manifest().find("train.world_size") == nullptr) return reader.manifest().world_size;
  const int64_t saved = typed<int64_t>(reader, "train.world_size");
  check(saved >= 1 && saved <= kMaxWorldSize, "checkpoint {}: train.world_size {} is outside [1, {}]",
        reader.directory().string(), saved, kMaxWorldSize);
  return static_cast<int>(saved);
}

// Saved rank `rank`'s row of a per-rank int64 entry of `width` columns: [saved_world, width].
std::vector<int64_t> rank_row(const CheckpointReader& reader, const std::string& name, int rank, int saved_world,
                              int width) {
  const TensorEntry& entry = reader.entry(name).tensor();
  check(entry.dtype == kInt64 && entry.shape.size() == 2 && entry.shape[0] == saved_world && entry.shape[1] == width,
        "checkpoint {}: '{}' should be int64 [{}, {}] (a row per saving rank, train.world_size = {}), is {} {}",
        reader.directory().string(), name, saved_world, width, saved_world, dtype_name(entry.dtype), entry.shape);
  const Tensor row = reader.read(name, RowRange{rank, rank + 1});
  return row.to_vector<int64_t>();
}

Staged stage(const CheckpointReader& reader, const TrainingState& state, int source_rank, int saved_world) {
  Staged staged;
  const Manifest& manifest = reader.manifest();
  if (state.model != nullptr) {
    const nn::StateDict live = state.model->state_dict();
    for (const auto& [name, tensor] : live) {
      const TensorEntry& saved = reader.entry(key(kModel, name)).tensor();
      check(saved.dtype == tensor.dtype() && saved.shape == tensor.sizes(),
            "checkpoint {}: model entry '{}' is {} {}, the model's is {} {}",
            reader.directory().string(), name, dtype_name(saved.dtype), saved.shape,
            dtype_name(tensor.dtype()), tensor.sizes());
    }
    for (const Entry& entry : manifest.entries)
      check(!entry.name.starts_with(kModel) || live.contains(entry.name.substr(kModel.size())),
            "checkpoint {}: entry '{}' has no counterpart in the model", reader.directory().string(),
            entry.name);
    for (const auto& [name, tensor] : live) staged.model[name] = reader.read(key(kModel, name));
  }
  for (const Entry& entry : manifest.entries) {
    if (state.optimizer != nullptr && entry.name.starts_with(kOptimizerTensors))
      staged.optimizer.tensors.insert(entry.name.substr(kOptimizerTensors.size()), reader.read(entry.name));
    if (state.optimizer != nullptr && entry.name.starts_with(kOptimizerScalars))
      staged.optimizer.scalars.insert(entry.name.substr(kOptimizerScalars.size()),
                                      typed<double>(reader, entry.name));
    if (state.scheduler != nullptr && entry.name.starts_with(kScheduler))
      staged.scheduler.insert(entry.name.substr(kScheduler.size()), typed<double>(reader, entry.name));
    if (state.scaler != nullptr && entry.name.starts_with(kScaler))
      staged.scaler.insert(entry.name.substr(kScaler.size()), typed<double>(reader, entry.name));
    if (entry.name.starts_with(kExtra) && !entry.is_tensor())
      staged.extra[entry.name.substr(kExtra.size())] = entry.value();
  }
  for (const auto& [device, generator] : state.generators) {
    const std::vector<int64_t> row = rank_row(reader, key(kRng, device), source_rank, saved_world, 2);
    staged.generators.push_back({static_cast<uint64_t>(row[0]), static_cast<uint64_t>(row[1])});
  }
  if (state.loader != nullptr) {
    const auto& shape = reader.entry(kLoader).tensor().shape;
    const int width = shape.size() == 2 && shape[1] == kLoaderFieldsBefore ? kLoaderFieldsBefore : kLoaderFields;
    const std::vector<int64_t> row = rank_row(reader, kLoader, source_rank, saved_world, width);
    staged.loader = data::LoaderState{row[0], row[1], row[2], row[3], row[4]};
    if (width == kLoaderFields) staged.loader->global_samples_consumed = row[5];
  }
  staged.step = typed<int64_t>(reader, "train.step");
  staged.config = typed<std::string>(reader, "train.config");
  return staged;
}

// Applies `staged` part by part; on a refusal, undoes what was applied and rethrows.
void apply(const Staged& staged, TrainingState& state, std::vector<std::function<void()>>& undo) {
  if (state.model != nullptr) {
    for (const auto& [name, tensor] : state.model->state_dict()) {
      Tensor old = make_tensor(tensor.sizes(), tensor.dtype(), kCPU);
      gather_bytes(tensor, static_cast<std::byte*>(old.raw_data_ptr()));
      scatter_bytes(static_cast<const std::byte*>(staged.model.at(name).raw_data_ptr()), tensor);
      undo.push_back([old, tensor] { scatter_bytes(static_cast<const std::byte*>(old.raw_data_ptr()), tensor); });
    }
  }
  if (state.optimizer != nullptr) {
    optim::OptimizerState old = state.optimizer->state_dict();  // its buffers are replaced, not written
    state.optimizer->load_state_dict(staged.optimizer);
    undo.push_back([&state, old] { state.optimizer->load_state_dict(old); });
  }
  if (state.scheduler != nullptr) {
    OrderedDict<double> old = state.scheduler->state_dict();
    state.scheduler->load_state_dict(staged.scheduler);
    undo.push_back([&state, old] { state.scheduler->load_state_dict(old); });
  }
  if (state.scaler != nullptr) {
    OrderedDict<double> old = state.scaler->state_dict();
    state.scaler->load_state_dict(staged.scaler);
    undo.push_back([&state, old] { state.scaler->load_state_dict(old); });
  }
  if (state.loader != nullptr) {
    const data::LoaderState old = state.loader->state_dict();
    state.loader->load_state_dict(*staged.loader);
    undo.push_back([&state, old] { state.loader->load_state_dict(old); });
  }
  for (size_t i = 0; i < state.generators.size(); ++i) {
    Generator* generator = state.generators[i].second;
    const GeneratorState old = generator->get_state();
    generator->set_state(staged.generators[i]);
    undo.push_back([generator, old] { generator->set_state(old); });
  }
  undo.push_back([&state, step = state.step, config = state.config, extra = state.extra] {
    state.step = step;
    state.config = config;
    state.extra = extra;
  });
  state.step = staged.step;
  state.config = staged.config;
  state.extra = staged.extra;
}

}  // namespace

RankState training_rank_state(const TrainingState& state, int rank, int world_size) {
  check_rank_in_world("training_rank_state", rank, world_size);
  RankState out;
  if (state.model != nullptr)
    for (const auto& [name, tensor] : state.model->state_dict())
      add_replicated_tensor(out, key(kModel, name), tensor, rank, world_size);
  if (state.optimizer != nullptr) {
    const optim::OptimizerState optimizer = state.optimizer->state_dict();
    for (const auto& [name, tensor] : optimizer.tensors)
      add_replicated_tensor(out, key(kOptimizerTensors, name), tensor, rank, world_size);
    for (const auto& [name, value] : optimizer.scalars) out.add_value(key(kOptimizerScalars, name), value);
  }
  if (state.scheduler != nullptr)
    for (const auto& [name, value] : state.scheduler->state_dict()) out.add_value(key(kScheduler, name), value);
  if (state.scaler != nullptr)
    for (const auto& [name, value] : state.scaler->state_dict()) out.add_value(key(kScaler, name), value);
  for (const auto& [device, generator] : state.generators) {
    const GeneratorState rng = generator->get_state();
    out.add_rows(key(kRng, device), int64_row({static_cast<int64_t>(rng.seed), static_cast<int64_t>(rng.offset)}),
                 {world_size, 2}, rank);
  }
  if (state.loader != nullptr) {
    const data::LoaderState loader = state.loader->state_dict();
    out.add_rows(kLoader, int64_row({loader.epoch, loader.batches_consumed, loader.samples_consumed,
                                     loader.seed, loader.dataset_size, loader.global_samples_consumed}),
                 {world_size, kLoaderFields}, rank);
  }
  out.add_value("train.step", state.step);
  out.add_value("train.config", state.config);
  out.add_value("train.world_size", int64_t{world_size});
  for (const auto& [name, value] : state.extra) out.add_value(key(kExtra, name), value);
  return out;
}

std::filesystem::path save_training_state(Coordinator& coordinator, const TrainingState& state,
                                          const SaveOptions& options) {
  HostState host;
  RankState rank_state;
  try {
    rank_state = training_rank_state(state, coordinator.rank(), coordinator.world_size());
    host = host_state(rank_state);
  } catch (const std::exception& error) {
    host.error = error.what();  // still take part: every rank fails together
  }
  return write_checkpoint(coordinator, host, options);
}

SaveFuture save_training_state_async(AsyncCheckpointer& checkpointer, int rank, int world_size,
                                     const TrainingState& state, const SaveOptions& options, Where where) {
  CallSiteScope call_site(where);
  RankState rank_state;
  try {
    const Coordinator& group = checkpointer.coordinator();
    check(rank == group.rank() && world_size == group.world_size(),
          "save_training_state_async: rank {} of world size {} is not the checkpointer's rank {} of {}; pass "
          "its coordinator's rank() and world_size()", rank, world_size, group.rank(), group.world_size());
    rank_state = training_rank_state(state, rank, world_size);
  } catch (const std::exception& error) {
    return checkpointer.save_async_failed(error.what(), options);  // the other ranks must not wait for us
  }
  return checkpointer.save_async(rank_state, options);
}

RestoreReport load_training_state(Coordinator& coordinator, const std::filesystem::path& directory,
                                  TrainingState& state) {
  RestoreReport report;
  std::optional<Staged> staged;
  std::string error;
  try {
    const CheckpointReader reader(directory);
    report.saved_world_size = saved_world_size(reader);
    report.source_rank = coordinator.world_size() == report.saved_world_size
                             ? coordinator.rank()
                             : coordinator.rank() % report.saved_world_size;
    staged = stage(reader, state, report.source_rank, report.saved_world_size);
    report.bytes_read = reader.bytes_read();
  } catch (const std::exception& failure) {
    error = failure.what();
  }
  error = agree_on_errors(coordinator, error);
  if (!error.empty()) fail("{}", error);

  std::vector<std::function<void()>> undo;
  try {
    apply(*staged, state, undo);
  } catch (const std::exception& failure) {
    error = failure.what();
  }
  error = agree_on_errors(coordinator, error);
  if (!error.empty()) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) (*it)();
    fail("{} (the training state was left as it was)", error);
  }
  return report;
}

}  // namespace ember::ckpt
