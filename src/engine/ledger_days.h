// The gap scanner's view of the ledger: a job's runs over a window of
// business dates, read once, in date order, a page at a time, and looked up
// a date at a time as the expected keys reach it. Only a few dates are held
// at once, so scanning a long window or a wide job takes little memory.
#ifndef CRONLEDGER_ENGINE_LEDGER_DAYS_H_
#define CRONLEDGER_ENGINE_LEDGER_DAYS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cronledger/status.h"
#include "store/store.h"

namespace cronledger::engine {

// The runs of one business date, by (partition, period).
class LedgerDay {
 public:
  const std::string& date() const { return date_; }
  // The run of the key, or null.
  const store::RunRecord* Find(std::string_view partition, std::string_view period) const;

 private:
  friend class LedgerDays;
  void Reset(std::string_view date);
  void Add(const store::RunRecord& run);
  void Index();  // sorts `order_` once all runs are in

  std::string date_;  // empty: unused
  // [0, size_) are this date's runs; the rest is spare storage.
  std::vector<store::RunRecord> runs_;
  std::size_t size_ = 0;
  std::vector<uint32_t> order_;  // indexes of runs_ by (partition, period)
};

class LedgerDays {
 public:
  // Dates held at once. Expected keys come in scheduled order, in which
  // business dates only step back by a day or so (a DST change near
  // midnight, a new date offset); an older date is read again by itself.
  static constexpr std::size_t kDaysHeld = 4;

  // The runs of `job` with business dates in [from, to] (YYYY-MM-DD).
  LedgerDays(store::Store& store, std::string job, std::string from, std::string to,
             int page_size = 2000);

  // The runs of `date` (within [from, to]); valid until the next call.
  Result<const LedgerDay*> Get(std::string_view date);

 private:
  LedgerDay& Fresh(std::string_view date);  // a held slot, reused for `date`
  Status NextPage();
  Result<const LedgerDay*> ReadAlone(std::string_view date);

  store::Store& store_;
  store::RunDateQuery query_;
  std::vector<store::RunRecord> page_;
  std::size_t pos_ = 0;          // next row of page_ to take
  bool exhausted_ = false;       // no rows after page_
  std::string read_through_;     // every row up to this date has been taken
  std::vector<LedgerDay> days_;  // kDaysHeld slots
  std::size_t next_victim_ = 0;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_LEDGER_DAYS_H_
