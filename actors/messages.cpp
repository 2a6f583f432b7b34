#include "actors/messages.hpp"

// Every message type is a plain value declared in messages.hpp; the job kinds' names are
// gpu::to_string(job_kind)'s.
