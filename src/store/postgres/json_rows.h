// A batch of flat JSON objects written straight into one string: the
// parameter each set-based statement of PostgresStore reads with
// json_to_recordset.
#ifndef CRONLEDGER_STORE_POSTGRES_JSON_ROWS_H_
#define CRONLEDGER_STORE_POSTGRES_JSON_ROWS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cronledger::store::postgres {

// `s` as a JSON string appended to `out`, as PostgreSQL's text accepts it:
// without NUL (libpq would cut a text parameter there too), and with bytes
// that are not UTF-8 replaced by U+FFFD (the server would refuse the whole
// batch).
void AppendJsonString(std::string& out, std::string_view s);

// Building these rows as nlohmann::json objects (a std::map each) and then
// serialising them was most of a node's own CPU on PostgreSQL, spent inside
// the claim's and the group commit's transactions (docs/benchmarks.md,
// session 14). Keys are the statements' column names, written as given.
class JsonRows {
 public:
  JsonRows() : out_("[") {}

  // Starts the next object; the calls after it add its fields.
  JsonRows& Row();
  JsonRows& Int(std::string_view key, int64_t v);
  JsonRows& Bool(std::string_view key, bool v);
  JsonRows& Text(std::string_view key, std::string_view v);
  JsonRows& Null(std::string_view key);
  JsonRows& IntOrNull(std::string_view key, const std::optional<int64_t>& v);
  // NULL when empty.
  JsonRows& TextOrNull(std::string_view key, std::string_view v);

  bool empty() const { return rows_ == 0; }
  std::size_t size() const { return rows_; }
  // The array, `[{...},...]`; nothing may be added after.
  std::string Take() &&;

 private:
  void Key(std::string_view key);

  std::string out_;
  std::size_t rows_ = 0;
  bool open_ = false;  // an object is open
  bool first_field_ = true;
};

}  // namespace cronledger::store::postgres

#endif  // CRONLEDGER_STORE_POSTGRES_JSON_ROWS_H_
