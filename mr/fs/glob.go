package fs

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// HasMeta tells whether p has glob metacharacters (*, ? or [), as
// Hadoop's input paths may: /in/*.txt, hdfs://nn:8020/logs/2026-*/part-*.
func HasMeta(p string) bool { return strings.ContainsAny(p, "*?[") }

// Glob returns the paths that match pattern, a plain path or a URI whose
// path elements may hold path.Match patterns (*, ?, [...], \ escapes; no
// element matches across "/"), sorted, in the form of the pattern (same
// scheme and authority). It lists directories through the filesystem
// that serves the pattern, so it expands local and HDFS paths alike. A
// pattern without metacharacters is returned as it is, whether or not it
// exists; a pattern that matches nothing gives no paths and no error. A
// malformed pattern is an error naming it.
func Glob(pattern string) ([]string, error) {
	if !HasMeta(pattern) {
		return []string{pattern}, nil
	}
	base, elems, err := splitPattern(pattern)
	if err != nil {
		return nil, err
	}
	fsys, err := Resolve(pattern)
	if err != nil {
		return nil, fmt.Errorf("input pattern %s: %w", pattern, err)
	}
	return globIn(fsys, base, elems), nil
}

// splitPattern splits a pattern into the directory above its first
// element with metacharacters, in the pattern's form, and the elements
// from there on, each checked.
func splitPattern(pattern string) (base string, elems []string, err error) {
	i := strings.IndexAny(pattern, "*?[")
	slash := strings.LastIndexByte(pattern[:i], '/')
	base, rest := ".", pattern
	switch {
	case slash == 0:
		base, rest = "/", pattern[1:]
	case slash > 0:
		base, rest = pattern[:slash], pattern[slash+1:]
		if _, after, ok := strings.Cut(base, "://"); ok && !strings.Contains(after, "/") {
			// file:///x* or hdfs://nn:8020/x*: keep the root's slash.
			base += "/"
		}
	}
	elems = strings.Split(strings.Trim(rest, "/"), "/")
	for _, e := range elems {
		if _, err := path.Match(e, ""); err != nil {
			return "", nil, fmt.Errorf("input pattern %s: bad element %q: %w", pattern, e, err)
		}
	}
	return base, elems, nil
}

// globIn returns the paths under base that match the pattern elements
// elems, listing directories through fsys.
func globIn(fsys FS, base string, elems []string) []string {
	matches := []string{base}
	for n, e := range elems {
		last := n == len(elems)-1
		var next []string
		for _, dir := range matches {
			if !HasMeta(e) {
				p := Join(dir, e)
				if _, err := fsys.Stat(p); err == nil {
					next = append(next, p)
				}
				continue
			}
			entries, err := fsys.List(dir)
			if err != nil {
				continue // not there, or not a directory: no match below it
			}
			for _, ent := range entries {
				if ent.Path == dir || (!last && !ent.IsDir) {
					continue // a file, listed as itself; a file is no directory to descend
				}
				name := ent.Path[strings.LastIndexByte(strings.TrimRight(ent.Path, "/"), '/')+1:]
				if ok, _ := path.Match(e, strings.TrimRight(name, "/")); ok {
					next = append(next, Join(dir, strings.TrimRight(name, "/")))
				}
			}
		}
		matches = next
		if len(matches) == 0 {
			return nil
		}
	}
	sort.Strings(matches)
	return matches
}
