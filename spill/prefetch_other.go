//go:build !amd64

package spill

// prefetch does nothing on this architecture (see prefetch_amd64.go).
func prefetch(p *byte) {}
