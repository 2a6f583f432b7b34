#include "engine/card_stability.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using namespace ks::engine;

namespace {

constexpr int64_t size = 200 << 20;

/// Returns a probe at `at_s` of median `median` ms, its p10 and p90 `spread` apart around it.
probe_reading probe_at(double at_s, double median, double spread = 1.01) {
  double half = std::sqrt(spread);
  return probe_reading{at_s, size, median, median / half, median * half};
}

} // namespace

TEST_CASE("a probe is judged against the card's quiet level: drifting beyond 10%, split beyond "
          "10% between p10 and p90",
          "[engine][stability]") {
  stability_options o;
  // Within both bounds: 9% slower, a 9% spread.
  probe_assessment a = assess_probe(probe_at(0, 0.218, 1.09), 0.2, o);
  CHECK(a.condition == card_condition::stable);
  CHECK(a.ratio == Approx(1.09));
  CHECK(a.text.empty());
  // 11% slower: drifting, and the sentence says how much.
  a = assess_probe(probe_at(0, 0.222), 0.2, o);
  CHECK(a.condition == card_condition::drifting);
  CHECK(a.ratio == Approx(1.11));
  CHECK_THAT(a.text, Catch::Matchers::Contains("1.11x its quiet time"));
  // Samples in two levels: split, even at the quiet median.
  a = assess_probe(probe_at(0, 0.2, 1.6), 0.2, o);
  CHECK(a.condition == card_condition::split);
  CHECK(a.spread == Approx(1.6));
  // Faster than the quiet level: it becomes the quiet level.
  a = assess_probe(probe_at(0, 0.18), 0.2, o);
  CHECK(a.condition == card_condition::stable);
  CHECK(a.quiet_ms == Approx(0.18));
  // The first probe has nothing to drift from.
  CHECK(assess_probe(probe_at(0, 5.0), 0, o).condition == card_condition::stable);
}

TEST_CASE("a quiet H100's probes (1% noise) never trip the monitor", "[engine][stability]") {
  // Medians and spreads as a quiet H100 gives them: the median within +-1% of 0.17 ms, p90
  // over p10 up to 3%, 10,000 probes (about 6 hours at one every 2 s).
  card_monitor m;
  std::mt19937_64 rng(20260503);
  std::uniform_real_distribution<double> noise(-0.01, 0.01);
  std::uniform_real_distribution<double> spread(1.0, 1.03);
  for (int i = 0; i < 10000; ++i) {
    stability_event e = m.record(probe_at(2.0 * i, 0.17 * (1 + noise(rng)), spread(rng)));
    REQUIRE(e == stability_event::none);
  }
  CHECK(m.trust() == card_trust::quiet);
  CHECK(m.episodes().empty());
  CHECK(m.probes() == 10000);
}

TEST_CASE("a drifting card is unstable after two probes out of bounds, waits, and is quiet "
          "again after one within",
          "[engine][stability]") {
  card_monitor m;
  CHECK(m.record(probe_at(0, 0.17)) == stability_event::none);
  CHECK(m.holds_results());
  CHECK_FALSE(m.pauses_timing());
  // One slow probe: suspect, confirmed at once before anything else runs.
  CHECK(m.record(probe_at(2, 0.31)) == stability_event::suspect);
  CHECK(m.pauses_timing());
  CHECK(m.probe_due(2.01, false, card_next::idle));
  // A second: unstable, the episode starting at the first.
  CHECK(m.record(probe_at(2.02, 0.30)) == stability_event::unstable);
  CHECK(m.trust() == card_trust::unstable);
  CHECK(m.pauses_timing());
  CHECK_FALSE(m.holds_results());
  REQUIRE(m.episodes().size() == 1);
  CHECK(m.episodes()[0].condition == card_condition::drifting);
  CHECK(m.episodes()[0].start_s == 2);
  CHECK(m.episodes()[0].end_s == -1);
  CHECK(m.episodes()[0].worst_ratio == Approx(0.31 / 0.17));
  // Probed again only after the pause (5 s).
  CHECK_FALSE(m.probe_due(6.9, false, card_next::idle));
  CHECK(m.probe_due(7.1, false, card_next::idle));
  CHECK(m.record(probe_at(7.1, 0.32)) == stability_event::still_unstable);
  // Within bounds: the episode ends.
  CHECK(m.record(probe_at(12.2, 0.171)) == stability_event::recovered);
  CHECK(m.trust() == card_trust::quiet);
  CHECK(m.episodes()[0].end_s == 12.2);
  CHECK(m.episodes()[0].probes == 3);
  CHECK(m.episodes()[0].worst_ratio == Approx(0.32 / 0.17));
  // The quiet level never rose with the slow probes.
  CHECK(m.quiet_ms(size) == Approx(0.17));
}

