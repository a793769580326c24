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

// lloyd is k-means computed directly: the first k points as the initial
// centers, iterations rounds of assigning each point to the nearest center
// (ties to the lower number) and moving each center to the mean of its
// points; a center with no points stays. It returns the centers and the
// sizes of the last round's clusters.
func lloyd(points [][]float64, k, iterations int) ([][]float64, []int64) {
	centers := make([][]float64, k)
	for j := range centers {
		centers[j] = append([]float64(nil), points[j]...)
	}
	var sizes []int64
	for range iterations {
		sums := make([][]float64, k)
		sizes = make([]int64, k)
		for j := range sums {
			sums[j] = make([]float64, len(points[0]))
		}
		for _, p := range points {
			best, bestDist := 0, math.Inf(1)
			for j, c := range centers {
				var dist float64
				for d := range c {
					dist += (p[d] - c[d]) * (p[d] - c[d])
				}
				if dist < bestDist {
					best, bestDist = j, dist
				}
			}
			sizes[best]++
			for d := range p {
				sums[best][d] += p[d]
			}
		}
		for j := range centers {
			if sizes[j] == 0 {
				continue
			}
			for d := range sums[j] {
				sums[j][d] /= float64(sizes[j])
			}
			centers[j] = sums[j]
		}
	}
	return centers, sizes
}

// parsePoints reads comma-separated lines.
func parsePoints(t *testing.T, text string) [][]float64 {
	t.Helper()
	var points [][]float64
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		p, err := parsePoint(nil, []byte(line))
		if err != nil {
			t.Fatal(err)
		}
		points = append(points, p)
	}
	return points
}

func TestKMeansGenAndKMeans(t *testing.T) {
	base := t.TempDir()
	const n, k, dims = 900, 5, 3
	gen := filepath.Join(base, "points")
	if err := runApp(t, "kmeansgen", &inProcessClient{t: t, conf: map[string]string{"mapreduce.job.maps": "3"}}, strconv.Itoa(n), strconv.Itoa(k), strconv.Itoa(dims), gen); err != nil {
		t.Fatal(err)
	}
	text := readParts(t, gen)
	points := parsePoints(t, text)
	if len(points) != n {
		t.Fatalf("%d points, want %d", len(points), n)
	}
	// Every point lies near one of the k generated centers.
	for i, p := range points {
		if len(p) != dims {
			t.Fatalf("point %d has %d dimensions", i, len(p))
		}
		near := false
		for j := range k {
			c := kmeansGenCenter(int64(j), dims)
			var dist float64
			for d := range c {
				dist += (p[d] - c[d]) * (p[d] - c[d])
			}
			near = near || math.Sqrt(dist) < 8*kmeansGenSpread
		}
		if !near {
			t.Fatalf("point %d %v is far from every center", i, p)
		}
	}
	// The points depend only on n, k and dims, not on the maps.
	gen1 := filepath.Join(base, "points1")
	if err := runApp(t, "kmeansgen", &inProcessClient{t: t}, strconv.Itoa(n), strconv.Itoa(k), strconv.Itoa(dims), gen1); err != nil {
		t.Fatal(err)
	}
	if readParts(t, gen1) != text {
		t.Error("2 maps (the default) wrote other points than 3 maps")
	}

	for _, iterations := range []int{1, 6} {
		t.Run(fmt.Sprint(iterations, " iterations"), func(t *testing.T) {
			out := filepath.Join(base, fmt.Sprint("clusters", iterations))
			jc := &inProcessClient{t: t, conf: map[string]string{"mapreduce.job.reduces": "2", "mapreduce.input.fileinputformat.split.maxsize": "4000"}}
			if err := runApp(t, "kmeans", jc, gen, out, strconv.Itoa(k), strconv.Itoa(iterations)); err != nil {
				t.Fatal(err)
			}
			if len(jc.jobs) != iterations {
				t.Errorf("%d jobs, want %d", len(jc.jobs), iterations)
			}
			centers, sizes, err := readCenters(out, k, dims)
			if err != nil {
				t.Fatal(err)
			}
			wantCenters, wantSizes := lloyd(points, k, iterations)
			for j := range k {
				if sizes[j] != wantSizes[j] {
					t.Errorf("cluster %d: %d points, want %d", j, sizes[j], wantSizes[j])
				}
				for d := range dims {
					if math.Abs(centers[j][d]-wantCenters[j][d]) > 1e-9 {
						t.Errorf("cluster %d: center %v, want %v", j, centers[j], wantCenters[j])
						break
					}
				}
			}
			if extra := leftovers(t, base, "points", "points1", "clusters1", "clusters6"); len(extra) != 0 {
				t.Errorf("left behind: %v", extra)
			}
		})
	}
}

func TestKMeansEmptyCluster(t *testing.T) {
	// The first two points, the initial centers, are equal: every point is
	// nearest to cluster 0 (ties go to the lower number) and cluster 1,
	// empty, keeps its center.
	base := t.TempDir()
	in := filepath.Join(base, "in")
	if err := os.WriteFile(in, []byte("0,0\n0,0\n\n9, 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// After the second round the zeros have moved to cluster 1.
	for iterations, want := range map[string]string{"1": "0\t3\t3,1\n1\t0\t0,0\n", "2": "0\t1\t9,3\n1\t2\t0,0\n"} {
		out := filepath.Join(base, "out"+iterations)
		if err := runApp(t, "kmeans", &inProcessClient{t: t}, in, out, "2", iterations); err != nil {
			t.Fatal(err)
		}
		if got := readParts(t, out); got != want {
			t.Errorf("%s iterations: output %q, want %q", iterations, got, want)
		}
	}
}

func TestKMeansErrors(t *testing.T) {
	base := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(base, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		in, k, problem string
	}{
		{write("few", "1,2\n3,4\n"), "3", "has 2 point(s), fewer than k=3"},
		{write("bad", "1,2\n3,x\n"), "2", `coordinate "x" is not a finite number`},
		{write("dims", "1,2\n3,4,5\n"), "2", "has 3 dimensions, the first point 2"},
		{write("dims2", "1,2\n3,4\n5,6,7\n"), "2", "has 3 dimensions, the centers 2"},
	} {
		err := runApp(t, "kmeans", &inProcessClient{t: t}, tt.in, filepath.Join(base, "out-"+filepath.Base(tt.in)), tt.k, "1")
		if err == nil || !strings.Contains(err.Error(), tt.problem) {
			t.Errorf("%s: error %v, want one containing %q", filepath.Base(tt.in), err, tt.problem)
		}
	}
}

func TestKMeansUsage(t *testing.T) {
	for _, tt := range []struct {
		app  string
		args []string
	}{
		{"kmeans", []string{"in", "out", "2"}},
		{"kmeans", []string{"in", "out", "0", "1"}},
		{"kmeans", []string{"in", "out", "2", "0"}},
		{"kmeans", []string{"in", "out", "x", "1"}},
		{"kmeansgen", []string{"10", "2", "3"}},
		{"kmeansgen", []string{"10", "0", "3", "out"}},
		{"kmeansgen", []string{"10", "2", "-1", "out"}},
		{"kmeansgen", []string{"ten", "2", "3", "out"}},
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
