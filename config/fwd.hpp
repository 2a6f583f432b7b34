#pragma once

#include "base/fwd.hpp"

namespace ks::config {

struct campaign_section;
struct search_section;
struct gpus_section;
struct bench_section;
struct agents_section;
struct memory_section;
struct campaign_config;
struct option;
struct section_info;
class diagnostics;
using base::error;

} // namespace ks::config
