// peerCred(fd) -> { pid, uid, gid }: the credentials the kernel recorded for
// the process at the other end of a connected Unix socket (SO_PEERCRED), as
// seen from this process's pid and user namespaces. Node has no API for it.
// Only node_api.h (N-API): ABI-stable, so one build serves every Node version
// that has N-API 8. Throws an Error naming errno when getsockopt fails.
#define _GNU_SOURCE
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <node_api.h>

static napi_value fail(napi_env env, const char *code, const char *message) {
  napi_throw_error(env, code, message);
  return NULL;
}

static napi_status set_number(napi_env env, napi_value obj, const char *name, double value) {
  napi_value v;
  napi_status s = napi_create_double(env, value, &v);
  if (s != napi_ok) return s;
  return napi_set_named_property(env, obj, name, v);
}

static napi_value peer_cred(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return fail(env, NULL, "peerCred: cannot read the arguments");
  napi_valuetype type;
  if (argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_number) return fail(env, "EINVAL", "peerCred: the argument must be a file descriptor (a number)");
  int32_t fd;
  if (napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) return fail(env, "EINVAL", "peerCred: the argument must be a file descriptor (a number >= 0)");

  struct ucred cred;
  socklen_t len = sizeof cred;
  memset(&cred, 0, sizeof cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    int err = errno;
    char message[160];
    snprintf(message, sizeof message, "getsockopt(SO_PEERCRED) on fd %d failed: %s (errno %d)", (int)fd, strerror(err), err);
    return fail(env, "EPEERCRED", message);
  }
  if (len != sizeof cred) return fail(env, "EPEERCRED", "getsockopt(SO_PEERCRED) returned a short answer");

  napi_value out;
  if (napi_create_object(env, &out) != napi_ok
      || set_number(env, out, "pid", (double)cred.pid) != napi_ok
      || set_number(env, out, "uid", (double)cred.uid) != napi_ok
      || set_number(env, out, "gid", (double)cred.gid) != napi_ok)
    return fail(env, NULL, "peerCred: cannot build the answer");
  return out;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "peerCred", NAPI_AUTO_LENGTH, peer_cred, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "peerCred", fn) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
