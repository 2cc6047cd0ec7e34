#include "faults/fault_env.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/subprocess.h"
#include "common/serve_process.h"
#include "faults/scenario.h"

namespace cronledger::faults {
namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The newest PostgreSQL's bin folder, as scripts/pg-server.sh picks it.
std::string PgBin() {
  std::string best;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string bin = e.path().string() + "/bin";
    if (std::filesystem::exists(bin + "/pg_ctl") && bin > best) best = bin;
  }
  return best;
}

}  // namespace

Tmpfs::Tmpfs(std::string dir, int64_t size_bytes) : dir_(std::move(dir)), size_bytes_(size_bytes) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::string options = "size=" + std::to_string(size_bytes_) + ",mode=0755";
  if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) == 0) {
    mounted_ = true;
  } else {
    error_ = std::string("mount -t tmpfs on ") + dir_ + ": " + std::strerror(errno) +
             " (the disk scenarios need root)";
  }
}

Tmpfs::~Tmpfs() {
  if (!mounted_) return;
  // Lazily: a process that still has a file open there cannot keep the
  // mount alive in the mount table; it goes when the last file closes.
  umount2(dir_.c_str(), MNT_DETACH);
}

int Tmpfs::SetReadOnly(bool read_only) {
  const std::string options = "size=" + std::to_string(size_bytes_) + ",mode=0755";
  const unsigned long flags = MS_REMOUNT | (read_only ? MS_RDONLY : 0);
  return mount("tmpfs", dir_.c_str(), "tmpfs", flags, options.c_str()) == 0 ? 0 : errno;
}

int64_t Tmpfs::FillUp(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return 0;
  std::vector<char> block(64 * 1024, 'x');
  int64_t written = 0;
  // A last partial block, then nothing: full.
  for (std::size_t size = block.size(); size > 0;) {
    const ssize_t n = write(fd, block.data(), size);
    if (n > 0) {
      written += n;
    } else {
      size /= 2;
    }
  }
  close(fd);
  return written;
}

LedgerDisk::LedgerDisk(Scenario& sc, int64_t size_bytes)
    : tmpfs_(sc.dir().File("disk"), size_bytes) {
  sc.UseLedgerFile("disk/ledger.db");
}

int64_t LedgerDisk::Fill(Sql& ledger) {
  const bool truncated = testing::WaitFor(
      [&] {
        return ledger.Rows("PRAGMA wal_checkpoint(TRUNCATE)") ==
               std::vector<std::vector<std::string>>{{"0", "0", "0"}};
      },
      100);
  return truncated ? Tmpfs::FillUp(dir() + "/filler") : 0;
}

void LedgerDisk::Free() {
  std::error_code ignored;
  std::filesystem::remove(dir() + "/filler", ignored);
}

int LedgerDisk::MakeReadOnly() {
  int err = -1;
  testing::WaitFor(
      [&] {
        ReapZombies();
        return (err = tmpfs_.SetReadOnly(true)) == 0;
      },
      200);
  return err;
}

OwnPostgres::OwnPostgres(std::string state_dir, bool durable)
    : state_dir_(std::move(state_dir)) {
  std::vector<std::string> argv = {"/bin/bash", PG_SERVER_SCRIPT, "start", state_dir_};
  if (durable) argv.push_back("--durable");
  const auto r = testing::RunProcess(argv);
  data_dir_ = FirstLine(state_dir_ + "/datadir");
  if (r.exit_code != 0) {
    error_ = "pg-server.sh start: " + r.out + r.err;
    return;
  }
  url_ = FirstLine(state_dir_ + "/url");
  if (url_.empty()) error_ = "pg-server.sh start wrote no url";
}

OwnPostgres::~OwnPostgres() {
  testing::RunProcess({"/bin/bash", PG_SERVER_SCRIPT, "stop", state_dir_});
}

bool OwnPostgres::Restart(const std::string& mode) {
  std::vector<std::string> argv;
  if (geteuid() == 0) argv = {"/usr/sbin/runuser", "-u", "postgres", "--"};
  for (const std::string& a : {PgBin() + "/pg_ctl", std::string("-D"), data_dir_,
                               std::string("-l"), data_dir_ + "/server.log", std::string("-w"),
                               std::string("-t"), std::string("60"),
                               std::string("-m"), mode, std::string("restart")}) {
    argv.push_back(a);
  }
  const auto r = testing::RunProcess(argv);
  if (r.exit_code != 0) {
    error_ = "pg_ctl restart -m " + mode + ": " + r.out + r.err;
    return false;
  }
  return true;
}

}  // namespace cronledger::faults
