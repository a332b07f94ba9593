//go:build !linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"
)

// Runtime is unsupported outside Linux; New fails.
type Runtime struct{}

// errLinuxOnly is what every call says outside Linux.
var errLinuxOnly = fmt.Errorf("the sandbox runtime (cgroups, namespaces, the reaper) is Linux only: %w", errors.ErrUnsupported)

func New(Options) (*Runtime, error)        { return nil, errLinuxOnly }
func IsInit() bool                         { return false }
func InitMain() int                        { return 127 }
func SignalName(sig syscall.Signal) string { return strconv.Itoa(int(sig)) }

func (*Runtime) Close() error             { return errors.ErrUnsupported }
func (*Runtime) Swept() []Swept           { return nil }
func (*Runtime) Events() <-chan ExitEvent { return nil }
func (*Runtime) CreateSandbox(context.Context, SandboxConfig) (string, error) {
	return "", errors.ErrUnsupported
}
func (*Runtime) DeleteSandbox(context.Context, string) error { return errors.ErrUnsupported }
func (*Runtime) ResetSandbox(context.Context, string) error  { return errors.ErrUnsupported }
func (*Runtime) SandboxStatus(string) (SandboxStatus, error) {
	return SandboxStatus{}, errors.ErrUnsupported
}
func (*Runtime) Stats(string) (Stats, error) { return Stats{}, errors.ErrUnsupported }
func (*Runtime) Usage(string) (Stats, error) { return Stats{}, errors.ErrUnsupported }
func (*Runtime) Create(context.Context, string, ProcessConfig) (string, error) {
	return "", errors.ErrUnsupported
}
func (*Runtime) Start(context.Context, string) error               { return errors.ErrUnsupported }
func (*Runtime) Signal(string, syscall.Signal) error               { return errors.ErrUnsupported }
func (*Runtime) Stop(context.Context, string, time.Duration) error { return errors.ErrUnsupported }
func (*Runtime) Remove(context.Context, string) error              { return errors.ErrUnsupported }
func (*Runtime) Status(string) (ProcessStatus, error)              { return ProcessStatus{}, errors.ErrUnsupported }
func (*Runtime) List(ListFilter) []ProcessStatus                   { return nil }
func (*Runtime) Exec(context.Context, string, ExecConfig) (ExecResult, error) {
	return ExecResult{}, errors.ErrUnsupported
}

func CloseOnExecFrom(int) error { return errors.ErrUnsupported }

func (*Runtime) Freeze(context.Context) (Snapshot, func(), error) {
	return Snapshot{}, nil, errors.ErrUnsupported
}
