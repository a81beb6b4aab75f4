// torch.nn.utils.rnn's packing (PyTorch 2.3's python wrappers and aten's _pack_padded_sequence /
// _pad_packed_sequence): the lengths are checked and turned into batch_sizes on the host, the data
// moves with one narrow per run of steps that share a batch size, so a packing costs O(distinct
// lengths) ops, not O(steps).
#include "runtime/nn/modules/rnn_packed.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "runtime/functional.h"

namespace ember::nn::utils::rnn {

namespace {

// `leading` followed by sizes[skip:]: a packed or padded shape with the same trailing sizes.
Dims shape_with(std::initializer_list<int64_t> leading, const Dims& sizes, int skip) {
  Dims shape = leading;
  for (int d = skip; d < sizes.size(); ++d) shape.push_back(sizes[d]);
  return shape;
}

// The int64 host copy of a small index vector on `device`.
Tensor indices_on(const std::vector<int64_t>& values, Device device) {
  const Tensor host = from_vector<int64_t>(values, {static_cast<int64_t>(values.size())}, {.dtype = kInt64});
  return device.is_cpu() ? host : host.to(device);
}

}  // namespace

std::vector<int64_t> detail::checked_batch_sizes(const PackedSequence& sequence, const char* op) {
  const Tensor& sizes = sequence.batch_sizes;
  check(sequence.data.defined() && sizes.defined() && sizes.dim() == 1 && sizes.numel() > 0 && sizes.dtype() == kInt64,
        "{}: expected a PackedSequence with data and a non-empty 1-D int64 batch_sizes, got {}", op,
        sizes.defined() ? fmt::format("batch_sizes of shape {} and dtype {}", sizes.sizes(), sizes.dtype())
                        : "undefined batch_sizes");
  check(sizes.device().is_cpu(), "{}: batch_sizes should always be on CPU, got it on {}", op, sizes.device());
  const std::vector<int64_t> values = sizes.to_vector<int64_t>();
  const int64_t total = std::accumulate(values.begin(), values.end(), int64_t{0});
  check(sequence.data.dim() >= 1 && sequence.data.size(0) == total,
        "{}: the PackedSequence's data has shape {} but its batch_sizes {} add up to {} steps", op,
        sequence.data.sizes(), values, total);
  for (size_t t = 0; t < values.size(); ++t)
    check(values[t] > 0 && (t == 0 || values[t] <= values[t - 1]),
          "{}: a PackedSequence's batch_sizes must be positive and not increasing, got {}", op, values);
  return values;
}

PackedSequence pack_padded_sequence(const Tensor& input, const std::vector<int64_t>& given_lengths, bool batch_first,
                                    bool enforce_sorted, Where where) {
  CallSiteScope site(where);
  const char* op = "pack_padded_sequence";
  check(input.defined() && input.dim() >= 2, "{}: expected input of at least 2 dims ({}), got {}", op,
        batch_first ? "[B, T, *]" : "[T, B, *]", input.defined() ? fmt::format("{}", input.sizes()) : "undefined");
  check(input.numel() > 0, "{}: Cannot pack empty tensors (input of shape {})", op, input.sizes());
  const int64_t batch = input.size(batch_first ? 0 : 1), steps = input.size(batch_first ? 1 : 0);
  const int64_t count = static_cast<int64_t>(given_lengths.size());
  check(count == batch, "{}: Expected `len(lengths)` to be equal to batch_size, but got {} (batch_size={})", op, count,
        batch);
  auto length_of = [&](int64_t b) { return given_lengths[static_cast<size_t>(b)]; };
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = length_of(b);
    check(length > 0,
          "{}: Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0: "
          "lengths[{}] = {} (lengths {})",
          op, b, length, given_lengths);
    check(length <= steps, "{}: lengths[{}] = {} is longer than the padded input's {} steps (input of shape {})", op, b,
          length, steps, input.sizes());
  }
  std::vector<int64_t> order(static_cast<size_t>(batch));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (enforce_sorted) {
    for (int64_t b = 1; b < batch; ++b)
      check(length_of(b) <= length_of(b - 1),
            "{}: `lengths` array must be sorted in decreasing order when `enforce_sorted` is True (got lengths {}). "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
            "requirement if you do not need ONNX exportability.",
            op, given_lengths);
  } else {
    // Stable, so equal lengths keep their order (torch.sort promises no order for ties).
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return length_of(a) > length_of(b); });
  }
  std::vector<int64_t> lengths;  // in sorted order
  for (const int64_t b : order) lengths.push_back(length_of(b));

  PackedSequence packed;
  Tensor x = batch_first ? input.transpose(0, 1) : input;  // [T, B, *]
  if (!enforce_sorted) {
    std::vector<int64_t> inverse(order.size());
    for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
    packed.sorted_indices = indices_on(order, input.device());
    packed.unsorted_indices = indices_on(inverse, input.device());
    x = index_select(x, 1, packed.sorted_indices);
  }
  // Steps [start, end) all have batch_sizes = the number of sequences longer than start: one block.
  std::vector<int64_t> batch_sizes;
  std::vector<Tensor> blocks;
  for (int64_t start = 0, active = batch; start < lengths[0];) {
    while (lengths[static_cast<size_t>(active - 1)] <= start) --active;
    const int64_t end = lengths[static_cast<size_t>(active - 1)];
    blocks.push_back(x.narrow(0, start, end - start)
                         .narrow(1, 0, active)
                         .reshape(shape_with({(end - start) * active}, x.sizes(), 2)));
    batch_sizes.insert(batch_sizes.end(), static_cast<size_t>(end - start), active);
    start = end;
  }
  packed.data = blocks.size() == 1 ? blocks[0] : cat(blocks, 0);
  packed.batch_sizes = from_vector<int64_t>(batch_sizes, {lengths[0]}, {.dtype = kInt64});
  return packed;
}

PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first, bool enforce_sorted,
                                    Where where) {
  CallSiteScope site(where);
  check(lengths.defined() && lengths.dim() == 1, "pack_padded_sequence: expected lengths to be a 1-D tensor, got {}",
        lengths.defined() ? fmt::format("shape {}", lengths.sizes()) : "an undefined tensor");
  // Host metadata, as PyTorch's torch.as_tensor(lengths, dtype=torch.int64, device='cpu').
  const std::vector<int64_t> values = to_dtype(lengths.to(kCPU), kInt64).to_vector<int64_t>();
  return pack_padded_sequence(input, values, batch_first, enforce_sorted, where);
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first, double padding_value,
                                               std::optional<int64_t> total_length, Where where) {
  CallSiteScope site(where);
  const char* op = "pad_packed_sequence";
  const std::vector<int64_t> batch_sizes = detail::checked_batch_sizes(sequence, op);
  const int64_t steps = static_cast<int64_t>(batch_sizes.size()), batch = batch_sizes[0];
  check(!total_length || *total_length >= steps,
        "{}: Expected total_length to be at least the length of the longest sequence in input, but got "
        "total_length={} and max sequence length being {}",
        op, total_length.value_or(0), steps);
  const Tensor& data = sequence.data;
  const TensorOptions options{.dtype = data.dtype(), .device = data.device()};
  std::vector<Tensor> blocks;
  std::vector<int64_t> lengths(static_cast<size_t>(batch), 0);
  int64_t offset = 0;
  for (size_t start = 0; start < batch_sizes.size();) {  // runs of steps with one batch size: one block each
    const int64_t active = batch_sizes[start];
    size_t end = start;
    while (end < batch_sizes.size() && batch_sizes[end] == active) ++end;
    const int64_t run = static_cast<int64_t>(end - start);
    Tensor block = data.narrow(0, offset, run * active).reshape(shape_with({run, active}, data.sizes(), 1));
    if (active < batch)
      block = cat({block, full(shape_with({run, batch - active}, data.sizes(), 1), padding_value, options)}, 1);
    blocks.push_back(block);
    // The first `active` sequences (longest first) run at least to `end`.
    std::fill_n(lengths.begin(), active, static_cast<int64_t>(end));
    offset += run * active;
    start = end;
  }
  if (total_length && *total_length > steps)
    blocks.push_back(full(shape_with({*total_length - steps, batch}, data.sizes(), 1), padding_value, options));
  Tensor padded = blocks.size() == 1 ? blocks[0] : cat(blocks, 0);
  if (batch_first) padded = padded.transpose(0, 1);
  Tensor lengths_tensor = from_vector<int64_t>(lengths, {batch}, {.dtype = kInt64});
  if (sequence.unsorted_indices.defined()) {
    padded = index_select(padded, batch_first ? 0 : 1, sequence.unsorted_indices);
    lengths_tensor = index_select(lengths_tensor, 0, sequence.unsorted_indices.to(kCPU));
  }
  return {padded, lengths_tensor};
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value, Where where) {
  CallSiteScope site(where);
  const char* op = "pad_sequence";
  check(!sequences.empty(), "{}: received an empty list of sequences", op);
  const Tensor& first = sequences[0];
  int64_t longest = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const Tensor& s = sequences[i];
    check(s.defined() && s.dim() >= 1, "{}: sequence {} must be a tensor of at least 1 dim ([L, *]), got {}", op, i,
          s.defined() ? fmt::format("shape {}", s.sizes()) : "an undefined tensor");
    check(shape_with({}, s.sizes(), 1) == shape_with({}, first.sizes(), 1) && s.dtype() == first.dtype() &&
              s.device() == first.device(),
          "{}: every sequence needs sequence 0's trailing sizes, dtype and device ({} {} on {}), but sequence {} is "
          "{} {} on {}",
          op, first.sizes(), first.dtype(), first.device(), i, s.sizes(), s.dtype(), s.device());
    longest = std::max(longest, s.size(0));
  }
  const TensorOptions options{.dtype = first.dtype(), .device = first.device()};
  std::vector<Tensor> padded;
  for (const Tensor& s : sequences)
    padded.push_back(s.size(0) == longest
                         ? s
                         : cat({s, full(shape_with({longest - s.size(0)}, s.sizes(), 1), padding_value, options)}, 0));
  return stack(padded, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted, Where where) {
  CallSiteScope site(where);
  const Tensor padded = pad_sequence(sequences, false, 0.0, where);
  std::vector<int64_t> lengths;
  for (const Tensor& s : sequences) lengths.push_back(s.size(0));
  return pack_padded_sequence(padded, lengths, false, enforce_sorted, where);
}

}  // namespace ember::nn::utils::rnn
