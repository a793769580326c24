package criu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Incremental dumps (spec preemption-elasticity.md §5.8): where the kernel
// tracks dirty memory, a dump with TrackMem and a second dump of the same
// process against it (Parent) link the first as "parent" and write no
// more than it did (the toy re-dirties all its memory, so not much less).
// Where it does not (CONFIG_MEM_SOFT_DIRTY unset, as on these machines'
// 6.18 kernel), DirtyTracking says so, a dump with TrackMem fails, and a
// full dump of the same process, left running by the failure, succeeds:
// the fallback the TaskTracker takes.
func TestIncrementalDump(t *testing.T) {
	criuPath := requireCRIU(t)
	ctx := context.Background()
	ok, why, err := DirtyTracking(ctx, criuPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dirty memory tracking: %v %s", ok, why)
	base := t.TempDir()
	tr := newTracker(t)
	cmd, ctrl := startToy(t, tr, filepath.Join(base, "task"), "a0", 10)
	tc := tr.await("a0", "orig")
	tc.quiesce(t)
	img1, img2, work := filepath.Join(base, "img1"), filepath.Join(base, "img2"), filepath.Join(base, "work")
	pid := cmd.Process.Pid
	if !ok {
		if !strings.Contains(why, "racking") {
			t.Errorf("the reason %q does not mention tracking", why)
		}
		_, err := DumpWith(ctx, criuPath, pid, img1, work, DumpOptions{TrackMem: true})
		if err == nil || !strings.Contains(err.Error(), "Tracking memory is not available") {
			t.Fatalf("dump with TrackMem without dirty tracking: %v, want CRIU's refusal", err)
		}
		full, err := DumpWith(ctx, criuPath, pid, img2, work, DumpOptions{})
		if err != nil {
			t.Fatalf("full dump after the refused tracked one: %v", err)
		}
		t.Logf("full dump instead: %d bytes", full.ImageBytes)
	} else {
		first, err := DumpWith(ctx, criuPath, pid, img1, work, DumpOptions{TrackMem: true})
		if err != nil {
			t.Fatal(err)
		}
		second, err := DumpWith(ctx, criuPath, pid, img2, work, DumpOptions{TrackMem: true, Parent: "../img1"})
		if err != nil {
			t.Fatal(err)
		}
		if l, err := os.Readlink(filepath.Join(img2, "parent")); err != nil || l != "../img1" {
			t.Errorf("parent link %q (%v), want ../img1", l, err)
		}
		if second.ImageBytes > first.ImageBytes {
			t.Errorf("incremental dump %d bytes, more than the full one's %d", second.ImageBytes, first.ImageBytes)
		}
		t.Logf("full %d bytes, incremental %d bytes", first.ImageBytes, second.ImageBytes)
	}
	if err := ctrl.Resume("a0", "orig"); err != nil {
		t.Fatal(err)
	}
	tr.await("a0", "orig")
}
