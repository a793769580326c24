package apps

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"gomr/mr"
	"gomr/mr/fs"
)

const (
	kmeansGenJob = "kmeansgen"
	kmeansJob    = "kmeans"
)

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   kmeansGenJob,
		Input:  RowRangeInput{},
		Output: mr.TextOutput{},
		Mapper: newKMeansGenMapper,
	})
	mr.RegisterJob(&mr.JobDef{
		Name:   kmeansJob,
		Input:  mr.TextInput{},
		Output: mr.TextOutput{},
		Mapper: newKMeansMapper,
		Combiner: func(mr.TaskContext) (mr.Reducer, error) {
			return &kmeansCombiner{}, nil
		},
		Reducer: newKMeansReducer,
	})
	mr.RegisterApp(&mr.App{
		Name:        kmeansGenAppName,
		Usage:       kmeansGenAppUsage,
		Description: "Generate <points> points of <dims> dimensions around <k> random centers, one comma-separated line each (HiBench ml/kmeans input).",
		Run:         runKMeansGen,
		Check:       func(args []string) error { _, err := kmeansGenArgs(args); return err },
	})
	mr.RegisterApp(&mr.App{
		Name:        kmeansAppName,
		Usage:       kmeansAppUsage,
		Description: "Cluster points with <iterations> rounds of Lloyd's k-means (one job each), starting from the first <k> points; writes cluster<TAB>size<TAB>center lines.",
		Run:         runKMeans,
		Check:       func(args []string) error { _, _, err := kmeansArgs(args); return err },
	})
}

const (
	kmeansGenAppName  = "kmeansgen"
	kmeansGenAppUsage = "<points> <k> <dims> <out>"
	kmeansAppName     = "kmeans"
	kmeansAppUsage    = "<points> <out> <k> <iterations>"

	// kmeansGenRange and kmeansGenSpread shape kmeansgen's data: centers
	// uniform in [-range, range) per coordinate, points normal around
	// their center with this standard deviation per coordinate.
	kmeansGenRange  = 100.0
	kmeansGenSpread = 5.0
)

// positiveArg parses a positive integer argument named what.
func positiveArg(what, s string) (int64, error) {
	n, err := parseHumanRows(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s %q is not a positive integer", what, s)
	}
	return n, nil
}

// kmeansGenArgs checks kmeansgen's arguments and returns its point,
// cluster and dimension counts.
func kmeansGenArgs(args []string) ([3]int64, error) {
	var n [3]int64
	if len(args) != 4 {
		return n, usage(kmeansGenAppName, kmeansGenAppUsage, "need 4 arguments, got %d", len(args))
	}
	for i, what := range []string{"point count", "cluster count k", "dimension count"} {
		v, err := positiveArg(what, args[i])
		if err != nil {
			return n, usage(kmeansGenAppName, kmeansGenAppUsage, "%v", err)
		}
		n[i] = v
	}
	return n, nil
}

func runKMeansGen(ctx context.Context, jc mr.JobClient, args []string) error {
	n, err := kmeansGenArgs(args)
	if err != nil {
		return err
	}
	maps, err := confInt(jc.Conf, "mapreduce.job.maps", defaultMaps)
	if err != nil {
		return fmt.Errorf("%s: %w", kmeansGenAppName, err)
	}
	if maps < 1 {
		return fmt.Errorf("%s: configuration mapreduce.job.maps=%d must be at least 1", kmeansGenAppName, maps)
	}
	_, err = runJob(ctx, jc, &mr.JobSpec{
		Name: kmeansGenJob,
		Def:  kmeansGenJob,
		Params: map[string]string{
			"rows": strconv.FormatInt(n[0], 10),
			"maps": strconv.FormatInt(maps, 10),
			"k":    strconv.FormatInt(n[1], 10),
			"dims": strconv.FormatInt(n[2], 10),
		},
		Output:     args[3],
		NumReduces: 0,
	})
	return err
}

