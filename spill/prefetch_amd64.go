package spill

// prefetch asks the processor to bring the cache line holding *p into its
// caches (PREFETCHT0) without waiting for it. It has no other effect.
//
//go:noescape
func prefetch(p *byte)
