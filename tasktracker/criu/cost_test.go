package criu

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	costFlag = flag.Bool("criu.cost", false, "run TestCloneCost: measure the clone protocol with real CRIU")
	costMiB  = flag.String("criu.cost.mib", "100", "TestCloneCost: comma-separated toy memory sizes in MiB")
	costReps = flag.Int("criu.cost.reps", 3, "TestCloneCost: clones of one original per size")
)

// TestCloneCost measures the clone protocol (quiesce, dump, resume, copy,
// restore, identity hand-over) on a toy child holding and dirtying N MiB, and
// logs the medians over the clones of one original. Skipped unless -criu.cost:
//
//	go test -count=1 -v -run TestCloneCost ./tasktracker/criu/ -criu.cost [-criu.cost.mib=10,100,500]
func TestCloneCost(t *testing.T) {
	if !*costFlag {
		t.Skip("measurement: run with -criu.cost")
	}
	criuPath := requireCRIU(t)
	var rows []string
	for _, f := range strings.Split(*costMiB, ",") {
		mib, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || mib <= 0 {
			t.Fatalf("bad -criu.cost.mib entry %q", f)
		}
		rows = append(rows, measureClone(t, criuPath, mib, *costReps))
	}
	t.Logf("medians over %d clones of one original (range in brackets):\n"+
		"| toy MiB | image MB | quiesce | dump | frozen | orig disconnected | copy dir | restore | restore -> hello | total |\n"+
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n%s",
		*costReps, strings.Join(rows, "\n"))
}

type cloneCost struct {
	image                                                            float64 // MB
	quiesce, dump, frozen, disconnected, copy, restore, hello, total time.Duration
}

func measureClone(t *testing.T, criuPath string, mib, reps int) string {
	ctx := context.Background()
	base := t.TempDir()
	attemptDir := filepath.Join(base, "tasks", "t1")
	tr := newTracker(t)
	cmd, ctrl := startToy(t, tr, attemptDir, "a0", mib)
	orig := tr.await("a0", "orig")
	orig.ping(t)
	ino, err := PipeInode(ctrl.W)
	if err != nil {
		t.Fatal(err)
	}
	var costs []cloneCost
	for i := 1; i <= reps; i++ {
		var c cloneCost
		id := fmt.Sprintf("a%d", i)
		img, work := filepath.Join(base, "img-"+id), filepath.Join(base, "work-"+id)
		copyTo := filepath.Join(base, id, "t1")
		start := time.Now()
		orig.quiesce(t)
		c.quiesce = time.Since(start)
		ds, err := Dump(ctx, criuPath, cmd.Process.Pid, img, work)
		if err != nil {
			t.Fatal(err)
		}
		c.dump, c.frozen, c.image = ds.Wall, ds.Frozen, float64(ds.ImageBytes)/1e6
		if err := ctrl.Resume("a0", "orig"); err != nil {
			t.Fatal(err)
		}
		orig = tr.await("a0", "orig")
		c.disconnected = time.Since(start)
		t0 := time.Now()
		copyDir(t, attemptDir, copyTo)
		c.copy = time.Since(t0)
		rs, err := Restore(ctx, criuPath, RestoreSpec{ImagesDir: img, WorkDir: work, CtrlInode: ino,
			Binds: []Bind{{Source: copyTo, Target: attemptDir}}})
		if err != nil {
			t.Fatal(err)
		}
		c.restore = rs.Wall
		t1 := time.Now()
		if err := rs.Ctrl.Resume(id, "clone"); err != nil {
			t.Fatal(err)
		}
		tr.await(id, "clone")
		c.hello = time.Since(t1) + rs.Wall
		c.total = time.Since(start)
		rs.Ctrl.Close()
		killReap(t, rs.Pid)
		costs = append(costs, c)
		t.Logf("%d MiB clone %s: %+v", mib, id, c)
	}
	med := func(get func(cloneCost) time.Duration) string {
		var v []time.Duration
		for _, c := range costs {
			v = append(v, get(c))
		}
		slices.Sort(v)
		ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 0, 64) }
		return fmt.Sprintf("%s ms (%s-%s)", ms(v[len(v)/2]), ms(v[0]), ms(v[len(v)-1]))
	}
	images := make([]float64, 0, len(costs))
	for _, c := range costs {
		images = append(images, c.image)
	}
	slices.Sort(images)
	return fmt.Sprintf("| %d | %.1f | %s | %s | %s | %s | %s | %s | %s | %s |", mib, images[len(images)/2],
		med(func(c cloneCost) time.Duration { return c.quiesce }),
		med(func(c cloneCost) time.Duration { return c.dump }),
		med(func(c cloneCost) time.Duration { return c.frozen }),
		med(func(c cloneCost) time.Duration { return c.disconnected }),
		med(func(c cloneCost) time.Duration { return c.copy }),
		med(func(c cloneCost) time.Duration { return c.restore }),
		med(func(c cloneCost) time.Duration { return c.hello }),
		med(func(c cloneCost) time.Duration { return c.total }))
}
