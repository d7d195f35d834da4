//go:build !linux

package doctor

import (
	"errors"
	"io/fs"
)

func owner(fs.FileInfo) (uid, gid uint32, ok bool) { return 0, 0, false }

func kernelSynced() (bool, error) {
	return false, errors.New("doctor: clock sync status is only read on Linux")
}
