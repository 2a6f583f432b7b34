// A stand-in for a candidate that loads a library at run time (libks_test_loader.so), as one
// that dlopens cuBLAS inside its ks_forward does: gpu/library_watch_test.cpp calls these
// between the watch's before_call() and after_call().

#include <dlfcn.h>

// Loads the shared object at `path` and keeps it; returns 0 when it loaded.
extern "C" int ks_test_load(const char* path) {
  return dlopen(path, RTLD_NOW | RTLD_LOCAL) != nullptr ? 0 : 1;
}

// Loads the shared object at `path` and unloads it again before returning, as a candidate
// hiding what it used would; returns 0 when it loaded.
extern "C" int ks_test_load_and_unload(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    return 1;
  dlclose(handle);
  return 0;
}
