#include "gpu/loaded_objects.hpp"

#include <elf.h>
#include <link.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <optional>

namespace ks::gpu {

namespace {

namespace fs = std::filesystem;

int collect_name(dl_phdr_info* info, size_t, void* data) {
  auto* names = static_cast<std::vector<std::string>*>(data);
  const char* name = info->dlpi_name;
  // The main program has an empty name; the vDSO is no file.
  if (name == nullptr || *name == '\0' || std::strncmp(name, "linux-vdso", 10) == 0 ||
      std::strncmp(name, "linux-gate", 10) == 0)
    return 0;
  names->emplace_back(name);
  return 0;
}

int read_adds(dl_phdr_info* info, size_t size, void* data) {
  if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
    *static_cast<uint64_t*>(data) = info->dlpi_adds;
  return 1; // the counter is the same in every object's record: one is enough
}

// Longest DT_NEEDED name read; the loader's own limit is PATH_MAX.
constexpr uint64_t max_name = 4096;
// Most dynamic entries read: far above any real object's few dozen.
constexpr uint64_t max_dynamic_entries = 1 << 16;

// Reads parts of a file, each checked against the file's size first.
class file_reader {
public:
  explicit file_reader(const fs::path& path) : in_(path, std::ios::binary) {
    if (in_) {
      in_.seekg(0, std::ios::end);
      auto end = in_.tellg();
      size_ = end > 0 ? static_cast<uint64_t>(end) : 0;
    }
  }

  bool is_open() const { return static_cast<bool>(in_); }

  bool read(uint64_t offset, void* out, uint64_t bytes) {
    if (offset > size_ || bytes > size_ - offset)
      return false;
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
    return static_cast<bool>(in_);
  }

  // Reads the NUL-terminated string at `offset`, at most `limit` bytes before the NUL.
  std::optional<std::string> string_at(uint64_t offset, uint64_t limit) {
    std::string out;
    char c = 0;
    while (out.size() <= limit) {
      if (!read(offset + out.size(), &c, 1))
        return std::nullopt;
      if (c == '\0')
        return out;
      out += c;
    }
    return std::nullopt;
  }

private:
  std::ifstream in_;
  uint64_t size_ = 0;
};

} // namespace

std::vector<std::string> loaded_objects() {
  std::vector<std::string> names;
  dl_iterate_phdr(collect_name, &names);
  return names;
}

uint64_t load_count() {
  uint64_t adds = 0;
  dl_iterate_phdr(read_adds, &adds);
  return adds;
}

engine::expected<std::vector<std::string>> needed_libraries(const fs::path& path) {
  file_reader file(path);
  if (!file.is_open())
    return engine::fail(engine::errc::io, "cannot read '" + path.string() + "'");
  auto malformed = [&](const std::string& why) {
    return engine::fail(engine::errc::invalid_input,
                        "'" + path.string() + "' is no shared object the loader reads: " + why);
  };

  Elf64_Ehdr header{};
  if (!file.read(0, &header, sizeof header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return malformed("no ELF header");
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr unsigned char own_order = ELFDATA2LSB;
#else
  constexpr unsigned char own_order = ELFDATA2MSB;
#endif
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != own_order)
    return malformed("not a 64-bit ELF file of this machine's byte order");
  if (header.e_phnum > 0 && header.e_phentsize != sizeof(Elf64_Phdr))
    return malformed("program headers of an unknown size");

  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (!segments.empty() &&
      !file.read(header.e_phoff, segments.data(), segments.size() * sizeof(Elf64_Phdr)))
    return malformed("program headers beyond the end of the file");

  const Elf64_Phdr* dynamic = nullptr;
  for (const Elf64_Phdr& p : segments)
    if (p.p_type == PT_DYNAMIC)
      dynamic = &p;
  if (dynamic == nullptr)
    return std::vector<std::string>{}; // linked statically: it needs nothing

  uint64_t count = dynamic->p_filesz / sizeof(Elf64_Dyn);
  if (count > max_dynamic_entries)
    return malformed("a dynamic section of " + std::to_string(count) + " entries");
  std::vector<Elf64_Dyn> entries(count);
  if (!entries.empty() &&
      !file.read(dynamic->p_offset, entries.data(), entries.size() * sizeof(Elf64_Dyn)))
    return malformed("a dynamic section beyond the end of the file");

  std::optional<uint64_t> strtab_address;
  uint64_t strtab_size = 0;
  std::vector<uint64_t> needed;
  for (const Elf64_Dyn& d : entries) {
    if (d.d_tag == DT_NULL)
      break;
    if (d.d_tag == DT_STRTAB)
      strtab_address = d.d_un.d_ptr;
    else if (d.d_tag == DT_STRSZ)
      strtab_size = d.d_un.d_val;
    else if (d.d_tag == DT_NEEDED)
      needed.push_back(d.d_un.d_val);
  }
  if (needed.empty())
    return std::vector<std::string>{};
  if (!strtab_address)
    return malformed("DT_NEEDED entries without a string table");

  // The string table is named by its address once loaded: find the segment holding it.
  std::optional<uint64_t> strtab_offset;
  for (const Elf64_Phdr& p : segments)
    if (p.p_type == PT_LOAD && *strtab_address >= p.p_vaddr &&
        *strtab_address - p.p_vaddr < p.p_filesz)
      strtab_offset = p.p_offset + (*strtab_address - p.p_vaddr);
  if (!strtab_offset)
    return malformed("a string table outside every loaded segment");

  std::vector<std::string> names;
  for (uint64_t at : needed) {
    if (strtab_size != 0 && at >= strtab_size)
      return malformed("a DT_NEEDED name outside the string table");
    auto name = file.string_at(*strtab_offset + at, max_name);
    if (!name)
      return malformed("a DT_NEEDED name that does not end");
    names.push_back(std::move(*name));
  }
  return names;
}

} // namespace ks::gpu
