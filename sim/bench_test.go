package sim

import "testing"

// BenchmarkDeadlineFB simulates the deadline paper's 1,000-job Facebook-like
// workload on 64 nodes (64 map + 64 reduce slots), once per policy.
func BenchmarkDeadlineFB(b *testing.B) {
	w, err := Generate("deadline-fb", GenOptions{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"fifo", "edf", "minedf", "minedf-wc", "fair", "tyrex-dynamic"} {
		b.Run(p, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Run(w, Options{Policy: p, Slowstart: -1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkThesisFB simulates the 1,121-job chapter 5 workload on 100 nodes.
func BenchmarkThesisFB(b *testing.B) {
	w, err := Generate("thesis-fb", GenOptions{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"fifo", "fbq"} {
		b.Run(p, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Run(w, Options{Policy: p, Slowstart: -1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
