#include "engine/ledger_days.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace cronledger::engine {
namespace {

auto KeyOf(const store::RunRecord& r) {
  return std::make_tuple(std::string_view(r.partition), std::string_view(r.period));
}

}  // namespace

const store::RunRecord* LedgerDay::Find(std::string_view partition, std::string_view period) const {
  const auto key = std::make_tuple(partition, period);
  const auto it = std::lower_bound(order_.begin(), order_.end(), key,
                                   [&](uint32_t i, const auto& k) { return KeyOf(runs_[i]) < k; });
  if (it == order_.end() || KeyOf(runs_[*it]) != key) return nullptr;
  return &runs_[*it];
}

void LedgerDay::Reset(std::string_view date) {
  date_.assign(date);
  size_ = 0;
  order_.clear();
}

void LedgerDay::Add(const store::RunRecord& run) {
  // Assigning into a spare record reuses its strings' storage.
  if (size_ == runs_.size()) {
    runs_.push_back(run);
  } else {
    runs_[size_] = run;
  }
  ++size_;
}

void LedgerDay::Index() {
  order_.resize(size_);
  for (uint32_t i = 0; i < size_; ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(),
            [&](uint32_t a, uint32_t b) { return KeyOf(runs_[a]) < KeyOf(runs_[b]); });
}

LedgerDays::LedgerDays(store::Store& store, std::string job, std::string from, std::string to,
                       int page_size)
    : store_(store), days_(kDaysHeld) {
  query_.job = std::move(job);
  query_.from_date = std::move(from);
  query_.to_date = std::move(to);
  query_.limit = page_size;
}

LedgerDay& LedgerDays::Fresh(std::string_view date) {
  LedgerDay& day = days_[next_victim_];
  next_victim_ = (next_victim_ + 1) % days_.size();
  day.Reset(date);
  return day;
}

Status LedgerDays::NextPage() {
  if (!page_.empty()) query_.after = std::make_pair(page_.back().business_date, page_.back().id);
  if (Status s = store_.RunListByDate(query_, &page_); !s.ok()) return s;
  pos_ = 0;
  exhausted_ = page_.size() < static_cast<std::size_t>(query_.limit);
  return Status::Ok();
}

Result<const LedgerDay*> LedgerDays::Get(std::string_view date) {
  for (const auto& day : days_) {
    if (!day.date_.empty() && day.date_ == date) return &day;
  }
  if (!read_through_.empty() && date <= read_through_) return ReadAlone(date);
  // Read on through `date`, holding each date passed on the way (the next
  // keys are most likely on them).
  LedgerDay* current = nullptr;
  for (;;) {
    if (pos_ == page_.size()) {
      if (exhausted_) break;
      if (Status s = NextPage(); !s.ok()) {
        if (current) current->Reset("");  // not a complete date: hold nothing
        return s;
      }
      continue;
    }
    const store::RunRecord& run = page_[pos_];
    if (run.business_date > date) break;
    if (!current || current->date_ != run.business_date) {
      if (current) current->Index();
      current = &Fresh(run.business_date);
    }
    current->Add(run);
    ++pos_;
  }
  if (current) current->Index();
  read_through_.assign(date);
  if (current && current->date_ == date) return current;
  LedgerDay& none = Fresh(date);  // the date has no runs
  none.Index();
  return &none;
}

Result<const LedgerDay*> LedgerDays::ReadAlone(std::string_view date) {
  // A date already read past and no longer held: rare (business dates
  // stepping back further than kDaysHeld), so a query of its own.
  store::RunDateQuery q;
  q.job = query_.job;
  q.from_date = q.to_date = std::string(date);
  q.limit = query_.limit;
  LedgerDay& day = Fresh(date);
  std::vector<store::RunRecord> page;
  for (;;) {
    if (Status s = store_.RunListByDate(q, &page); !s.ok()) {
      day.Reset("");  // not a complete date: hold nothing
      return s;
    }
    for (const auto& run : page) day.Add(run);
    if (page.size() < static_cast<std::size_t>(q.limit)) break;
    q.after = std::make_pair(page.back().business_date, page.back().id);
  }
  day.Index();
  return &day;
}

}  // namespace cronledger::engine
