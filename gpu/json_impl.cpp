// Compiles Boost.JSON into ks_gpu, so no Boost library has to travel to a GPU host.
#include <boost/json/src.hpp>
