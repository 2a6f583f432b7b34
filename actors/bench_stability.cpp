#include "actors/bench_stability.hpp"

#include "actors/messages.hpp"
#include "report/console.hpp"
#include "report/report_format.hpp"

#include <cstdio>

namespace ks::actors {

namespace console = report::console;

using report::format_elapsed;
using report::format_seconds;

namespace {

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", 100 * fraction);
  return text;
}

} // namespace

stability_watch::stability_watch(stability_setup setup, size_t cards, double started_unix_s)
  : setup_(std::move(setup)) {
  run_.started_unix_s = started_unix_s;
  if (setup_.keep_prior_runs && !setup_.file.empty())
    prior_ = report::prior_stability_runs(setup_.file);
  run_.number = static_cast<int64_t>(prior_.size()) + 1;
  for (size_t g = 0; g < cards; ++g) {
    report::card_stability_record c;
    c.gpu = static_cast<int32_t>(g);
    c.name = g < setup_.gpu_names.size() ? setup_.gpu_names[g] : std::string();
    c.monitor = engine::card_monitor(setup_.options);
    run_.cards.push_back(std::move(c));
  }
}

void stability_watch::announce(size_t gpu, engine::stability_event event, double now_s,
                               int64_t requeued) {
  report::card_stability_record& c = run_.cards[gpu];
  const engine::card_monitor& m = c.monitor;
  const engine::stability_options& o = m.options();
  c.retimed += requeued;
  const std::string who = "kernelskill: [" + format_elapsed(now_s) + "] GPU " +
                          std::to_string(gpu) + (c.name.empty() ? "" : " (" + c.name + ")");
  using engine::stability_event;
  auto say_unstable = [&] {
    console::line(console::stream::err,
                  who + " is unstable: " + m.last_assessment().text +
                      "; its timing jobs wait for a probe within bounds (" +
                      percent(o.drift_bound) + " drift, " + percent(o.split_bound) +
                      " split), probed every " + format_seconds(o.pause_s) +
                      (requeued == 1  ? ", and the timing made just before is timed again"
                       : requeued > 1 ? ", and the " + std::to_string(requeued) +
                                            " timings made just before are timed again"
                                      : std::string()));
  };
  switch (event) {
  case stability_event::unstable:
    say_unstable();
    break;
  case stability_event::gave_up:
    // A limit shorter than the pause gives up at the probe that found the card unstable.
    if (m.episodes().back().probes <= 2)
      say_unstable();
    console::line(console::stream::err,
                  who + " has been unstable for " + format_seconds(o.limit_s) +
                      " (bench.stability_limit_s): its timings run anyway and are flagged; "
                      "the campaign's results are unreliable (" +
                      m.last_assessment().text + ")");
    break;
  case stability_event::recovered: {
    const engine::instability_episode& e = m.episodes().back();
    console::line(console::stream::err, who + " is stable again after " +
                                            format_elapsed(e.end_s - e.start_s) +
                                            " (its probe is back within bounds)");
    break;
  }
  case stability_event::none:
  case stability_event::suspect:
  case stability_event::false_alarm:
  case stability_event::still_unstable:
    // The first probe of a card and every 30th write the file, so that it holds the bounds
    // and the probe counts even when nothing goes wrong.
    if (m.probes() == 1 || ++probes_since_write_ >= 30) {
      probes_since_write_ = 0;
      write();
    }
    return;
  }
  write();
}

void stability_watch::probe_failed(size_t gpu, const std::string& why) {
  report::card_stability_record& c = run_.cards[gpu];
  c.monitor.turn_off(why);
  console::line(console::stream::err,
                "kernelskill: GPU " + std::to_string(gpu) + ": the stability probe failed (" + why +
                    "); its timings are not checked for an unstable card from now on");
  write();
}

void stability_watch::flag(size_t gpu, const std::string& label) {
  report::card_stability_record& c = run_.cards[gpu];
  const bool first = c.flagged == 0;
  ++c.flagged;
  if (c.flagged_labels.size() < 50)
    c.flagged_labels.push_back(label);
  if (first)
    console::line(console::stream::err,
                  "kernelskill: GPU " + std::to_string(gpu) + ": " + label +
                      " was timed while the card was unstable: flagged in results.json");
  write();
}

void stability_watch::fill(bench_stats& stats, double now_s) const {
  stats.stability.clear();
  for (const report::card_stability_record& c : run_.cards)
    stats.stability.push_back(report::card_stability_status(c, now_s));
  stats.stability_warnings = report::stability_warnings(run_);
  stats.unreliable = run_.unreliable();
}

void stability_watch::write() {
  if (setup_.file.empty() || !enabled())
    return;
  if (auto written = report::write_gpu_stability(setup_.file, prior_, run_); !written)
    console::line(console::stream::err, "kernelskill: cannot write " + setup_.file.string() + ": " +
                                            written.error().message());
}

} // namespace ks::actors
