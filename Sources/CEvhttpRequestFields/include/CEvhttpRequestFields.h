#ifndef TRIBUTARY_EVHTTP_REQUEST_FIELDS_H
#define TRIBUTARY_EVHTTP_REQUEST_FIELDS_H

// The few fields of `struct evhttp_request` that libevent 2.1's public API has no call for.
//
// <event2/http_struct.h> publishes the struct, but including it from Swift turns every
// evhttp_request from an opaque pointer into a struct pointer; these functions keep the
// complete type in C, so Swift keeps seeing an OpaquePointer.

struct evhttp_request;

// MARK: - Who frames the chunks of a streamed answer
//
// evhttp_send_reply_chunk() frames every chunk itself: a printf'd size line and a "\r\n" after
// the data, each landing in a fresh evbuffer chain of the connection. For one event fanned out
// to 10,000 event streams that is 20,000 extra allocations of a kilobyte or more, held until
// the sockets take them. A sender that frames its chunks once, in bytes shared by every stream
// (Libevent's SharedBytes), takes the job over with these two calls.

/// If evhttp frames this request's answer as chunks, stops it and returns 1: every chunk sent
/// from now on must be framed by the caller. Returns 0 (nothing changed) when the answer is
/// not chunked, e.g. to an HTTP/1.0 client. Call after evhttp_send_reply_start().
int tributary_evhttp_take_over_chunk_framing(struct evhttp_request *request);

/// Hands the framing back before evhttp_send_reply_end(), which then writes the last chunk.
void tributary_evhttp_return_chunk_framing(struct evhttp_request *request);

// MARK: - The protocol version a client spoke

/// 1 when the request line said HTTP/1.0 (or older), 0 for HTTP/1.1: an HTTP/1.0 client gets
/// no interim (1xx) answers and no chunked framing.
int tributary_evhttp_request_is_http10(const struct evhttp_request *request);

// MARK: - What an open answer no longer needs

/// Frees what evhttp keeps of a request once its answer's head is written, for an answer that
/// stays open for hours (an event stream): every request and answer header but `Connection`
/// (evhttp reads those again when the answer ends, to decide whether the connection stays
/// open), and the parsed request target. A browser's dozen request headers are a dozen
/// allocations held per subscriber otherwise. After it, evhttp_request_get_evhttp_uri()
/// returns NULL and each header list holds at most its first `Connection`. (A request in
/// absolute form is decided on `Proxy-Connection`, which goes too: such a connection closes
/// after its answer, as it did before, since no answer carries that header.) Call after
/// evhttp_send_reply_start().
void tributary_evhttp_request_release_head(struct evhttp_request *request);

// MARK: - Where evhttp is in reading an upstream's answer

/// 1 while evhttp waits for the size line of the next chunk of a chunked body: the one place
/// where libevent 2.1 buffers a line without bound (it has no cap on chunk-size lines).
int tributary_evhttp_request_awaits_chunk_size(const struct evhttp_request *request);

#endif
