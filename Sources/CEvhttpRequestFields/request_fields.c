#include <stdlib.h>
#include <string.h>
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

/// Removes every header but `Connection` from `headers`, in one pass: the first `Connection`
/// value (the only one evhttp_find_header() sees, so the only one that decides keep-alive) is
/// copied, the list cleared, and that header added back. Removing the others one by one would
/// scan past every `Connection` kept for each removal: quadratic in a hostile head.
static void keep_connection_headers_only(struct evkeyvalq *headers) {
    const char *connection = evhttp_find_header(headers, "Connection");
    char *kept = connection == NULL ? NULL : strdup(connection);
    evhttp_clear_headers(headers);
    if (kept != NULL) {
        evhttp_add_header(headers, "Connection", kept);
        free(kept);
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
