package apps

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"gomr/mr"
	"gomr/mr/fs"
)

const (
	webGraphJob      = "webgraph"
	pageRankCountJob = "pagerank-count"
	pageRankJob      = "pagerank"
)

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   webGraphJob,
		Input:  RowRangeInput{},
		Output: mr.TextOutput{},
		Mapper: func(tc mr.TaskContext) (mr.Mapper, error) {
			pages, err := paramInt(tc.Param, "rows")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", webGraphJob, err)
			}
			return &webGraphMapper{pages: pages}, nil
		},
	})
	mr.RegisterJob(&mr.JobDef{
		Name:   pageRankCountJob,
		Input:  mr.TextInput{},
		Output: NullOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return mr.MapperFunc(pageRankCount), nil
		},
	})
	mr.RegisterJob(&mr.JobDef{
		Name:    pageRankJob,
		Input:   mr.TextInput{},
		Output:  mr.TextOutput{},
		Mapper:  newPageRankMapper,
		Reducer: newPageRankReducer,
	})
	mr.RegisterApp(&mr.App{
		Name:        webGraphAppName,
		Usage:       webGraphAppUsage,
		Description: "Generate a random directed graph of <pages> pages as lines page<TAB>out1,out2,... (HiBench websearch/pagerank input).",
		Run:         runWebGraph,
		Check:       func(args []string) error { _, err := webGraphArgs(args); return err },
	})
	mr.RegisterApp(&mr.App{
		Name:        pageRankAppName,
		Usage:       pageRankAppUsage,
		Description: "Compute PageRank (damping 0.85, dangling pages' rank spread over all pages, ranks summing to 1) with one job per iteration; writes page<TAB>rank lines.",
		Run:         runPageRank,
		Check:       func(args []string) error { _, err := pageRankArgs(args); return err },
	})
}

const (
	webGraphAppName   = "webgraph"
	webGraphAppUsage  = "<pages> <out>"
	pageRankAppName   = "pagerank"
	pageRankAppUsage  = "<graph> <out> <iterations>"
	pageRankDamping   = 0.85
	pageRankGroup     = "pagerank"
	pageRankPages     = "PAGES"
	pageRankDangling  = "DANGLING_PAGES"
	pageRankDanglingQ = "DANGLING_RANK_E18" // dangling pages' rank sum, in units of 1e-18
)

// webGraphArgs checks webgraph's arguments and returns its page count.
func webGraphArgs(args []string) (int64, error) {
	if len(args) != 2 {
		return 0, usage(webGraphAppName, webGraphAppUsage, "need 2 arguments, got %d", len(args))
	}
	pages, err := parseHumanRows(args[0])
	if err != nil || pages < 1 {
		return 0, usage(webGraphAppName, webGraphAppUsage, "page count %q is not a positive integer (with an optional k, m, b or t suffix)", args[0])
	}
	return pages, nil
}

func runWebGraph(ctx context.Context, jc mr.JobClient, args []string) error {
	pages, err := webGraphArgs(args)
	if err != nil {
		return err
	}
	maps, err := confInt(jc.Conf, "mapreduce.job.maps", defaultMaps)
	if err != nil {
		return fmt.Errorf("%s: %w", webGraphAppName, err)
	}
	if maps < 1 {
		return fmt.Errorf("%s: configuration mapreduce.job.maps=%d must be at least 1", webGraphAppName, maps)
	}
	_, err = runJob(ctx, jc, &mr.JobSpec{
		Name: webGraphJob,
		Def:  webGraphJob,
		Params: map[string]string{
			"rows": strconv.FormatInt(pages, 10),
			"maps": strconv.FormatInt(maps, 10),
		},
		Output:     args[1],
		NumReduces: 0,
	})
	return err
}

