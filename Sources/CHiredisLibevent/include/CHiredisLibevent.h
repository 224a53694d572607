#ifndef TRIBUTARY_HIREDIS_LIBEVENT_H
#define TRIBUTARY_HIREDIS_LIBEVENT_H

// hiredis' libevent adapter (<hiredis/adapters/libevent.h>), compiled once.
//
// The adapter is a header of `static` functions, written to be included by one C file of the
// program. Imported into Swift directly, every module that sees it would get its own copy and
// Swift would have to compile C bodies it was not given as inline; here it is one C function
// with a plain prototype. The types stay opaque on this side (forward declarations), so this
// module does not carry a second copy of hiredis' or libevent's declarations next to CHiredis
// and CLibevent.

struct redisAsyncContext;
struct event_base;

/// Attaches `context` to `base`: hiredis' reads and writes become two libevent events on that
/// base, freed by hiredis when it frees the context. Returns 0 (REDIS_OK), or -1 (REDIS_ERR)
/// when the context is already attached.
int tributary_redis_libevent_attach(struct redisAsyncContext *context, struct event_base *base);

#endif
