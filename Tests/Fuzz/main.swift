// The libFuzzer entry: `FUZZ_TARGET=frame|messages|apple|google|policy|http fuzz [libFuzzer
// options] [corpus directories]`. Built with `swift build --sanitize=fuzzer --sanitize=address
// -Xswiftc -DFUZZING --product fuzz` (scripts/fuzz), where libFuzzer's own main runs and calls
// LLVMFuzzerTestOneInput for each input. This file has no top-level statement (that build
// parses it as a library), so a normal build of it does nothing.
import Glibc

#if FUZZING
    /// libFuzzer's callback: the input to the target `FUZZ_TARGET` names.
    @_cdecl("LLVMFuzzerTestOneInput")
    func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        FuzzTargets.target(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }
#endif
