package tasktracker

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strconv"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/spill"
)

// The tracker's memory budget for its task children (docs/performance.md,
// "A tracker-level memory budget"): the counterpart of Hadoop 1's
// TaskTracker memory management, where a slot stands for a share of the
// node's memory (mapred.cluster.map.memory.mb, mapred.cluster.reduce.memory.mb)
// and a task's heap and buffers are sized to fit it.
//
// The budget is divided among the tracker's slots: a map slot gets
// total / (map slots + weight × reduce slots), a reduce slot weight times
// that. A child's share less the base of a child (the memory a child holds
// outside its Go heap: the binary's resident text and data) is its Go soft
// memory limit (GOMEMLIMIT, through mapreduce.map.memory.mb and
// mapreduce.reduce.memory.mb, which the child applies with
// debug.SetMemoryLimit), and its buffers are sized to that limit: a map's
// sort buffer (mapreduce.task.io.sort.mb) to what its heap can hold, a
// reduce's shuffle and merge buffers (shares of mapreduce.reduce.memory.mb)
// to the limit itself. A map whose combiner runs in the sort buffer's
// combining table, with the table bounded (mapreduce.map.combine.table.percent
// above 0), holds less heap per MiB of sort buffer than a map that keeps
// every record (combineHeapRatio against sortHeapRatio), and gets a larger
// sort buffer from the same limit.
//
// A job's own settings win where they fit. Where one does not fit:
//   - mapreduce.map.memory.mb and mapreduce.reduce.memory.mb above the
//     limit are lowered to it, and the tracker logs the clamp: they change
//     only how much memory the child uses and how often it writes to disk;
//   - mapreduce.task.io.sort.mb set by the job (a value other than the
//     default) above what the map's heap holds fails the attempt with an
//     error that says what would fit: the sort buffer decides where the
//     map's spills are cut, so lowering a size the job chose would change
//     its spills behind its back (as Hadoop refuses an io.sort.mb larger
//     than the task's heap). The default sort buffer is lowered to fit.
//
// A map's spills are cut by its sort buffer, and every attempt of a map
// must cut the same spills, whatever tracker runs it. So the JobTracker
// pins a map task's sort buffer at its first announced spill and launches
// every later attempt with it (LaunchTask.sort_mb): that sort buffer is
// used as it is, and a map slot whose share does not hold it gets a soft
// memory limit above its share, with a warning (the spills' boundaries
// come before the budget).
const (
	// KeyMemoryMB is the tracker's budget for all its task children.
	KeyMemoryMB = "mapreduce.tasktracker.memory.mb"
	// KeyMemoryReduceWeight is a reduce slot's share of the budget
	// relative to a map slot's.
	KeyMemoryReduceWeight = "mapreduce.tasktracker.memory.reduce.weight"
	// KeyMemoryChildBaseMB is the memory of a task child outside its Go
	// heap, taken off each slot's share before the rest becomes the
	// child's soft memory limit.
	KeyMemoryChildBaseMB = "mapreduce.tasktracker.memory.child.base.mb"
)

// The task keys the budget sets in a child's configuration (declared in
// conf/keys.go).
const (
	keySortMB           = "mapreduce.task.io.sort.mb"
	keyMapMemoryMB      = "mapreduce.map.memory.mb"
	keyReduceMemoryMB   = "mapreduce.reduce.memory.mb"
	keyShuffleBufferPct = "mapreduce.reduce.shuffle.input.buffer.percent"
	keyReduceRetainPct  = "mapreduce.reduce.input.buffer.percent"
	keyTablePct         = "mapreduce.map.combine.table.percent"
)

