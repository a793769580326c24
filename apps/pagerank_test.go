package apps

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gomr/mr"
)

// parseGraph reads webgraph's lines into out-link lists by page number.
func parseGraph(t *testing.T, text string, pages int) [][]int {
	t.Helper()
	links := make([][]int, pages)
	seen := make([]bool, pages)
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		page, outs, _ := strings.Cut(line, "\t")
		p, err := strconv.Atoi(page)
		if err != nil || p < 0 || p >= pages || seen[p] {
			t.Fatalf("bad or repeated page in line %q", line)
		}
		seen[p] = true
		if outs == "" {
			continue
		}
		for _, o := range strings.Split(outs, ",") {
			q, err := strconv.Atoi(o)
			if err != nil || q < 0 || q >= pages || q == p {
				t.Fatalf("bad link %q in line %q", o, line)
			}
			links[p] = append(links[p], q)
		}
	}
	for p, ok := range seen {
		if !ok {
			t.Fatalf("page %d has no line", p)
		}
	}
	return links
}

// powerIteration is PageRank computed directly: ranks summing to 1, start
// 1/n, damping 0.85, dangling pages' rank spread evenly.
func powerIteration(links [][]int, iterations int) []float64 {
	n := len(links)
	rank := make([]float64, n)
	for i := range rank {
		rank[i] = 1 / float64(n)
	}
	for range iterations {
		next := make([]float64, n)
		var dangling float64
		for p, outs := range links {
			if len(outs) == 0 {
				dangling += rank[p]
				continue
			}
			for _, q := range outs {
				next[q] += rank[p] / float64(len(outs))
			}
		}
		for q := range next {
			next[q] = (1-0.85)/float64(n) + 0.85*(next[q]+dangling/float64(n))
		}
		rank = next
	}
	return rank
}

func TestWebGraphAndPageRank(t *testing.T) {
	base := t.TempDir()
	const pages = 300
	graph := filepath.Join(base, "graph")
	jc := &inProcessClient{t: t, conf: map[string]string{"mapreduce.job.maps": "3"}}
	if err := runApp(t, "webgraph", jc, strconv.Itoa(pages), graph); err != nil {
		t.Fatal(err)
	}
	text := readParts(t, graph)
	links := parseGraph(t, text, pages)
	dangling, maxIn := 0, 0
	in := make([]int, pages)
	for _, outs := range links {
		if len(outs) == 0 {
			dangling++
		}
		for _, q := range outs {
			in[q]++
			maxIn = max(maxIn, in[q])
		}
	}
	if dangling == 0 || dangling > pages/4 || maxIn < 10 {
		t.Errorf("%d dangling pages, highest in-degree %d: want some dangling pages and skewed in-degrees", dangling, maxIn)
	}
	// The graph depends only on the page count, not on the maps.
	graph1 := filepath.Join(base, "graph1")
	if err := runApp(t, "webgraph", &inProcessClient{t: t, conf: map[string]string{"mapreduce.job.maps": "1"}}, strconv.Itoa(pages), graph1); err != nil {
		t.Fatal(err)
	}
	if readParts(t, graph1) != text {
		t.Error("1 map wrote another graph than 3 maps")
	}

	for _, iterations := range []int{1, 7} {
		t.Run(fmt.Sprint(iterations, " iterations"), func(t *testing.T) {
			out := filepath.Join(base, fmt.Sprint("ranks", iterations))
			jc := &inProcessClient{t: t, conf: map[string]string{"mapreduce.job.reduces": "3", "mapreduce.input.fileinputformat.split.maxsize": "1000"}}
			if err := runApp(t, "pagerank", jc, graph, out, strconv.Itoa(iterations)); err != nil {
				t.Fatal(err)
			}
			if len(jc.jobs) != 1+iterations {
				t.Errorf("%d jobs, want %d", len(jc.jobs), 1+iterations)
			}
			want := powerIteration(links, iterations)
			got := make([]float64, pages)
			seen := 0
			var sum float64
			for _, line := range strings.Split(strings.TrimSuffix(readParts(t, out), "\n"), "\n") {
				page, r, ok := strings.Cut(line, "\t")
				p, err1 := strconv.Atoi(page)
				rank, err2 := strconv.ParseFloat(r, 64)
				if !ok || err1 != nil || err2 != nil || p < 0 || p >= pages {
					t.Fatalf("bad output line %q", line)
				}
				got[p] = rank
				sum += rank
				seen++
			}
			if seen != pages {
				t.Fatalf("%d ranks, want %d", seen, pages)
			}
			for p := range got {
				if math.Abs(got[p]-want[p]) > 1e-9 {
					t.Errorf("page %d: rank %.17g, want %.17g", p, got[p], want[p])
				}
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("ranks sum to %.17g, want 1", sum)
			}
			if extra := leftovers(t, base, "graph", "graph1", "ranks1", "ranks7"); len(extra) != 0 {
				t.Errorf("left behind: %v", extra)
			}
		})
	}
}

