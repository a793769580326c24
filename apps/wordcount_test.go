package apps

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gomr/mr"
)

func mapWords(t *testing.T, line string) []string {
	t.Helper()
	var c collector
	if err := newWordCountMapper().Map(newTC(nil, 1), nil, []byte(line), &c); err != nil {
		t.Fatal(err)
	}
	var words []string
	for _, p := range c.out {
		if p.v != "\x01" {
			t.Fatalf("word %q emitted with value %x, want 01", p.k, p.v)
		}
		words = append(words, p.k)
	}
	return words
}

func TestWordCountTokenizer(t *testing.T) {
	tests := []struct {
		name, line string
		want       []string
	}{
		{"empty", "", nil},
		{"only delimiters", " \t\n\r\f", nil},
		{"space", "a b", []string{"a", "b"}},
		{"tab", "a\tb", []string{"a", "b"}},
		{"newline", "a\nb", []string{"a", "b"}},
		{"carriage return", "a\rb", []string{"a", "b"}},
		{"form feed", "a\fb", []string{"a", "b"}},
		{"runs and edges", "  a \t\t b  ", []string{"a", "b"}},
		{"vertical tab is not a delimiter", "a\vb", []string{"a\vb"}},
		{"NUL is not a delimiter", "a\x00b", []string{"a\x00b"}},
		{"no-break space is not a delimiter", "a\u00a0b", []string{"a\u00a0b"}},
		{"punctuation stays", "Hello, world!", []string{"Hello,", "world!"}},
		{"utf-8", "héllo wörld 日本", []string{"héllo", "wörld", "日本"}},
		{"repeats", "x x x", []string{"x", "x", "x"}},
		// Lines longer than 8 bytes go through the 8-bytes-at-a-time scan.
		{"long words", "abcdefghijklmnop qrstuvwxyz", []string{"abcdefghijklmnop", "qrstuvwxyz"}},
		{"word of exactly 8", "12345678 12345678\t1234567812345678\n", []string{"12345678", "12345678", "1234567812345678"}},
		{"delimiter at each offset", "a bc def ghij klmno pqrstu vwxyzab cdefghij k", []string{"a", "bc", "def", "ghij", "klmno", "pqrstu", "vwxyzab", "cdefghij", "k"}},
		{"control bytes inside long words", "abcdefg\vhijklmnop ab\x00\x01\x1f\x7fcdefghij\fz", []string{"abcdefg\vhijklmnop", "ab\x00\x01\x1f\x7fcdefghij", "z"}},
		{"bytes above 0x80", "ééééééééé ü\xff\xfe\x80\x81\xa0\xc0\xe0 x", []string{"ééééééééé", "ü\xff\xfe\x80\x81\xa0\xc0\xe0", "x"}},
		{"delimiters after a control byte", "abcdefgh\x1f \x20\x0bqrstuvwx", []string{"abcdefgh\x1f", "\x0bqrstuvwx"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mapWords(t, tt.line); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tokens of %q = %q, want %q", tt.line, got, tt.want)
			}
		})
	}
}

// refTokens splits as StringTokenizer with its default delimiters.
func refTokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(" \t\n\r\f", r) })
}

func FuzzWordCountTokenizer(f *testing.F) {
	for _, s := range []string{"", "a b", " \t\n\r\f\v", "héllo\u00a0wörld", "a\x00b  c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		got := mapWords(t, line)
		want := refTokens(line)
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("tokens of %q = %q, want %q", line, got, want)
		}
	})
}

type nopEmitter struct{ n int }

func (e *nopEmitter) Emit(_, _ []byte) error { e.n++; return nil }

func TestWordCountMapperDoesNotAllocate(t *testing.T) {
	m := newWordCountMapper()
	tc := newTC(nil, 1)
	line := []byte("the quick brown fox\tjumps over the lazy dog")
	var e nopEmitter
	allocs := testing.AllocsPerRun(100, func() {
		if err := m.Map(tc, nil, line, &e); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Map allocates %v times per record, want 0", allocs)
	}
	if e.n != 9*101 {
		t.Errorf("emitted %d words, want %d", e.n, 9*101)
	}
}

func TestWordCountCombinerAndReducer(t *testing.T) {
	tc := newTC(nil, 1)
	pairs := []kv{{"b", "\x01"}, {"a", "\x01"}, {"b", "\x01"}, {"b", "\x96\x01"}} // 0x96 0x01 = 150
	combined := shuffle(t, tc, &uvarintSum{what: "wordcount"}, pairs)
	if want := []kv{{"a", "\x01"}, {"b", "\x98\x01"}}; !reflect.DeepEqual(combined, want) {
		t.Fatalf("combiner output %q, want %q", combined, want)
	}
	reduced := shuffle(t, tc, &decimalSum{what: "wordcount"}, append(combined, kv{"a", "\x02"}))
	if want := []kv{{"a", "3"}, {"b", "152"}}; !reflect.DeepEqual(reduced, want) {
		t.Fatalf("reducer output %q, want %q", reduced, want)
	}
}

func TestSumRejectsBadValues(t *testing.T) {
	for _, v := range []string{"", "\x80", "\x01\x01"} {
		err := (&decimalSum{what: "wordcount"}).Reduce(newTC(nil, 1), []byte("w"), iter(v), &collector{})
		if err == nil || !strings.Contains(err.Error(), `key "w"`) {
			t.Errorf("value %x: error %v, want one naming the key", v, err)
		}
	}
}

func TestWordCountDriver(t *testing.T) {
	jc := &fakeClient{}
	if err := runApp(t, "wordcount", jc, "in1", "in2", "out"); err != nil {
		t.Fatal(err)
	}
	want := &mr.JobSpec{Name: "wordcount", Def: "wordcount", Inputs: []string{"in1", "in2"}, Output: "out", NumReduces: -1}
	if len(jc.specs) != 1 || !reflect.DeepEqual(jc.specs[0], want) {
		t.Fatalf("specs %+v, want [%+v]", jc.specs, want)
	}
	var ue *mr.UsageError
	if err := runApp(t, "wordcount", jc, "only"); !errors.As(err, &ue) {
		t.Fatalf("one argument: error %v, want a usage error", err)
	}
	if _, err := mr.LookupJob("wordcount"); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkWordCountMapper(b *testing.B) {
	m := newWordCountMapper()
	tc := newTC(nil, 1)
	line := []byte("It was the best of times, it was the worst of times, it was the age of wisdom,")
	var e nopEmitter
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		_ = m.Map(tc, nil, line, &e)
	}
}
