package main

import (
	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/session"
)

// allowFiles are the directories, beyond the plan's own and --data-dir,
// that a plan's body_file, multipart and data files (and convert curl's
// @FILE) may be read from. Global because every command that loads a plan
// reads its files; --workers passes it on with the run's other flags.
var allowFiles []string

func addAllowFiles(fs *pflag.FlagSet) {
	fs.StringArrayVar(&allowFiles, session.AllowFilesFlag[2:], nil,
		"also read the plan's body_file, multipart and data files (convert curl: @FILE) from DIR; by default only files under the plan's directory and --data-dir are read (repeatable)")
}
