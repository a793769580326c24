package jobtracker

// Paging, filtering and sorting of the pages' lists: a job's tasks (the
// job page, webui_tasklist.go), the trackers (/trackers, /api/cluster),
// the jobs (/, /jobs, /api/jobs) and the job history (/history). A list
// shows one page of at most `size` rows (a default per list, at most
// maxPageSize), with the totals, and links to the first, previous, next
// and last pages; a page past the last shows the last. The query's
// parameters are page (from 1), size, state (the list's filter), sort
// (the list's keys) and order (asc or desc); a bad value is a 400 naming
// the parameter and what it accepts.

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// defaultPageSize is the rows a list of trackers, jobs or history shows
// when the query names no size.
const defaultPageSize = 50

// maxPageSize is the most rows a page may ask for (?size=).
const maxPageSize = 1000

// pageInfo is where a page is in its list: Matching rows pass the
// filter, of Total; the page shows the 1-based positions From to To (0
// and 0 when none), on page Page of Pages, Size a page; First, Prev, Next
// and Last are links ("" where there is none).
type pageInfo struct {
	Matching, Total             int
	From, To, Page, Pages, Size int
	First, Prev, Next, Last     string
}

// paging is a query's page and size.
type paging struct {
	Page, Size int
	// Asked is set when the query named page or size (the JSON lists
	// are whole unless asked).
	Asked bool
	// NoRefresh keeps ?refresh=0 (meta) in the list's links.
	NoRefresh bool
}

// parsePaging reads page and size from a query; size defaults to
// defSize.
func parsePaging(q url.Values, defSize int) (paging, error) {
	p := paging{Page: 1, Size: defSize, NoRefresh: q.Get("refresh") == "0"}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, fmt.Errorf("bad page %q: want a page number from 1", v)
		}
		p.Page, p.Asked = n, true
	}
	if v := q.Get("size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return p, fmt.Errorf("bad size %q: want a page size from 1 to %d", v, maxPageSize)
		}
		p.Size, p.Asked = n, true
	}
	return p, nil
}

// pageOf picks page p of the matching rows (of total in all); link makes
// the address of a page.
func pageOf[T any](match []T, total int, p paging, link func(page int) string) ([]T, pageInfo) {
	size := max(p.Size, 1)
	pi := pageInfo{Matching: len(match), Total: total, Size: size}
	pi.Pages = len(match) / size
	if len(match)%size != 0 {
		pi.Pages++
	}
	pi.Pages = max(1, pi.Pages)
	pi.Page = min(max(p.Page, 1), pi.Pages)
	lo := (pi.Page - 1) * size
	hi := min(lo+size, len(match))
	if hi > lo {
		pi.From, pi.To = lo+1, hi
	}
	if link != nil {
		if pi.Page > 1 {
			pi.First, pi.Prev = link(1), link(pi.Page-1)
		}
		if pi.Page < pi.Pages {
			pi.Next, pi.Last = link(pi.Page+1), link(pi.Pages)
		}
	}
	return match[lo:hi], pi
}

// pageLink makes the links of a list at path: base's parameters, then
// page (and size when it is not the list's default).
func pageLink(path, fragment string, base url.Values, p paging, defSize int) func(page int) string {
	return func(page int) string {
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		q.Set("page", strconv.Itoa(page))
		if p.Size != defSize {
			q.Set("size", strconv.Itoa(p.Size))
		}
		return path + "?" + q.Encode() + fragment
	}
}

// sorting is a query's sort key and direction.
type sorting struct {
	Key  string
	Desc bool
}

