package cacheagent

import "unsafe"

// unsafePointer reads a kernel inotify record in place.
func unsafePointer(b *byte) unsafe.Pointer { return unsafe.Pointer(b) }
