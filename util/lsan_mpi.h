// LeakSanitizer suppressions for programs that run Open MPI (the sanitized CI build, docs/reliability.md):
// Open MPI and the libraries below it keep allocations until the process exits by design; only strata's own
// leaks should fail a run. A program defines the sanitizer's hook with them once:
//   extern "C" const char* __lsan_default_suppressions() { return strata::util::kMpiLeakSuppressions; }
// The frames resolve to these modules only with OMPI_MCA_mca_base_component_disable_dlclose=1 and
// ASAN_OPTIONS=fast_unwind_on_malloc=0 (the MPI tests set both). Unused in a build without sanitizers.
#pragma once

namespace strata::util {

inline constexpr const char* kMpiLeakSuppressions =
    "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libpmix.so\nleak:libhwloc.so\n"
    "leak:libevent\nleak:mca_\n";

}  // namespace strata::util
