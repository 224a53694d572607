#include "CFuzzerDriver.h"

__attribute__((weak)) int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *, size_t));

int tributary_fuzzer_run(int *argc, char ***argv, int (*check)(const uint8_t *data, size_t size)) {
    if (!LLVMFuzzerRunDriver) return TRIBUTARY_FUZZER_ABSENT;
    return LLVMFuzzerRunDriver(argc, argv, check);
}
