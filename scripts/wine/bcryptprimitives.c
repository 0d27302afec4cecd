/*
 * Stands in, under Wine only, for a DLL every Windows since 8 has:
 * bcryptprimitives.dll, whose ProcessPrng Rust's std imports for its
 * randomness (HashMap keys). Wine 8.0 (Debian 12) lacks it, so a Windows
 * build of hark does not load there ("Library bcryptprimitives.dll ... not
 * found"). This one gives ProcessPrng over advapi32's SystemFunction036
 * (RtlGenRandom), Wine's own system randomness. Built by scripts/test-wine
 * (x86_64-w64-mingw32-gcc -shared) and copied into the test prefix's
 * system32; never shipped, never used on Windows.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
