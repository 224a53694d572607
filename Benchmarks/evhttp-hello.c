// Plain C evhttp answering the hello bytes: the floor under Tributary's HTTPServer module.
#include <event2/event.h>
#include <event2/http.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
static const char hello[] = "{\"hello\":\"world\",\"from\":\"tributary\"}";
static void handle(struct evhttp_request *req, void *arg) {
    (void)arg;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    struct evbuffer *body = evbuffer_new();
    evbuffer_add(body, hello, sizeof hello - 1);
    evhttp_send_reply(req, 200, "OK", body);
    evbuffer_free(body);
}
static void stop(evutil_socket_t fd, short what, void *base) { (void)fd; (void)what; event_base_loopbreak(base); }
int main(int argc, char **argv) {
    struct event_config *config = event_config_new();
    event_config_set_flag(config, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = event_base_new_with_config(config);
    struct evhttp *http = evhttp_new(base);
    evhttp_set_gencb(http, handle, NULL);
    if (evhttp_bind_socket(http, "127.0.0.1", (unsigned short)atoi(argv[1])) != 0) return 1;
    struct event *term = evsignal_new(base, SIGTERM, stop, base);
    event_add(term, NULL);
    event_base_dispatch(base);
    return 0;
}
