#include "gpu/compile_sandbox.hpp"

#include <system_error>

namespace ks::gpu {

namespace fs = std::filesystem;

std::vector<std::string> compile_sandbox_arguments(const sandbox_support& support,
                                                   const std::vector<fs::path>& readable,
                                                   const fs::path& build) {
  std::vector<std::string> args = namespace_arguments(support);
  args.insert(args.end(), {"--ro-bind", "/usr", "/usr"});
  std::error_code ec;
  // On a merged /usr these are links into it; elsewhere folders of their own.
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    fs::file_status status = fs::symlink_status(top, ec);
    if (fs::is_symlink(status)) {
      fs::path target = fs::read_symlink(top, ec);
      if (!ec)
        args.insert(args.end(), {"--symlink", target.string(), top});
    } else if (fs::is_directory(status)) {
      args.insert(args.end(), {"--ro-bind", top, top});
    }
  }
  for (const char* etc :
       {"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"})
    args.insert(args.end(), {"--ro-bind-try", etc, etc});
  args.insert(args.end(), {"--dev", "/dev"});
  if (support.pid_namespace)
    args.insert(args.end(), {"--proc", "/proc"});
  // Before the binds: a folder under /tmp (a cache there) shows through the empty /tmp.
  args.insert(args.end(), {"--tmpfs", "/tmp"});
  for (const fs::path& folder : readable) {
    fs::path resolved = fs::weakly_canonical(folder, ec);
    if (ec || !resolved.is_absolute() || resolved.string().starts_with("/usr/"))
      continue;
    args.insert(args.end(), {"--ro-bind-try", resolved.string(), resolved.string()});
  }
  fs::path here = fs::weakly_canonical(fs::absolute(build), ec);
  if (ec)
    here = fs::absolute(build);
  args.insert(args.end(), {"--bind", here.string(), here.string(), "--chdir", here.string(), "--"});
  return args;
}

} // namespace ks::gpu
