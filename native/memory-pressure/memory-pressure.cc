// V8's memory-pressure signal, for a Node process.
//
// A release of the heap pages work left empty (src/runtime/memory-release.ts) can be had two ways. The `gc` function
// of --expose-gc runs a "last resort" collection: two or more full atomic collections in one call, which stopped the
// service's event loop for 85-125 ms per release amid the bench's heavy pages. Told of moderate memory pressure, V8
// instead starts an incremental collection that reduces memory, marks beside the running code and stops it only to
// finish (26-45 ms per release on the same pages), and gives back as much. Node has no API for the signal, and no
// package on the npm registry gives one, hence these lines.
//
// The signal is V8's C++ API, not Node-API: the addon is built against the headers of the Node that runs the build
// (native/build.ts) and, through NODE_MODULE, refuses to load in another version, where the service falls back to the
// last-resort collection.

#include <node.h>
#include <v8.h>

namespace {

// moderate(): starts V8's memory-reducing incremental collection unless one is under way; returns at once.
void Moderate(const v8::FunctionCallbackInfo<v8::Value>& args) {
  args.GetIsolate()->MemoryPressureNotification(v8::MemoryPressureLevel::kModerate);
}

void Initialize(v8::Local<v8::Object> exports) {
  NODE_SET_METHOD(exports, "moderate", Moderate);
}

}  // namespace

NODE_MODULE(NODE_GYP_MODULE_NAME, Initialize)
