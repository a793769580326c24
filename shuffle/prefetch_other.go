//go:build !amd64

package shuffle

// prefetchBytes does nothing on this architecture (prefetch_amd64.go).
func prefetchBytes(b []byte) {}
