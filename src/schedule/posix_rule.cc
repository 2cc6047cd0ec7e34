#include "schedule/posix_rule.h"

#include <chrono>
#include <exception>

#include <date/ptz.h>

namespace cronledger::schedule {
namespace {

class PtzRule final : public PosixRule {
 public:
  explicit PtzRule(const std::string& tz) : zone_(tz) {}

  Span At(int64_t t) const override {
    const auto info = zone_.get_info(date::sys_seconds{std::chrono::seconds{t}});
    return {info.begin.time_since_epoch().count(), info.end.time_since_epoch().count(),
            info.offset.count()};
  }

 private:
  Posix::time_zone zone_;
};

}  // namespace

std::shared_ptr<const PosixRule> PosixRule::Parse(const std::string& tz) {
  try {
    return std::make_shared<const PtzRule>(tz);
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace cronledger::schedule