// parseSorting reads sort and order from a query: sort one of keys
// (keys[0] when absent), order asc or desc (desc[key] when absent).
func parseSorting(q url.Values, keys []string, desc map[string]bool) (sorting, error) {
	s := sorting{Key: keys[0]}
	if v := strings.ToLower(q.Get("sort")); v != "" {
		found := false
		for _, k := range keys {
			found = found || k == v
		}
		if !found {
			return s, fmt.Errorf("unknown sort %q: want %s", q.Get("sort"), orList(keys))
		}
		s.Key = v
	}
	s.Desc = desc[s.Key]
	switch v := strings.ToLower(q.Get("order")); v {
	case "":
	case "asc":
		s.Desc = false
	case "desc":
		s.Desc = true
	default:
		return s, fmt.Errorf("unknown order %q: want asc or desc", q.Get("order"))
	}
	return s, nil
}

// parseChoice reads a parameter that takes one of choices (choices[0]
// when absent), in any case.
func parseChoice(q url.Values, name string, choices []string) (string, error) {
	v := strings.ToLower(q.Get(name))
	if v == "" {
		return choices[0], nil
	}
	for _, c := range choices {
		if c == v {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown %s %q: want %s", name, q.Get(name), orList(choices))
}

// orList is "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// listQuery is a query of a list of trackers or jobs: a state, a sort and
// a page, and the list's choices (for the links).
type listQuery struct {
	State string
	Sort  sorting
	paging
	// states and keys are the list's states and sort keys, the defaults
	// first; desc the keys whose default order is descending.
	states, keys []string
	desc         map[string]bool
}

// parseListQuery reads state, sort, order, page and size for a list of
// those states and sort keys.
func parseListQuery(q url.Values, states, keys []string, desc map[string]bool) (listQuery, error) {
	lq := listQuery{states: states, keys: keys, desc: desc}
	var err error
	if lq.State, err = parseChoice(q, "state", states); err != nil {
		return lq, err
	}
	if lq.Sort, err = parseSorting(q, keys, desc); err != nil {
		return lq, err
	}
	lq.paging, err = parsePaging(q, defaultPageSize)
	return lq, err
}

// base is the query's parameters other than the page's, for the links:
// those that are not the defaults.
func (lq listQuery) base() url.Values {
	q := url.Values{}
	if len(lq.states) == 0 || len(lq.keys) == 0 {
		return q // a list with no choices (a test's whole list)
	}
	if lq.State != lq.states[0] {
		q.Set("state", lq.State)
	}
	if lq.Sort.Key != lq.keys[0] {
		q.Set("sort", lq.Sort.Key)
	}
	if lq.Sort.Desc != lq.desc[lq.Sort.Key] {
		q.Set("order", map[bool]string{false: "asc", true: "desc"}[lq.Sort.Desc])
	}
	if lq.NoRefresh {
		q.Set("refresh", "0")
	}
	return q
}

// choiceLink is a link to a list with one choice changed (a state, a
// sort), and whether it is the current one.
type choiceLink struct {
	Name, Link string
	Count      int
	Current    bool
}

// stateLinks are the links to the list at path in each of its states,
// with count(state) rows, first page.
func (lq listQuery) stateLinks(path string, count func(state string) int) []choiceLink {
	var out []choiceLink
	for _, st := range lq.states {
		q := lq
		q.State, q.Page = st, 1
		out = append(out, choiceLink{Name: st, Link: path + "?" + q.base().Encode(), Count: count(st), Current: st == lq.State})
	}
	return out
}

// sortLinks are the links to the list at path in each of its sorts: a
// key in its default order, the current one reversed (marked ↑ or ↓).
func (lq listQuery) sortLinks(path string) []choiceLink {
	var out []choiceLink
	for _, k := range lq.keys {
		q := lq
		q.Sort = sorting{Key: k, Desc: lq.desc[k]}
		name := k
		if k == lq.Sort.Key {
			q.Sort.Desc = !lq.Sort.Desc
			name += map[bool]string{false: " ↑", true: " ↓"}[lq.Sort.Desc]
		}
		out = append(out, choiceLink{Name: name, Link: path + "?" + q.base().Encode(), Current: k == lq.Sort.Key})
	}
	return out
}
