//go:build !linux

package shuffle

import "net/http"

// corkReply is Linux's TCP_CORK (cork_linux.go); elsewhere it does
// nothing.
func corkReply(r *http.Request) func() { return nil }
