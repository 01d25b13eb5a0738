package convert

import (
	"os"

	"github.com/stampede-load/stampede/internal/localfile"
)

// localRoots are where curl's @FILE may be read from: the current
// directory and the ones --allow-files adds. A pasted "Copy as cURL" line
// is not always the user's own, and its file ends up in the plan.
func localRoots(allow []string) []string {
	return append([]string{"."}, allow...)
}

// readLocal reads a file a curl option names, if package localfile allows
// it.
func readLocal(name string, allow []string) ([]byte, error) {
	path, err := localfile.Resolve(name, localRoots(allow))
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
