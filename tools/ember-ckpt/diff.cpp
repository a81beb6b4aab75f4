// ember-ckpt diff: per-entry equality (bitwise) and the largest absolute difference.
#include <cmath>
#include <cstring>
#include <set>

#include "ckpt/reader.h"
#include "tools/ember-ckpt/commands.h"

namespace ember::ckpt::cli {

namespace {

// "" when identical, else a description of how the entries differ.
std::string compare(const CheckpointReader& first, const CheckpointReader& second,
                    const std::string& name) {
  const Entry& a = first.entry(name);
  const Entry& b = second.entry(name);
  if (a.is_tensor() != b.is_tensor()) return "one is a tensor, the other a value";
  if (!a.is_tensor()) {
    if (a.value().index() != b.value().index())
      return fmt::format("{} vs {}", value_type_name(a.value()), value_type_name(b.value()));
    const std::string left = value_to_string(a.value());
    const std::string right = value_to_string(b.value());
    return left == right ? "" : fmt::format("{} vs {}", left, right);
  }
  const TensorEntry& ta = a.tensor();
  const TensorEntry& tb = b.tensor();
  if (ta.dtype != tb.dtype || !(ta.shape == tb.shape))
    return fmt::format("{} {} vs {} {}", dtype_name(ta.dtype), ta.shape, dtype_name(tb.dtype), tb.shape);
  const Tensor left = first.read(name);
  const Tensor right = second.read(name);
  if (left.nbytes() == 0 || std::memcmp(left.raw_data_ptr(), right.raw_data_ptr(), left.nbytes()) == 0)
    return "";
  const std::vector<double> x = element_values(left);
  const std::vector<double> y = element_values(right);
  double max_difference = 0;
  int64_t differing = 0;
  const size_t element = left.element_size();
  const auto* bytes_left = static_cast<const std::byte*>(left.raw_data_ptr());
  const auto* bytes_right = static_cast<const std::byte*>(right.raw_data_ptr());
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::memcmp(bytes_left + i * element, bytes_right + i * element, element) == 0) continue;
    ++differing;
    const double difference = std::fabs(x[i] - y[i]);
    if (std::isnan(difference) || difference > max_difference) max_difference = difference;
  }
  return fmt::format("{} of {} elements differ, max abs difference {}", differing, x.size(),
                     max_difference);
}

}  // namespace

int diff(const std::filesystem::path& first_path, const std::filesystem::path& second_path) {
  const CheckpointReader first(first_path);
  const CheckpointReader second(second_path);
  std::set<std::string> names;
  for (const Entry& entry : first.manifest().entries) names.insert(entry.name);
  for (const Entry& entry : second.manifest().entries) names.insert(entry.name);
  int different = 0;
  for (const std::string& name : names) {
    const bool in_first = first.manifest().find(name) != nullptr;
    const bool in_second = second.manifest().find(name) != nullptr;
    std::string verdict;
    if (!in_first || !in_second) verdict = fmt::format("only in {}", in_first ? "the first" : "the second");
    else verdict = compare(first, second, name);
    if (!verdict.empty()) ++different;
    fmt::print("{}  {}\n", verdict.empty() ? "same   " : "DIFFERS", name + (verdict.empty() ? "" : ": " + verdict));
  }
  fmt::print("{} of {} entries differ\n", different, names.size());
  return different == 0 ? 0 : 1;
}

}  // namespace ember::ckpt::cli
