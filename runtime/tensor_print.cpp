// Tensor::str(), printed as PyTorch's repr: tensor([ 1.5000, -2.2500], dtype=float64,
// requires_grad=True). One formatter per tensor (torch/_tensor_str.py's _Formatter) picks fixed,
// integer or scientific notation from the printed values and pads every value to one width; rows
// are wrapped at 80 columns and long dims summarized, as there. Only dtype names are ember's.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "runtime/autograd/node.h"
#include "runtime/dispatch.h"
#include "runtime/tensor.h"

namespace ember {

namespace {

constexpr int64_t kEdgeItems = 3;   // elements shown at each end of a summarized dim
constexpr int64_t kSummarizeAbove = 1000;
constexpr int kLineWidth = 80;
constexpr int kPrecision = 4;  // digits after the point, fixed and scientific

// Whether dim `dim` of size `size` prints only its first and last kEdgeItems entries.
bool elided(bool summarize, int64_t size) { return summarize && size > 2 * kEdgeItems; }

// The offsets of the elements that print (all, or the summarized corners), in printing order.
void printed_offsets(const Tensor& host, int dim, int64_t offset, bool summarize, std::vector<int64_t>& offsets) {
  if (dim == host.dim()) {
    offsets.push_back(offset);
    return;
  }
  const int64_t size = host.size(dim);
  for (int64_t i = 0; i < size; ++i) {
    if (elided(summarize, size) && i == kEdgeItems) i = size - kEdgeItems;
    printed_offsets(host, dim + 1, offset + i * host.stride(dim), summarize, offsets);
  }
}

// PyTorch's _Formatter. Floating values print in integer mode ("3.") when every nonzero finite
// one is a whole number, else fixed ("3.1416"); either switches to scientific ("3.1416e+00") when
// the largest magnitude is over 1e8 or 1000 times the smallest, or (fixed only) the smallest is
// below 1e-4. Zeros, inf and nan take no part in the choice or in the width.
class Formatter {
 public:
  Formatter(const Tensor& host, const std::vector<int64_t>& offsets)
      : dtype_(host.dtype()), data_(host.impl()->storage->data()) {
    if (!is_floating(dtype_)) {
      for (int64_t offset : offsets) width_ = std::max(width_, text(offset).size());
      return;
    }
    std::vector<double> magnitudes;
    std::vector<int64_t> counted;
    for (int64_t offset : offsets) {
      const double value = real_at(offset);
      if (value == 0.0 || !std::isfinite(value)) continue;
      magnitudes.push_back(std::abs(value));
      counted.push_back(offset);
      whole_ = whole_ && value == std::ceil(value);
    }
    if (counted.empty()) return;
    const double largest = *std::max_element(magnitudes.begin(), magnitudes.end());
    const double smallest = *std::min_element(magnitudes.begin(), magnitudes.end());
    scientific_ = largest / smallest > 1000.0 || largest > 1.0e8 || (!whole_ && smallest < 1.0e-4);
    for (int64_t offset : counted) width_ = std::max(width_, text(offset).size());
  }

  size_t width() const { return width_; }

  // The element at `offset`, right-aligned to the width every element of the tensor shares.
  std::string format(int64_t offset) const {
    std::string value = text(offset);
    return std::string(width_ > value.size() ? width_ - value.size() : 0, ' ') + value;
  }

 private:
  double real_at(int64_t offset) const {
    return dispatch_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      return static_cast<double>(static_cast<compute_t<T>>(static_cast<const T*>(data_)[offset]));
    });
  }

  std::string text(int64_t offset) const {
    return dispatch_dtype(dtype_, [&](auto zero) -> std::string {
      using T = decltype(zero);
      const T stored = static_cast<const T*>(data_)[offset];
      if constexpr (std::is_same_v<T, bool>) {
        return stored ? "True" : "False";
      } else if constexpr (std::is_integral_v<T>) {
        return std::to_string(stored);
      } else {
        const double value = static_cast<double>(static_cast<compute_t<T>>(stored));
        if (std::isnan(value)) return "nan";  // as Python, whatever the sign bit ("-nan" from printf)
        if (scientific_) return fmt::format("{:.{}e}", value, kPrecision);
        if (whole_) return fmt::format("{:.0f}", value) + (std::isfinite(value) ? "." : "");
        return fmt::format("{:.{}f}", value, kPrecision);
      }
    });
  }