TEST_CASE("a probe split into levels makes the card unstable though its median is quiet",
          "[engine][stability]") {
  card_monitor m;
  CHECK(m.record(probe_at(0, 0.17)) == stability_event::none);
  CHECK(m.record(probe_at(2, 0.17, 1.8)) == stability_event::suspect);
  CHECK(m.record(probe_at(2.1, 0.175, 2.1)) == stability_event::unstable);
  REQUIRE(m.episodes().size() == 1);
  CHECK(m.episodes()[0].condition == card_condition::split);
  CHECK(m.episodes()[0].worst_spread == Approx(2.1));
}

TEST_CASE("one probe out of bounds followed by one within is a false alarm: no episode",
          "[engine][stability]") {
  card_monitor m;
  m.record(probe_at(0, 0.17));
  CHECK(m.record(probe_at(2, 0.25)) == stability_event::suspect);
  CHECK(m.record(probe_at(2.05, 0.172)) == stability_event::false_alarm);
  CHECK(m.trust() == card_trust::quiet);
  CHECK(m.episodes().empty());
}

TEST_CASE("a card unstable past the limit is unreliable: its timings run, flagged, until a "
          "probe within bounds",
          "[engine][stability]") {
  stability_options o;
  o.limit_s = 20;
  card_monitor m(o);
  m.record(probe_at(0, 0.17));
  m.record(probe_at(2, 0.4));
  CHECK(m.record(probe_at(2.1, 0.4)) == stability_event::unstable);
  CHECK(m.record(probe_at(12, 0.4)) == stability_event::still_unstable);
  CHECK(m.record(probe_at(22, 0.4)) == stability_event::gave_up);
  CHECK(m.trust() == card_trust::unreliable);
  CHECK_FALSE(m.pauses_timing());
  CHECK(m.flags_results());
  CHECK(m.episodes().back().gave_up);
  // Still probed every pause, to notice the card is back.
  CHECK(m.probe_due(27.1, false, card_next::other));
  CHECK(m.record(probe_at(27.1, 0.4)) == stability_event::still_unstable);
  CHECK(m.record(probe_at(32.2, 0.17)) == stability_event::recovered);
  CHECK_FALSE(m.flags_results());
  CHECK(m.episodes().back().gave_up); // the episode keeps it: its timings were flagged
}

TEST_CASE("when a probe is due: before the first job, before a timing after the interval, "
          "and once held results meet an idle card",
          "[engine][stability]") {
  card_monitor m; // interval 2 s
  // Never probed: before the card's first job, not on an idle card with nothing held.
  CHECK_FALSE(m.probe_due(0, false, card_next::idle));
  CHECK(m.probe_due(0, false, card_next::other));
  m.record(probe_at(0, 0.17));
  // A timing job right after a probe needs none; one after the interval does.
  CHECK_FALSE(m.probe_due(1, false, card_next::timing));
  CHECK(m.probe_due(2.5, false, card_next::timing));
  // Other jobs never wait for a probe while nothing is held.
  CHECK_FALSE(m.probe_due(100, false, card_next::other));
  // Held results: at once when the card would idle, else once the interval passed.
  CHECK(m.probe_due(0.5, true, card_next::idle));
  CHECK_FALSE(m.probe_due(0.5, true, card_next::other));
  CHECK(m.probe_due(2.5, true, card_next::other));
  // Off: never.
  card_monitor off(stability_options::off());
  CHECK_FALSE(off.probe_due(0, true, card_next::timing));
  CHECK_FALSE(off.holds_results());
  m.turn_off("no such job");
  CHECK_FALSE(m.probe_due(10, true, card_next::timing));
  CHECK_FALSE(m.holds_results());
  CHECK(m.off_reason() == "no such job");
}

TEST_CASE("probes of another size have a quiet level of their own", "[engine][stability]") {
  // A card that could not hold the usual buffers probes with smaller ones, which run faster
  // per byte (part of them fits the L2): never compared with the big ones.
  card_monitor m;
  m.record(probe_at(0, 0.17));
  probe_reading small{2, size / 4, 0.03, 0.0299, 0.0301};
  CHECK(m.record(small) == stability_event::none);
  CHECK(m.record(probe_at(4, 0.171)) == stability_event::none);
  CHECK(m.quiet_ms(size / 4) == Approx(0.03));
  CHECK(m.quiet_ms(size) == Approx(0.17));
}

TEST_CASE("the names of conditions and trust levels are stable", "[engine][stability]") {
  CHECK(std::string(to_string(card_condition::drifting)) == "drifting");
  CHECK(std::string(to_string(card_condition::split)) == "split");
  CHECK(std::string(to_string(card_trust::unreliable)) == "unreliable");
  CHECK(std::string(to_string(static_cast<card_trust>(9))) == "unknown");
}
