// DataLoader worker threads that cannot be started: an error the caller can catch, with every
// thread that did start joined (an unwinding std::thread that is still joinable would terminate).
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "error_of.h"
#include "runtime/data_test_helpers.h"
#include "skip_case.h"

namespace test_data_workers {

using namespace ember;
using namespace ember::data;
using namespace ember::data::testing;

namespace {

// The bytes of address space this process has mapped (the first field of /proc/self/statm).
size_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Caps the address space for the scope: a new thread's stack (megabytes each) soon does not fit,
// as on a machine out of memory or threads. Restored on every path.
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(size_t bytes) {
    REQUIRE(getrlimit(RLIMIT_AS, &saved_) == 0);
    const rlimit limited{bytes, saved_.rlim_max};
    REQUIRE(setrlimit(RLIMIT_AS, &limited) == 0);
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }

 private:
  rlimit saved_{};
};

}  // namespace

TEST_CASE("DataLoader: a worker thread that cannot start is an error the caller catches, not std::terminate") {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer maps its own memory as threads start and aborts when it cannot.
  ember::testing::skip_case("an address-space limit cannot be set under AddressSanitizer");
  return;
#else
  const auto dataset = std::make_shared<TensorDataset>(numbered_dataset(100));
  std::string message;
  {
    AddressSpaceLimit limit(mapped_bytes() + (size_t{64} << 20));
    try {
      DataLoader loader(dataset, nullptr, {.batch_size = 1, .num_workers = 256});
      for (auto& batch : loader) (void)batch;
    } catch (const Error& error) {
      message = error.what();
    }
  }
  CHECK(message.find("DataLoader: could not start worker") != std::string::npos);
  CHECK(message.find("of 256") != std::string::npos);
  CHECK(message.find("num_workers") != std::string::npos);
  // Nothing was left behind: with room again, a loader with workers delivers every sample.
  DataLoader loader(dataset, nullptr, {.batch_size = 10, .num_workers = 2});
  int64_t samples = 0;
  for (const auto& batch : one_epoch(loader)) samples += static_cast<int64_t>(batch.size());
  CHECK(samples == 100);
#endif
}

}  // namespace test_data_workers
