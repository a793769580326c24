#include "textflag.h"

// func prefetchBytes(b []byte)
TEXT ·prefetchBytes(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ	b_base+0(FP), AX
	MOVQ	b_len+8(FP), CX
	TESTQ	CX, CX
	JLE	done
	LEAQ	(AX)(CX*1), CX	// end
	ANDQ	$~63, AX	// the first line
loop:
	PREFETCHT0	(AX)
	ADDQ	$64, AX
	CMPQ	AX, CX
	JLT	loop
done:
	RET
