// Compiles Boost.JSON once (its header-only mode), so that no Boost library has to travel to a
// GPU host and a program that links both ks_gpu and ks_memory holds one copy of its symbols.
#include <boost/json/src.hpp>