// The map's heap model: a map child's Go heap is at most about
// sortHeapRatio times its sort buffer (the ring, the record indexes and the
// sort scratch: 1.27 for TeraSort's 100-byte records, docs/performance.md)
// plus mapFixedHeapMB (input buffers, the runtime, the umbilical). The
// ratio leaves the garbage collector some room under the soft limit.
const (
	sortHeapRatio  = 1.5
	mapFixedHeapMB = 8
	// combineHeapRatio is sortHeapRatio for a map whose combiner runs in
	// the combining table with the table bounded at 0.25 of the buffer
	// (the default of mapreduce.map.combine.table.percent): the table, the
	// combined output of the batch being cut and of the one being written,
	// and their record indexes and sort scratch. Measured with a soft limit
	// of 40 MiB (a map slot's under a budget of 256 MiB over the default
	// slots) on WordCount's text and on WordCount over distinct numbers
	// (docs/performance.md, "A budget that knows a combining map"): sort
	// buffers of 21 and 32 MiB kept every map within its 64 MiB share
	// (56-64 MiB RSS, 25-34 collections), 42 MiB did not (63-72 MiB, 92-143
	// collections).
	combineHeapRatio = 1.0
	// The reduce's heap model: besides its shuffle buffer, a reduce's heap
	// holds about reduceFixedHeapMB (fetches' and merges' buffers, the output
	// writer, the runtime), and the buffer is at most 1/reduceHeapRatio of what
	// is left, so that the garbage collector has room under the soft limit:
	// with the shuffle buffer at Hadoop's 70% of a 40 MiB limit, a WordCount
	// reduce ran 600 collections and spent 5 times the CPU of one with room
	// (docs/performance.md).
	reduceFixedHeapMB = 12
	reduceHeapRatio   = 1.5
	// minChildHeapMB is the smallest soft memory limit the budget gives a
	// child: less, and a child spends its time collecting garbage.
	minChildHeapMB = 16
)

func init() {
	conf.Register(
		conf.Key{Name: KeyMemoryMB, Type: conf.Int, Default: "0", Unit: "MiB",
			Description: "memory budget for all the task children of a TaskTracker, divided among its map and reduce slots; each child's share sets its soft memory limit (GOMEMLIMIT) and sizes its sort buffer or shuffle buffers (docs/performance.md); 0: no budget, the job's settings alone",
			Check:       func(v any) error { return atLeastInt(v.(int), 0) }, Valid: "an integer >= 0"},
		conf.Key{Name: KeyMemoryReduceWeight, Type: conf.Float, Default: "1.0",
			Description: "a reduce slot's share of mapreduce.tasktracker.memory.mb relative to a map slot's (2: a reduce slot gets twice a map slot's share)",
			Check: func(v any) error {
				if f := v.(float64); !(f > 0 && f <= 100) {
					return fmt.Errorf("want a number above 0 and at most 100")
				}
				return nil
			}, Valid: "a number above 0 and at most 100"},
		conf.Key{Name: KeyMemoryChildBaseMB, Type: conf.Int, Default: "24", Unit: "MiB",
			Description: "memory of a task child outside its Go heap (the binary's resident text and data, counted in its RSS), taken off each slot's share of mapreduce.tasktracker.memory.mb before the rest becomes the child's soft memory limit",
			Check:       func(v any) error { return atLeastInt(v.(int), 0) }, Valid: "an integer >= 0"},
	)
}

func atLeastInt(n, lo int) error {
	if n < lo {
		return fmt.Errorf("want an integer >= %d", lo)
	}
	return nil
}

// memoryBudget is a tracker's budget for its task children (MiB).
type memoryBudget struct {
	totalMB                int // 0: no budget
	mapSlots, reduceSlots  int
	reduceWeight           float64
	childBaseMB            int
	mapShareMB, redShareMB int // per slot, set by newMemoryBudget
}

