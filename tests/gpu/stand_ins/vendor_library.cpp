// A stand-in for a vendor library (libks_test_vendor.so): gpu/library_watch_test.cpp copies
// it under fresh names and has a stand-in candidate load it. Plain C functions only: a C++
// "unique" symbol would keep the loader from ever unloading it.

extern "C" int ks_test_vendor_answer() {
  return 42;
}
