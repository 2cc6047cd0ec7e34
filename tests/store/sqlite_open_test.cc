// Opening a SQLite ledger: one new file from several connections at once,
// as two nodes or a command run while serve starts do; the mode a new
// ledger and its -wal and -shm files get; and a read-only open, which
// writes nothing, not even into an empty file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

class SqliteFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cronledger-files-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/ledger.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static unsigned ModeOf(const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return 0;
    return st.st_mode & 0777;
  }
  static unsigned Umask() {
    const mode_t old = umask(0);
    umask(old);
    return old;
  }
  Result<std::unique_ptr<SqliteStore>> Open(bool read_only, int schema_version = 0) {
    SqliteOptions o;
    o.path = path_;
    o.synchronous_full = false;
    o.read_only = read_only;
    o.create_if_missing = !read_only;
    o.schema_version = schema_version;
    return SqliteStore::Open(o);
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SqliteFiles, ANewLedgerAndItsWalAndShmAreNotReadableByOthers) {
  auto s = Open(false);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EventRecord e;
  e.type = "note";
  e.reason = "a write, so that the -wal file has content";
  ASSERT_TRUE((*s)->EventAppend(e).ok());
  const unsigned expected = 0640u & ~Umask();
  for (const std::string& f : std::vector<std::string>{path_, path_ + "-wal", path_ + "-shm"}) {
    ASSERT_TRUE(std::filesystem::exists(f)) << f;
    EXPECT_EQ(ModeOf(f), expected) << f << " is " << std::oct << ModeOf(f);
  }
}

TEST_F(SqliteFiles, AReadOnlyOpenOfAnEmptyFileWritesNothingIntoIt) {
  { std::ofstream touch(path_); }
  auto s = Open(true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("holds no cronledger ledger"), std::string::npos)
      << s.status().message();
  EXPECT_EQ(std::filesystem::file_size(path_), 0u);
  EXPECT_FALSE(std::filesystem::exists(path_ + "-wal"));
}

TEST_F(SqliteFiles, AReadOnlyOpenNeitherCreatesNorMigrates) {
  EXPECT_FALSE(Open(true).ok());
  EXPECT_FALSE(std::filesystem::exists(path_));
  // A ledger of the release before: read-only, it is refused, not migrated.
  ASSERT_TRUE(Open(false, kSqliteSchemaVersion - 1).ok());
  auto old = Open(true);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("does not migrate"), std::string::npos)
      << old.status().message();
  EXPECT_EQ((*Open(false, kSqliteSchemaVersion - 1))->GetSchemaInfo()->version,
            kSqliteSchemaVersion - 1);
}

TEST_F(SqliteFiles, AReadOnlyOpenReadsAndRefusesWrites) {
  {
    auto s = Open(false);
    ASSERT_TRUE(s.ok());
    EventRecord e;
    e.type = "note";
    ASSERT_TRUE((*s)->EventAppend(e).ok());
  }
  auto s = Open(true);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->GetSchemaInfo()->version, kSqliteSchemaVersion);
  EXPECT_EQ((*s)->EventList({})->size(), 1u);
  EventRecord e;
  e.type = "note";
  EXPECT_FALSE((*s)->EventAppend(e).ok());
  s->reset();
  EXPECT_EQ((*Open(false))->EventList({})->size(), 1u);
}

}  // namespace
}  // namespace cronledger::store
