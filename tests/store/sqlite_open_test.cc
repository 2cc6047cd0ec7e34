// Opening one new SQLite ledger from several connections at once, as two
// nodes or a command run while serve starts do.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store/sqlite/sqlite_store.h"

namespace cronledger::store {
namespace {

TEST(SqliteOpen, ManyConnectionsOpenANewFileAtOnce) {
  for (int round = 0; round < 5; ++round) {
    char tmpl[] = "/tmp/cronledger-open-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const std::string path = dir + "/ledger.db";
    std::atomic<int> ready{0};
    std::atomic<int> ok{0};
    std::vector<std::string> errors(8);
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&, i] {
        ++ready;
        while (ready < 8) std::this_thread::yield();  // start together
        SqliteOptions o;
        o.path = path;
        o.synchronous_full = false;
        auto s = SqliteStore::Open(o);
        if (s.ok()) {
          ++ok;
        } else {
          errors[i] = s.status().ToString();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& e : errors) EXPECT_EQ(e, "");
    EXPECT_EQ(ok.load(), 8);
    SqliteOptions o;
    o.path = path;
    auto again = SqliteStore::Open(o);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)->GetSchemaInfo()->version, kSqliteSchemaVersion);
    again->reset();
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace cronledger::store
