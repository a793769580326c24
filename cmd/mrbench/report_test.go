package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestJudgeTreeRatio checks the tree ratios a result carries: the job's
// tree peak over the baseline's, by RSS and PSS, and none where either
// side was not measured; and that the report prints them.
func TestJudgeTreeRatio(t *testing.T) {
	cases := []struct {
		name        string
		job, base   *procStats
		wantRSS     float64
		wantPSS     float64
		wantPrinted string
	}{
		{name: "both measured", job: &procStats{TreePeakKB: 300 << 10, TreePeakPSSKB: 200 << 10}, base: &procStats{TreePeakKB: 100 << 10, TreePeakPSSKB: 100 << 10},
			wantRSS: 3, wantPSS: 2, wantPrinted: "3.00x"},
		{name: "no PSS", job: &procStats{TreePeakKB: 150 << 10}, base: &procStats{TreePeakKB: 100 << 10},
			wantRSS: 1.5, wantPrinted: "1.50x"},
		{name: "no baseline tree", job: &procStats{TreePeakKB: 150 << 10}, base: &procStats{}},
		{name: "no baseline", job: &procStats{TreePeakKB: 150 << 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &result{Name: "wordcount", Job: tc.job, Baseline: tc.base, JobSeconds: 1, BaselineSeconds: 1}
			r.judge()
			if r.TreeRatio != tc.wantRSS || r.TreePSSRatio != tc.wantPSS {
				t.Fatalf("tree ratios %g (RSS), %g (PSS); want %g, %g", r.TreeRatio, r.TreePSSRatio, tc.wantRSS, tc.wantPSS)
			}
			var buf bytes.Buffer
			(&report{Results: []*result{r}}).printTreeRatios(&buf)
			if got := buf.String(); tc.wantPrinted == "" && got != "" || !strings.Contains(got, tc.wantPrinted) {
				t.Errorf("printed %q, want it to show %q", got, tc.wantPrinted)
			}
		})
	}
}
