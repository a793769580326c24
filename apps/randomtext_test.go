package apps

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"gomr/mr"
)

func TestRandomTextVocabulary(t *testing.T) {
	if len(randomTextWords) != 1000 {
		t.Fatalf("%d words", len(randomTextWords))
	}
	seen := map[string]bool{}
	for _, w := range randomTextWords {
		if seen[w] || len(w) < 4 || strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("bad or repeated word %q", w)
		}
		seen[w] = true
	}
	// The vocabulary is fixed: the same words in the same order every time.
	again := buildVocabulary(1000)
	for i := range again {
		if again[i] != randomTextWords[i] {
			t.Fatalf("word %d: %q, then %q", i, randomTextWords[i], again[i])
		}
	}
}

// runRandomTextApp runs randomtext in process and returns its output.
func runRandomTextApp(t *testing.T, bytes, maps string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	jc := &inProcessClient{t: t, conf: map[string]string{"mapreduce.job.maps": maps}}
	if err := runApp(t, "randomtext", jc, bytes, out); err != nil {
		t.Fatal(err)
	}
	if len(jc.jobs) != 1 || jc.jobs[0].NumReduces != 0 {
		t.Fatalf("jobs %+v", jc.jobs)
	}
	return readParts(t, out)
}

func TestRandomTextOutput(t *testing.T) {
	const total = 200000
	text := runRandomTextApp(t, "200k", "3")
	// Each of the 3 maps writes its share and at most one line more.
	maxLine := 2 + randomTextMaxKeyWords*(1+16) + randomTextMaxValueWords*(1+16)
	if len(text) < total || len(text) > total+3*maxLine {
		t.Errorf("%d bytes, want %d to %d", len(text), total, total+3*maxLine)
	}
	vocab := map[string]bool{}
	for _, w := range randomTextWords {
		vocab[w] = true
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	used := map[string]bool{}
	for i, line := range lines {
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("line %d %q has no tab", i, line)
		}
		kw, vw := strings.Split(k, " "), strings.Split(v, " ")
		if len(kw) < 5 || len(kw) > 10 || len(vw) < 20 || len(vw) > 100 {
			t.Fatalf("line %d: %d key words, %d value words", i, len(kw), len(vw))
		}
		for _, w := range append(kw, vw...) {
			if !vocab[w] {
				t.Fatalf("line %d: word %q not in the vocabulary", i, w)
			}
			used[w] = true
		}
	}
	if len(used) < 900 {
		t.Errorf("only %d of the 1000 words used in %d lines", len(used), len(lines))
	}
	// Deterministic: the same configuration writes the same text; another
	// number of maps writes other text.
	if again := runRandomTextApp(t, "200000", "3"); again != text {
		t.Error("second run wrote different text")
	}
	if other := runRandomTextApp(t, "200000", "2"); other == text {
		t.Error("2 maps wrote the same text as 3")
	}
}

func TestRandomTextSmall(t *testing.T) {
	if text := runRandomTextApp(t, "0", "2"); text != "" {
		t.Errorf("0 bytes: wrote %d bytes", len(text))
	}
	// One byte still makes one line, in one map's file.
	if text := runRandomTextApp(t, "1", "4"); strings.Count(text, "\n") != 1 {
		t.Errorf("1 byte: %q", text)
	}
}

func TestRandomTextUsage(t *testing.T) {
	for _, args := range [][]string{{"10"}, {"x", "out"}, {"-5", "out"}, {"1", "out", "extra"}} {
		jc := &fakeClient{}
		var ue *mr.UsageError
		if err := runApp(t, "randomtext", jc, args...); !errors.As(err, &ue) {
			t.Errorf("args %q: error %v, want a usage error", args, err)
		}
		if len(jc.specs) != 0 {
			t.Errorf("args %q: ran a job", args)
		}
	}
	err := runApp(t, "randomtext", &fakeClient{conf: map[string]string{"mapreduce.job.maps": "0"}}, "10", "out")
	if err == nil || !strings.Contains(err.Error(), "mapreduce.job.maps") {
		t.Errorf("0 maps: %v", err)
	}
}
