import Glibc

/// Whether this test binary, and so the service binary built with it, runs under
/// AddressSanitizer (`swift test --sanitize=address`, scripts/test's second pass): ASan's
/// quarantine and shadow memory make a process's resident memory say nothing about the
/// service's own, so tests that bound memory are left to the plain pass.
public enum AddressSanitizer {
    public static let isActive: Bool = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
}