// newMemoryBudget divides a budget among the slots, and refuses one that
// leaves a slot's child less than minChildHeapMB of soft limit.
func newMemoryBudget(totalMB, mapSlots, reduceSlots int, reduceWeight float64, childBaseMB int) (memoryBudget, error) {
	b := memoryBudget{totalMB: totalMB, mapSlots: mapSlots, reduceSlots: reduceSlots,
		reduceWeight: reduceWeight, childBaseMB: childBaseMB}
	if totalMB <= 0 || mapSlots+reduceSlots == 0 {
		b.totalMB = 0
		return b, nil
	}
	unit := float64(totalMB) / (float64(mapSlots) + reduceWeight*float64(reduceSlots))
	if mapSlots > 0 {
		b.mapShareMB = int(unit)
	}
	if reduceSlots > 0 {
		b.redShareMB = int(reduceWeight * unit)
	}
	for _, s := range []struct {
		kind   string
		slots  int
		share  int
		weight string
	}{{"map", mapSlots, b.mapShareMB, ""}, {"reduce", reduceSlots, b.redShareMB, fmt.Sprintf(" (weight %g)", reduceWeight)}} {
		if s.slots > 0 && s.share-childBaseMB < minChildHeapMB {
			return b, fmt.Errorf("%s=%d divided among %d map and %d reduce slots gives a %s slot%s %d MiB, less than the %d MiB a child needs (%s=%d and %d MiB of heap): raise the budget or lower the slots",
				KeyMemoryMB, totalMB, mapSlots, reduceSlots, s.kind, s.weight, s.share, childBaseMB+minChildHeapMB,
				KeyMemoryChildBaseMB, childBaseMB, minChildHeapMB)
		}
	}
	return b, nil
}

// budgetFromConf reads a tracker's budget from its configuration.
func budgetFromConf(cfg *conf.Config, mapSlots, reduceSlots int) (memoryBudget, error) {
	return newMemoryBudget(cfg.Int(KeyMemoryMB), mapSlots, reduceSlots,
		cfg.Float(KeyMemoryReduceWeight), cfg.Int(KeyMemoryChildBaseMB))
}

// on says whether the tracker has a budget.
func (b memoryBudget) on() bool { return b.totalMB > 0 }

// childMemory is what the budget makes of one child's memory settings.
type childMemory struct {
	shareMB int // the slot's share of the budget
	limitMB int // the child's soft memory limit (GOMEMLIMIT)
	// sortMB is a map's sort buffer; reduceMB a reduce's memory (its
	// shuffle and merge buffers are shares of it).
	sortMB, reduceMB int
	// bufferPct is the largest share of a reduce's memory its shuffle
	// buffer and its retained segments may have.
	bufferPct float64
	// heapRatio is a map's heap model: MiB of heap per MiB of sort buffer.
	heapRatio float64
	// set are the settings written into the child's configuration;
	// clamps say which of the job's own settings were lowered, and why.
	set    map[string]string
	clamps []string
}

