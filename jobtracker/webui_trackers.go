package jobtracker

// The trackers a page at a time: /trackers and /api/cluster's tracker list
// (webui_paging.go for the parameters). The rows are the published ones
// (publish.go), read without the JobTracker's lock. The live trackers by
// name, the default, cost O(page): the page's names are cut from the
// sorted index of names (rebuilt only after a tracker joined or left) and
// their rows looked up. Another state or sort walks the rows of that state
// (no lock) and sorts the matching ones by reference: at 10,000 trackers a
// page takes about 0.4 ms with a state, 4.7 ms with a sort, 1 ms by default
// (BenchmarkPagesAtScale). The counts by state are kept as rows change.

import (
	"cmp"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
)

// TrackerCounts counts the TaskTrackers by state: Live, of which
// Blacklisted (no task of any job) and Graylisted (faults within the
// blacklisting window, not blacklisted: Hadoop 1's graylist, the trackers
// on their way to the blacklist or kept off it by its cap), and Lost
// (declared lost or gone and not back, the latest maxLostTrackers).
type TrackerCounts struct {
	Live        int `json:"live"`
	Blacklisted int `json:"blacklisted"`
	Graylisted  int `json:"graylisted"`
	Lost        int `json:"lost"`
}

// ListPage is the page of a list a JSON body holds, present when the
// query asked for one (page or size): the page (from 1) of pages, the
// page size, the rows that pass the filter (matching) of all (total).
type ListPage struct {
	Page     int `json:"page"`
	Pages    int `json:"pages"`
	Size     int `json:"size"`
	Matching int `json:"matching"`
	Total    int `json:"total"`
}

// listPage is p as a JSON body shows it.
func (p pageInfo) listPage() *ListPage {
	return &ListPage{Page: p.Page, Pages: p.Pages, Size: p.Size, Matching: p.Matching, Total: p.Total}
}

// trackerStateChoices are the values of /trackers?state=, the default
// first.
var trackerStateChoices = []string{"live", "blacklisted", "graylisted", "lost"}

// trackerSortKeys are the values of /trackers?sort=, the default first;
// trackerSortDesc are those whose default order is descending.
var (
	trackerSortKeys = []string{"name", "host", "heartbeat", "running", "faults"}
	trackerSortDesc = map[string]bool{"running": true, "faults": true}
)

// parseTrackerQuery reads a trackers list's state, sort, order, page and
// size.
func parseTrackerQuery(q url.Values) (listQuery, error) {
	return parseListQuery(q, trackerStateChoices, trackerSortKeys, trackerSortDesc)
}

// trackerListRow is one tracker of a list: its row, its faults in the
// blacklisting window, and when it was lost (zero while live).
type trackerListRow struct {
	TrackerInfo
	Faults int
	LostAt time.Time
}

// trackerList is a page of trackers.
type trackerList struct {
	Query  listQuery
	Rows   []trackerListRow
	Counts TrackerCounts
	pageInfo
}

// listTrackers picks the query's page of trackers (all of them when
// whole, for the JSON list not asked for a page); path is the page the
// links point at.
func (jt *JobTracker) listTrackers(tq listQuery, whole bool, path string) trackerList {
	now := jt.now()
	tot := jt.trackerTotalsNow()
	l := trackerList{Query: tq, Counts: tot.counts}
	p := tq.paging
	if whole {
		p = paging{Page: 1, Size: math.MaxInt}
	}
	link := pageLink(path, "", tq.base(), tq.paging, defaultPageSize)
	total := tot.counts.Live + tot.counts.Lost
	var rows []trackerListRow
	if tq.State == "live" && tq.Sort.Key == "name" {
		names := jt.trackerNamesNow()
		if tq.Sort.Desc {
			names = slices.Clone(names)
			slices.Reverse(names)
		}
		var page []string
		page, l.pageInfo = pageOf(names, total, p, link)
		for _, name := range page {
			if r := jt.trackerRowNow(name); r != nil {
				rows = append(rows, listRow(r, time.Time{}, now))
			}
		}
	} else {
		// The matching rows by reference, sorted; the page's copied.
		var match []listedRow
		if tq.State == "lost" {
			jt.published.lost.Range(func(_, v any) bool {
				lr := v.(*lostRow)
				match = append(match, listedRow{lr.row, lr.at})
				return true
			})
		} else {
			jt.published.rows.Range(func(_, v any) bool {
				r := v.(*trackerRow)
				if trackerInState(r, tq.State) {
					match = append(match, listedRow{row: r})
				}
				return true
			})
		}
		sortTrackerRows(match, tq.Sort)
		var page []listedRow
		page, l.pageInfo = pageOf(match, total, p, link)
		for _, m := range page {
			rows = append(rows, listRow(m.row, m.lostAt, now))
		}
	}
	if rows == nil {
		rows = []trackerListRow{}
	}
	l.Rows = rows
	return l
}

// trackerInState tells whether a live tracker's row is in a state of
// trackerStateChoices.
func trackerInState(r *trackerRow, state string) bool {
	switch state {
	case "blacklisted":
		return r.info.Blacklisted
	case "graylisted":
		return !r.info.Blacklisted && r.faults > 0
	}
	return true
}

// listRow is a row of a list at time now.
func listRow(r *trackerRow, lostAt, now time.Time) trackerListRow {
	lr := trackerListRow{TrackerInfo: r.info, Faults: r.faults, LostAt: utc(lostAt)}
	lr.LastHeartbeatAgeSeconds = math.Round(now.Sub(r.lastSeen).Seconds()*1e3) / 1e3
	if !lostAt.IsZero() {
		// Its attempts ended with it.
		lr.RunningMaps, lr.RunningReduces, lr.RunningAttempts = 0, 0, []string{}
	}
	return lr
}

// listedRow is a row a list sorts: a live tracker's, or a lost one's
// with when it was lost.
type listedRow struct {
	row    *trackerRow
	lostAt time.Time
}

// running is the row's live attempts (none once lost, as listRow shows
// it).
func (x listedRow) running() int {
	if !x.lostAt.IsZero() {
		return 0
	}
	return x.row.info.RunningMaps + x.row.info.RunningReduces
}

// sortTrackerRows sorts rows by s, ties by name.
func sortTrackerRows(rows []listedRow, s sorting) {
	slices.SortFunc(rows, func(x, y listedRow) int {
		a, b := &x.row.info, &y.row.info
		c := 0
		switch s.Key {
		case "host":
			c = strings.Compare(a.Host, b.Host)
		case "heartbeat":
			c = x.row.lastSeen.Compare(y.row.lastSeen)
		case "running":
			c = cmp.Compare(x.running(), y.running())
		case "faults":
			c = cmp.Compare(x.row.faults, y.row.faults)
		}
		if c == 0 {
			c = strings.Compare(a.Name, b.Name)
		}
		if s.Desc {
			return -c
		}
		return c
	})
}
