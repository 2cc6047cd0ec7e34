#include "cronledger/handler.h"

namespace cronledger {

void HandlerRegistry::Register(const std::string& job, StepHandler handler,
                               const std::string& step) {
  std::lock_guard lock(mu_);
  handlers_[{job, step}] = std::move(handler);
}

StepHandler HandlerRegistry::Find(const std::string& job, const std::string& step) const {
  std::lock_guard lock(mu_);
  if (auto it = handlers_.find({job, step}); it != handlers_.end()) return it->second;
  if (auto it = handlers_.find({job, ""}); it != handlers_.end()) return it->second;
  return nullptr;
}

}  // namespace cronledger
