package tasktracker

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gomr/conf"
)

// TestNewReleasesPortsOnError: New binds the umbilical and shuffle ports
// before it checks the rest of its setup; when that fails, it returns the
// error and leaves both ports free (an embedding process, such as a test
// or mr local, goes on living).
func TestNewReleasesPortsOnError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		localDir string
		faults   string
		wantErr  string
	}{
		{name: "bad fault list", localDir: t.TempDir(), faults: "bogus=1", wantErr: `GOMR_FAULTS: unknown fault "bogus"`},
		{name: "local dir not creatable", localDir: filepath.Join(file, "local"), wantErr: "local dir (mapreduce.cluster.local.dir): "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(FaultsEnv, c.faults)
			umb, shuffle := freeLoopbackPort(t), freeLoopbackPort(t)
			cfg, err := conf.FromMap(map[string]string{
				"mapreduce.tasktracker.report.address": umb,
				"mapreduce.tasktracker.http.address":   shuffle,
				"mapreduce.tasktracker.host.name":      "localhost",
			})
			if err != nil {
				t.Fatal(err)
			}
			tt, err := New(cfg, Options{Name: testTrackerName, LocalDir: c.localDir, JobTracker: "127.0.0.1:1"})
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("New: %v, %v; want an error containing %q", tt, err, c.wantErr)
			}
			for what, addr := range map[string]string{"umbilical": umb, "shuffle": shuffle} {
				l, err := net.Listen("tcp", addr)
				if err != nil {
					t.Errorf("the %s port %s is still held after New failed: %v", what, addr, err)
					continue
				}
				l.Close()
			}
		})
	}
}

// freeLoopbackPort returns a loopback address with a port free now.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("127.0.0.1:%d", l.Addr().(*net.TCPAddr).Port)
}
