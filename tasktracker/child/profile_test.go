package child

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"gomr/conf"
	"gomr/mrpb"
)

func TestStartProfileWritesProfiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		profile string
		want    bool
	}{
		{"off by default", "", false},
		{"on", "true", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := map[string]string{keyProfileDir: dir}
			if tc.profile != "" {
				m[keyProfile] = tc.profile
			}
			cfg, err := conf.FromMap(m)
			if err != nil {
				t.Fatal(err)
			}
			tk := &task{conf: cfg, log: slog.New(slog.DiscardHandler), launch: &mrpb.LaunchTask{AttemptId: "attempt_x_m_000000_0"}}
			tk.startProfile()()
			for _, suffix := range []string{".cpu.pprof", ".heap.pprof", ".mem.txt"} {
				_, err := os.Stat(filepath.Join(dir, "attempt_x_m_000000_0"+suffix))
				if got := err == nil; got != tc.want {
					t.Errorf("%s written: %v, want %v (%v)", suffix, got, tc.want, err)
				}
			}
		})
	}
	if kb := vmHWM(); kb <= 0 {
		t.Errorf("vmHWM() = %d, want > 0", kb)
	}
}
