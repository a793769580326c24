package mr

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFragmentName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{FragmentName(3, 0), true},
		{FragmentName(12345, 17), true},
		{"part-r-00003.f00001", true},
		{"part-r-00003", false},
		{"part-m-00003.f00001", false},
		{"part-r-00003.f1", false},
		{"part-r-00003.f00001.tmp", false},
		{PieceFragmentName(3, 5, 2), true},
		{"part-r-00003.t5.f00002", false},
		{"part-r-00003.t00005", false},
		{"_SUCCESS", false},
	} {
		if got := IsFragmentName(tc.name); got != tc.want {
			t.Errorf("IsFragmentName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := FragmentName(3, 1); got != "part-r-00003.f00001" {
		t.Errorf("FragmentName(3, 1) = %q", got)
	}
	// A partition's own task's fragments keep their names; a scale-up
	// piece's name its task.
	if got := PieceFragmentName(3, 3, 1); got != "part-r-00003.f00001" {
		t.Errorf("PieceFragmentName(3, 3, 1) = %q", got)
	}
	if got := PieceFragmentName(3, 7, 0); got != "part-r-00003.t00007.f00000" {
		t.Errorf("PieceFragmentName(3, 7, 0) = %q", got)
	}
}

// The fragments of a partition's tasks (its own and scale-up pieces) are
// joined run by run in the order given, not by name.
func TestJoinFragmentRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	c, err := NewCommitter(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetupJob(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.FragmentDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		PieceFragmentName(0, 0, 0): "a\n", PieceFragmentName(0, 0, 1): "b\n",
		PieceFragmentName(0, 9, 0): "c\n", PieceFragmentName(0, 4, 0): "d\n", PieceFragmentName(0, 4, 1): "e\n",
	} {
		if err := os.WriteFile(filepath.Join(c.FragmentDir(), name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !c.PieceFragmentCommitted(0, 9, 0) || c.PieceFragmentCommitted(0, 9, 1) {
		t.Error("PieceFragmentCommitted does not see the files")
	}
	if err := c.JoinFragmentRuns(0, []FragmentRun{{Task: 0, N: 2}, {Task: 9, N: 1}, {Task: 4, N: 2}}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, PartName(false, 0)))
	if err != nil || string(got) != "a\nb\nc\nd\ne\n" {
		t.Fatalf("joined part file %q (%v)", got, err)
	}
	if ents, _ := os.ReadDir(c.FragmentDir()); len(ents) != 0 {
		t.Errorf("%d files left in the fragment directory", len(ents))
	}
	if err := c.JoinFragmentRuns(1, []FragmentRun{{Task: 1, N: 0}}); err == nil {
		t.Error("a run of no fragments was joined")
	}
}

// A split reduce's fragments are committed into _temporary/_fragments, the
// other files into the output, and the job's commit joins the fragments of
// a partition, in order, into its part file.
func TestCommitAndJoinFragments(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	c, err := NewCommitter(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetupJob(); err != nil {
		t.Fatal(err)
	}
	write := func(attempt, name, data string) {
		t.Helper()
		dir := filepath.Join(out, "_temporary", attempt)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := c.CommitTask(attempt); err != nil {
			t.Fatal(err)
		}
	}
	write("a0", FragmentName(1, 0), "a\t1\nb\t2\n")
	write("a1", FragmentName(1, 1), "stale\n")
	write("a2", FragmentName(1, 1), "c\t3\n") // a re-run of fragment 1 replaces it
	write("a3", FragmentName(1, 2), "d\t4\n")
	write("b0", PartName(false, 0), "x\t1\n")
	if _, err := os.Stat(filepath.Join(out, FragmentName(1, 0))); err == nil {
		t.Fatal("a fragment was committed into the output directory")
	}
	if err := c.JoinFragments(1, 3); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, PartName(false, 1)))
	if err != nil || string(got) != "a\t1\nb\t2\nc\t3\nd\t4\n" {
		t.Fatalf("joined part file %q (%v)", got, err)
	}
	if err := c.JoinFragments(2, 1); err == nil {
		t.Error("joining a partition without fragments did not fail")
	}
	if err := c.CommitJob(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(out)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 3 || names[0] != "_SUCCESS" || names[1] != PartName(false, 0) || names[2] != PartName(false, 1) {
		t.Errorf("output holds %v", names)
	}
}
