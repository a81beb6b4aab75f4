// LruCache (runtime/lru_cache.h): what the GEMM plan cache relies on to stay bounded.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "runtime/error.h"
#include "runtime/lru_cache.h"

namespace test_lru_cache {

using namespace ember;

TEST_CASE("lru cache: finds what was inserted, and nothing else") {
  LruCache<int, std::string> cache(4);
  CHECK(cache.find(1) == nullptr);
  cache.insert(1, "one");
  cache.insert(2, "two");
  REQUIRE(cache.find(1) != nullptr);
  CHECK(*cache.find(1) == "one");
  CHECK(*cache.find(2) == "two");
  CHECK(cache.find(3) == nullptr);
  CHECK(cache.size() == 2);
}

TEST_CASE("lru cache: when full, the least recently used entry goes, and a lookup counts as a use") {
  LruCache<int, int> cache(3);
  cache.insert(1, 10);
  cache.insert(2, 20);
  cache.insert(3, 30);
  CHECK(cache.find(1) != nullptr);  // 2 is now the least recently used
  cache.insert(4, 40);
  CHECK(cache.size() == 3);
  CHECK(cache.find(2) == nullptr);
  CHECK(*cache.find(1) == 10);
  CHECK(*cache.find(3) == 30);
  CHECK(*cache.find(4) == 40);
  cache.insert(5, 50);  // 1 was used longest ago now
  CHECK(cache.find(1) == nullptr);
  CHECK(cache.size() == 3);
}

TEST_CASE("lru cache: inserting an existing key replaces its value without dropping another") {
  LruCache<int, int> cache(2);
  cache.insert(1, 10);
  cache.insert(2, 20);
  CHECK(cache.insert(1, 11) == 11);
  CHECK(cache.size() == 2);
  CHECK(*cache.find(1) == 11);
  CHECK(*cache.find(2) == 20);
}

TEST_CASE("lru cache: a dropped entry's value is destroyed, and the returned entry outlives other lookups") {
  auto tracked = std::make_shared<int>(7);
  std::weak_ptr<int> watch = tracked;
  LruCache<int, std::shared_ptr<int>> cache(1);
  std::shared_ptr<int>& first = cache.insert(1, std::move(tracked));
  CHECK(cache.find(2) == nullptr);
  CHECK(*first == 7);  // still valid after a miss
  cache.insert(2, std::make_shared<int>(8));
  CHECK(watch.expired());  // capacity 1: the first entry was dropped with its value
  CHECK(**cache.find(2) == 8);
}

TEST_CASE("lru cache: a capacity of zero is refused") {
  CHECK_THROWS_WITH_AS((LruCache<int, int>(0)), doctest::Contains("capacity must be positive"), Error);
}

}  // namespace test_lru_cache
