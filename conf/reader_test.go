package conf

import (
	"testing"
	"time"
)

type mapGetter map[string]string

func (m mapGetter) String(k string) string { return m[k] }

func TestReader(t *testing.T) {
	keys := []Key{{Name: "a.n", Default: "3"}, {Name: "a.d", Default: "2s"}, {Name: "a.m", Default: "x"}, {Name: "a.b", Default: "true"}, {Name: "a.f", Default: "0.5"}}
	r := NewReader("test configuration", nil, keys)
	if r.Int("a.n", 0) != 3 || r.Duration("a.d") != 2*time.Second || r.OneOf("a.m", "x", "y") != "x" || !r.Bool("a.b") || r.Float("a.f", 0, 1) != 0.5 || r.Err() != nil {
		t.Fatalf("defaults: %v", r.Err())
	}
	r = NewReader("test configuration", mapGetter{"a.d": " 1.5 "}, keys)
	if d := r.Duration("a.d"); d != 1500*time.Millisecond || r.Err() != nil {
		t.Errorf("plain seconds: %v %v", d, r.Err())
	}
	for _, tc := range []struct {
		get  mapGetter
		read func(*Reader)
		want string
	}{
		{mapGetter{"a.n": "-1"}, func(r *Reader) { r.Int("a.n", 0) }, `test configuration a.n="-1": must be at least 0`},
		{mapGetter{"a.n": "x"}, func(r *Reader) { r.Int("a.n", 0) }, `test configuration a.n="x": want an integer`},
		{mapGetter{"a.d": "-1s"}, func(r *Reader) { r.Duration("a.d") }, `test configuration a.d="-1s": must not be negative`},
		{mapGetter{"a.d": "soon"}, func(r *Reader) { r.Duration("a.d") }, `test configuration a.d="soon": want a duration such as 10s`},
		{mapGetter{"a.m": "z"}, func(r *Reader) { r.OneOf("a.m", "x", "y") }, `test configuration a.m="z": want one of x, y`},
		{mapGetter{"a.b": "maybe"}, func(r *Reader) { r.Bool("a.b") }, `test configuration a.b="maybe": want true or false`},
		{mapGetter{"a.f": "2"}, func(r *Reader) { r.Float("a.f", 0, 1) }, `test configuration a.f="2": must be in [0, 1]`},
		{mapGetter{"a.f": "NaN", "a.n": "x"}, func(r *Reader) { r.Float("a.f", 0, 1); r.Int("a.n", 0) }, `test configuration a.f="NaN": want a number`},
	} {
		r := NewReader("test configuration", tc.get, keys)
		tc.read(r)
		if r.Err() == nil || r.Err().Error() != tc.want {
			t.Errorf("%v: error %v, want %q", tc.get, r.Err(), tc.want)
		}
	}
}
