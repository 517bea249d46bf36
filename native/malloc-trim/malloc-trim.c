// glibc's malloc_trim(0), for a Node process.
//
// glibc gives the operating system back the free memory at the top of a heap when a free() leaves enough of it there,
// never the free chunks below memory still in use. The service's work (Node's socket reads and Buffers, V8's compiler
// zones) frees and allocates in such an order that a server's main heap held 46 MB with 16 MB in use after a run of
// trace pages. malloc_trim walks every arena and madvise(MADV_DONTNEED)s the whole free pages inside its free chunks.
// Node exposes no way to call it, and no package on the npm registry does, hence these lines.
//
// Built against Node-API only, so that one build loads in any Node version that has it, whichever headers node-gyp
// found.

#include <node_api.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// trim(): whether memory was handed back.
static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#if defined(__GLIBC__)
  released = malloc_trim(0);
#endif
  napi_value result;
  napi_get_boolean(env, released != 0, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value function;
  napi_value glibc;
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &function);
  napi_set_named_property(env, exports, "trim", function);
#if defined(__GLIBC__)
  napi_get_boolean(env, true, &glibc);
#else
  napi_get_boolean(env, false, &glibc);
#endif
  // Without glibc, trim() does nothing: the service then knows there is nothing to call.
  napi_set_named_property(env, exports, "glibc", glibc);
  return exports;
}
