// Status and Result<T>: the one error vocabulary of cronledger.
//
// Errors are values, never exceptions across module boundaries. A Status is
// cheap to copy when ok (no message allocated). Result<T> holds either a
// value or a non-ok Status.
#ifndef CRONLEDGER_STATUS_H_
#define CRONLEDGER_STATUS_H_

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cronledger {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad input from a user: config, expression, request
  kNotFound,
  kConflict,            // the ledger's state refuses the action
  kStaleLease,          // a write carried a fencing token that is not current
  kUnavailable,         // store or server unreachable; retry may succeed
  kIOError,
  kFailedPrecondition,  // e.g. a database newer than this binary understands
  kInternal,            // a broken invariant: a bug
};

// Stable lowercase name of a code ("invalid_argument", ...).
std::string_view StatusCodeName(StatusCode code);

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid_argument: message", or "ok".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status NotFound(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status Internal(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

// Either a T or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  // REQUIRES: !status.ok()
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // The error, or an ok Status when a value is held.
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace cronledger

#endif  // CRONLEDGER_STATUS_H_
