#include <sys/types.h>
#include <event2/http.h>
#include <event2/http_struct.h>

#include "CEvhttpChunkFraming.h"

int tributary_evhttp_take_over_chunk_framing(struct evhttp_request *request) {
    if (!request->chunked) return 0;
    request->chunked = 0;
    return 1;
}

void tributary_evhttp_return_chunk_framing(struct evhttp_request *request) {
    request->chunked = 1;
}
