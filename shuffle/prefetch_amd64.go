package shuffle

// prefetchBytes asks the processor to bring the cache lines of b into its
// caches (PREFETCHT0 every 64 bytes) without waiting for them, nor
// faulting: a page that is not mapped is skipped. It has no other effect.
// A batched reply copies its small segments from mapped spill files that
// are rarely in the caches any more (each is one reduce's partition, read
// once); asking for a segment's lines a few segments ahead of its copy
// overlaps their loads with the copies before it.
//
//go:noescape
func prefetchBytes(b []byte)
