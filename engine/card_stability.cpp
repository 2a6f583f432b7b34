#include "engine/card_stability.hpp"

#include <algorithm>
#include <cstdio>

namespace ks::engine {

const char* to_string(card_condition c) noexcept {
  auto index = static_cast<size_t>(c);
  return index < card_condition_names.size() ? card_condition_names[index] : "unknown";
}

const char* to_string(card_trust t) noexcept {
  auto index = static_cast<size_t>(t);
  return index < card_trust_names.size() ? card_trust_names[index] : "unknown";
}

probe_assessment assess_probe(const probe_reading& probe, double quiet_ms,
                              const stability_options& options) {
  probe_assessment a;
  if (!(probe.median_ms > 0))
    return a;
  a.quiet_ms = quiet_ms > 0 ? std::min(quiet_ms, probe.median_ms) : probe.median_ms;
  a.ratio = probe.median_ms / a.quiet_ms;
  a.spread = probe.p10_ms > 0 && probe.p90_ms >= probe.p10_ms ? probe.p90_ms / probe.p10_ms : 1;
  // NaN bounds compare false: such options trip nothing.
  char text[200];
  if (a.spread > 1 + options.split_bound) {
    a.condition = card_condition::split;
    std::snprintf(text, sizeof text,
                  "its probe's samples split into levels (p90 %.2fx its p10: %.3f ms against "
                  "%.3f ms)",
                  a.spread, probe.p90_ms, probe.p10_ms);
    a.text = text;
  } else if (a.ratio > 1 + options.drift_bound) {
    a.condition = card_condition::drifting;
    std::snprintf(text, sizeof text,
                  "its probe took %.2fx its quiet time (%.3f ms against %.3f ms)", a.ratio,
                  probe.median_ms, a.quiet_ms);
    a.text = text;
  }
  return a;
}

card_monitor::card_monitor(stability_options options) : options_(options) {}

double card_monitor::quiet_ms(int64_t bytes) const {
  auto found = quiet_.find(bytes);
  return found == quiet_.end() ? 0 : found->second;
}

bool card_monitor::probe_due(double now_s, bool holding, card_next next) const noexcept {
  if (off())
    return false;
  // The first probe runs before the card's first job: it sets the quiet level.
  if (probes_ == 0)
    return next != card_next::idle || holding;
  const double since = now_s - last_.at_s;
  switch (trust_) {
  case card_trust::suspect:
    return true; // confirm at once, before anything else runs
  case card_trust::unstable:
  case card_trust::unreliable:
    return since >= options_.pause_s;
  case card_trust::quiet:
    break;
  }
  // Held results are handed on as soon as the card would idle, or once the interval passed;
  // a timing job gets a fresh probe before it when the last one is old.
  if (holding && (next == card_next::idle || since >= options_.probe_interval_s))
    return true;
  return next == card_next::timing && since >= options_.probe_interval_s;
}

stability_event card_monitor::record(const probe_reading& probe) {
  // The quiet level is the lowest median of the probes of this size so far, this one included:
  // a disturbed card only makes a copy slower.
  double before = quiet_ms(probe.bytes);
  probe_assessment a = assess_probe(probe, before, options_);
  if (probe.median_ms > 0)
    quiet_[probe.bytes] = a.quiet_ms;
  ++probes_;
  last_ = probe;
  assessment_ = a;
  if (off())
    return stability_event::none;
  const bool bad = a.condition != card_condition::stable;
  auto worsen = [&](instability_episode& e) {
    e.worst_ratio = std::max(e.worst_ratio, a.ratio);
    e.worst_spread = std::max(e.worst_spread, a.spread);
    ++e.probes;
  };
  switch (trust_) {
  case card_trust::quiet:
    if (!bad)
      return stability_event::none;
    trust_ = card_trust::suspect;
    suspect_ = probe;
    suspect_as_ = a;
    return stability_event::suspect;
  case card_trust::suspect: {
    if (!bad) {
      trust_ = card_trust::quiet;
      return stability_event::false_alarm;
    }
    instability_episode e;
    e.condition = suspect_as_.condition;
    e.start_s = suspect_.at_s;
    e.worst_ratio = suspect_as_.ratio;
    e.worst_spread = suspect_as_.spread;
    e.quiet_ms = a.quiet_ms;
    e.probes = 1;
    worsen(e);
    episodes_.push_back(e);
    trust_ = card_trust::unstable;
    // A limit of zero gives up at once.
    if (probe.at_s - e.start_s >= options_.limit_s) {
      trust_ = card_trust::unreliable;
      episodes_.back().gave_up = true;
      return stability_event::gave_up;
    }
    return stability_event::unstable;
  }
  case card_trust::unstable:
  case card_trust::unreliable: {
    instability_episode& e = episodes_.back();
    if (!bad) {
      e.end_s = probe.at_s;
      trust_ = card_trust::quiet;
      return stability_event::recovered;
    }
    worsen(e);
    if (trust_ == card_trust::unstable && probe.at_s - e.start_s >= options_.limit_s) {
      trust_ = card_trust::unreliable;
      e.gave_up = true;
      return stability_event::gave_up;
    }
    return stability_event::still_unstable;
  }
  }
  return stability_event::none;
}

void card_monitor::turn_off(std::string why) {
  off_ = true;
  off_reason_ = std::move(why);
}

} // namespace ks::engine
