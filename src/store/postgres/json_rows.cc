#include "store/postgres/json_rows.h"

#include "store/sql/json_text.h"

namespace cronledger::store::postgres {

void AppendJsonString(std::string& out, std::string_view s) {
  sql::AppendJsonString(out, s, sql::NulBytes::kDrop);
}

JsonRows& JsonRows::Row() {
  if (open_) out_ += '}';
  if (rows_ > 0) out_ += ',';
  out_ += '{';
  open_ = true;
  first_field_ = true;
  ++rows_;
  return *this;
}

void JsonRows::Key(std::string_view key) {
  if (!first_field_) out_ += ',';
  first_field_ = false;
  out_ += '"';
  out_ += key;
  out_ += "\":";
}

JsonRows& JsonRows::Int(std::string_view key, int64_t v) {
  Key(key);
  out_ += std::to_string(v);
  return *this;
}

JsonRows& JsonRows::Bool(std::string_view key, bool v) {
  Key(key);
  out_ += v ? "true" : "false";
  return *this;
}

JsonRows& JsonRows::Text(std::string_view key, std::string_view v) {
  Key(key);
  AppendJsonString(out_, v);
  return *this;
}

JsonRows& JsonRows::Null(std::string_view key) {
  Key(key);
  out_ += "null";
  return *this;
}

JsonRows& JsonRows::IntOrNull(std::string_view key, const std::optional<int64_t>& v) {
  return v ? Int(key, *v) : Null(key);
}

JsonRows& JsonRows::TextOrNull(std::string_view key, std::string_view v) {
  return v.empty() ? Null(key) : Text(key, v);
}

std::string JsonRows::Take() && {
  if (open_) out_ += '}';
  out_ += ']';
  open_ = false;
  return std::move(out_);
}

}  // namespace cronledger::store::postgres
