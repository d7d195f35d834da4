//go:build !linux

package spool

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
