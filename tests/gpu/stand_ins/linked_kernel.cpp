// A stand-in for a candidate linked against a vendor library (libks_test_linked.so, with a
// DT_NEEDED entry for libks_test_vendor.so), as one built with -lcublas is.

extern "C" int ks_test_vendor_answer();

extern "C" int ks_test_linked_answer() {
  return ks_test_vendor_answer();
}
