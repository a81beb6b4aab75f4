// torch.nn.utils.rnn's packed sequences (PyTorch 2.3), under libtorch's namespace
// nn::utils::rnn: PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence and
// pack_sequence. The data moves through ember ops (narrow, cat, index_select), so gradients flow
// from a packed sequence's data back to the padded input, on any device and under capture; only
// the lengths and batch_sizes, host metadata as in PyTorch, are read on the host. nn::RNN, LSTM and
// GRU take a PackedSequence (rnn.h).
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "runtime/tensor.h"

namespace ember::nn::utils::rnn {

// B sequences of lengths l_0 >= l_1 >= ... (in sorted order) laid out step by step: data holds
// step 0 of every sequence, then step 1 of the sequences longer than 1, and so on.
struct PackedSequence {
  Tensor data;         // [l_0 + l_1 + ..., *]
  Tensor batch_sizes;  // int64 on the CPU, [l_0]: batch_sizes[t] sequences have a step t
  // int64 [B] on data's device: sorted_indices[i] is the original batch position of the i-th longest
  // sequence and unsorted_indices its inverse; both undefined when the batch came sorted
  // (enforce_sorted).
  Tensor sorted_indices, unsorted_indices;
};

// input [T, B, *] ([B, T, *] with batch_first) holding B sequences padded to T steps, lengths [B]
// (any integer tensor or values; read on the host) -> the PackedSequence of their first lengths[b]
// steps. With enforce_sorted the lengths must not increase; without it the batch is sorted by
// decreasing length (stable: equal lengths keep their order) and the permutation kept.
PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first = false,
                                    bool enforce_sorted = true, Where where = Where::current());
PackedSequence pack_padded_sequence(const Tensor& input, const std::vector<int64_t>& lengths, bool batch_first = false,
                                    bool enforce_sorted = true, Where where = Where::current());

// The inverse: (padded [T, B, *] ([B, T, *] with batch_first) in the original batch order, every
// step past a sequence's length padding_value, and the lengths, int64 on the CPU). T is the longest
// length, or total_length, which must not be shorter.
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                               double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt,
                                               Where where = Where::current());

// Sequences [l_i, *] (the same trailing sizes, dtype and device) padded with padding_value to the
// longest and stacked: [max l_i, B, *] ([B, max l_i, *] with batch_first). Empty sequences are fine.
Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false, double padding_value = 0.0,
                    Where where = Where::current());

// pack_padded_sequence(pad_sequence(sequences), their lengths, false, enforce_sorted).
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true,
                             Where where = Where::current());

namespace detail {
// A PackedSequence's batch_sizes as host values, after checking them (positive, not increasing, on
// the CPU) and that they add up to data's rows; errors name `op`. For the recurrent modules too.
std::vector<int64_t> checked_batch_sizes(const PackedSequence& sequence, const char* op);
}  // namespace detail

}  // namespace ember::nn::utils::rnn
