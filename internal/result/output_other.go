//go:build !linux

package result

import (
	"errors"
	"os"
)

var (
	errNoPreallocate = errors.New("the file system cannot preallocate")
	errNoExchange    = errors.New("the file system cannot exchange names")
)

func freeBytes(string) (int64, bool)    { return 0, false }
func preallocate(*os.File, int64) error { return errNoPreallocate }
func exchange(string, string) error     { return errNoExchange }
