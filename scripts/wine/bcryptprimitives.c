/* A stand-in bcryptprimitives.dll for Wine 8 (Debian 12), which lacks it:
 * Rust's std on Windows imports ProcessPrng from it for its random numbers.
 * scripts/build-windows.sh puts it beside lockwatch.exe for the Wine tests
 * only; it is never shipped, as Windows itself has the real DLL.
 * ProcessPrng fills the buffer from RtlGenRandom (advapi32's
 * SystemFunction036), which takes at most a ULONG per call. */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!RtlGenRandom(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
