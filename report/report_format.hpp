#pragma once

// How every report spells a time, a ratio and a share: report.md, report.html, `status` and
// the final table agree to the digit.

#include <string>

namespace ks::report {

/// Returns `ms` milliseconds as "12.345 ms" (3 decimals from 1 ms, 4 significant digits
/// below, none from 100 ms); "-" when `ms` is not above 0.
std::string format_ms(double ms);

/// Returns `value` with two decimals and `suffix` ("1.23x"); "-" when not above 0.
std::string format_ratio(double value, const char* suffix);

/// Returns `fraction` as a percentage with one decimal ("87.5%"); "-" when not above 0.
std::string format_percent(double fraction);

/// Returns `seconds` of elapsed time for people: "45s", "3m05s", "1h02m" (rounded).
std::string format_elapsed(double seconds);

/// Returns a setting of `seconds` as written: "5s", "0.1s"; from a minute on as
/// format_elapsed ("1m30s").
std::string format_seconds(double seconds);

/// Returns `name` usable as a file name: anything but [A-Za-z0-9._-] becomes '_', and a
/// leading dot too ("task" for an empty name).
std::string file_name_of(const std::string& name);

} // namespace ks::report