// child sizes the settings of a map (isMap) or reduce child from its slot's
// share and the job's configuration jobConf (the launch's: the keys that
// differ from the defaults, or all of them). pinnedSortMB, if above 0, is
// the map task's pinned sort buffer (LaunchTask.sort_mb), used whatever the
// share holds. tableCombiner says that the job's map combines in the sort
// buffer's combining table (a combiner and the default key order): with the
// table bounded, its heap model is combineHeapRatio rather than
// sortHeapRatio. It fails only for a job's own sort buffer that the map's
// share cannot hold, when none is pinned.
func (b memoryBudget) child(isMap bool, jobConf map[string]string, pinnedSortMB int, tableCombiner bool) (childMemory, error) {
	jcfg, err := conf.FromMap(jobConf)
	if err != nil {
		return childMemory{}, fmt.Errorf("job configuration: %w", err)
	}
	def := conf.Default()
	explicit := func(key string) bool {
		_, ok := jobConf[key]
		return ok && jcfg.Int(key) != def.Int(key)
	}
	explicitFloat := func(key string) bool {
		_, ok := jobConf[key]
		return ok && jcfg.Float(key) != def.Float(key)
	}
	c := childMemory{shareMB: b.redShareMB, set: map[string]string{}}
	if isMap {
		c.shareMB = b.mapShareMB
	}
	limit := c.shareMB - b.childBaseMB
	c.limitMB = limit
	slot := fmt.Sprintf("%s=%d over %d map and %d reduce slots, %s=%d",
		KeyMemoryMB, b.totalMB, b.mapSlots, b.reduceSlots, KeyMemoryChildBaseMB, b.childBaseMB)
	if !isMap {
		c.reduceMB = limit
		if explicit(keyReduceMemoryMB) {
			if own := jcfg.Int(keyReduceMemoryMB); own <= limit {
				c.reduceMB, c.limitMB = own, own
			} else {
				c.clamps = append(c.clamps, fmt.Sprintf("%s=%d lowered to %d MiB, the reduce slot's share (%s)", keyReduceMemoryMB, own, limit, slot))
			}
		}
		c.set[keyReduceMemoryMB] = strconv.Itoa(c.reduceMB)
		// The shuffle buffer and what stays in memory through the reduce
		// are shares of the reduce's memory, which is also its soft
		// limit: at most the share the reduce's heap model leaves them.
		c.bufferPct = reduceBufferPercent(c.reduceMB)
		for _, key := range []string{keyShuffleBufferPct, keyReduceRetainPct} {
			own := jcfg.Float(key)
			if own <= c.bufferPct {
				continue
			}
			if explicitFloat(key) {
				c.clamps = append(c.clamps, fmt.Sprintf("%s=%g lowered to %g: %d MiB of the reduce's %d MiB of memory, what leaves its garbage collector room under the soft limit (%s)",
					key, own, c.bufferPct, int(c.bufferPct*float64(c.reduceMB)), c.reduceMB, slot))
			}
			c.set[key] = strconv.FormatFloat(c.bufferPct, 'f', -1, 64)
		}
		return c, nil
	}
	if explicit(keyMapMemoryMB) {
		if own := jcfg.Int(keyMapMemoryMB); own <= limit {
			c.limitMB = own
		} else {
			c.clamps = append(c.clamps, fmt.Sprintf("%s=%d lowered to %d MiB, the map slot's share (%s)", keyMapMemoryMB, own, limit, slot))
		}
	}
	ratio := sortHeapRatio
	if tableCombiner && jcfg.Float(keyTablePct) > 0 &&
		spill.CombinesInTable(true, true, int64(sortFitMB(c.limitMB, combineHeapRatio))<<20) {
		ratio = combineHeapRatio
	}
	c.heapRatio = ratio
	fit := sortFitMB(c.limitMB, ratio)
	c.sortMB = jcfg.Int(keySortMB)
	if pinnedSortMB > 0 {
		// The task's spills were cut with this sort buffer: use it, and
		// give the child the limit it needs if the share is short of it.
		c.sortMB = pinnedSortMB
		if pinnedSortMB > fit {
			need := sortLimitMB(pinnedSortMB, ratio)
			c.clamps = append(c.clamps, fmt.Sprintf("%s pinned at %d MiB by the task's first announced spill: the map's soft memory limit raised from %d to %d MiB, above the map slot's share (%s), so that the attempt cuts the same spills",
				keySortMB, pinnedSortMB, c.limitMB, need, slot))
			c.limitMB = need
		}
		c.set[keyMapMemoryMB] = strconv.Itoa(c.limitMB)
		c.set[keySortMB] = strconv.Itoa(c.sortMB)
		return c, nil
	}
	switch {
	case explicit(keySortMB) && c.sortMB > fit:
		return c, fmt.Errorf("%s=%d does not fit this tracker's map slot: its soft memory limit of %d MiB (%s) holds a sort buffer of at most %d MiB (%g MiB of heap per MiB of buffer and %d MiB more); lower the job's %s or raise the tracker's budget",
			keySortMB, c.sortMB, c.limitMB, slot, fit, ratio, mapFixedHeapMB, keySortMB)
	case fit < 1:
		return c, fmt.Errorf("a map's soft memory limit of %d MiB (%s) leaves no room for a sort buffer (%d MiB of it are the map's fixed heap)", c.limitMB, slot, mapFixedHeapMB)
	case c.sortMB > fit:
		c.sortMB = fit
	}
	c.set[keyMapMemoryMB] = strconv.Itoa(c.limitMB)
	c.set[keySortMB] = strconv.Itoa(c.sortMB)
	return c, nil
}

// reduceBufferPercent is the largest share of a reduce's memory of
// reduceMB (its soft limit) that its shuffle buffer
// (mapreduce.reduce.shuffle.input.buffer.percent) and its segments kept
// through the reduce (mapreduce.reduce.input.buffer.percent) may take:
// (reduceMB - reduceFixedHeapMB) / reduceHeapRatio, rounded down to
// 1/1000, at least 1/1000.
func reduceBufferPercent(reduceMB int) float64 {
	pct := float64(reduceMB-reduceFixedHeapMB) / reduceHeapRatio / float64(reduceMB)
	return max(math.Floor(pct*1000)/1000, 0.001)
}

