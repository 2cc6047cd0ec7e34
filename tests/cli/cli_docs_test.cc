// docs/cli.md against the command table, as docs/config.md is checked
// against the config key table: a command or a flag added to one and not to
// the other fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command_table.h"
#include "ledger/names.h"
#include "source_dir.h"

namespace cronledger {
namespace {

const std::filesystem::path kCliDoc = std::filesystem::path(testing::kSourceDir) / "docs" / "cli.md";

std::string ReadDoc() {
  std::ifstream in(kCliDoc);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The commands a "## " heading documents: each `code span` in it, less a
// leading "cronledger ", up to its first space, when that is a command
// name ("## `cronledger backfill`, `rerun`" documents backfill and rerun).
std::vector<std::string> HeadingCommands(const std::string& heading) {
  std::vector<std::string> names;
  for (std::size_t open = heading.find('`'); open != std::string::npos;) {
    const std::size_t close = heading.find('`', open + 1);
    if (close == std::string::npos) break;
    std::string span = heading.substr(open + 1, close - open - 1);
    if (span.rfind("cronledger ", 0) == 0) span.erase(0, std::string("cronledger ").size());
    span = span.substr(0, span.find(' '));
    if (!span.empty() && span.find_first_not_of("abcdefghijklmnopqrstuvwxyz-") == std::string::npos &&
        span.front() != '-') {
      names.push_back(span);
    }
    open = heading.find('`', close + 1);
  }
  return names;
}

// Each documented command's section: from its "## " heading to the next one.
std::map<std::string, std::string> Sections(const std::string& doc) {
  std::map<std::string, std::string> sections;
  std::vector<std::string> current;
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("## ", 0) == 0) current = HeadingCommands(line);
    for (const std::string& name : current) sections[name] += line + "\n";
  }
  return sections;
}

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// `option` as a whole word of `text`: "--to" is not found in "--tokens".
bool Mentions(const std::string& text, const std::string& option) {
  for (std::size_t at = text.find(option); at != std::string::npos;
       at = text.find(option, at + 1)) {
    const std::size_t end = at + option.size();
    if ((at == 0 || !IsWordChar(text[at - 1])) && (end == text.size() || !IsWordChar(text[end]))) {
      return true;
    }
  }
  return false;
}

TEST(CliDocs, EveryCommandAndFlagOfTheTableIsInItsSection) {
  const std::string doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << kCliDoc << " not found";
  const auto sections = Sections(doc);
  const auto commands = cli::DescribeCommands();
  ASSERT_GE(commands.size(), 20u);
  for (const auto& c : commands) {
    const std::string command = c.name.substr(0, c.name.find(' '));
    const auto section = sections.find(command);
    if (section == sections.end()) {
      ADD_FAILURE() << kCliDoc << " has no section for `cronledger " << c.name
                    << "` (a \"## \" heading naming it)";
      continue;
    }
    for (const std::string& option : c.options) {
      EXPECT_TRUE(Mentions(section->second, option))
          << kCliDoc << ": the section of `cronledger " << command << "` does not mention "
          << option << " (an option of `cronledger " << c.name << "`)";
    }
  }
}

TEST(CliDocs, EveryDocumentedCommandIsInTheTable) {
  const std::string doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << kCliDoc << " not found";
  std::set<std::string> table;
  for (const auto& c : cli::DescribeCommands()) table.insert(c.name.substr(0, c.name.find(' ')));
  const auto sections = Sections(doc);
  ASSERT_GE(sections.size(), 20u);
  for (const auto& [name, text] : sections) {
    EXPECT_TRUE(table.contains(name))
        << kCliDoc << " documents `cronledger " << name << "`, which the command table "
        << "(src/cli/command_table.cc) does not have";
  }
}

// `events --type` accepts exactly the types docs/events.md lists: a type
// added to the code and not to the table (or the other way) fails here.
TEST(CliDocs, EveryEventTypeIsInTheEventsTable) {
  std::ifstream in(std::filesystem::path(testing::kSourceDir) / "docs" / "events.md");
  std::set<std::string> documented;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string first = line.substr(2, line.find(" |", 2) - 2);  // "`a`, `b`"
    for (std::size_t open = first.find('`'); open != std::string::npos;) {
      const std::size_t close = first.find('`', open + 1);
      documented.insert(first.substr(open + 1, close - open - 1));
      open = first.find('`', close + 1);
    }
  }
  std::set<std::string> known;
  for (std::string_view t : ledger::event::kAll) known.insert(std::string(t));
  EXPECT_EQ(documented, known);
}

// The parsing above, on headings of each shape docs/cli.md uses.
TEST(CliDocs, HeadingsNameTheirCommands) {
  EXPECT_EQ(HeadingCommands("## `cronledger next`"), std::vector<std::string>{"next"});
  EXPECT_EQ(HeadingCommands("## `cronledger backfill`, `rerun`, `cancel`"),
            (std::vector<std::string>{"backfill", "rerun", "cancel"}));
  EXPECT_EQ(HeadingCommands("## `cronledger effect run`, `cronledger checkpoint get|set`"),
            (std::vector<std::string>{"effect", "checkpoint"}));
  EXPECT_EQ(HeadingCommands("## Exit codes"), std::vector<std::string>{});
  EXPECT_EQ(HeadingCommands("## Through a server: `--server URL`"), std::vector<std::string>{});
  EXPECT_TRUE(Mentions("[--to DATE]", "--to"));
  EXPECT_FALSE(Mentions("--tokens", "--to"));
  EXPECT_FALSE(Mentions("--to-date", "--to"));
  EXPECT_TRUE(Mentions("RUN_ID [-n N]", "-n"));
}

}  // namespace
}  // namespace cronledger
