#include <sys/types.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libevent.h>

#include "CHiredisLibevent.h"

int tributary_redis_libevent_attach(struct redisAsyncContext *context, struct event_base *base) {
    return redisLibeventAttach(context, base);
}
