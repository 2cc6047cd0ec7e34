// The SQLite statement layer under the store: how values are bound.
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "store/sqlite/sqlite_db.h"

namespace cronledger::store::sqlite {
namespace {

// An empty step name in a fence read once reached SQLite as NULL (a
// default string_view has no data), and `step <> NULL` matched no running
// step: the reaper left a step running. Text is text, empty or not, whether
// it is copied or bound in place.
TEST(SqliteDb, AnEmptyViewIsBoundAsEmptyTextNotNull) {
  auto db = Db::Open(":memory:");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto s = (*db)->Prepare("SELECT ?1 IS NULL, length(?1), ?2 IS NULL, length(?2), 'x' <> ?2");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  s->Bind(1, std::string_view()).BindInPlace(2, std::string_view());
  auto row = s->Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(s->Int(0), 0);
  EXPECT_EQ(s->Int(1), 0);
  EXPECT_EQ(s->Int(2), 0);
  EXPECT_EQ(s->Int(3), 0);
  EXPECT_EQ(s->Int(4), 1);
}

TEST(SqliteDb, TextBoundInPlaceIsReadWhereItIsAndUnboundWithTheHandle) {
  auto db = Db::Open(":memory:");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  const std::string sql = "SELECT ?1, ?1 IS NULL";
  std::string value = "step-one";
  {
    auto s = (*db)->Prepare(sql);
    ASSERT_TRUE(s.ok());
    s->BindInPlace(1, value);
    auto row = s->Step();
    ASSERT_TRUE(row.ok() && *row);
    EXPECT_EQ(s->Text(0), "step-one");
  }
  // The cached statement again, nothing bound: the handle above unbound
  // the value when it went, so nothing refers to `value` any more.
  value.assign(64, 'z');
  auto s = (*db)->Prepare(sql);
  ASSERT_TRUE(s.ok());
  auto row = s->Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(s->Int(1), 1);
}

}  // namespace
}  // namespace cronledger::store::sqlite
