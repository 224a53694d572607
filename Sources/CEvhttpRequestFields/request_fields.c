#include <sys/queue.h>
#include <sys/types.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

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

/// Removes every header but `Connection` from `headers`. evhttp_remove_header() removes the
/// first header of a name; every header before this one that is not a `Connection` is gone
/// already, so that first one is this one.
static void keep_connection_headers_only(struct evkeyvalq *headers) {
    struct evkeyval *header = TAILQ_FIRST(headers);
    while (header != NULL) {
        struct evkeyval *next = TAILQ_NEXT(header, next);
        if (evutil_ascii_strcasecmp(header->key, "Connection") != 0) {
            evhttp_remove_header(headers, header->key);
        }
        header = next;
    }
}

void tributary_evhttp_request_release_head(struct evhttp_request *request) {
    keep_connection_headers_only(request->input_headers);
    keep_connection_headers_only(request->output_headers);
    if (request->uri_elems != NULL) {
        evhttp_uri_free(request->uri_elems);
        request->uri_elems = NULL;
    }
}