// sortFitMB is the largest sort buffer a map child with a soft memory
// limit of limitMB holds, at ratio MiB of heap per MiB of buffer
// (sortHeapRatio or combineHeapRatio) and mapFixedHeapMB more.
func sortFitMB(limitMB int, ratio float64) int {
	return int(float64(limitMB-mapFixedHeapMB) / ratio)
}

// sortLimitMB is the soft memory limit a map child needs for a sort buffer
// of sortMB at ratio (the inverse of sortFitMB).
func sortLimitMB(sortMB int, ratio float64) int {
	return int(math.Ceil(float64(sortMB)*ratio)) + mapFixedHeapMB
}

// budgetChild writes the memory settings of a launch's child into its
// configuration when the tracker has a budget, and a map task's pinned sort
// buffer (LaunchTask.sort_mb) with or without one; it returns the slot's
// share (0: no budget) and the notes of the job's settings it changed
// (logged by logClamps). Its error (a job's sort buffer that does not fit)
// fails the attempt.
func (tt *TaskTracker) budgetChild(l *mrpb.LaunchTask) (shareMB int, clamps []string, err error) {
	pinned := 0
	if l.Type == "m" && l.SortMb > 0 {
		pinned = int(l.SortMb)
	}
	if !tt.memory.on() {
		if pinned > 0 {
			m := make(map[string]string, len(l.Conf)+1)
			maps.Copy(m, l.Conf)
			m[keySortMB] = strconv.Itoa(pinned)
			l.Conf = m
		}
		return 0, nil, nil
	}
	c, err := tt.memory.child(l.Type == "m", l.Conf, pinned, l.Type == "m" && tableCombiner(l))
	if err != nil {
		return 0, nil, fmt.Errorf("memory budget: %w", err)
	}
	m := make(map[string]string, len(l.Conf)+len(c.set))
	maps.Copy(m, l.Conf)
	maps.Copy(m, c.set)
	l.Conf = m
	tt.log.Debug("memory budget", "attempt", l.AttemptId, "share_mib", c.shareMB, "memory_limit_mib", c.limitMB,
		"sort_mb", c.sortMB, "heap_per_sort_mb", c.heapRatio, "reduce_memory_mb", c.reduceMB, "buffer_percent", c.bufferPct)
	return c.shareMB, c.clamps, nil
}

// tableCombiner tells whether the launch's map combines in the sort
// buffer's combining table: its job's definition, looked up in this binary's
// registry as the child looks it up in its own, has a combiner and the
// default key order (spill.CombinesInTable). A definition the tracker does
// not know counts as none, so that the map gets the plain heap model.
func tableCombiner(l *mrpb.LaunchTask) bool {
	var spec mr.JobSpec
	if json.Unmarshal(l.SpecJson, &spec) != nil {
		return false
	}
	def, err := mr.LookupJob(spec.Def)
	if err != nil {
		return false
	}
	return spill.CombinesInTable(def.Combiner != nil, def.Compare == nil, 1)
}

// logClamps logs, as warnings, the job's settings the budget lowered for an
// attempt of the registered job jobID, each note once per job.
func (tt *TaskTracker) logClamps(jobID, attemptID string, clamps []string) {
	if len(clamps) == 0 {
		return
	}
	tt.mu.Lock()
	var fresh []string
	if j := tt.jobs[jobID]; j != nil {
		if j.clampsLogged == nil {
			j.clampsLogged = map[string]bool{}
		}
		for _, note := range clamps {
			if !j.clampsLogged[note] {
				j.clampsLogged[note] = true
				fresh = append(fresh, note)
			}
		}
	}
	tt.mu.Unlock()
	for _, note := range fresh {
		tt.log.Warn("memory budget: job setting changed (logged once per job)", "job", jobID, "attempt", attemptID, "clamp", note)
	}
}