// unitFloat returns a uniform float64 in [0, 1).
func unitFloat(src *rand.PCG) float64 { return float64(src.Uint64()>>11) / (1 << 53) }

// kmeansGenCenter returns generated center j: each coordinate uniform in
// [-100, 100), from a generator seeded by j.
func kmeansGenCenter(j int64, dims int) []float64 {
	src := rand.NewPCG(uint64(j), 0x4b4d65616e73432e) // "KMeansC."
	c := make([]float64, dims)
	for d := range c {
		c[d] = (2*unitFloat(src) - 1) * kmeansGenRange
	}
	return c
}

// kmeansGenMapper writes the point of each row: row i picks a center from
// a generator seeded by i and adds normal noise (Box-Muller) of standard
// deviation 5 to each coordinate. Coordinates are written with 4
// decimals. The points depend only on the row, k and dims.
type kmeansGenMapper struct {
	k       int64
	dims    int
	centers map[int64][]float64
	line    []byte
}

func newKMeansGenMapper(tc mr.TaskContext) (mr.Mapper, error) {
	k, err := paramInt(tc.Param, "k")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kmeansGenJob, err)
	}
	dims, err := paramInt(tc.Param, "dims")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kmeansGenJob, err)
	}
	if k < 1 || dims < 1 || dims > 1<<20 {
		return nil, fmt.Errorf("%s: job parameters k=%d and dims=%d: want k >= 1 and 1 <= dims <= %d", kmeansGenJob, k, dims, 1<<20)
	}
	return &kmeansGenMapper{k: k, dims: int(dims), centers: map[int64][]float64{}}, nil
}

// Map writes one point.
func (m *kmeansGenMapper) Map(_ mr.TaskContext, key, _ []byte, out mr.Emitter) error {
	if len(key) != 8 {
		return fmt.Errorf("%s: row key %x is not 8 bytes", kmeansGenJob, key)
	}
	src := rand.NewPCG(binary.BigEndian.Uint64(key), 0x4b4d65616e73502e) // "KMeansP."
	j := int64(src.Uint64() % uint64(m.k))
	c, ok := m.centers[j]
	if !ok {
		c = kmeansGenCenter(j, m.dims)
		if len(m.centers) < 1<<16 {
			m.centers[j] = c
		}
	}
	m.line = m.line[:0]
	for d := range c {
		u1, u2 := unitFloat(src), unitFloat(src)
		noise := math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
		if d > 0 {
			m.line = append(m.line, ',')
		}
		m.line = strconv.AppendFloat(m.line, c[d]+kmeansGenSpread*noise, 'f', 4, 64)
	}
	return out.Emit(m.line, nil)
}

