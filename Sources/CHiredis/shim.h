// sys/types.h must come first, as in CLibevent's shim: Debian's event-config.h defines
// _GNU_SOURCE, and without this include clean builds fail with an `fd_set` clash between two
// C modules.
#include <sys/types.h>

// hiredis 0.14 (Debian's libhiredis-dev). Its libevent adapter is not here: its functions are
// `static` in a header, compiled once in the CHiredisLibevent target instead.
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
