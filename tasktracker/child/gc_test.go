package child

import (
	"math"
	"runtime/debug"
	"testing"

	"gomr/conf"
)

func TestSetGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, tc := range []struct {
		name        string
		isMap       bool
		conf        map[string]string
		wantPercent int
		wantLimit   int64
	}{
		{"map defaults", true, nil, 25, 2*100 + 64},
		{"map from the sort buffer", true, map[string]string{keySortMB: "40"}, 25, 2*40 + 64},
		{"map budget set", true, map[string]string{keyMapMemoryMB: "300", keyGCPercent: "50"}, 50, 300},
		{"reduce", false, map[string]string{keyReduceMemoryMB: "200"}, 25, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := conf.FromMap(tc.conf)
			if err != nil {
				t.Fatal(err)
			}
			tk := &task{conf: cfg, isMap: tc.isMap}
			percent, limit := tk.setGC()
			if percent != tc.wantPercent || limit != tc.wantLimit {
				t.Errorf("setGC() = %d, %d MiB; want %d, %d MiB", percent, limit, tc.wantPercent, tc.wantLimit)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit<<20 {
				t.Errorf("memory limit %d bytes, want %d", got, tc.wantLimit<<20)
			}
		})
	}
	t.Run("environment wins", func(t *testing.T) {
		t.Setenv("GOGC", "100")
		t.Setenv("GOMEMLIMIT", "1GiB")
		cfg, _ := conf.FromMap(nil)
		if p, l := (&task{conf: cfg, isMap: true}).setGC(); p != -1 || l != -1 {
			t.Errorf("setGC() = %d, %d; want -1, -1 with GOGC and GOMEMLIMIT set", p, l)
		}
	})
}