// webGraphLinks returns the out-links of page p of a graph of pages pages,
// from a generator seeded by p alone, so the graph does not depend on the
// number of maps. One page in ten (on average) is dangling, with no
// out-links; the others link to 1 to 8 distinct other pages, each drawn as
// floor(pages * u^2) for a uniform u in [0, 1), which skews the in-degrees
// towards the low page numbers (density ~ x^-1/2). The links are sorted.
func webGraphLinks(p, pages int64) []int64 {
	src := rand.NewPCG(uint64(p), 0x5765624772617068) // "WebGraph"
	r := src.Uint64()
	if r%10 == 0 || pages < 2 {
		return nil
	}
	want := 1 + int((r>>8)%8)
	want = min(want, int(pages-1))
	var links []int64
	for tries := 0; len(links) < want && tries < 8*want; tries++ {
		u := float64(src.Uint64()>>11) / (1 << 53)
		t := min(int64(float64(pages)*u*u), pages-1)
		if t != p && !slices.Contains(links, t) {
			links = append(links, t)
		}
	}
	slices.Sort(links)
	return links
}

// webGraphMapper writes the line of each page (row) it is given.
type webGraphMapper struct {
	pages      int64
	key, value []byte
}

// Map emits (page, comma-separated out-links); a dangling page's line is
// the page alone.
func (m *webGraphMapper) Map(_ mr.TaskContext, key, _ []byte, out mr.Emitter) error {
	if len(key) != 8 {
		return fmt.Errorf("%s: row key %x is not 8 bytes", webGraphJob, key)
	}
	p := int64(binary.BigEndian.Uint64(key))
	m.key = strconv.AppendInt(m.key[:0], p, 10)
	m.value = m.value[:0]
	for i, t := range webGraphLinks(p, m.pages) {
		if i > 0 {
			m.value = append(m.value, ',')
		}
		m.value = strconv.AppendInt(m.value, t, 10)
	}
	return out.Emit(m.key, m.value)
}

// pageLine is one page's line, in the graph format "page<TAB>links" (or
// "page" alone) or the iterations' state format
// "page<TAB>rank<TAB>links".
type pageLine struct {
	page, links []byte
	rank        float64
}

// parsePageLine parses a line of the graph (state false) or of an
// iteration's output (state true).
func parsePageLine(line []byte, state bool) (pageLine, error) {
	var pl pageLine
	page, rest, hasTab := bytes.Cut(line, []byte{'\t'})
	if len(page) == 0 {
		return pl, fmt.Errorf("line %q: no page name", line)
	}
	pl.page = page
	if !state {
		if bytes.IndexByte(rest, '\t') >= 0 {
			return pl, fmt.Errorf("line %q: want page<TAB>out1,out2,...", line)
		}
		pl.links = rest
		return pl, nil
	}
	rank, links, ok := bytes.Cut(rest, []byte{'\t'})
	if !hasTab || !ok {
		return pl, fmt.Errorf("line %q: want page<TAB>rank<TAB>links", line)
	}
	r, err := strconv.ParseFloat(string(rank), 64)
	if err != nil {
		return pl, fmt.Errorf("line %q: bad rank: %w", line, err)
	}
	pl.rank, pl.links = r, links
	return pl, nil
}

// forEachLink calls f with each non-empty comma-separated link.
func forEachLink(links []byte, f func([]byte) error) error {
	for len(links) > 0 {
		var l []byte
		l, links, _ = bytes.Cut(links, []byte{','})
		if len(l) == 0 {
			continue
		}
		if err := f(l); err != nil {
			return err
		}
	}
	return nil
}

// pageRankCount counts the pages of the graph and the dangling ones.
func pageRankCount(tc mr.TaskContext, _, line []byte, _ mr.Emitter) error {
	if len(line) == 0 {
		return nil
	}
	pl, err := parsePageLine(line, false)
	if err != nil {
		return fmt.Errorf("%s: %w", pageRankCountJob, err)
	}
	tc.Counter(pageRankGroup, pageRankPages).Increment()
	n := 0
	_ = forEachLink(pl.links, func([]byte) error { n++; return nil })
	if n == 0 {
		tc.Counter(pageRankGroup, pageRankDangling).Increment()
	}
	return nil
}

