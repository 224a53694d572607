public import Glibc

/// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34): the child closes every descriptor
/// from `lowest` on, so none of the test process's sockets lives on in it. Were one to, a
/// server at its other end would wait for a close that the test already made. Swift's Glibc
/// module does not declare the call, so it is looked up at run time.
public func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t, from lowest: Int32) {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return }
    _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, lowest)
}
