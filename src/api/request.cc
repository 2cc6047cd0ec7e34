#include "api/request.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace cronledger::api {

ApiResponse Error(int http_status, std::string_view code, std::string message) {
  ApiResponse r;
  r.status = http_status;
  r.body = {{"error", std::string(code)}, {"message", std::move(message)}};
  return r;
}

ApiResponse ErrorFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return Error(400, "invalid_request", status.message());
    case StatusCode::kNotFound: return Error(404, "not_found", status.message());
    case StatusCode::kStaleLease: return Error(409, "stale_lease", status.message());
    case StatusCode::kConflict: return Error(409, "conflict", status.message());
    // The store's only precondition failure on these routes: the key was
    // used with another fingerprint.
    case StatusCode::kFailedPrecondition:
      return Error(409, "fingerprint_mismatch", status.message());
    case StatusCode::kUnavailable:
    case StatusCode::kIOError: return Error(503, "unavailable", status.message());
    default: return Error(500, "internal", status.message());
  }
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
      i += 2;
    } else if (plus_is_space && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

void ParseTarget(std::string_view target, ApiRequest& request) {
  const std::size_t question = target.find('?');
  request.path = PercentDecode(target.substr(0, question), false);
  if (question == std::string_view::npos) return;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    std::string name = PercentDecode(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
    if (!request.query.emplace(name, std::move(value)).second &&
        std::find(request.repeated_query.begin(), request.repeated_query.end(), name) ==
            request.repeated_query.end()) {
      request.repeated_query.push_back(std::move(name));
    }
  }
}

std::optional<int64_t> PositiveInteger(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v <= 0) {
    return std::nullopt;
  }
  return v;
}

BodyReader::BodyReader(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    value_ = nlohmann::json::object();
    return;
  }
  value_ = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value_.is_discarded()) {
    problem_ = "the body is not valid JSON";
    value_ = nlohmann::json::object();
  } else if (!value_.is_object()) {
    problem_ = "the body must be a JSON object";
    value_ = nlohmann::json::object();
  }
}

BodyReader::BodyReader(nlohmann::json value, std::string prefix)
    : value_(std::move(value)), prefix_(std::move(prefix)) {}

void BodyReader::Fail(std::string message) {
  if (!problem_) problem_ = std::move(message);
}

void BodyReader::Invalid(const char* field, std::string_view what) {
  Fail(fmt::format("field \"{}{}\" {}", prefix_, field, what));
}

const nlohmann::json* BodyReader::Find(const char* field, bool required) {
  seen_[field] = true;
  const auto it = value_.find(field);
  if (it == value_.end() || it->is_null()) {
    if (required) Fail(fmt::format("field \"{}{}\" is required", prefix_, field));
    return nullptr;
  }
  return &*it;
}

std::optional<std::string> BodyReader::String(const char* field, bool required,
                                              std::size_t max_bytes) {
  const nlohmann::json* v = Find(field, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    Fail(fmt::format("field \"{}{}\" must be a string", prefix_, field));
    return std::nullopt;
  }
  const auto& text = v->get_ref<const std::string&>();
  if (text.size() > max_bytes) {
    Fail(fmt::format("field \"{}{}\" is {} bytes; at most {} are allowed", prefix_, field,
                     text.size(), max_bytes));
    return std::nullopt;
  }
  return text;
}

std::optional<int64_t> BodyReader::Integer(const char* field, bool required, int64_t min,
                                           int64_t max) {
  const nlohmann::json* v = Find(field, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer()) {
    Fail(fmt::format("field \"{}{}\" must be an integer", prefix_, field));
    return std::nullopt;
  }
  const bool too_big = v->is_number_unsigned() &&
                       v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  if (too_big || v->get<int64_t>() < min || v->get<int64_t>() > max) {
    Fail(fmt::format("field \"{}{}\" must be from {} to {}", prefix_, field, min, max));
    return std::nullopt;
  }
  return v->get<int64_t>();
}

std::optional<bool> BodyReader::Bool(const char* field, bool required) {
  const nlohmann::json* v = Find(field, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    Fail(fmt::format("field \"{}{}\" must be true or false", prefix_, field));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::vector<std::string>> BodyReader::Strings(const char* field, bool required,
                                                            std::size_t max_items,
                                                            std::size_t max_bytes) {
  const nlohmann::json* v = Find(field, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_array() || v->size() > max_items) {
    Fail(fmt::format("field \"{}{}\" must be an array of at most {} strings", prefix_, field,
                     max_items));
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const auto& item : *v) {
    if (!item.is_string() || item.get_ref<const std::string&>().size() > max_bytes) {
      Fail(fmt::format("field \"{}{}\" must be an array of strings of at most {} bytes", prefix_,
                       field, max_bytes));
      return std::nullopt;
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::optional<ApiResponse> BodyReader::Problem() {
  if (!problem_) {
    for (const auto& [name, _] : value_.items()) {
      if (!seen_.contains(name)) {
        problem_ = fmt::format("unknown field \"{}{}\"", prefix_, name);
        break;
      }
    }
  }
  if (!problem_) return std::nullopt;
  return Error(400, "invalid_request", *problem_);
}

}  // namespace cronledger::api
