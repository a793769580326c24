package shuffle

import "syscall"

// openNoAtime is the flag openDataFile tries first: reading a spill does
// not update its access time. Spills are read just after they are
// written, so under relatime each first read (or mapping) would otherwise
// dirty the inode and journal it: about 7% of mapping a small spill file
// in make bench-shuffle's profile. Nothing reads a spill's access time.
// The kernel allows it only to the file's owner (or with CAP_FOWNER),
// which the TaskTracker is of the spills its children write; otherwise
// the open is tried again without it.
const openNoAtime = syscall.O_NOATIME
