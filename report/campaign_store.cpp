// When `run` may use the store of its output folder, and what it says when it may not.
//
// A campaign resumes from <output>/state and builds on every record it reads there, so a
// record it cannot trust would be built on without a word (one changed digit of a timing
// turns a 1.29x speedup into 0.15x). Before a campaign starts or resumes, the store is checked
// whole: its data file against its own header pages first, without mapping it (a file cut
// short would be a SIGBUS when read), then every record's checksum and decoding
// (memory::store::check, one read transaction: about a gigabyte a second, measured by the
// hidden test "check cost", next to the minutes a campaign takes). A damaged store is
// refused, naming its damaged records and what still holds the campaign; `run --overwrite`
// starts over and keeps the damaged store in state.damaged/ for inspection rather than
// deleting it.
//
// The other way to lose a campaign's work is a store that is gone (deleted, emptied, or never
// started in) beside the results of a campaign that was: a new campaign would overwrite
// results.json, report.md and best/ and say nothing. `run` refuses that too, and --overwrite,
// the flag that already means "write over what this folder holds", lets it start.

#include "report/campaign_store.hpp"

#include <system_error>

namespace ks::report {

namespace fs = std::filesystem;
using engine::errc;
using engine::fail;

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Moves the store of `output` to state.damaged/, replacing an earlier one.
engine::expected<void> set_aside(const fs::path& output) {
  const fs::path from = output / state_folder;
  const fs::path to = output / damaged_state_folder;
  std::error_code ec;
  fs::remove_all(to, ec);
  if (!ec)
    fs::rename(from, to, ec);
  if (ec)
    return fail(errc::io, "cannot move the damaged store " + from.string() + " to " + to.string() +
                              ": " + ec.message());
  return {};
}

} // namespace

std::vector<std::string> campaign_results(const fs::path& output) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::string_view name : {"results.json", "report.md", "report.html"})
    if (fs::is_regular_file(output / name, ec))
      out.emplace_back(name);
  if (fs::is_directory(output / "best", ec))
    out.emplace_back("best/");
  return out;
}

std::string damaged_store_advice(const fs::path& output, mention_inspect inspect) {
  std::string out;
  if (inspect == mention_inspect::yes)
    out += "\n  `kernelskill inspect " + output.string() +
           "` lists every record of the store, the damaged ones marked";
  if (std::string results = joined(campaign_results(output)); !results.empty())
    out +=
        "\n  " + results + " in " + output.string() + " hold the campaign as it was last reported";
  return out +
         "\n  `kernelskill run CONFIG.toml --overwrite` starts the campaign over in this folder "
         "(the damaged store is kept as " +
         (output / damaged_state_folder).string() + "/), or give campaign.output a new folder";
}

engine::expected<void> check_records(const memory::store& db, const fs::path& output,
                                     mention_inspect inspect) {
  auto checked = db.check();
  if (!checked)
    return tl::unexpected(checked.error());
  if (checked->damaged.empty())
    return {};
  const size_t n = checked->damaged.size();
  return fail(errc::damaged, "the store " + (output / state_folder).string() + " is damaged: " +
                                 std::to_string(n) + " of its " + std::to_string(checked->records) +
                                 (n == 1 ? " records does" : " records do") +
                                 " not read back, and a campaign cannot resume from it:\n" +
                                 list_damaged(*checked) + damaged_store_advice(output, inspect));
}

std::string list_damaged(const memory::store_check& check, size_t most) {
  std::string out;
  for (size_t i = 0; i < check.damaged.size() && i < most; ++i)
    out += (i == 0 ? "  " : "\n  ") + check.damaged[i].first + ": " + check.damaged[i].second;
  if (check.damaged.size() > most)
    out += "\n  and " + std::to_string(check.damaged.size() - most) + " more";
  return out;
}

std::optional<engine::error> refuse_lost_store(const fs::path& output, foreign_output foreign) {
  if (foreign == foreign_output::overwrite)
    return std::nullopt;
  const fs::path dir = output / state_folder;
  auto file = memory::check_store_file(dir);
  if (!file && file.error().code() == errc::damaged)
    return engine::error{errc::damaged, file.error().message() +
                                            damaged_store_advice(output, mention_inspect::no)};
  if (!file || *file == memory::store_file::present)
    return std::nullopt; // a file that cannot be read: opening it says why
  std::vector<std::string> results = campaign_results(output);
  if (results.empty())
    return std::nullopt;
  return engine::error{
      errc::invalid_input,
      "campaign.output " + output.string() + " holds a campaign's results (" + joined(results) +
          ") but not the store they came from: " + (dir / "data.mdb").string() +
          (*file == memory::store_file::missing ? " is missing" : " is empty (0 bytes)") +
          ". A new campaign there would write over them and resume nothing; pass --overwrite to "
          "start one anyway, or name a new folder in campaign.output (the results stay as they "
          "are)"};
}

engine::expected<memory::store> open_campaign_store(const fs::path& output, foreign_output foreign,
                                                    std::string* moved_aside) {
  if (auto refused = refuse_lost_store(output, foreign))
    return tl::unexpected(*refused);
  const fs::path dir = output / state_folder;
  auto opened = memory::store::open(dir);
  engine::expected<void> sound = opened ? check_records(*opened, output)
                                        : engine::expected<void>(tl::unexpected(opened.error()));
  if (!sound && sound.error().code() == errc::damaged) {
    if (foreign != foreign_output::overwrite)
      return tl::unexpected(
          opened ? sound.error()
                 : engine::error{errc::damaged,
                                 sound.error().message() +
                                     damaged_store_advice(output, mention_inspect::no)});
    // Closed before it moves: a folder is open at most once per process.
    opened = tl::unexpected(sound.error());
    if (auto moved = set_aside(output); !moved)
      return tl::unexpected(moved.error());
    if (moved_aside != nullptr)
      *moved_aside = "the damaged store was moved to " + (output / damaged_state_folder).string() +
                     "/ (--overwrite); the campaign starts over";
    return memory::store::open(dir);
  }
  if (!sound)
    return tl::unexpected(sound.error());

  // A store that holds no campaign, beside the results of one: started in and stopped before
  // its campaign began (no GPU) after the store that made the results was deleted.
  if (foreign != foreign_output::overwrite) {
    auto campaign = opened->campaign();
    auto tasks = opened->tasks();
    std::vector<std::string> results = campaign_results(output);
    if (campaign && !*campaign && tasks && tasks->empty() && !results.empty())
      return fail(errc::invalid_input,
                  "campaign.output " + output.string() + " holds a campaign's results (" +
                      joined(results) + ") but its store (" + dir.string() +
                      ") holds no campaign: not the store they came from. A new campaign there "
                      "would write over them and resume nothing; pass --overwrite to start one "
                      "anyway, or name a new folder in campaign.output (the results stay as "
                      "they are)");
  }
  return std::move(*opened);
}

} // namespace ks::report
