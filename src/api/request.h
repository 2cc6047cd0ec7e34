// An HTTP request and answer as the route handlers see them, apart from the
// HTTP library: routes are plain functions of this, so they are tested (and
// fuzzed) without sockets.
#ifndef CRONLEDGER_API_REQUEST_H_
#define CRONLEDGER_API_REQUEST_H_

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cronledger/status.h"

namespace cronledger::api {

struct ApiRequest {
  std::string method;  // "GET", "POST", "PUT"
  std::string path;    // "/v1/effects/begin", without the query
  std::map<std::string, std::string> query;
  // Query parameters given more than once (`query` keeps one value):
  // routes refuse them rather than pick one.
  std::vector<std::string> repeated_query;
  std::string authorization;  // the Authorization header, "" when absent
  std::string body;
  // For the dashboard's sessions (api/dashboard_session.h): the Cookie,
  // X-CSRF-Token and Content-Type headers, "" when absent.
  std::string cookie;
  std::string csrf_token;
  std::string content_type;
};

struct ApiResponse {
  int status = 200;
  nlohmann::ordered_json body = nlohmann::ordered_json::object();
};

// Fills `request`'s path and query from an HTTP request target
// ("/v1/runs?job=a&limit=5"): the path and every name and value are
// percent-decoded (%XX; '+' is a space in the query only); a parameter
// given more than once keeps its first value and is named in
// repeated_query; empty pairs ("a=1&&b=2") are skipped.
void ParseTarget(std::string_view target, ApiRequest& request);

// What an API says of a request from its headers alone, before a byte of
// its body is read (HttpServer reads no body of a caller the route would
// refuse): `owned` when the path is the API's, and then the refusal, if
// the credential is one it does not accept, and the largest body the
// route takes when it is less than the server's (0: the server's).
struct HeadVerdict {
  bool owned = false;
  std::optional<ApiResponse> refusal;
  std::size_t max_body = 0;
};

// {"error": CODE, "message": TEXT} with an HTTP status.
ApiResponse Error(int http_status, std::string_view code, std::string message);

// The answer for a store refusal: 400 invalid_request, 404 not_found,
// 409 stale_lease / conflict / fingerprint_mismatch, 503 unavailable,
// 500 internal.
ApiResponse ErrorFor(const Status& status);

// A positive decimal integer and nothing else (ids in paths and queries).
std::optional<int64_t> PositiveInteger(std::string_view text);

// The largest id or fencing token a request may name.
inline constexpr int64_t kMaxId = std::numeric_limits<int64_t>::max();

// A JSON request body read field by field: the first problem found is kept
// (naming the field), and fields the route does not know are a problem too.
class BodyReader {
 public:
  // Parses `body`; an empty body is an empty object.
  explicit BodyReader(std::string_view body);

  std::optional<std::string> String(const char* field, bool required, std::size_t max_bytes);
  std::optional<int64_t> Integer(const char* field, bool required, int64_t min, int64_t max);
  // true or false (JSON booleans only).
  std::optional<bool> Bool(const char* field, bool required);
  // An array of at most `max_items` strings of at most `max_bytes` each.
  std::optional<std::vector<std::string>> Strings(const char* field, bool required,
                                                  std::size_t max_items, std::size_t max_bytes);
  // Reads a nested object with `read` when present; false when absent or
  // not an object (a problem then).
  template <typename Read>
  bool Object(const char* field, Read read) {
    const nlohmann::json* v = Find(field, false);
    if (v == nullptr) return false;
    if (!v->is_object()) {
      Fail(std::string("field \"") + prefix_ + field + "\" must be an object");
      return false;
    }
    BodyReader inner(*v, prefix_ + field + ".");
    read(inner);
    if (auto p = inner.Problem(); p && !problem_) problem_ = p->body["message"];
    return true;
  }

  // Records a problem with a field's value the route found itself, e.g.
  // Invalid("scope", "must be \"run\" or \"partition\"").
  void Invalid(const char* field, std::string_view what);

  // Call last: unknown fields, and the first problem, as a 400 answer.
  std::optional<ApiResponse> Problem();

 private:
  BodyReader(nlohmann::json value, std::string prefix);
  const nlohmann::json* Find(const char* field, bool required);
  void Fail(std::string message);

  nlohmann::json value_;
  std::string prefix_;  // "checkpoint." for a nested object
  std::map<std::string, bool> seen_;
  std::optional<std::string> problem_;
};

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_REQUEST_H_
