package apps

import (
	"math/bits"
	"strconv"
)

// uint128 is an unsigned 128-bit integer, the Go counterpart of Hadoop's
// terasort Unsigned16: arithmetic wraps modulo 2^128.
type uint128 struct{ hi, lo uint64 }

// add returns x + y mod 2^128.
func (x uint128) add(y uint128) uint128 {
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	return uint128{hi: x.hi + y.hi + carry, lo: lo}
}

// mul returns x * y mod 2^128.
func (x uint128) mul(y uint128) uint128 {
	hi, lo := bits.Mul64(x.lo, y.lo)
	hi += x.lo*y.hi + x.hi*y.lo
	return uint128{hi: hi, lo: lo}
}

// byteAt returns byte b of the number, 0 being the most significant.
func (x uint128) byteAt(b int) byte {
	if b < 8 {
		return byte(x.hi >> (56 - 8*b))
	}
	return byte(x.lo >> (120 - 8*b))
}

// hexDigit returns hex digit p of the number as an uppercase ASCII
// character, 0 being the most significant of the 32 digits.
func (x uint128) hexDigit(p int) byte {
	d := x.byteAt(p / 2)
	if p%2 == 0 {
		d >>= 4
	}
	return "0123456789ABCDEF"[d&0xf]
}

// String prints the number in lowercase hex without leading zeros ("0" for
// zero), as Hadoop's Unsigned16.toString does.
func (x uint128) String() string {
	if x.hi == 0 {
		return strconv.FormatUint(x.lo, 16)
	}
	lo := strconv.FormatUint(x.lo, 16)
	return strconv.FormatUint(x.hi, 16) + "0000000000000000"[len(lo):] + lo
}

// parseUint128Hex parses what String prints.
func parseUint128Hex(s string) (uint128, bool) {
	if s == "" || len(s) > 32 {
		return uint128{}, false
	}
	var x uint128
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return uint128{}, false
		}
		x = uint128{hi: x.hi<<4 | x.lo>>60, lo: x.lo<<4 | d}
	}
	return x, true
}

// lcgStep is one affine map x -> a*x + c mod 2^128.
type lcgStep struct{ a, c uint128 }

// random16Table holds the 2^i-fold powers of the GraySort generator
// (Hadoop's Random16, after Chris Nyberg's rand16.c): entry 0 is
// x -> a*x + c with
//
//	a = 0x2360ed051fc65da44385df649fccf645
//	c = 0x4a696d47726179524950202020202001
//
// and each entry is the previous one applied twice. It is computed once and
// never written afterwards.
var random16Table = newRandom16Table()

func newRandom16Table() [128]lcgStep {
	var t [128]lcgStep
	t[0] = lcgStep{
		a: uint128{hi: 0x2360ed051fc65da4, lo: 0x4385df649fccf645},
		c: uint128{hi: 0x4a696d4772617952, lo: 0x4950202020202001},
	}
	for i := 1; i < len(t); i++ {
		p := t[i-1]
		// f(f(x)) = a*(a*x + c) + c = a^2*x + (a*c + c)
		t[i] = lcgStep{a: p.a.mul(p.a), c: p.a.mul(p.c).add(p.c)}
	}
	return t
}

// random16Skip returns the generator state after advance steps from the
// initial state 0, in at most 64 affine steps.
func random16Skip(advance uint64) uint128 {
	var x uint128
	for i := 0; advance != 0; i++ {
		if advance&1 != 0 {
			s := random16Table[i]
			x = s.a.mul(x).add(s.c)
		}
		advance >>= 1
	}
	return x
}

// random16Next advances the generator state by one step.
func random16Next(x uint128) uint128 {
	s := random16Table[0]
	return s.a.mul(x).add(s.c)
}

// teraRecordLen and teraKeyLen are the GraySort record and key lengths.
const (
	teraRecordLen = 100
	teraKeyLen    = 10
)

// genSortRecord fills rec with the binary GraySort record of row number
// row, whose random number is rnd, exactly as Hadoop's
// GenSort.generateRecord writes it:
//
//	bytes  0-9   the 10 high bytes of rnd (the key)
//	bytes 10-11  0x00 0x11
//	bytes 12-43  the row number as 32 uppercase hex digits
//	bytes 44-47  0x88 0x99 0xAA 0xBB
//	bytes 48-95  12 groups of 4 equal bytes: hex digits 20..31 of rnd
//	bytes 96-99  0xCC 0xDD 0xEE 0xFF
func genSortRecord(rec *[teraRecordLen]byte, rnd uint128, row uint128) {
	for i := 0; i < teraKeyLen; i++ {
		rec[i] = rnd.byteAt(i)
	}
	rec[10], rec[11] = 0x00, 0x11
	for i := 0; i < 32; i++ {
		rec[12+i] = row.hexDigit(i)
	}
	rec[44], rec[45], rec[46], rec[47] = 0x88, 0x99, 0xAA, 0xBB
	for i := 0; i < 12; i++ {
		d := rnd.hexDigit(20 + i)
		rec[48+4*i], rec[49+4*i], rec[50+4*i], rec[51+4*i] = d, d, d, d
	}
	rec[96], rec[97], rec[98], rec[99] = 0xCC, 0xDD, 0xEE, 0xFF
}