// pageRankArgs checks pagerank's arguments and returns its iteration
// count.
func pageRankArgs(args []string) (int, error) {
	if len(args) != 3 {
		return 0, usage(pageRankAppName, pageRankAppUsage, "need 3 arguments, got %d", len(args))
	}
	iterations, err := strconv.Atoi(args[2])
	if err != nil || iterations < 1 {
		return 0, usage(pageRankAppName, pageRankAppUsage, "iterations %q is not a positive integer", args[2])
	}
	return iterations, nil
}

func runPageRank(ctx context.Context, jc mr.JobClient, args []string) error {
	iterations, err := pageRankArgs(args)
	if err != nil {
		return err
	}
	graph, out := args[0], args[1]
	tmp := siblingPath(out, ".pagerank-temp-")
	defer removeTemp(pageRankAppName, tmp)

	res, err := runJob(ctx, jc, &mr.JobSpec{
		Name:       pageRankCountJob,
		Def:        pageRankCountJob,
		Inputs:     []string{graph},
		Output:     fs.Join(tmp, "count"),
		NumReduces: 0,
	})
	if err != nil {
		return err
	}
	pages := res.Counters.Get(pageRankGroup, pageRankPages)
	if pages == 0 {
		return fmt.Errorf("%s: graph %s has no pages", pageRankAppName, graph)
	}
	dangling := float64(res.Counters.Get(pageRankGroup, pageRankDangling)) / float64(pages)
	in := graph
	for it := 1; it <= iterations; it++ {
		output := fs.Join(tmp, "iter-"+strconv.Itoa(it))
		final := it == iterations
		if final {
			output = out
		}
		res, err := runJob(ctx, jc, &mr.JobSpec{
			Name: fmt.Sprintf("%s-%d", pageRankJob, it),
			Def:  pageRankJob,
			Params: map[string]string{
				"pages":    strconv.FormatInt(pages, 10),
				"dangling": strconv.FormatFloat(dangling, 'g', -1, 64),
				"state":    strconv.FormatBool(it > 1),
				"final":    strconv.FormatBool(final),
			},
			Inputs:     []string{in},
			Output:     output,
			NumReduces: -1,
		})
		if err != nil {
			return err
		}
		dangling = float64(res.Counters.Get(pageRankGroup, pageRankDanglingQ)) / 1e18
		if it > 1 {
			removeTemp(pageRankAppName, in) // the previous iteration's state
		}
		in = output
	}
	return nil
}

// pageRankParams are an iteration's parameters.
type pageRankParams struct {
	pages    int64
	dangling float64 // the rank summed over the dangling pages
	state    bool    // the input is an iteration's output, not the graph
	final    bool    // write page<TAB>rank rather than the state
}

func readPageRankParams(tc mr.TaskContext) (pageRankParams, error) {
	var p pageRankParams
	var err error
	if p.pages, err = paramInt(tc.Param, "pages"); err != nil {
		return p, fmt.Errorf("%s: %w", pageRankJob, err)
	}
	if p.pages < 1 {
		return p, fmt.Errorf("%s: job parameter pages=%d must be at least 1", pageRankJob, p.pages)
	}
	if p.dangling, err = strconv.ParseFloat(tc.Param("dangling"), 64); err != nil {
		return p, fmt.Errorf("%s: job parameter dangling: %w", pageRankJob, err)
	}
	if p.state, err = strconv.ParseBool(tc.Param("state")); err != nil {
		return p, fmt.Errorf("%s: job parameter state: %w", pageRankJob, err)
	}
	if p.final, err = strconv.ParseBool(tc.Param("final")); err != nil {
		return p, fmt.Errorf("%s: job parameter final: %w", pageRankJob, err)
	}
	return p, nil
}

