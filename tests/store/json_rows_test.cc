// The batch parameters PostgresStore's set-based statements read.
#include "store/postgres/json_rows.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cronledger::store::postgres {
namespace {

TEST(JsonRows, RowsOfFieldsOfEveryKind) {
  JsonRows rows;
  EXPECT_TRUE(rows.empty());
  rows.Row().Int("id", 7).Text("step", "work").Bool("expired_only", false).Null("next");
  rows.Row()
      .Int("id", -1)
      .TextOrNull("reason", "")
      .IntOrNull("exit_status", std::nullopt)
      .IntOrNull("action", 9)
      .Bool("expired_only", true);
  EXPECT_EQ(rows.size(), 2u);
  const std::string text = std::move(rows).Take();
  EXPECT_EQ(text,
            R"([{"id":7,"step":"work","expired_only":false,"next":null},)"
            R"({"id":-1,"reason":null,"exit_status":null,"action":9,"expired_only":true}])");
  EXPECT_EQ(nlohmann::json::parse(text)[1]["action"], 9);
}

TEST(JsonRows, NoRowsIsAnEmptyArray) { EXPECT_EQ(JsonRows().Take(), "[]"); }

// An event's details are JSON text themselves: their quotes are escaped in
// place, as JSON writes them.
TEST(JsonRows, PrintableTextHasItsQuotesAndBackslashesEscaped) {
  std::string out;
  AppendJsonString(out, R"({"step":"a\b"})");
  EXPECT_EQ(out, R"("{\"step\":\"a\\b\"}")");
  EXPECT_EQ(nlohmann::json::parse(out), R"({"step":"a\b"})");
}

// A step's output or an operator's reason may hold anything: quotes,
// backslashes, control characters, non-ASCII, NUL (which PostgreSQL's text
// cannot hold) and bytes that are not UTF-8 (which would make the server
// refuse the whole batch).
TEST(JsonRows, TextIsEscapedWithoutNulAndAsValidUtf8) {
  JsonRows rows;
  rows.Row()
      .Text("quoted", "say \"hi\" \\ now")
      .Text("control", "a\tb\nc\x01")
      .Text("unicode", "d\xc3\xa9j\xc3\xa0")
      .Text("nul", std::string("a\0b", 3))
      .Text("bad", "x\xff\xfey");
  const nlohmann::json row = nlohmann::json::parse(std::move(rows).Take())[0];
  EXPECT_EQ(row["quoted"], "say \"hi\" \\ now");
  EXPECT_EQ(row["control"], "a\tb\nc\x01");
  EXPECT_EQ(row["unicode"], "d\xc3\xa9j\xc3\xa0");
  EXPECT_EQ(row["nul"], "ab");
  EXPECT_EQ(row["bad"], "x\xef\xbf\xbd\xef\xbf\xbdy");
}

}  // namespace
}  // namespace cronledger::store::postgres
