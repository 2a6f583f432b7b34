#pragma once

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
class error;

} // namespace ks::config
