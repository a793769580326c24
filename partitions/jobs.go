package partitions

// attemptKey names one running task attempt.
type attemptKey struct {
	job     string
	typ     TaskType
	task    int
	attempt int
}

func keyOf(ev Event) attemptKey {
	return attemptKey{job: ev.JobID, typ: ev.Type, task: ev.Task, attempt: ev.Attempt}
}

// work is a job's counts during one Offer, updated as slots are assigned.
type work struct {
	view     *JobView
	pendMaps int
	pendReds int
	runMaps  int
	runReds  int
	// local is the job's pending maps with input on the offer's host, less
	// the local maps this offer assigned; looked up on the first map
	// assignment (localKnown), since looking it up in every job's map of
	// hosts was most of an Offer's time with 1,000 jobs.
	local      int
	localKnown bool
	ready      bool
}

func (w *work) mapEligible() bool    { return w.pendMaps > 0 }
func (w *work) reduceEligible() bool { return w.ready && w.pendReds > 0 }

// offerBuf holds the per-job working counts of one Offer. Entries are
// made on first use, so that an Offer that looks at a few jobs costs little
// however many jobs run; the ID-to-index map is kept across Offers and
// rebuilt only when the view's job list changed.
type offerBuf struct {
	view             *ClusterView
	host             string
	reducesAfterMaps bool
	pos              map[string]int
	w                []work
	stamp            []uint32
	gen              uint32
	rebuilt          bool
}

// load starts an Offer on the view. With reducesAfterMaps a job's reduces
// are eligible only once all its maps finished.
func (b *offerBuf) load(view *ClusterView, host string, reducesAfterMaps bool) {
	b.view, b.host, b.reducesAfterMaps = view, host, reducesAfterMaps
	b.gen++
	b.rebuilt = false
	n := len(view.Jobs)
	if cap(b.w) < n {
		b.w = make([]work, n)
		b.stamp = make([]uint32, n)
	}
	b.w, b.stamp = b.w[:n], b.stamp[:n]
	if b.pos == nil {
		b.pos = make(map[string]int, n)
	}
}

func (b *offerBuf) rebuild() {
	clear(b.pos)
	for i := range b.view.Jobs {
		b.pos[b.view.Jobs[i].ID] = i
	}
	b.rebuilt = true
}

// get returns the working counts of a job, nil if the view lacks it.
func (b *offerBuf) get(id string) *work {
	i, ok := b.pos[id]
	if !ok || i >= len(b.view.Jobs) || b.view.Jobs[i].ID != id {
		if b.rebuilt {
			return nil
		}
		b.rebuild()
		if i, ok = b.pos[id]; !ok {
			return nil
		}
	}
	return b.at(i)
}

// getHinted is get with a caller-kept guess of the job's view index, which
// it updates; it saves the map lookup when the guess is right.
func (b *offerBuf) getHinted(id string, hint *int) *work {
	if i := *hint; i >= 0 && i < len(b.view.Jobs) && b.view.Jobs[i].ID == id {
		return b.at(i)
	}
	w := b.get(id)
	if w != nil {
		*hint = b.pos[id]
	}
	return w
}

// at returns the working counts of the view's i-th job.
func (b *offerBuf) at(i int) *work {
	if b.stamp[i] == b.gen {
		return &b.w[i]
	}
	j := &b.view.Jobs[i]
	ready := j.ReducesReady
	if b.reducesAfterMaps && j.FinishedMaps < j.Maps {
		ready = false
	}
	b.w[i] = work{
		view:     j,
		pendMaps: j.PendingMaps,
		pendReds: j.PendingReduces,
		runMaps:  j.RunningMaps,
		runReds:  j.RunningReduces,
		ready:    ready,
	}
	b.stamp[i] = b.gen
	return &b.w[i]
}

// takeMap assigns one map slot to the job of w.
func (b *offerBuf) takeMap(w *work, d *Decision, spare bool, queue int) {
	if !w.localKnown {
		w.local, w.localKnown = w.view.LocalPendingMaps[b.host], true
	}
	local := w.local > 0
	if local {
		w.local--
	}
	w.pendMaps--
	w.runMaps++
	d.Assign = append(d.Assign, Assignment{JobID: w.view.ID, Type: Map, Local: local, Spare: spare, Queue: queue})
}

// takeReduce assigns one reduce slot to the job of w.
func (b *offerBuf) takeReduce(w *work, d *Decision, spare bool, queue int) {
	w.pendReds--
	w.runReds++
	d.Assign = append(d.Assign, Assignment{JobID: w.view.ID, Type: Reduce, Spare: spare, Queue: queue})
}

// take assigns one slot of type t.
func (b *offerBuf) take(t TaskType, w *work, d *Decision, spare bool, queue int) {
	if t == Map {
		b.takeMap(w, d, spare, queue)
	} else {
		b.takeReduce(w, d, spare, queue)
	}
}

func (w *work) eligible(t TaskType) bool {
	if t == Map {
		return w.mapEligible()
	}
	return w.reduceEligible()
}

func (w *work) running(t TaskType) int {
	if t == Map {
		return w.runMaps
	}
	return w.runReds
}

func free(offer SlotOffer, t TaskType) int {
	if t == Map {
		return offer.FreeMaps
	}
	return offer.FreeReduces
}

func slots(view *ClusterView, t TaskType) int {
	if t == Map {
		return view.MapSlots
	}
	return view.ReduceSlots
}
