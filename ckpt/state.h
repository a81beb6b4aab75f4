// RankState: what one rank contributes to a checkpoint (save) or expects from one (load): named
// tensors with their place in the global tensor, and typed small values.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ckpt/manifest.h"
#include "ckpt/sharding.h"
#include "runtime/tensor.h"

namespace ember::ckpt {

// Refuses a world_size below 1 (even_rows() divides by it) or a rank outside [0, world_size),
// naming `call`.
void check_rank_in_world(std::string_view call, int rank, int world_size);

// One rank's part of a tensor entry.
struct LocalTensor {
  Tensor tensor;            // this rank's rows; the whole tensor when replicated
  Dims global_shape;
  Sharding sharding = Sharding::Replicated;
  int64_t row_begin = 0;    // the first global row `tensor` holds

  RowRange rows() const;    // the global rows this rank holds (all of them when replicated)
};

class RankState {
 public:
  // Every rank holds all of `tensor`; one rank writes it.
  void add_replicated(const std::string& name, Tensor tensor);
  // `local` holds rows [row_begin, row_begin + local.size(0)) of a tensor of `global_shape`.
  void add_rows(const std::string& name, Tensor local, const Dims& global_shape, int64_t row_begin);
  // The rows even_rows() gives `rank` of `world_size` ranks of `full` (a view of `full`, not a copy).
  void add_even_shard(const std::string& name, const Tensor& full, int rank, int world_size,
                      Where where = Where::current());
  void add_value(const std::string& name, Value value);

  bool contains(const std::string& name) const;
  const std::map<std::string, LocalTensor>& tensors() const { return tensors_; }
  const std::map<std::string, Value>& values() const { return values_; }
  const LocalTensor& tensor(const std::string& name) const;
  const Value& value(const std::string& name) const;
  Value& value(const std::string& name);

  // The value as T (bool, int64_t, uint64_t, double, std::string, or a vector of int64/double).
  template <typename T>
  const T& get(const std::string& name) const {
    const Value& stored = value(name);
    if (const T* typed = std::get_if<T>(&stored)) return *typed;
    fail("checkpoint value '{}' is a {}, not the type asked for", name, value_type_name(stored));
  }

 private:
  void check_new_name(const std::string& name) const;
  std::map<std::string, LocalTensor> tensors_;
  std::map<std::string, Value> values_;
};

}  // namespace ember::ckpt
