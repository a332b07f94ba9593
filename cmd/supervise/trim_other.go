//go:build !linux

package main

// binaryPages does nothing off Linux.
type binaryPages struct{}

func newBinaryPages() *binaryPages { return &binaryPages{} }

func (*binaryPages) releaseStartup() error { return nil }

func (*binaryPages) release() error { return nil }
