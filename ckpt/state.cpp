// RankState: argument checks when entries are added, so a bad layout fails where it is declared.
#include "ckpt/state.h"

namespace ember::ckpt {

void check_rank_in_world(std::string_view call, int rank, int world_size) {
  check(world_size >= 1 && rank >= 0 && rank < world_size,
        "{}: rank {} of world size {} is not a rank of that world (0 <= rank < world_size, world_size >= 1)",
        call, rank, world_size);
}

RowRange LocalTensor::rows() const {
  if (sharding == Sharding::Replicated) return {0, global_shape.empty() ? 1 : global_shape[0]};
  return {row_begin, row_begin + tensor.size(0)};
}

void RankState::check_new_name(const std::string& name) const {
  check(!name.empty(), "checkpoint: an entry needs a non-empty name");
  check(!contains(name), "checkpoint: entry '{}' was added twice", name);
}

void RankState::add_replicated(const std::string& name, Tensor tensor) {
  check_new_name(name);
  check(tensor.defined(), "checkpoint: entry '{}' is an undefined tensor", name);
  const Dims shape = tensor.sizes();
  tensors_[name] = LocalTensor{std::move(tensor), shape, Sharding::Replicated, 0};
}

void RankState::add_rows(const std::string& name, Tensor local, const Dims& global_shape,
                         int64_t row_begin) {
  check_new_name(name);
  check(local.defined(), "checkpoint: entry '{}' is an undefined tensor", name);
  check(!global_shape.empty() && local.dim() == global_shape.size(),
        "checkpoint: entry '{}': a row shard of shape {} does not fit global shape {}", name,
        local.sizes(), global_shape);
  for (int i = 1; i < global_shape.size(); ++i)
    check(local.size(i) == global_shape[i],
          "checkpoint: entry '{}': shard shape {} differs from global shape {} in dim {}", name,
          local.sizes(), global_shape, i);
  check(row_begin >= 0 && row_begin + local.size(0) <= global_shape[0],
        "checkpoint: entry '{}': rows [{}, {}) are outside the global shape {}", name, row_begin,
        row_begin + local.size(0), global_shape);
  tensors_[name] = LocalTensor{std::move(local), global_shape, Sharding::Rows, row_begin};
}

void RankState::add_even_shard(const std::string& name, const Tensor& full, int rank,
                               int world_size, Where where) {
  CallSiteScope call_site(where);
  check_rank_in_world(fmt::format("checkpoint: add_even_shard of entry '{}'", name), rank, world_size);
  check(full.defined() && full.dim() >= 1,
        "checkpoint: entry '{}': only tensors with at least one dim can be sharded", name);
  const RowRange rows = even_rows(full.size(0), rank, world_size);
  add_rows(name, full.narrow(0, rows.begin, rows.size()), full.sizes(), rows.begin);
}

void RankState::add_value(const std::string& name, Value value) {
  check_new_name(name);
  values_[name] = std::move(value);
}

bool RankState::contains(const std::string& name) const {
  return tensors_.count(name) != 0 || values_.count(name) != 0;
}

const LocalTensor& RankState::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  check(it != tensors_.end(), "checkpoint: no tensor entry '{}' in this state", name);
  return it->second;
}

const Value& RankState::value(const std::string& name) const {
  auto it = values_.find(name);
  check(it != values_.end(), "checkpoint: no value entry '{}' in this state", name);
  return it->second;
}

Value& RankState::value(const std::string& name) {
  auto it = values_.find(name);
  check(it != values_.end(), "checkpoint: no value entry '{}' in this state", name);
  return it->second;
}

}  // namespace ember::ckpt
