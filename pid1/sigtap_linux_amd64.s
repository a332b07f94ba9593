#include "textflag.h"

// func tapTrampoline()
//
// The handler the kernel calls for a tapped signal, as a C function: DI
// the signal, SI its siginfo, DX the context. What it does depends on
// tapMode[signal]:
//
//   - tapOwn: write the siginfo (128 bytes, an atomic pipe write) to tapFD
//     and return; the Go runtime never sees the signal.
//   - tapFiltered: the same for a signal another process sent (si_code
//     <= 0, si_pid not ours); one this process caused (a fault, the
//     scheduler's preemption tgkill, a profiling timer, SIGPIPE for our own
//     write) is counted in tapSelfCaused and goes to the handler it
//     replaced (the Go runtime's) with the same registers and return
//     address, or is dropped if that was SIG_IGN.
//
// Before that write, a signal that would go to the pipe is also forwarded
// from here when the init has armed the tap (tapTarget, the command's pid
// or minus its process group, is not 0) and passes that signal on
// (tapFwd[signal], the signal to send after a rewrite, is not 0): one
// kill(2) straight from the kernel's delivery, no Go scheduling between.
// A stop request (tapStopSig) sets tapStopped first, so that the command's
// exit this signal may cause is never taken for a crash. The record then
// says so (tapMarkForwarded and kill's return at tapMarkErrno, in the
// siginfo's unused tail), so that the Go side does not send it again; and
// it is only written when kill failed or tapRecordForwarded asks for every
// one (to log it): otherwise the init's threads would wake to read it
// while the command, on the same CPUs, is busy with the signal.
// tapBusy counts the handlers between reading tapTarget and the end of
// their kill(2): the Go side disarms, waits for none, and only then reaps
// the command, so that a pid is never signalled after it was reaped.
//
// SIGCHLD also sets tapChild before its write: should the pipe be full
// (a flood of signals), the record is lost but the flag is not, and the
// reader, which has a full pipe to read, sees it after its next read.
//
// No Go runtime is needed: the write is one system call, and the
// registers it clobbers are restored by rt_sigreturn from the signal frame.
TEXT ·tapTrampoline(SB),NOSPLIT|NOFRAME,$0-0
	MOVQ	DI, R8
	MOVQ	SI, R9
	MOVQ	DX, R10
	CMPQ	R8, $17 // SIGCHLD
	JNE	mode
	MOVL	$1, ·tapChild(SB)
mode:
	LEAQ	·tapMode(SB), AX
	MOVBQZX	(AX)(R8*1), AX
	CMPQ	AX, $1 // tapOwn
	JEQ	write
	MOVL	8(R9), AX // si_code
	CMPL	AX, $0
	JGT	self
	MOVL	16(R9), AX // si_pid
	CMPL	AX, ·tapPid(SB)
	JEQ	self
write:
	LEAQ	·tapFwd(SB), AX
	MOVBQZX	(AX)(R8*1), SI // the signal to forward
	TESTQ	SI, SI
	JEQ	record
	LOCK
	INCL	·tapBusy(SB)
	MOVLQSX	·tapTarget(SB), DI
	TESTQ	DI, DI
	JEQ	unbusy
	LEAQ	·tapStopSig(SB), AX
	MOVBQZX	(AX)(R8*1), AX
	TESTQ	AX, AX
	JEQ	kill
	MOVL	$1, AX
	XCHGL	AX, ·tapStopped(SB)
kill:
	MOVQ	$62, AX // SYS_kill(DI, SI); the kernel keeps R8-R10
	SYSCALL
	MOVL	AX, 124(R9) // tapMarkErrno: 0 or -errno
	MOVL	$1, 120(R9) // tapMarkForwarded
	LOCK
	DECL	·tapBusy(SB)
	CMPL	·tapRecordForwarded(SB), $0
	JNE	record
	CMPQ	AX, $0
	JEQ	forwarded
	CMPQ	AX, $-3 // ESRCH: the group is gone, as good as sent
	JNE	record
forwarded:
	RET
unbusy:
	LOCK
	DECL	·tapBusy(SB)
record:
	MOVL	·tapFD(SB), DI
	MOVQ	R9, SI
	MOVQ	$128, DX
	MOVQ	$1, AX // SYS_write; the kernel keeps R8-R10
	SYSCALL
	RET
self:
	LOCK
	INCQ	·tapSelfCaused(SB)
	LEAQ	·tapNext(SB), AX
	MOVQ	(AX)(R8*8), AX
	CMPQ	AX, $1
	JLS	ignored // SIG_DFL or SIG_IGN: nothing to jump to
	MOVQ	R8, DI
	MOVQ	R9, SI
	MOVQ	R10, DX
	JMP	AX
ignored:
	RET

// func tapTrampolineAddr() uintptr
TEXT ·tapTrampolineAddr(SB),NOSPLIT,$0-8
	LEAQ	·tapTrampoline(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
