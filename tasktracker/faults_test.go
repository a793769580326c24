package tasktracker

import (
	"strings"
	"testing"
)

func TestParseFaults(t *testing.T) {
	cases := []struct {
		in      string
		drops   int
		wantErr string
	}{
		{"", 0, ""},
		{"drop-replies=3", 3, ""},
		{" drop-replies=1 , ", 1, ""},
		{"drop-replies=-1", 0, `GOMR_FAULTS: drop-replies="-1": want a count >= 0`},
		{"drop-replies=x", 0, `GOMR_FAULTS: drop-replies="x": want a count >= 0`},
		{"fail-tasks=1,drop-replies=2", 2, ""},
		{"fail-tasks=maybe", 0, `GOMR_FAULTS: fail-tasks="maybe": want true or false`},
		{"no-pdeathsig=true,drop-replies=1", 1, ""},
		{"no-pdeathsig=2", 0, `GOMR_FAULTS: no-pdeathsig="2": want true or false`},
		{"lose-disk=1", 0, `GOMR_FAULTS: unknown fault "lose-disk" (known: drop-replies, fail-tasks, no-pdeathsig)`},
	}
	for _, c := range cases {
		f, err := parseFaults(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("parseFaults(%q) error %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || f.dropReplies != c.drops {
			t.Errorf("parseFaults(%q) = %+v, %v; want %d drops", c.in, f, err, c.drops)
		}
	}
	if f, _ := parseFaults("no-pdeathsig=1"); !f.noPdeathsig {
		t.Error("no-pdeathsig=1 not parsed")
	}
	f, _ := parseFaults("drop-replies=2")
	got := []bool{f.dropReply(0), f.dropReply(1), f.dropReply(3), f.dropReply(1)}
	if want := []bool{false, true, true, false}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("drops %v, want %v (replies without actions are never dropped)", got, want)
	}
}
