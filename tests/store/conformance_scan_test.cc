// Store conformance: reading a job's runs over a window of business dates a
// page at a time (RunListByDate, the gap scanner's read).
#include <algorithm>
#include <tuple>

#include "store/conformance.h"

namespace cronledger::testing {
namespace {

class StoreScan : public StoreConformance {
 protected:
  // Job j: partitions b, a, c on 2026-11-01 .. 04, planned out of date
  // order so that ids and dates disagree; job k on 2026-11-02.
  void SetUp() override {
    StoreConformance::SetUp();
    AddJob("j");
    AddJob("k");
    for (const char* day : {"03", "01", "04", "02"}) {
      const std::string at = std::string("2026-11-") + day + "T09:00:00Z";
      Plan("j", {Occurrence(at, {"b", "a", "c"})}, at, "2026-10-31T00:00:00Z");
    }
    Plan("k", {Occurrence("2026-11-02T09:00:00Z", {"a"})}, "2026-11-02T09:00:00Z",
         "2026-10-31T00:00:00Z");
  }

  // What RunListByDate must return: j's runs of [from, to] by (date, id).
  std::vector<store::RunRecord> Want(const std::string& from, const std::string& to) {
    std::vector<store::RunRecord> want;
    for (auto& r : Runs("j")) {
      if (r.business_date >= from && r.business_date <= to) want.push_back(r);
    }
    std::sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
      return std::tie(a.business_date, a.id) < std::tie(b.business_date, b.id);
    });
    return want;
  }

  static std::vector<std::string> Keys(const std::vector<store::RunRecord>& runs) {
    std::vector<std::string> keys;
    for (const auto& r : runs) keys.push_back(r.RunKey() + "#" + std::to_string(r.id));
    return keys;
  }
};

TEST_P(StoreScan, ListsOneJobsRunsOfTheDatesInDateThenIdOrder) {
  store::RunDateQuery q;
  q.job = "j";
  q.from_date = "2026-11-02";
  q.to_date = "2026-11-03";
  std::vector<store::RunRecord> page;
  ASSERT_TRUE(S().RunListByDate(q, &page).ok());
  ASSERT_EQ(page.size(), 6u);
  EXPECT_EQ(Keys(page), Keys(Want("2026-11-02", "2026-11-03")));
  for (const auto& r : page) {
    EXPECT_EQ(r.job, "j");
    EXPECT_EQ(r.state, ledger::RunState::kPending);
    EXPECT_EQ(FormatUtc(r.scheduled_at), r.business_date + "T09:00:00Z");
  }
  // Within a date: by id, i.e. as planned (b, a, c).
  EXPECT_EQ(page[0].partition, "b");
  EXPECT_EQ(page[1].partition, "a");
  EXPECT_EQ(page[2].partition, "c");
}

TEST_P(StoreScan, PagesResumeAfterTheLastRowAndReplaceThePage) {
  store::RunDateQuery q;
  q.job = "j";
  q.from_date = "2026-11-01";
  q.to_date = "2026-11-04";
  q.limit = 5;
  // A page holding more than a page's worth of older records: replaced.
  std::vector<store::RunRecord> page(7);
  for (auto& r : page) r.partition = "a long partition name from before";
  std::vector<store::RunRecord> all;
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(S().RunListByDate(q, &page).ok());
    sizes.push_back(page.size());
    if (page.empty()) break;
    all.insert(all.end(), page.begin(), page.end());
    q.after = std::make_pair(page.back().business_date, page.back().id);
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{5, 5, 2, 0}));
  EXPECT_EQ(Keys(all), Keys(Want("2026-11-01", "2026-11-04")));
}

TEST_P(StoreScan, NothingOutsideTheJobOrTheDates) {
  store::RunDateQuery q;
  q.job = "k";
  q.from_date = "2026-11-03";
  q.to_date = "2026-11-04";
  std::vector<store::RunRecord> page(2);
  ASSERT_TRUE(S().RunListByDate(q, &page).ok());
  EXPECT_TRUE(page.empty());
  q.job = "nobody";
  q.from_date = "2026-11-01";
  ASSERT_TRUE(S().RunListByDate(q, &page).ok());
  EXPECT_TRUE(page.empty());
  q.job = "j";
  q.from_date = q.to_date = "2026-11-04";
  q.after = std::make_pair(std::string("2026-11-04"), int64_t{0});
  ASSERT_TRUE(S().RunListByDate(q, &page).ok());
  EXPECT_EQ(Keys(page), Keys(Want("2026-11-04", "2026-11-04")));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreScan, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cronledger::testing
