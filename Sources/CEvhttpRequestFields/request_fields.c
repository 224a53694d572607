#include <sys/types.h>
#include <event2/http.h>
#include <event2/http_struct.h>

#include "CEvhttpRequestFields.h"

int tributary_evhttp_take_over_chunk_framing(struct evhttp_request *request) {
    if (!request->chunked) return 0;
    request->chunked = 0;
    return 1;
}

void tributary_evhttp_return_chunk_framing(struct evhttp_request *request) {
    request->chunked = 1;
}

int tributary_evhttp_request_is_http10(const struct evhttp_request *request) {
    return request->major < 1 || (request->major == 1 && request->minor == 0);
}

int tributary_evhttp_request_awaits_chunk_size(const struct evhttp_request *request) {
    return request->chunked && request->ntoread < 0;
}
