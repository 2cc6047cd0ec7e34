#include "exec/attempt_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "cronledger/schedule.h"

namespace cronledger::exec {
namespace {

namespace fs = std::filesystem;

class AttemptFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cronledger-files-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(AttemptFiles, KeepsInputsWithPlaceholdersAndReportsMissingOnes) {
  fs::create_directories(dir_ + "/data/2026-11-28");
  std::ofstream(dir_ + "/data/2026-11-28/orders.csv") << "id,amount\n1,10\n";
  StepContext ctx;
  ctx.business_date = "2026-11-28";
  ctx.partition = "acme";
  const auto problems = KeepInputs({"data/{business_date}/orders.csv", "data/{partition}.json"},
                                   ctx, dir_, dir_ + "/kept");
  std::ifstream kept(dir_ + "/kept/data_2026-11-28_orders.csv");
  std::stringstream text;
  text << kept.rdbuf();
  EXPECT_EQ(text.str(), "id,amount\n1,10\n");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("data/acme.json"), std::string::npos) << problems[0];
}

TEST_F(AttemptFiles, PrunesRunFoldersPastRetentionByTheirNewestFile) {
  for (const char* run : {"job/1", "job/2"}) {
    fs::create_directories(dir_ + "/" + run);
    std::ofstream(dir_ + "/" + run + "/attempt-1.log") << "x";
  }
  const auto now = Clock::TimePoint{ParseRfc3339("2026-11-29T00:00:00Z")->time_since_epoch()};
  const auto old = std::chrono::file_clock::from_sys(now - std::chrono::hours{24 * 40});
  const auto recent = std::chrono::file_clock::from_sys(now - std::chrono::hours{1});
  fs::last_write_time(dir_ + "/job/1/attempt-1.log", old);
  fs::last_write_time(dir_ + "/job/1", old);
  fs::last_write_time(dir_ + "/job/2/attempt-1.log", recent);
  EXPECT_EQ(PruneAttemptFolders(dir_, std::chrono::hours{24 * 30}, now), 1);
  EXPECT_FALSE(fs::exists(dir_ + "/job/1"));
  EXPECT_TRUE(fs::exists(dir_ + "/job/2/attempt-1.log"));
  EXPECT_EQ(PruneAttemptFolders(dir_ + "/missing", std::chrono::hours{1}, now), 0);
}

}  // namespace
}  // namespace cronledger::exec