// The map output values: 'L' and the page's links (one per page), or 'R'
// and a rank contribution as a big-endian float64.
const (
	pageRankLinksTag = 'L'
	pageRankRankTag  = 'R'
)

// pageRankMapper sends each page's links to the page and an equal share of
// its rank to each page it links to (rank 1/pages for the graph's lines).
type pageRankMapper struct {
	p     pageRankParams
	value []byte
	share [9]byte
}

func newPageRankMapper(tc mr.TaskContext) (mr.Mapper, error) {
	p, err := readPageRankParams(tc)
	if err != nil {
		return nil, err
	}
	return &pageRankMapper{p: p}, nil
}

// Map handles one page's line.
func (m *pageRankMapper) Map(_ mr.TaskContext, _, line []byte, out mr.Emitter) error {
	if len(line) == 0 {
		return nil
	}
	pl, err := parsePageLine(line, m.p.state)
	if err != nil {
		return fmt.Errorf("%s: %w", pageRankJob, err)
	}
	if !m.p.state {
		pl.rank = 1 / float64(m.p.pages)
	}
	m.value = append(append(m.value[:0], pageRankLinksTag), pl.links...)
	if err := out.Emit(pl.page, m.value); err != nil {
		return err
	}
	n := 0
	_ = forEachLink(pl.links, func([]byte) error { n++; return nil })
	if n == 0 {
		return nil
	}
	m.share[0] = pageRankRankTag
	binary.BigEndian.PutUint64(m.share[1:], math.Float64bits(pl.rank/float64(n)))
	return forEachLink(pl.links, func(t []byte) error { return out.Emit(t, m.share[:]) })
}

// pageRankReducer computes a page's new rank,
//
//	(1-d)/pages + d * (sum of the shares it receives + dangling/pages),
//
// d = 0.85: the dangling pages' rank is spread evenly over all pages, so
// the ranks keep summing to 1. It writes the page's state
// (page<TAB>rank<TAB>links) or, in the last iteration, page<TAB>rank, and
// adds a dangling page's new rank to the counter the next iteration's
// dangling parameter is read from.
type pageRankReducer struct {
	p    pageRankParams
	buf  []byte
	mass *mr.Counter
}

func newPageRankReducer(tc mr.TaskContext) (mr.Reducer, error) {
	p, err := readPageRankParams(tc)
	if err != nil {
		return nil, err
	}
	return &pageRankReducer{p: p, mass: tc.Counter(pageRankGroup, pageRankDanglingQ)}, nil
}

// Reduce computes one page's rank.
func (r *pageRankReducer) Reduce(_ mr.TaskContext, page []byte, values mr.ValueIterator, out mr.Emitter) error {
	var sum float64
	var links []byte
	lines := 0
	for values.Next() {
		v := values.Value()
		switch {
		case len(v) >= 1 && v[0] == pageRankLinksTag:
			lines++
			links = append(links[:0], v[1:]...)
		case len(v) == 9 && v[0] == pageRankRankTag:
			sum += math.Float64frombits(binary.BigEndian.Uint64(v[1:]))
		default:
			return fmt.Errorf("%s: page %q: bad map output value %x", pageRankJob, page, v)
		}
	}
	switch {
	case lines == 0:
		return fmt.Errorf("%s: page %q is linked to but has no line of its own in the graph", pageRankJob, page)
	case lines > 1:
		return fmt.Errorf("%s: page %q has %d lines in the graph", pageRankJob, page, lines)
	}
	n := float64(r.p.pages)
	rank := (1-pageRankDamping)/n + pageRankDamping*(sum+r.p.dangling/n)
	dangling := true
	_ = forEachLink(links, func([]byte) error { dangling = false; return nil })
	if dangling {
		r.mass.Add(int64(math.Round(rank * 1e18)))
	}
	r.buf = strconv.AppendFloat(r.buf[:0], rank, 'g', -1, 64)
	if !r.p.final {
		r.buf = append(append(r.buf, '\t'), links...)
	}
	return out.Emit(page, r.buf)
}
