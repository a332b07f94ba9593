#include "textflag.h"

// func tapTrampoline()
//
// The handler the kernel calls for a tapped signal, as a C function: DI
// the signal, SI its siginfo, DX the context. It writes the siginfo (128
// bytes, an atomic pipe write) to tapFD and jumps to the handler it
// replaced (the Go runtime's) with the same registers and return address,
// so the runtime handles the signal as before. The write needs no Go
// runtime: it is one system call. The registers it clobbers are restored
// by rt_sigreturn from the signal frame.
TEXT ·tapTrampoline(SB),NOSPLIT|NOFRAME,$0-0
	MOVQ	DI, R8
	MOVQ	SI, R9
	MOVQ	DX, R10
	MOVL	·tapFD(SB), DI
	MOVQ	R9, SI
	MOVQ	$128, DX
	MOVQ	$1, AX // SYS_write; the kernel keeps R8-R10
	SYSCALL
	MOVQ	R8, DI
	MOVQ	R9, SI
	MOVQ	R10, DX
	LEAQ	·tapNext(SB), AX
	MOVQ	(AX)(DI*8), AX
	JMP	AX

// func tapTrampolineAddr() uintptr
TEXT ·tapTrampolineAddr(SB),NOSPLIT,$0-8
	LEAQ	·tapTrampoline(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
