#include <zlib.h>

// zlib's deflateInit2 and inflateInit2 are macros (they pass the library's version and the
// stream's size), which Swift cannot call: these wrappers are the calls Tributary makes.

/// Starts a deflate stream that writes the gzip format (RFC 1952): windowBits 15 + 16.
static inline int tributary_deflate_init_gzip(z_streamp stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

/// Starts an inflate stream that reads the gzip format only: windowBits 15 + 16.
static inline int tributary_inflate_init_gzip(z_streamp stream) {
    return inflateInit2(stream, 15 + 16);
}