func TestPageRankBadGraphs(t *testing.T) {
	for name, tt := range map[string]struct{ graph, problem string }{
		"dangling link": {"a\tb,c\nb\ta\n", `page "c" is linked to but has no line of its own`},
		"repeated page": {"a\tb\nb\ta\na\t\n", `page "a" has 2 lines`},
		"too many tabs": {"a\tb\tc\n", `want page<TAB>out1,out2,...`},
		"no pages":      {"", "has no pages"},
		"no page name":  {"\tb\n", "no page name"},
	} {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			in := filepath.Join(base, "g")
			if err := os.WriteFile(in, []byte(tt.graph), 0o644); err != nil {
				t.Fatal(err)
			}
			err := runApp(t, "pagerank", &inProcessClient{t: t}, in, filepath.Join(base, "out"), "2")
			if err == nil || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("error %v, want one containing %q", err, tt.problem)
			}
			if extra := leftovers(t, base, "g", "out"); len(extra) != 0 {
				t.Errorf("left behind: %v", extra)
			}
		})
	}
}

func TestPageRankSmallGraph(t *testing.T) {
	// A two-page cycle and a dangling page, every rank 1/3 at the start.
	// After one iteration a and b have (1-0.85)/3 + 0.85*(1/3 + (1/3)/3)
	// (the other's rank and a third of c's) and c has (1-0.85)/3 +
	// 0.85*(1/3)/3.
	base := t.TempDir()
	in := filepath.Join(base, "g")
	if err := os.WriteFile(in, []byte("a\tb\nb\ta\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(base, "out")
	if err := runApp(t, "pagerank", &inProcessClient{t: t}, in, out, "1"); err != nil {
		t.Fatal(err)
	}
	ab := 0.15/3 + 0.85*(1.0/3+1.0/9)
	c := 0.15/3 + 0.85/9
	want := fmt.Sprintf("a\t%s\nb\t%s\nc\t%s\n", strconv.FormatFloat(ab, 'g', -1, 64), strconv.FormatFloat(ab, 'g', -1, 64), strconv.FormatFloat(c, 'g', -1, 64))
	if got := readParts(t, out); got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
}

func TestPageRankUsage(t *testing.T) {
	for _, tt := range []struct {
		app  string
		args []string
	}{
		{"pagerank", []string{"g", "out"}},
		{"pagerank", []string{"g", "out", "0"}},
		{"pagerank", []string{"g", "out", "x"}},
		{"webgraph", []string{"10"}},
		{"webgraph", []string{"0", "out"}},
		{"webgraph", []string{"many", "out"}},
	} {
		jc := &fakeClient{}
		var ue *mr.UsageError
		if err := runApp(t, tt.app, jc, tt.args...); !errors.As(err, &ue) {
			t.Errorf("%s %q: error %v, want a usage error", tt.app, tt.args, err)
		}
		if len(jc.specs) != 0 {
			t.Errorf("%s %q: ran a job", tt.app, tt.args)
		}
	}
}
