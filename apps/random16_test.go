package apps

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

func hex128(t *testing.T, s string) uint128 {
	t.Helper()
	x, ok := parseUint128Hex(s)
	if !ok {
		t.Fatalf("bad hex %q", s)
	}
	return x
}

// TestRandom16Table compares the computed skip table with entries of the
// table published in Hadoop's Random16 (and Nyberg's rand16.c).
func TestRandom16Table(t *testing.T) {
	published := []struct {
		i    int
		a, c string
	}{
		{0, "2360ed051fc65da44385df649fccf645", "4a696d47726179524950202020202001"},
		{1, "17bce35bdf69743c529ed9eb20e0ae99", "95e0e48262b3edfe04479485c755b646"},
		{2, "f4dd417327db7a9bd194dfbe42d45771", "882a02c315362b60765f100068b33a1c"},
		{3, "6347af777a7898f6d1a2d6f33505ffe1", "5efc4abfaca23e8ca8edb1f2dfbf6478"},
		{10, "ae4f079d54fbece1478331d3c6bef001", "991965329dccb28d581199ab18c5fc00"},
		{32, "433bef4314f16a9453cd8fbc00000001", "158c62f2b31e496dfd71a97f00000000"},
		{63, "af85d0c629e6c7de0000000000000001", "7858ca25feb8d4bf8000000000000000"},
		{64, "5f0ba18c53cd8fbc0000000000000001", "f0b1944bfd71a97f0000000000000000"},
		{100, "3cd8fbc0000000000000000000000001", "d71a97f0000000000000000000000000"},
		{126, "00000000000000000000000000000001", "c0000000000000000000000000000000"},
		{127, "00000000000000000000000000000001", "80000000000000000000000000000000"},
	}
	for _, p := range published {
		got := random16Table[p.i]
		if got.a != hex128(t, p.a) || got.c != hex128(t, p.c) {
			t.Errorf("table[%d] = (%s, %s), want (%s, %s)", p.i, got.a, got.c, p.a, p.c)
		}
	}
}

func TestRandom16SkipMatchesStepping(t *testing.T) {
	var x uint128
	for n := uint64(0); n <= 2000; n++ {
		if got := random16Skip(n); got != x {
			t.Fatalf("skip(%d) = %s, stepping gives %s", n, got, x)
		}
		x = random16Next(x)
	}
	// Far rows: skipping to n then stepping k times equals skipping to n+k.
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		n := r.Uint64N(1 << 62)
		x := random16Skip(n)
		for range 3 {
			x = random16Next(x)
		}
		if want := random16Skip(n + 3); x != want {
			t.Fatalf("skip(%d)+3 steps = %s, skip(%d) = %s", n, x, n+3, want)
		}
	}
}

func TestUint128Arithmetic(t *testing.T) {
	mod := new(big.Int).Lsh(big.NewInt(1), 128)
	toBig := func(x uint128) *big.Int {
		b := new(big.Int).SetUint64(x.hi)
		return b.Lsh(b, 64).Or(b, new(big.Int).SetUint64(x.lo))
	}
	r := rand.New(rand.NewPCG(3, 4))
	cases := []uint128{{0, 0}, {0, 1}, {^uint64(0), ^uint64(0)}, {1, 0}, {0, ^uint64(0)}}
	for range 200 {
		cases = append(cases, uint128{r.Uint64(), r.Uint64()})
	}
	for i, x := range cases {
		y := cases[(i*7+3)%len(cases)]
		sum := new(big.Int).Add(toBig(x), toBig(y))
		if got := toBig(x.add(y)); got.Cmp(sum.Mod(sum, mod)) != 0 {
			t.Fatalf("%s + %s = %s, want %x", x, y, x.add(y), sum)
		}
		prod := new(big.Int).Mul(toBig(x), toBig(y))
		if got := toBig(x.mul(y)); got.Cmp(prod.Mod(prod, mod)) != 0 {
			t.Fatalf("%s * %s = %s, want %x", x, y, x.mul(y), prod)
		}
		if got, want := x.String(), toBig(x).Text(16); got != want {
			t.Fatalf("String() = %s, want %s", got, want)
		}
		if back, ok := parseUint128Hex(x.String()); !ok || back != x {
			t.Fatalf("parse(%s) = %s, %v", x, back, ok)
		}
	}
}

func TestUint128Format(t *testing.T) {
	tests := []struct {
		x    uint128
		want string
	}{
		{uint128{}, "0"},
		{uint128{lo: 0xabc}, "abc"},
		{uint128{hi: 1, lo: 2}, "10000000000000002"},
		{uint128{hi: 0xf, lo: 0xffffffffffffffff}, "fffffffffffffffff"},
	}
	for _, tt := range tests {
		if got := tt.x.String(); got != tt.want {
			t.Errorf("String(%x,%x) = %s, want %s", tt.x.hi, tt.x.lo, got, tt.want)
		}
	}
	x := uint128{hi: 0x0123456789abcdef, lo: 0xfedcba9876543210}
	digits := ""
	for p := range 32 {
		digits += string(x.hexDigit(p))
	}
	if digits != "0123456789ABCDEFFEDCBA9876543210" {
		t.Errorf("hex digits %s", digits)
	}
	if x.byteAt(0) != 0x01 || x.byteAt(7) != 0xef || x.byteAt(8) != 0xfe || x.byteAt(15) != 0x10 {
		t.Errorf("bytes wrong: %x %x %x %x", x.byteAt(0), x.byteAt(7), x.byteAt(8), x.byteAt(15))
	}
	for _, bad := range []string{"", "g", "123456789012345678901234567890123"} {
		if _, ok := parseUint128Hex(bad); ok {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
}
