// Parsing an einsum equation and checking it against the operands, with torch.einsum's grammar and
// checks (aten/src/ATen/native/Linear.cpp): labels per dim, the output's labels, each index's size.
#include <algorithm>
#include <string>

#include "runtime/einsum_equation.h"
#include "runtime/error.h"

namespace ember::detail {
namespace {

constexpr int kEllipsisToken = -1;  // "..." as written, before it becomes one label per dim it covers

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
int letter_label(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c - 'a' + 26; }
char label_letter(int label) { return static_cast<char>(label < 26 ? 'A' + label : 'a' + label - 26); }

// The subscripts of one operand, or of the output, as written: letter labels and kEllipsisToken.
struct Group {
  std::vector<int> tokens;
  std::string text;  // without spaces, for messages
  bool has_ellipsis() const { return std::find(tokens.begin(), tokens.end(), kEllipsisToken) != tokens.end(); }
  int letter_count() const { return static_cast<int>(tokens.size()) - (has_ellipsis() ? 1 : 0); }
};

// Reads equation[begin, end) into groups split at ',' (the output is one group and takes no ',').
std::vector<Group> read_groups(std::string_view equation, size_t begin, size_t end, bool is_output) {
  std::vector<Group> groups(1);
  for (size_t i = begin; i < end; ++i) {
    const char c = equation[i];
    if (c == ' ') continue;
    if (c == ',' && !is_output) {
      groups.emplace_back();
      continue;
    }
    Group& group = groups.back();
    if (c == '.') {
      check(equation.substr(i, 3) == "...", "einsum: the '.' at position {} of equation '{}' is not part of '...'", i,
            equation);
      if (group.has_ellipsis()) {
        const std::string owner = is_output ? "the output" : fmt::format("operand {}", groups.size() - 1);
        fail("einsum: {} has more than one '...' in equation '{}'", owner, equation);
      }
      group.tokens.push_back(kEllipsisToken);
      group.text += "...";
      i += 2;
      continue;
    }
    check(is_letter(c),
          "einsum: invalid character '{}' at position {} of equation '{}': subscripts are the letters a-z and A-Z "
          "and '...', with ',' between operands and one '->' before the output",
          c, i, equation);
    group.tokens.push_back(letter_label(c));
    group.text += c;
  }
  return groups;
}

// Records that `label` has size `size` in `operand`: one of the two sizes must be 1 (it broadcasts)
// or they must be equal. The first operand with a size other than 1 is the one an error names.
void note_size(std::vector<int64_t>& label_sizes, std::vector<int>& size_source, int label, int64_t size, int operand,
               std::string_view equation, const std::vector<Tensor>& operands) {
  int64_t& known = label_sizes[label];
  if (known == -1 || (known == 1 && size != 1)) {
    known = size;
    size_source[label] = operand;
    return;
  }
  if (size == known || size == 1) return;
  const int other = size_source[label];
  const std::string index = label < kLetterLabels ? fmt::format("subscript '{}'", label_letter(label))
                                                  : fmt::format("dim {} of '...'", label - kFirstEllipsisLabel);
  fail(
      "einsum: {} has size {} in operand {} but {} in operand {} (shapes {} and {}, equation '{}'): the sizes must "
      "be equal or one of them 1",
      index, known, other, size, operand, operands[other].sizes(), operands[operand].sizes(), equation);
}

}  // namespace

EinsumEquation parse_einsum(std::string_view equation, const std::vector<Tensor>& operands) {
  const size_t arrow = equation.find("->");
  const bool explicit_output = arrow != std::string_view::npos;
  if (explicit_output) {
    const size_t second = equation.find("->", arrow + 2);
    check(second == std::string_view::npos, "einsum: equation '{}' has '->' more than once (at positions {} and {})",
          equation, arrow, second);
  }
  const std::vector<Group> inputs = read_groups(equation, 0, explicit_output ? arrow : equation.size(), false);
  check(inputs.size() == operands.size(), "einsum: equation '{}' has subscripts for {} operand(s) but {} were given",
        equation, inputs.size(), operands.size());

  // How many dims each "..." covers; the widest sets how many ellipsis labels there are.
  const int count = static_cast<int>(operands.size());
  std::vector<int> covered(count, 0);
  int ellipsis_dims = 0;
  for (int k = 0; k < count; ++k) {
    check(operands[k].defined(), "einsum: operand {} of equation '{}' is an undefined tensor", k, equation);
    const Group& group = inputs[k];
    const int rank = operands[k].dim();
    if (group.has_ellipsis()) {
      check(group.letter_count() <= rank,
            "einsum: operand {} has {} dims, fewer than the {} subscripts '{}' name besides '...' (shape {}, "
            "equation '{}')",
            k, rank, group.letter_count(), group.text, operands[k].sizes(), equation);
      covered[k] = rank - group.letter_count();
      ellipsis_dims = std::max(ellipsis_dims, covered[k]);
    } else {
      check(group.letter_count() == rank,
            "einsum: operand {} has {} dims but {} subscripts '{}' (shape {}, equation '{}'): a subscript names each "
            "dim unless '...' covers some",
            k, rank, group.letter_count(), group.text, operands[k].sizes(), equation);
    }
  }

  EinsumEquation result;
  // Each index's size so far (-1: not seen) and the operand that set it, for the mismatch error.
  std::vector<int64_t> label_sizes(kLetterLabels + ellipsis_dims, -1);
  std::vector<int> size_source(kLetterLabels + ellipsis_dims, -1);
  std::vector<int> occurrences(kLetterLabels, 0);  // a repeat within one operand counts again, as PyTorch's
  for (int k = 0; k < count; ++k) {
    std::vector<int>& labels = result.operand_labels.emplace_back();
    for (const int token : inputs[k].tokens) {
      if (token != kEllipsisToken) {
        labels.push_back(token);
        ++occurrences[token];
        continue;
      }
      for (int j = ellipsis_dims - covered[k]; j < ellipsis_dims; ++j) labels.push_back(kFirstEllipsisLabel + j);
    }
    const Dims& sizes = operands[k].sizes();
    for (int d = 0; d < sizes.size(); ++d) {
      const auto first = std::find(labels.begin(), labels.begin() + d, labels[d]);
      if (first == labels.begin() + d) {
        note_size(label_sizes, size_source, labels[d], sizes[d], k, equation, operands);
        continue;
      }
      const int first_dim = static_cast<int>(first - labels.begin());
      check(sizes[first_dim] == sizes[d],
            "einsum: subscript '{}' is repeated in operand {} over dims {} and {} of sizes {} and {}: a diagonal "
            "needs equal sizes (shape {}, equation '{}')",
            label_letter(labels[d]), k, first_dim, d, sizes[first_dim], sizes[d], sizes, equation);
    }
  }

  if (!explicit_output) {
    // "..." first, then the letters that occur once, in label order (A-Z, then a-z).
    for (int j = 0; j < ellipsis_dims; ++j) result.output_labels.push_back(kFirstEllipsisLabel + j);
    for (int label = 0; label < kLetterLabels; ++label) {
      if (occurrences[label] == 1) result.output_labels.push_back(label);
    }
    return result;
  }
  const std::vector<Group> output = read_groups(equation, arrow + 2, equation.size(), true);
  for (const int token : output.front().tokens) {
    if (token == kEllipsisToken) {
      for (int j = 0; j < ellipsis_dims; ++j) result.output_labels.push_back(kFirstEllipsisLabel + j);
      continue;
    }
    check(occurrences[token] > 0, "einsum: output subscript '{}' appears in no operand of equation '{}'",
          label_letter(token), equation);
    const bool repeated =
        std::find(result.output_labels.begin(), result.output_labels.end(), token) != result.output_labels.end();
    check(!repeated, "einsum: output subscript '{}' appears more than once in the output of equation '{}'",
          label_letter(token), equation);
    result.output_labels.push_back(token);
  }
  return result;
}

}  // namespace ember::detail
