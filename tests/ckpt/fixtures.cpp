// Test fixtures without doctest.
#include "tests/ckpt/fixtures.h"

#include <cstring>

#include "ckpt/host_copy.h"
#include "ckpt/reader.h"

namespace ember::ckpt::testing {

namespace fs = std::filesystem;

Tensor patterned(const Dims& shape, DType dtype, uint64_t seed) {
  Tensor tensor = make_tensor(shape, dtype, kCPU);
  auto* bytes = static_cast<uint8_t*>(tensor.raw_data_ptr());
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < tensor.nbytes(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;  // Knuth's MMIX LCG
    bytes[i] = static_cast<uint8_t>(state >> 56);
  }
  if (dtype == kBool)  // only 0 and 1 are valid bools
    for (size_t i = 0; i < tensor.nbytes(); ++i) bytes[i] = (bytes[i] >> 3) & 1 ? 1 : (i % 3 == 0);
  return tensor;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (!(a.sizes() == b.sizes()) || a.dtype() != b.dtype()) return false;
  const Tensor ca = byte_clone(a);
  const Tensor cb = byte_clone(b);
  return a.nbytes() == 0 || std::memcmp(ca.raw_data_ptr(), cb.raw_data_ptr(), a.nbytes()) == 0;
}

Tensor byte_clone(const Tensor& tensor) {
  Tensor copy = make_tensor(tensor.sizes(), tensor.dtype(), kCPU);
  gather_bytes(tensor, static_cast<std::byte*>(copy.raw_data_ptr()));
  return copy;
}

bool same_value(const Value& a, const Value& b) {
  // Through the printed form: -0.0 and 0.0 differ there, as they do in the file.
  return a.index() == b.index() && value_to_string(a) == value_to_string(b);
}

Reference awkward_reference(uint64_t seed) {
  Reference reference;
  auto add = [&](const std::string& name, const Dims& shape, DType dtype, bool sharded) {
    reference.tensors[name] = patterned(shape, dtype, seed + reference.tensors.size());
    reference.sharded[name] = sharded;
  };
  add("layer.prime", {13, 7}, kFloat32, true);
  add("layer.tiny", {2, 3}, kFloat64, true);
  add("layer.single_row", {1}, kInt64, true);
  add("layer.no_rows", {0, 4}, kFloat32, true);
  add("layer.zero_width", {5, 0}, kFloat32, true);
  add("layer.bf16", {31}, kBFloat16, true);
  add("layer.three_d", {11, 2, 3}, kFloat16, true);
  add("layer.flags", {17}, kBool, true);
  add("shared.table", {3, 5}, kFloat16, false);
  add("shared.scalar", {}, kFloat32, false);
  add("shared.ints", {19, 2}, kInt32, false);
  add("shared.empty", {0}, kFloat64, false);
  reference.values["step"] = int64_t{1234567};
  reference.values["seed"] = uint64_t{0xfedcba9876543210ull};
  reference.values["lr"] = 0.1 * static_cast<double>(seed % 7 + 1);
  reference.values["config"] = std::string("{\"model\": \"wide\", \"note\": \"caf\xc3\xa9\"}");
  reference.values["warm"] = true;
  reference.values["milestones"] = std::vector<int64_t>{30, 60, -90};
  reference.values["betas"] = std::vector<double>{0.9, 0.999, -0.0};
  return reference;
}

Reference crash_reference(int64_t step) {
  Reference reference = awkward_reference(static_cast<uint64_t>(step));
  reference.tensors["layer.multi_block"] = patterned({100, 1000}, kFloat32, static_cast<uint64_t>(step));
  reference.sharded["layer.multi_block"] = true;
  reference.values["step"] = step;
  return reference;
}

RankState rank_view(const Reference& reference, int rank, int world_size) {
  RankState state;
  for (const auto& [name, tensor] : reference.tensors) {
    if (reference.sharded.at(name)) state.add_even_shard(name, tensor, rank, world_size);
    else state.add_replicated(name, tensor);
  }
  for (const auto& [name, value] : reference.values) state.add_value(name, value);
  return state;
}

RankState live_state(const Reference& reference, int rank, int world_size, uint64_t junk_seed) {
  RankState state;
  for (const auto& [name, tensor] : reference.tensors) {
    if (!reference.sharded.at(name)) {
      state.add_replicated(name, patterned(tensor.sizes(), tensor.dtype(), junk_seed++));
      continue;
    }
    const RowRange rows = even_rows(tensor.size(0), rank, world_size);
    Dims shape = tensor.sizes();
    shape[0] = rows.size();
    state.add_rows(name, patterned(shape, tensor.dtype(), junk_seed++), tensor.sizes(), rows.begin);
  }
  for (const auto& [name, value] : reference.values) {
    Value placeholder = value;  // same type, different content
    std::visit([](auto& v) { v = std::decay_t<decltype(v)>{}; }, placeholder);
    state.add_value(name, placeholder);
  }
  return state;
}

Reference read_back(const fs::path& directory) {
  const CheckpointReader reader(directory);
  Reference result;
  for (const Entry& entry : reader.manifest().entries) {
    if (entry.is_tensor()) {
      result.tensors[entry.name] = reader.read(entry.name);
      result.sharded[entry.name] = entry.tensor().sharding == Sharding::Rows;
    } else {
      result.values[entry.name] = entry.value();
    }
  }
  return result;
}

}  // namespace ember::ckpt::testing
