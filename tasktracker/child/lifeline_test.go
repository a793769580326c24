package child

import (
	"os"
	"testing"
	"time"
)

// The lifeline ends when the last write end closes, as when the tracker
// dies, and not before.
func TestWatchLifeline(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	gone := make(chan struct{})
	go watchLifeline(r, func() { close(gone) })
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
		t.Fatal("the lifeline ended while its write end was open")
	case <-time.After(50 * time.Millisecond):
	}
	w.Close()
	select {
	case <-gone:
	case <-time.After(2 * time.Second):
		t.Fatal("the lifeline did not end when its write end closed")
	}
}
