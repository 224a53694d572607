#ifndef TRIBUTARY_FUZZER_DRIVER_H
#define TRIBUTARY_FUZZER_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// What tributary_fuzzer_run answers when the binary holds no libFuzzer.
#define TRIBUTARY_FUZZER_ABSENT (-1)

/// Runs libFuzzer's driver (LLVMFuzzerRunDriver: it parses the libFuzzer flags in argv, fuzzes
/// `check`, and returns or exits as libFuzzer's own main would) when the binary was linked with
/// the toolchain's libclang_rt.fuzzer_no_main, as scripts/fuzz links it; otherwise returns
/// TRIBUTARY_FUZZER_ABSENT at once. The driver is a weak reference, so the same objects link
/// with or without libFuzzer: the fuzz targets need no compile flag of their own, and reuse
/// the AddressSanitizer build of the tests (docs/architecture.md, "What CI builds").
int tributary_fuzzer_run(int *argc, char ***argv, int (*check)(const uint8_t *data, size_t size));

#endif