// parsePoint parses a comma-separated line of floats.
func parsePoint(dst []float64, line []byte) ([]float64, error) {
	dst = dst[:0]
	for f := range bytes.SplitSeq(line, []byte{','}) {
		v, err := strconv.ParseFloat(string(bytes.TrimSpace(f)), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("point %q: coordinate %q is not a finite number", line, f)
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// formatPoint writes coordinates comma-separated, each in the shortest form
// that reads back exactly.
func formatPoint(dst []byte, p []float64) []byte {
	for d, v := range p {
		if d > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
	}
	return dst
}

// encodeCenters renders centers as the job parameter: points separated by
// ';'.
func encodeCenters(centers [][]float64) string {
	var b []byte
	for i, c := range centers {
		if i > 0 {
			b = append(b, ';')
		}
		b = formatPoint(b, c)
	}
	return string(b)
}

// decodeCenters parses encodeCenters' output; the centers must all have
// the same number of dimensions.
func decodeCenters(s string) ([][]float64, error) {
	if s == "" {
		return nil, errors.New("no centers")
	}
	var centers [][]float64
	for p := range strings.SplitSeq(s, ";") {
		c, err := parsePoint(nil, []byte(p))
		if err != nil {
			return nil, err
		}
		if len(centers) > 0 && len(c) != len(centers[0]) {
			return nil, fmt.Errorf("center %d has %d dimensions, center 0 has %d", len(centers), len(c), len(centers[0]))
		}
		centers = append(centers, c)
	}
	return centers, nil
}

// kmeansArgs checks kmeans' arguments and returns k and the iteration
// count.
func kmeansArgs(args []string) (k, iterations int64, err error) {
	if len(args) != 4 {
		return 0, 0, usage(kmeansAppName, kmeansAppUsage, "need 4 arguments, got %d", len(args))
	}
	if k, err = positiveArg("cluster count k", args[2]); err != nil {
		return 0, 0, usage(kmeansAppName, kmeansAppUsage, "%v", err)
	}
	if iterations, err = positiveArg("iteration count", args[3]); err != nil {
		return 0, 0, usage(kmeansAppName, kmeansAppUsage, "%v", err)
	}
	return k, iterations, nil
}

func runKMeans(ctx context.Context, jc mr.JobClient, args []string) error {
	k, iterations, err := kmeansArgs(args)
	if err != nil {
		return err
	}
	in, out := args[0], args[1]
	centers, err := firstPoints(ctx, in, int(min(k, 1<<20)))
	if err != nil {
		return fmt.Errorf("%s: choosing the initial centers: %w", kmeansAppName, err)
	}
	if int64(len(centers)) < k {
		return fmt.Errorf("%s: input %s has %d point(s), fewer than k=%d", kmeansAppName, in, len(centers), k)
	}
	tmp := siblingPath(out, ".kmeans-temp-")
	defer removeTemp(kmeansAppName, tmp)
	for it := int64(1); it <= iterations; it++ {
		output := out
		if it < iterations {
			output = fs.Join(tmp, "iter-"+strconv.FormatInt(it, 10))
		}
		if _, err := runJob(ctx, jc, &mr.JobSpec{
			Name:       fmt.Sprintf("%s-%d", kmeansJob, it),
			Def:        kmeansJob,
			Params:     map[string]string{"centers": encodeCenters(centers)},
			Inputs:     []string{in},
			Output:     output,
			NumReduces: -1,
		}); err != nil {
			return err
		}
		if it < iterations {
			if centers, _, err = readCenters(output, len(centers), len(centers[0])); err != nil {
				return fmt.Errorf("%s: iteration %d: %w", kmeansAppName, it, err)
			}
			removeTemp(kmeansAppName, output)
		}
	}
	return nil
}

// firstPoints returns the first k points of the input, in the order of
// its splits (files by name, then offset), skipping empty lines; all must
// have the same dimensions.
func firstPoints(ctx context.Context, in string, k int) ([][]float64, error) {
	format := mr.TextInput{}
	splits, err := format.Splits(mr.SplitContext{Ctx: ctx, Inputs: []string{in}})
	if err != nil {
		return nil, err
	}
	var points [][]float64
	for _, s := range splits {
		if len(points) == k {
			break
		}
		r, err := format.Open(ctx, s, nil)
		if err != nil {
			return nil, err
		}
		for len(points) < k && r.Next() {
			if len(r.Value()) == 0 {
				continue
			}
			p, err := parsePoint(nil, r.Value())
			if err == nil && len(points) > 0 && len(p) != len(points[0]) {
				err = fmt.Errorf("point %q has %d dimensions, the first point %d", r.Value(), len(p), len(points[0]))
			}
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("%s: %w", s.Path, err)
			}
			points = append(points, p)
		}
		err = r.Err()
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", s.Path, err)
		}
	}
	return points, nil
}

// readCenters reads an iteration's output, lines
// "cluster<TAB>size<TAB>center", in the part files of dir: one line for
// each of the k clusters, of dims dimensions.
func readCenters(dir string, k, dims int) ([][]float64, []int64, error) {
	fsys, err := fs.Resolve(dir)
	if err != nil {
		return nil, nil, err
	}
	entries, err := fsys.List(dir)
	if err != nil {
		return nil, nil, err
	}
	centers := make([][]float64, k)
	sizes := make([]int64, k)
	for _, e := range entries {
		name := e.Path[strings.LastIndexByte(e.Path, '/')+1:]
		if e.IsDir || !strings.HasPrefix(name, "part-") {
			continue
		}
		if err := readCenterFile(fsys, e.Path, centers, sizes, dims); err != nil {
			return nil, nil, err
		}
	}
	for j, c := range centers {
		if c == nil {
			return nil, nil, fmt.Errorf("%s: no line for cluster %d", dir, j)
		}
	}
	return centers, sizes, nil
}

func readCenterFile(fsys fs.FS, path string, centers [][]float64, sizes []int64, dims int) error {
	f, err := fsys.Open(path)
	if err != nil {
		return err
	}
	defer f.Close() // read-only
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if perr := parseCenterLine(strings.TrimSuffix(line, "\n"), centers, sizes, dims); perr != nil {
				return fmt.Errorf("%s: %w", path, perr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	}
}

func parseCenterLine(line string, centers [][]float64, sizes []int64, dims int) error {
	fields := strings.Split(line, "\t")
	if len(fields) != 3 {
		return fmt.Errorf("line %q: want cluster<TAB>size<TAB>center", line)
	}
	j, err1 := strconv.Atoi(fields[0])
	size, err2 := strconv.ParseInt(fields[1], 10, 64)
	c, err3 := parsePoint(nil, []byte(fields[2]))
	switch {
	case err1 != nil || j < 0 || j >= len(centers):
		return fmt.Errorf("line %q: bad cluster number (k=%d)", line, len(centers))
	case err2 != nil || size < 0:
		return fmt.Errorf("line %q: bad size", line)
	case err3 != nil:
		return fmt.Errorf("line %q: %w", line, err3)
	case len(c) != dims:
		return fmt.Errorf("line %q: %d dimensions, want %d", line, len(c), dims)
	case centers[j] != nil:
		return fmt.Errorf("line %q: cluster %d appears twice", line, j)
	}
	centers[j], sizes[j] = c, size
	return nil
}

// The map output of kmeans: key = the cluster number as 4 bytes big-endian,
// value = a uvarint point count and the coordinates' sums as big-endian
// float64s.
func kmeansKey(dst []byte, j int) []byte { return binary.BigEndian.AppendUint32(dst[:0], uint32(j)) }

func kmeansValue(dst []byte, count uint64, sum []float64) []byte {
	dst = binary.AppendUvarint(dst[:0], count)
	for _, v := range sum {
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst
}

// addKMeansValue adds a map output value to count and sum.
func addKMeansValue(v []byte, count *uint64, sum []float64) error {
	c, n := binary.Uvarint(v)
	if n <= 0 || len(v)-n != 8*len(sum) {
		return fmt.Errorf("%s: bad map output value of %d bytes for %d dimensions", kmeansJob, len(v), len(sum))
	}
	*count += c
	for d := range sum {
		sum[d] += math.Float64frombits(binary.BigEndian.Uint64(v[n+8*d:]))
	}
	return nil
}

// kmeansMapper assigns each point to its nearest center (squared Euclidean
// distance; ties to the lower cluster number) and emits (cluster, 1,
// point). Before its first point it emits (cluster, 0, zeros) for every
// cluster, so that every cluster reaches a reduce even when no point is
// nearest to it.
type kmeansMapper struct {
	centers    [][]float64
	started    bool
	point      []float64
	zeros      []float64
	key, value []byte
}

func newKMeansMapper(tc mr.TaskContext) (mr.Mapper, error) {
	centers, err := decodeCenters(tc.Param("centers"))
	if err != nil {
		return nil, fmt.Errorf("%s: job parameter centers: %w", kmeansJob, err)
	}
	return &kmeansMapper{centers: centers, zeros: make([]float64, len(centers[0]))}, nil
}

// nearestCenter returns the number of the center nearest to p.
func nearestCenter(centers [][]float64, p []float64) int {
	best, bestDist := 0, math.Inf(1)
	for j, c := range centers {
		var dist float64
		for d, v := range c {
			diff := p[d] - v
			dist += diff * diff
		}
		if dist < bestDist {
			best, bestDist = j, dist
		}
	}
	return best
}

// Map assigns one point.
func (m *kmeansMapper) Map(_ mr.TaskContext, _, line []byte, out mr.Emitter) error {
	if len(line) == 0 {
		return nil
	}
	if !m.started {
		m.started = true
		m.value = kmeansValue(m.value, 0, m.zeros)
		for j := range m.centers {
			m.key = kmeansKey(m.key, j)
			if err := out.Emit(m.key, m.value); err != nil {
				return err
			}
		}
	}
	p, err := parsePoint(m.point, line)
	if err != nil {
		return fmt.Errorf("%s: %w", kmeansJob, err)
	}
	m.point = p
	if len(p) != len(m.zeros) {
		return fmt.Errorf("%s: point %q has %d dimensions, the centers %d", kmeansJob, line, len(p), len(m.zeros))
	}
	m.key = kmeansKey(m.key, nearestCenter(m.centers, p))
	m.value = kmeansValue(m.value, 1, p)
	return out.Emit(m.key, m.value)
}

// kmeansCombiner adds up the counts and sums of a cluster.
type kmeansCombiner struct {
	sum   []float64
	value []byte
}

// Reduce emits (cluster, total count, summed coordinates).
func (c *kmeansCombiner) Reduce(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	var count uint64
	c.sum = c.sum[:0]
	first := true
	for values.Next() {
		v := values.Value()
		if first {
			first = false
			_, n := binary.Uvarint(v)
			if n <= 0 || (len(v)-n)%8 != 0 {
				return fmt.Errorf("%s: bad map output value %x", kmeansJob, v)
			}
			c.sum = append(c.sum, make([]float64, (len(v)-n)/8)...)
		}
		if err := addKMeansValue(v, &count, c.sum); err != nil {
			return err
		}
	}
	c.value = kmeansValue(c.value, count, c.sum)
	return out.Emit(key, c.value)
}

// kmeansReducer writes each cluster's new center, the mean of its points,
// as "cluster<TAB>size<TAB>center"; a cluster with no points keeps its
// center.
type kmeansReducer struct {
	centers [][]float64
	sum     []float64
	key     []byte
	value   []byte
}

func newKMeansReducer(tc mr.TaskContext) (mr.Reducer, error) {
	centers, err := decodeCenters(tc.Param("centers"))
	if err != nil {
		return nil, fmt.Errorf("%s: job parameter centers: %w", kmeansJob, err)
	}
	return &kmeansReducer{centers: centers, sum: make([]float64, len(centers[0]))}, nil
}

// Reduce computes one cluster's center.
func (r *kmeansReducer) Reduce(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	if len(key) != 4 || int(binary.BigEndian.Uint32(key)) >= len(r.centers) {
		return fmt.Errorf("%s: bad cluster key %x (k=%d)", kmeansJob, key, len(r.centers))
	}
	j := int(binary.BigEndian.Uint32(key))
	clear(r.sum)
	var count uint64
	for values.Next() {
		if err := addKMeansValue(values.Value(), &count, r.sum); err != nil {
			return err
		}
	}
	center := r.centers[j]
	if count > 0 {
		for d := range r.sum {
			r.sum[d] /= float64(count)
		}
		center = r.sum
	}
	r.key = strconv.AppendInt(r.key[:0], int64(j), 10)
	r.value = strconv.AppendUint(r.value[:0], count, 10)
	r.value = formatPoint(append(r.value, '\t'), center)
	return out.Emit(r.key, r.value)
}
