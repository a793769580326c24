//go:build linux

package shuffle

import (
	"net"
	"net/http"
	"syscall"
)

// corkReply sets TCP_CORK on the connection of r (if ConnContext put it in
// r's context and it is TCP) and returns the function that removes it, or
// nil. Corked, the small frame headers written before each segment sent
// with sendfile leave in full packets with the segment's bytes rather than
// as a small packet of their own, which the fetcher would wake up for.
func corkReply(r *http.Request) func() {
	c, _ := r.Context().Value(connKey{}).(*net.TCPConn)
	if c == nil {
		return nil
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	set := func(v int) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, v)
		}); err != nil {
			return err
		}
		return serr
	}
	if set(1) != nil {
		return nil
	}
	return func() { _ = set(0) }
}
