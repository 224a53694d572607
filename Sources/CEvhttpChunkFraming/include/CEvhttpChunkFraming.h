#ifndef TRIBUTARY_EVHTTP_CHUNK_FRAMING_H
#define TRIBUTARY_EVHTTP_CHUNK_FRAMING_H

// Who frames the chunks of a streamed evhttp answer.
//
// evhttp_send_reply_chunk() frames every chunk itself: a printf'd size line and a "\r\n" after
// the data, each landing in a fresh evbuffer chain of the connection. For one event fanned out
// to 10,000 event streams that is 20,000 extra allocations of a kilobyte or more, held until
// the sockets take them. A sender that frames its chunks once, in bytes shared by every stream
// (Libevent's SharedBytes), takes the job over with these two calls; libevent 2.1's public API
// has no switch for it, so they flip the `chunked` bit of `struct evhttp_request`, which
// <event2/http_struct.h> publishes. Kept in C so that header's complete struct type stays out
// of Swift, where evhttp_request remains an opaque pointer.

struct evhttp_request;

/// If evhttp frames this request's answer as chunks, stops it and returns 1: every chunk sent
/// from now on must be framed by the caller. Returns 0 (nothing changed) when the answer is
/// not chunked, e.g. to an HTTP/1.0 client. Call after evhttp_send_reply_start().
int tributary_evhttp_take_over_chunk_framing(struct evhttp_request *request);

/// Hands the framing back before evhttp_send_reply_end(), which then writes the last chunk.
void tributary_evhttp_return_chunk_framing(struct evhttp_request *request);

#endif