  DType dtype_;
  const void* data_;  // the host tensor's storage; offsets count its elements
  bool whole_ = true;  // integer mode
  bool scientific_ = false;
  size_t width_ = 1;
};

// PyTorch's layout of dims `dim`.. at `offset`, its first line starting at column `indent`: a
// vector's elements wrap to the line width; higher dims put their slices on new lines, with a
// blank line between slices per dim beyond the second, and "..." for the summarized middle.
std::string layout(const Tensor& host, const Formatter& formatter, int dim, int64_t offset, bool summarize,
                   int indent) {
  if (host.dim() == 0) return formatter.format(offset);
  const int64_t size = host.size(dim);
  const int remaining = static_cast<int>(host.dim()) - dim;
  std::vector<std::string> parts;
  for (int64_t i = 0; i < size; ++i) {
    if (elided(summarize, size) && i == kEdgeItems) {
      parts.push_back(remaining == 1 ? " ..." : "...");
      i = size - kEdgeItems;
    }
    const int64_t at = offset + i * host.stride(dim);
    parts.push_back(remaining == 1 ? formatter.format(at)
                                   : layout(host, formatter, dim + 1, at, summarize, indent + 1));
  }
  std::string next_line = ",\n";
  next_line.append(static_cast<size_t>(indent) + 1, ' ');
  std::string out = "[";
  if (remaining == 1) {
    const int element_length = static_cast<int>(formatter.width()) + 2;  // with ", "
    const size_t per_line = static_cast<size_t>(std::max(1, (kLineWidth - indent) / element_length));
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) out += i % per_line == 0 ? next_line : ", ";
      out += parts[i];
    }
  } else {
    std::string separator = ",";
    separator.append(static_cast<size_t>(remaining) - 1, '\n').append(static_cast<size_t>(indent) + 1, ' ');
    for (size_t i = 0; i < parts.size(); ++i) out += (i > 0 ? separator : "") + parts[i];
  }
  return out + "]";
}

// Appends ", suffix" for each suffix, moving one to a new line at `indent` when the line would pass
// the line width. PyTorch counts the last line as two characters longer than it is; so do we.
void add_suffixes(std::string& text, const std::vector<std::string>& suffixes, int indent) {
  const size_t newline = text.rfind('\n');
  size_t line_length = (newline == std::string::npos ? text.size() : text.size() - newline - 1) + 2;
  for (const std::string& suffix : suffixes) {
    if (line_length + suffix.size() + 2 > kLineWidth) {
      text.append(",\n").append(static_cast<size_t>(indent), ' ').append(suffix);
      line_length = indent + suffix.size();
    } else {
      text += ", " + suffix;
      line_length += suffix.size() + 2;
    }
  }
  text += ')';
}

}  // namespace

std::string Tensor::str(Where where) const {
  if (!defined()) return "tensor(undefined)";
  CallSiteScope site(where);  // a compiled function that prints breaks its graph here
  NoGradGuard no_grad;
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  if (!device().is_cpu()) suffixes.push_back("device='" + device().str() + "'");
  std::string text = prefix;
  if (numel() == 0) {  // no values to show the dtype by, so only float32 goes unnamed
    if (dim() != 1) {
      std::ostringstream size;
      size << "size=(";
      for (int d = 0; d < dim(); ++d) size << (d > 0 ? ", " : "") << sizes()[d];
      suffixes.push_back(size.str() + ")");
    }
    if (dtype() != kFloat32) suffixes.push_back("dtype=" + std::string(dtype_name(dtype())));
    text += "[]";
  } else {
    if (dtype() != kFloat32 && dtype() != kInt64 && dtype() != kBool)
      suffixes.push_back("dtype=" + std::string(dtype_name(dtype())));
    const Tensor host = host_values("str", *this, /*dense=*/false);
    const bool summarize = numel() > kSummarizeAbove;
    std::vector<int64_t> offsets;
    printed_offsets(host, 0, host.storage_offset(), summarize, offsets);
    const Formatter formatter(host, offsets);
    text += layout(host, formatter, 0, host.storage_offset(), summarize, indent);
  }
  if (grad_fn()) {
    suffixes.push_back("grad_fn=<" + grad_fn()->name() + ">");  // mul_backward: PyTorch's MulBackward0
  } else if (requires_grad()) {
    suffixes.push_back("requires_grad=True");
  }
  add_suffixes(text, suffixes, indent);
  return text;
}

}  // namespace ember
